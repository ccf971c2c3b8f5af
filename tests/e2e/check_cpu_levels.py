#!/usr/bin/env python3
"""Host code for several CPU levels in one artifact (runtime/host_levels.h).

`tessera compile` builds the host code for x86-64-v3 and x86-64-v4 by
default, one shared object each, and the runtime loads the best one this CPU
has; TESSERA_HOST_CPU forces one. Checked here, on whatever CPU runs the test
(what it has is read from /proc/cpuinfo, not from Tessera):
  1. the default artifact lists both levels (v4 first, stored compressed; v3
     raw), `tessera inspect` names the one this machine runs, and the
     outputs of every level this CPU can run match the reference
     interpreter (tiny_cnn) and NumPy (an ONNX CNN, with a ccompiler region
     whose C is built for the portable level);
  2. a level this CPU lacks, forced, is refused naming the missing features;
     an unknown one naming the levels the artifact has;
  3. an artifact of two levels this CPU runs neither of is refused naming
     what the most portable one needs;
  4. --mcpu lists: a lower level (x86-64-v2) forced runs and matches; an
     empty entry, a repeated one and an unknown CPU are refused by name.
"""
import os
import sys

import numpy as np

from e2e_checker import checker_from_args, onnx_cnn

V4 = {"avx512f", "avx512dq", "avx512cd", "avx512bw", "avx512vl"}


def cpu_flags():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    return set()


def check_default_levels(c, source, has_v4):
    model = os.path.join(source, "examples", "models", "tiny_cnn.tir")
    want = c.interpreted_outputs(model, 5)
    tsr = c.path("tiny.tsr")
    log = c.tool("compile", model, "-o", tsr).stdout
    c.ok("optimising for x86-64-v3, x86-64-v4 at" in log and
         "host code for 2 CPUs" in log, "compile: host code built for v3 and v4 by default", log)
    d = c.inspect(tsr)
    levels = d["metadata"]["host_code"]
    c.ok([(l["cpu"], l["section"], l["encoding"]) for l in levels] ==
         [("x86-64-v4", 1, "zlib"), ("x86-64-v3", 0, "raw")],
         "metadata: v4 first (compressed), then v3 (raw)", str(levels))
    c.ok(V4 <= set(levels[0]["features"]) and not V4 & set(levels[1]["features"]) and
         "avx2" in levels[1]["features"], "metadata: each level's features", str(levels))
    sizes = [s["size"] for s in d["sections"] if s["kind"] == "host code"]
    c.ok(len(sizes) == 2 and sizes[1] < 0.6 * levels[0]["size"],
         "the added level is stored in less than 60% of its size", f"{sizes} {levels}")
    here = "x86-64-v4" if has_v4 else "x86-64-v3"
    c.ok(d.get("host_code_here") == here, f"inspect: this machine runs {here}",
         str(d.get("host_code_here")))
    text = c.tool("inspect", tsr).stdout
    c.ok(f"this machine runs the host code for {here}" in text, "inspect: the text says so", text)

    runnable = ["x86-64-v3"] + (["x86-64-v4"] if has_v4 else [])
    for forced in [None] + runnable:
        out = c.path(f"tiny_{forced}.npz")
        c.tool("run", tsr, "--seed", "5", "--outputs", out, "--threads", "1",
               env={"TESSERA_HOST_CPU": forced} if forced else {"TESSERA_HOST_CPU": ""})
        c.close(np.load(out)["probs"], want[0], 1e-4, 1e-5,
                f"tiny_cnn, host code {forced or 'chosen by the runtime'}: run vs interpret")
    if not has_v4:
        r = c.tool("run", tsr, rc=1, env={"TESSERA_HOST_CPU": "x86-64-v4"})
        c.ok(f"error: {tsr}: TESSERA_HOST_CPU=x86-64-v4: host code (compiled for x86-64-v4) "
             "needs avx512f" in r.stderr and "recompile with --mcpu=" in r.stderr,
             "run: a level this CPU lacks, forced, is refused naming its features", r.stderr)
    r = c.tool("run", tsr, rc=1, env={"TESSERA_HOST_CPU": "pentium9000"})
    c.ok(r.stderr.strip() == f"tessera run: error: {tsr}: TESSERA_HOST_CPU=pentium9000: the host "
         "code is built for x86-64-v4, x86-64-v3 only", "run: an unknown level is refused",
         r.stderr)


def check_onnx_and_plugin(c, source, has_v4):
    _, path, want = onnx_cnn(c, source)
    tsr = c.path("cnn.tsr")
    c.tool("compile", path, "-o", tsr)
    for forced in ["x86-64-v3"] + (["x86-64-v4"] if has_v4 else []):
        out = c.path(f"cnn_{forced}.npz")
        c.tool("run", tsr, "--inputs", "x=" + c.path("cnn_x.npy"), "--outputs", out,
               env={"TESSERA_HOST_CPU": forced})
        got = np.load(out)
        c.close(got[list(got.keys())[0]], want, 1e-3, 1e-4, f"ONNX CNN, host code {forced}: vs NumPy")
    # A plugin that compiles native code builds it for the most portable level.
    model = os.path.join(source, "examples", "models", "tiny_cnn.tir")
    want = c.interpreted_outputs(model, 8)
    tsr = c.path("tiny_cc.tsr")
    c.tool("compile", model, "--target", "ccompiler", "-o", tsr)
    meta = c.inspect(tsr)["metadata"]
    c.ok(meta["regions"] and all(r["cpu"] == "x86-64-v3" for r in meta["regions"]),
         "ccompiler's C is built for the portable level",
         str(meta["regions"]))
    for forced in ["x86-64-v3"] + (["x86-64-v4"] if has_v4 else []):
        out = c.path(f"tiny_cc_{forced}.npz")
        c.tool("run", tsr, "--seed", "8", "--outputs", out, env={"TESSERA_HOST_CPU": forced})
        c.close(np.load(out)["probs"], want[0], 1e-4, 1e-5,
                f"tiny_cnn with ccompiler, host code {forced}: vs interpret")


def check_none_fits(c, source, flags):
    """Two levels this CPU lacks: the most portable one's needs are named."""
    model = os.path.join(source, "examples", "models", "tiny_cnn.tir")
    # AVX2 only; AVX-512 without AMX (AMD); AMX without AVX512-VP2INTERSECT
    # (Intel since Sapphire Rapids).
    for low, high in (("x86-64-v4", "sapphirerapids"), ("sapphirerapids", "graniterapids"),
                      ("tigerlake", "znver5")):
        tsr = c.path(f"tiny_{low}_{high}.tsr")
        c.tool("compile", model, "--mcpu", f"{high},{low}", "-o", tsr)
        d = c.inspect(tsr)
        if d.get("host_code_here") is not None:
            continue  # this CPU runs one of them: try higher ones
        r = c.tool("run", tsr, rc=1)
        c.ok(f"error: {tsr}: host code (compiled for {low}, also for {high}) needs " in r.stderr
             and "this CPU" in r.stderr, "run: no level fits: the most portable one's needs",
             r.stderr)
        text = c.tool("inspect", tsr).stdout
        c.ok("the artifact will not load here" in text, "inspect: no level fits", text)
        return
    c.ok(False, "a pair of CPU levels this machine runs neither of", str(sorted(flags)))


def check_mcpu_lists(c, source):
    model = os.path.join(source, "examples", "models", "tiny_cnn.tir")
    want = c.interpreted_outputs(model, 6)
    tsr = c.path("tiny_v2_v3.tsr")
    c.tool("compile", model, "--mcpu", "x86-64-v3,x86-64-v2", "-o", tsr)
    levels = c.inspect(tsr)["metadata"]["host_code"]
    c.ok([l["cpu"] for l in levels] == ["x86-64-v3", "x86-64-v2"],
         "--mcpu list: ordered by what each level has, whatever the order given", str(levels))
    out = c.path("tiny_v2.npz")
    c.tool("run", tsr, "--seed", "6", "--outputs", out, env={"TESSERA_HOST_CPU": "x86-64-v2"})
    c.close(np.load(out)["probs"], want[0], 1e-4, 1e-5, "tiny_cnn, x86-64-v2 forced: vs interpret")
    for mcpu, message in (("x86-64-v3,,x86-64-v4", "an empty CPU name in the list"),
                          ("x86-64-v3,x86-64-v3", "'x86-64-v3' is listed twice"),
                          ("x86-64-v3,pentium9000", "unknown CPU 'pentium9000'")):
        r = c.tool("compile", model, "--mcpu", mcpu, "-o", c.path("bad.tsr"), rc=1)
        c.ok(message in r.stderr, f"--mcpu {mcpu}: refused", r.stderr)


def main():
    a, c = checker_from_args()
    flags = cpu_flags()
    has_v4 = V4 <= flags
    print(f"this CPU {'has' if has_v4 else 'lacks'} x86-64-v4 (AVX-512)")
    for step in (lambda: check_default_levels(c, a.source_dir, has_v4),
                 lambda: check_onnx_and_plugin(c, a.source_dir, has_v4),
                 lambda: check_none_fits(c, a.source_dir, flags),
                 lambda: check_mcpu_lists(c, a.source_dir)):
        c.step("", step)
    return c.summary()


if __name__ == "__main__":
    sys.exit(main())
