#!/usr/bin/env python3
"""The dnnl plugin end to end: `tessera compile --target dnnl` -> artifact ->
`tessera run` in a fresh process, against the host-only artifact and the
reference interpreter.

  1. examples/models/tiny_cnn.tir, host only and with --target dnnl, run on
     the same seeded random inputs (`tessera run --seed`): outputs agree
     (|a-b| <= 1e-5 + 1e-4 |b|); the dnnl artifact holds dnnl regions
     (`tessera inspect --json`).
  2. ResNet-18 and MobileNetV3-Small from bench/models/make_models.py (64x64,
     half the channels: conv + batch norm folded by the core, residual adds,
     depthwise convs, hard_swish, squeeze-excite, pooling, dense): the dnnl
     artifact's logits against the reference interpreter (`tessera
     conformance` on a backend-test folder, |a-b| <= 1e-5 + 1e-3 |b|) and
     against the host artifact (|a-b| <= 1e-4 + 1e-3 |b|). oneDNN sums in f32
     in its own order (blocked, vectorised): a few ulps per layer, well
     inside these bounds for ~20 layers. `tessera inspect --source dnnl
     --format plan`: the convolutions' weights are held once (in oneDNN's
     layout; the plain bytes released).
  3. `tessera run --profile --profile-json` on the ResNet-18 dnnl artifact:
     every oneDNN primitive of the plan is in the table and the trace with
     its implementation, inside its region's step; the steps take at least
     95% of each run; the trace is Chrome's JSON format, one named track
     per thread.
  4. `tessera partition --report --target dnnl` on ResNet-18 lists, under
     "Implementations", what oneDNN will run each op and match the plugin
     took (its checker's note, plugin ABI 1.6), every offloaded op once.
Generated files go to --out (the build tree).

Usage: check_dnnl_e2e.py --tessera BIN --source-dir DIR --out DIR
"""
import json
import os
import re
import subprocess
import sys

import numpy as np

from e2e_checker import checker_from_args, make_models

MODELS = ["resnet18", "mobilenetv3"]
SIZE, WIDTH = 64, 0.5


def dnnl_regions(c, tsr, what):
    meta = c.inspect(tsr)["metadata"]
    regions = meta["regions"]
    ops = sum(r["ops"] for r in regions)
    c.ok("dnnl" in [p["name"] for p in meta["plugins"]] and ops > 0,
         f"{what}: the artifact holds dnnl regions", str(regions))
    return len(regions), ops, meta["host_steps"]


def check_tiny_cnn(c, source_dir):
    tir = os.path.join(source_dir, "examples", "models", "tiny_cnn.tir")
    outs = {}
    for label, extra in (("host", []), ("dnnl", ["--target", "dnnl"])):
        outs[label] = dict(c.compile_run(tir, f"tiny_cnn_{label}", extra, ["--seed", "7"])[0])
    dnnl_regions(c, c.path("tiny_cnn_dnnl.tsr"), "tiny_cnn dnnl")
    c.ok(sorted(outs["host"]) == sorted(outs["dnnl"]), "tiny_cnn: the same outputs",
         f"{sorted(outs['host'])} vs {sorted(outs['dnnl'])}")
    for k in outs["host"]:
        c.close(outs["dnnl"][k], outs["host"][k], 1e-4, 1e-5, f"tiny_cnn: dnnl vs host '{k}'")


def check_model(c, name):
    model, npy = c.path(f"{name}.onnx"), c.path(f"{name}_input.npy")
    x = np.load(npy)
    results = {}
    for label, extra in (("host", []), ("dnnl", ["--target", "dnnl"])):
        y = c.compile_run(model, f"{name}_{label}", extra, ["--inputs", "x=" + npy])[0]["logits"]
        c.ok(y.shape == (1, 1000) and np.isfinite(y).all() and 0.05 < y.std() < 50,
             f"{name} {label}: finite O(1) logits f32[1, 1000]", f"{y.shape} std {y.std():.3g}")
        results[label] = y
    regions, ops, steps = dnnl_regions(c, c.path(f"{name}_dnnl.tsr"), f"{name} dnnl")
    # The module keeps each convolution's weights once, in oneDNN's layout;
    # only Winograd's transformed weights (AVX-512) keep their plain bytes
    # too, as there is no reverse transform to save them from.
    plan = c.tool("inspect", c.path(f"{name}_dnnl.tsr"), "--source", "dnnl",
                  "--format", "plan").stdout
    released = plan.count("plain bytes released")
    held = plan.count("plain bytes held") + plan.count("plain bytes kept")
    as_given = sum(int(m) for m in re.findall(r"constants: (\d+) bytes held as given", plan))
    winograd = sum(4 * int(np.prod([int(d) for d in m.split(",")])) for m in re.findall(
        r"f32\[([\d, ]+)\]\): transformed for Winograd at init", plan))
    reordered = sum(int(m) for m in re.findall(r"(\d+) bytes reordered or folded", plan))
    transformed = plan.count("transformed for Winograd at init")
    c.ok(released + transformed >= 10 and "reordered at init; plain bytes kept" not in plan
         and as_given - winograd < reordered / 100,
         f"{name}: the dnnl module holds its reordered weights once",
         f"{released} released, {transformed} Winograd, {held} held; {as_given} bytes as given ({winograd} for "
         f"Winograd), {reordered} reordered")
    print(f"{name}: dnnl constants released {released}, held {held} "
          f"({as_given} bytes as given, {reordered} bytes reordered or folded)")
    print(f"{name}: dnnl regions {regions} ({ops} ops), host steps {steps}; "
          f"max |host - dnnl| {np.abs(results['host'] - results['dnnl']).max():.3g}")
    folder = c.backend_test(f"test_{name}_dnnl", model, x, [results["dnnl"]])
    c.conformance(folder, f"{name}: dnnl vs interpreter")
    c.close(results["dnnl"], results["host"], 1e-3, 1e-4, f"{name}: dnnl vs host")


def check_profile(c, name):
    tsr, npy = c.path(f"{name}_dnnl.tsr"), c.path(f"{name}_input.npy")
    trace_path = c.path(f"{name}_trace.json")
    out = c.tool("run", tsr, "--inputs", "x=" + npy, "--repeat", "5", "--profile",
                 "--profile-json", trace_path).stdout
    plan = c.tool("inspect", tsr, "--source", "dnnl", "--format", "plan").stdout
    # "  step 3: node 5 ('conv1', conv2d) [jit:avx2]": every primitive of the plan.
    impls = re.findall(r"^  step \d+: .*\[([^\]]+)\]( on one thread)?$", plan, re.M)
    want = sorted(i for i, _ in impls)
    c.ok(len(want) >= 10, f"{name}: the dnnl plan lists its primitives", plan[:2000])
    m = re.search(r"profile of 5 runs: ([\d.]+) ms per run; its steps take ([\d.]+) ms "
                  r"\(([\d.]+)%\)", out)
    c.ok(m is not None and float(m.group(3)) >= 95.0,
         f"{name}: the profiled steps take at least 95% of each run", out[:3000])
    # A kernel's row is indented under its step's: six spaces after calls/run.
    kernel_lines = [l for l in out.splitlines() if re.match(r"^ +[\d.]+% +[\d.]+ +[\d.]+ {6}\S", l)]
    c.ok(kernel_lines and all(re.search(r"\[[^\]]+\]", l) for l in kernel_lines),
         f"{name}: every primitive in the table names its implementation", out[:3000])
    trace = json.load(open(trace_path))
    events = trace["traceEvents"]
    runs = [e for e in events if e.get("cat") == "run"]
    kernels = [e for e in events if e.get("cat") == "kernel"]
    regions = [e for e in events if e.get("cat") == "plugin"]
    c.ok(len(runs) == 5, f"{name}: 5 runs in the trace", str(len(runs)))
    got = sorted(e["args"]["impl"] for e in kernels if e["args"]["run"] == 0)
    c.ok(got == want, f"{name}: the trace holds each primitive of the plan with its "
         "implementation", f"trace {got}\nplan {want}")
    inside = all(any(r["tid"] == k["tid"] and r["args"]["run"] == k["args"]["run"] and
                     r["ts"] <= k["ts"] + 1e-3 and k["ts"] + k["dur"] <= r["ts"] + r["dur"] + 1e-3
                     for r in regions) for k in kernels)
    c.ok(inside, f"{name}: each primitive lies inside its region's step on the same track")
    named = [e["tid"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"]
    c.ok(sorted(named) == sorted({e["tid"] for e in events if e["ph"] == "X"}) and
         len(set(named)) == len(named), f"{name}: one named track per thread", str(named))


def check_report(c, name):
    out = c.tool("partition", c.path(f"{name}.onnx"), "--target", "dnnl", "--report").stdout
    section = out.split("Implementations (what each plugin said will run the ops it took):\n")
    c.ok(len(section) == 2, f"{name}: the report has an Implementations section", out[:3000])
    if len(section) != 2:
        return
    lines = [l for l in section[1].split("\n\n")[0].splitlines() if l.startswith("  dnnl: ")]
    # "  dnnl: dnnl.conv2d_bias_act: convolution jit:avx2, ... (17): conv1, ..."
    convs = [l for l in lines if re.match(r"  dnnl: (conv2d|dnnl\.conv2d\w*): convolution \S+:\S+", l)]
    c.ok(convs and all(re.search(r" \((\d+)\): ", l) for l in lines),
         f"{name}: each group names oneDNN's implementation and counts its calls",
         "\n".join(lines))
    counted = sum(int(re.search(r" \((\d+)\): ", l).group(1)) for l in lines)
    c.ok(counted > 0, f"{name}: {counted} offloaded ops and matches have a note", out[:1500])


def main():
    a, c = checker_from_args()
    c.step("tiny_cnn", lambda: check_tiny_cnn(c, a.source_dir))
    make_models(a.source_dir, a.out, SIZE, WIDTH, stdout=subprocess.DEVNULL)
    for name in MODELS:
        c.step(name, lambda: check_model(c, name))
    c.step("profile", lambda: check_profile(c, MODELS[0]))
    c.step("report", lambda: check_report(c, MODELS[0]))
    return c.summary()


if __name__ == "__main__":
    sys.exit(main())
