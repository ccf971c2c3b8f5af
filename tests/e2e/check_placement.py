#!/usr/bin/env python3
"""Placement by measurement (issue 23, docs/design/0015) with test
targets of a controlled speed (tests/plugins/targets/timed.cpp): timed_slow
sleeps 30 ms in every region call, timed_fast does not; both take the
model's every op and keep every region, so priority order gives everything
to the first one listed. The test checks choices, not timings:

  - `--target timed_slow,timed_fast` (priority): every region on timed_slow;
  - `--placement measure`: every timed_slow region measured slower than the
    host and sent back, its ops offered to timed_fast (the next target
    listed) and measured there, no timed_slow region in the artifact, the
    candidates and verdicts in its metadata and in the report; its outputs
    match NumPy;
  - a second compile with the cache warm measures nothing and writes the
    same bytes; a cache whose keys name another build of Tessera is not
    taken; `--placement-file` replays the decision into the same bytes;
  - `tessera partition --report` with the decision gives the measured times
    behind each op's place;
  - timed_hinted's cost hint (0.01x the host) sends its region back without
    measuring; a measurement in the cache wins over the hint;
  - `--tune-threads 1` times on one thread, cached apart from every-core times;
  - a symbolic model is timed at its dims' lower bounds and runs at another size;
  - a budget too small to measure falls back to the priority order, saying so;
  - errors: no targets, an unknown mode, a missing or malformed placement
    file.

Usage: check_placement.py --tessera BIN --source-dir DIR --targets-dir DIR --out DIR
"""
import filecmp
import json
import os
import re
import shutil
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

from e2e_checker import checker_from_args

F32 = TensorProto.FLOAT


def model(rows=64):
    """sigmoid(tanh(relu(x) + y) * y): ops both test targets take (rows "N": a
    symbolic dim)."""
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="relu"),
             helper.make_node("Add", ["a", "y"], ["b"], name="add"),
             helper.make_node("Tanh", ["b"], ["c"], name="tanh"),
             helper.make_node("Mul", ["c", "y"], ["d"], name="mul"),
             helper.make_node("Sigmoid", ["d"], ["z"], name="sigmoid")]
    vi = lambda n: helper.make_tensor_value_info(n, F32, [rows, 64])
    g = helper.make_graph(nodes, "placed", [vi("x"), vi("y")], [vi("z")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def reference(x, y):
    d = np.tanh(np.maximum(x, 0) + y) * y
    return 1 / (1 + np.exp(-d))


def main():
    a, c = checker_from_args(("--targets-dir", {"required": True}))
    os.environ["TESSERA_PLUGIN_PATH"] = a.targets_dir
    cache = c.path("cache")
    shutil.rmtree(cache, ignore_errors=True)
    os.environ["TESSERA_CACHE_DIR"] = cache
    path = c.path("placed.onnx")
    onnx.save(model(), path)
    targets = ["--target", "timed_slow,timed_fast"]

    def regions(tsr):
        return [r.get("plugin") for r in c.inspect(tsr)["metadata"].get("regions", [])]

    # Priority order: the first listed takes everything.
    prio = c.path("priority.tsr")
    c.tool("compile", path, "-o", prio, *targets)
    got = regions(prio)
    c.ok(got and all(p == "timed_slow" for p in got),
         "priority order gives every region to the first target listed", str(got))

    # Measured: timed_slow's regions lose to the host.
    measured, placement = c.path("measured.tsr"), c.path("placement.json")
    r = c.tool("compile", path, "-o", measured, *targets, "--placement", "measure",
               "--placement-file", placement)
    out = r.stdout
    for cand in ("timed_slow,timed_fast", "timed_slow ", "timed_fast ", "host only",
                 "timed_slow (priority order)", "timed_fast (priority order)"):
        c.ok(f"  {cand}" in out, f"the report lists candidate '{cand.strip()}'", out)
    lines = out.splitlines()
    at = lambda words: next((i for i, l in enumerate(lines) if words in l), len(lines))
    c.ok("sent back" in lines[min(at("region timed_slow"), len(lines) - 1)],
         "the report says timed_slow's region was sent back", out)
    c.ok(at("region timed_slow") < at("region timed_fast") < at("candidate timed_slow,timed_fast"),
         "the ops timed_slow's region sent back were offered to timed_fast, the next target "
         "listed, whose region was measured in turn", out)
    c.ok("timed_slow" not in regions(measured), "no timed_slow region in the measured artifact",
         str(regions(measured)))
    meta = c.inspect(measured)["metadata"].get("placement", {})
    slow = [v for v in meta.get("regions", {}).values() if v["target"] == "timed_slow"]
    c.ok(slow and all(not v["keep"] and v["plugin_ms"] >= 30 and v["host_ms"] < v["plugin_ms"]
                      for v in slow),
         "the metadata records timed_slow's regions as measured slower than the host and "
         "sent back", json.dumps(meta, indent=1)[:2000])
    rules = sorted((",".join(k["targets"]), k["rule"]) for k in meta.get("candidates", []))
    c.ok(meta.get("mode") == "measured" and rules == sorted([
        ("timed_slow,timed_fast", "measured"), ("timed_slow", "measured"),
        ("timed_fast", "measured"), ("", "measured"), ("timed_slow", "priority"),
        ("timed_fast", "priority")]),
         "the metadata records how the placement was chosen and the six candidates (each "
         "target alone also in priority order)", json.dumps(meta)[:800])
    shown = c.tool("inspect", measured).stdout
    c.ok("Placement: measured" in shown and "candidate host only" in shown
         and "region timed_slow" in shown and "sent back" in shown,
         "tessera inspect shows how the placement was chosen", shown)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((64, 64)).astype(np.float32)
    y = rng.standard_normal((64, 64)).astype(np.float32)
    npz, res = c.path("in.npz"), c.path("out.npz")
    np.savez(npz, x=x, y=y)
    c.tool("run", measured, "--inputs", npz, "--outputs", res)
    c.close(np.load(res)["z"], reference(x, y), 1e-5, 1e-6, "the measured artifact's output")

    # A warm cache: nothing measured, the same bytes.
    again = c.path("again.tsr")
    r = c.tool("compile", path, "-o", again, *targets, "--placement", "measure")
    measuredLines = [l for l in r.stdout.splitlines()
                     if "(measured)" in l and not l.startswith("Placement")]
    c.ok(not measuredLines and "(cache)" in r.stdout,
         "a second compile takes every measurement from the cache", r.stdout)
    c.ok(filecmp.cmp(measured, again, shallow=False),
         "a second compile with a warm cache writes the same artifact")
    # Measurements another build of Tessera made (its host code may run at
    # another speed) are not taken: the keys name the build.
    cacheFile = os.path.join(cache, "placement.json")
    with open(cacheFile) as f:
        text = f.read()
    builds = set(re.findall(r"/b([0-9a-f]{12})", text))
    other = c.path("cache_other_build")
    shutil.rmtree(other, ignore_errors=True)
    os.makedirs(other)
    with open(os.path.join(other, "placement.json"), "w") as f:
        f.write(re.sub(r"/b[0-9a-f]{12}", "/b000000000000", text))
    os.environ["TESSERA_CACHE_DIR"] = other
    r = c.tool("compile", path, "-o", c.path("other_build.tsr"), *targets, "--placement", "measure")
    os.environ["TESSERA_CACHE_DIR"] = cache
    c.ok(len(builds) == 1 and "(measured)" in r.stdout and "(cache)" not in r.stdout,
         "another build's measurements are measured again, not taken from the cache",
         f"builds in the keys: {builds}\n{r.stdout}")
    # The placement file replayed: the same bytes, nothing measured.
    replayed = c.path("replayed.tsr")
    r = c.tool("compile", path, "-o", replayed, *targets, "--placement-file", placement)
    c.ok("replayed from" in r.stdout and "placement: " not in r.stdout,
         "--placement-file alone replays without measuring", r.stdout)
    c.ok(filecmp.cmp(measured, replayed, shallow=False),
         "--placement-file replays a bit-identical artifact")

    # `tessera partition --report` with the same decision says why each op is where it is.
    r = c.tool("partition", path, *targets, "--placement-file", placement, "--report")
    c.ok("pruned from a timed_fast region: placement:" in r.stdout
         and "sent back from 'timed_slow': placement:" in r.stdout
         and "on 'timed_slow'" in r.stdout and "region timed_slow" in r.stdout,
         "tessera partition --report gives the measured times behind each decision", r.stdout)

    html = c.path("placement.html")
    c.tool("partition", path, *targets, "--placement-file", placement, "--html", html)
    with open(html) as f:
        page = f.read()
    section = page.split("<h2>Placement</h2>")[-1].split("<h2>")[0]
    c.ok("<h2>Placement</h2>" in page and "region timed_slow" in section
         and "host only" in section and "on the host" in section,
         "the HTML view has the placement's candidates and regions with their times", page[:3000])

    # A cost hint: timed_hinted estimates itself at 0.01x the host's speed,
    # which decides its region without measuring it; a measurement wins.
    os.environ["TESSERA_CACHE_DIR"] = c.path("cache_hints")
    shutil.rmtree(os.environ["TESSERA_CACHE_DIR"], ignore_errors=True)
    hinted = c.path("hinted.tsr")
    hintedTargets = ["--target", "timed_hinted,timed_fast"]
    r = c.tool("compile", path, "-o", hinted, *hintedTargets, "--placement", "measure")
    line = next((l for l in r.stdout.splitlines() if "region timed_hinted" in l), "")
    c.ok("estimated 0.01x the host's speed (plugin estimate: sleeps 30 ms in every region "
         "call): sent back" in line and "(measured)" not in line,
         "a clear cost hint sends timed_hinted's region back without measuring it", r.stdout)
    c.ok("timed_hinted" not in regions(hinted), "no timed_hinted region in the artifact",
         str(regions(hinted)))
    meta = c.inspect(hinted)["metadata"].get("placement", {})
    hint = [v for v in meta.get("regions", {}).values() if v["target"] == "timed_hinted"]
    c.ok(hint and all(v["estimate"] == 0.01 and v["plugin_ms"] < 0 and not v["keep"]
                      for v in hint),
         "the metadata records the estimate that decided", json.dumps(meta)[:2000])
    shown = c.tool("inspect", hinted).stdout
    c.ok("estimated 0.01x the host's speed by its plugin: sent back" in shown,
         "tessera inspect shows the estimate", shown)
    # A measurement in the cache (here: one that says the plugin is faster)
    # wins over the estimate.
    cacheFile = os.path.join(os.environ["TESSERA_CACHE_DIR"], "placement.json")
    with open(cacheFile) as f:
        cached = json.load(f)
    keys = [k for k, v in cached["regions"].items() if v["target"] == "timed_hinted"]
    for k in keys:
        cached["regions"][k] = {"target": "timed_hinted", "ops": cached["regions"][k]["ops"],
                                "plugin_ms": 0.001, "host_ms": 1.0}
    cached.pop("candidates", None)
    with open(cacheFile, "w") as f:
        json.dump(cached, f)
    r = c.tool("compile", path, "-o", c.path("hinted2.tsr"), *hintedTargets,
               "--placement", "measure")
    line = next((l for l in r.stdout.splitlines() if "region timed_hinted" in l), "")
    c.ok(keys and "0.001 ms, host 1.000 ms (cache): kept" in line and "estimate" not in line,
         "a cached measurement wins over the plugin's estimate", r.stdout)

    # A region that loses because of one node: timed_picky sleeps 30 ms in
    # each tanh node only and reports each node to the profiler, so the
    # profiles of the region on it and on the host name tanh alone. The
    # region goes back in part: tanh is withheld, the rest offered again.
    os.environ["TESSERA_CACHE_DIR"] = c.path("cache_picky")
    shutil.rmtree(os.environ["TESSERA_CACHE_DIR"], ignore_errors=True)
    pickyTargets = ["--target", "timed_picky"]
    picky, pickyFile = c.path("picky.tsr"), c.path("picky.json")
    r = c.tool("compile", path, "-o", picky, *pickyTargets, "--placement", "measure",
               "--placement-file", pickyFile)
    lines = r.stdout.splitlines()
    whole = next((l for l in lines if "region timed_picky (relu+add+tanh+multiply+sigmoid)" in l),
                 "")
    c.ok("sent back in part (losing: 'tanh' " in whole and "'relu'" not in whole
         and "'sigmoid'" not in whole,
         "the profiles name tanh as the one node of timed_picky's region that loses; the "
         "region goes back in part", r.stdout)
    c.ok(any("region timed_picky (relu+add)" in l for l in lines)
         and any("region timed_picky (multiply+sigmoid)" in l for l in lines),
         "the rest of the region is offered to timed_picky again: the two regions around "
         "tanh are formed and measured", r.stdout)
    with open(pickyFile) as f:
        decision = json.load(f)
    losing = [v.get("losing") for v in decision["regions"].values() if "tanh" in v["ops"]]
    c.ok(losing and losing[0] and [n["node"] for n in losing[0]] == ["tanh"]
         and losing[0][0]["plugin_ms"] >= 30 and losing[0][0]["host_ms"] < 30,
         "the placement file records the losing node with its times", json.dumps(decision)[:1500])
    r = c.tool("partition", path, *pickyTargets, "--placement-file", pickyFile, "--report")
    c.ok("profiled in a region sent back" in r.stdout and "tanh" in r.stdout,
         "tessera partition --report says why tanh was withheld", r.stdout)
    # A region kept although one of its nodes loses: the best candidate is
    # tried again with that node withheld, and wins when it is faster. No
    # plugin here beats the host, so the cache says this one did (as a
    # faster vendor plugin would measure): every timed_picky region kept.
    cacheFile = os.path.join(os.environ["TESSERA_CACHE_DIR"], "placement.json")
    with open(cacheFile) as f:
        cached = json.load(f)
    for v in cached["regions"].values():
        v["plugin_ms"], v["host_ms"] = 0.001, 1.0
    for k, v in cached["candidates"].items():
        v["ms"] = 3000.0 if k.endswith("/priority") else 1000.0 if "timed_picky" in k else 2000.0
        v["regions"] = 0 if "timed_picky" not in k else 1
    with open(cacheFile, "w") as f:
        json.dump(cached, f)
    withheld, withheldFile = c.path("picky_withheld.tsr"), c.path("picky_withheld.json")
    r = c.tool("compile", path, "-o", withheld, *pickyTargets, "--placement", "measure",
               "--placement-file", withheldFile)
    c.ok(re.search(r"candidate timed_picky \(losing nodes withheld\): [0-9.]+ ms, 2 regions "
                   r"\(measured\)", r.stdout)
         and "chosen: timed_picky (losing nodes withheld)" in r.stdout,
         "the best candidate tried with the kept region's losing node withheld: two regions "
         "around tanh, timed and chosen", r.stdout)
    got = regions(withheld)
    c.ok(got == ["timed_picky", "timed_picky"], "the artifact holds the two regions", str(got))
    steps = c.tool("inspect", withheld, "--steps").stdout
    c.ok(re.search(r"tanh", steps) is not None, "tanh runs on the host", steps)
    x = rng.standard_normal((64, 64)).astype(np.float32)
    y = rng.standard_normal((64, 64)).astype(np.float32)
    np.savez(npz, x=x, y=y)
    c.tool("run", withheld, "--inputs", npz, "--outputs", res)
    c.close(np.load(res)["z"], reference(x, y), 1e-5, 1e-6,
            "the output with tanh withheld from timed_picky")
    replayed = c.path("picky_replayed.tsr")
    c.tool("compile", path, "-o", replayed, *pickyTargets, "--placement-file", withheldFile)
    c.ok(filecmp.cmp(withheld, replayed, shallow=False),
         "the placement file replays the withheld candidate into the same bytes")

    # Timed on one thread (what an app running the artifact on one thread
    # sees): measured apart from the every-core times, then cached in turn.
    one = c.path("one_thread.tsr")
    r = c.tool("compile", path, "-o", one, *targets, "--placement", "measure",
               "--tune-threads", "1")
    c.ok("timing on 1 thread" in r.stdout and "(measured)" in r.stdout,
         "--tune-threads 1 times on one thread, not with the every-core cache", r.stdout)
    c.ok("timing on every core" in out, "the default times on every core and says so", out)
    r = c.tool("compile", path, "-o", one, *targets, "--placement", "measure",
               "--tune-threads", "1")
    c.ok(not [l for l in r.stdout.splitlines()
              if "(measured)" in l and not l.startswith("Placement")],
         "the one-thread times are cached apart", r.stdout)

    # A symbolic model: timed with its dims at their lower bounds (N = 2
    # here), compiled once, run at another size.
    sym_path = c.path("placed_symbolic.onnx")
    onnx.save(model("N"), sym_path)
    sym = c.path("symbolic.tsr")
    r = c.tool("compile", sym_path, "-o", sym, *targets, "--placement", "measure",
               "--input-shape", "x=N:2..16,64", "--input-shape", "y=N:2..16,64")
    cands = c.inspect(sym)["metadata"].get("placement", {}).get("candidates", [])
    c.ok(len(cands) == 6 and all(k.get("ms", -1) >= 0 for k in cands if k["rule"] == "measured")
         and "not timed: the same artifact as" in r.stdout,
         "a symbolic model's candidates are timed (at the dims' lower bounds)",
         json.dumps(cands)[:800] + r.stdout)
    x3 = rng.standard_normal((5, 64)).astype(np.float32)
    y3 = rng.standard_normal((5, 64)).astype(np.float32)
    np.savez(npz, x=x3, y=y3)
    c.tool("run", sym, "--inputs", npz, "--outputs", res)
    c.close(np.load(res)["z"], reference(x3, y3), 1e-5, 1e-6,
            "the symbolic measured artifact's output at N = 5")

    # A budget too small to measure anything: the priority order, said so.
    os.environ["TESSERA_CACHE_DIR"] = c.path("cache_empty")
    shutil.rmtree(os.environ["TESSERA_CACHE_DIR"], ignore_errors=True)
    starved = c.path("starved.tsr")
    r = c.tool("compile", path, "-o", starved, *targets, "--placement", "measure",
               "--tune-budget", "0.000001")
    c.ok("over the budget" in r.stdout, "an exhausted budget is reported", r.stdout)
    c.ok(regions(starved) == regions(prio), "an exhausted budget falls back to priority order",
         f"{regions(starved)} vs {regions(prio)}")

    # --on-host: a named node stays on the host whatever the targets take.
    onhost = c.path("on_host.tsr")
    c.tool("compile", path, "-o", onhost, "--target", "timed_fast", "--on-host", "tanh")
    c.ok(regions(onhost) == ["timed_fast", "timed_fast"],
         "--on-host tanh splits timed_fast's region around tanh", str(regions(onhost)))
    np.savez(npz, x=x, y=y)
    c.tool("run", onhost, "--inputs", npz, "--outputs", res)
    c.close(np.load(res)["z"], reference(x, y), 1e-5, 1e-6, "the output with tanh on the host")
    r = c.tool("partition", path, "--target", "timed_fast", "--on-host", "tanh", "--report")
    c.ok(re.search(r"kept on the host by --on-host \(1\):\n\s+@main\s+tanh\s+tanh", r.stdout)
         is not None, "tessera partition --report says why tanh is on the host", r.stdout)
    r = c.tool("compile", path, "-o", c.path("bad.tsr"), "--target", "timed_fast",
               "--on-host", "tan", rc=None)
    c.ok(r.returncode != 0 and "--on-host: no node named 'tan'" in r.stderr,
         "an --on-host name that is not a node is refused naming it", r.stderr)

    # Errors.
    for args, words in (
            (["--placement", "measure"], "needs targets"),
            ([*targets, "--placement", "fastest"], "placement must be 'priority' or 'measure'"),
            ([*targets, "--placement-file", c.path("missing.json")], "cannot read placement file"),
            ([*targets, "--tune-budget", "-1", "--placement", "measure"], "tuning budget"),
            ([*targets, "--tune-threads", "-1", "--placement", "measure"], "tuning threads"),
    ):
        r = c.tool("compile", path, "-o", c.path("bad.tsr"), *args, rc=None)
        c.ok(r.returncode != 0 and words in r.stderr, f"refused: {' '.join(args)}", r.stderr)
    bad = c.path("bad_placement.json")
    with open(bad, "w") as f:
        f.write('{"targets": "timed_fast"}')
    r = c.tool("compile", path, "-o", c.path("bad.tsr"), *targets, "--placement-file", bad, rc=None)
    c.ok(r.returncode != 0 and "not a placement file" in r.stderr,
         "a malformed placement file is refused naming it", r.stderr)
    return c.summary()


if __name__ == "__main__":
    sys.exit(main())
