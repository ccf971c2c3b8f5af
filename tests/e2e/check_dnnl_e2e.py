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
Generated files go to --out (the build tree).

Usage: check_dnnl_e2e.py --tessera BIN --source-dir DIR --out DIR
"""
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


def main():
    a, c = checker_from_args()
    c.step("tiny_cnn", lambda: check_tiny_cnn(c, a.source_dir))
    make_models(a.source_dir, a.out, SIZE, WIDTH, stdout=subprocess.DEVNULL)
    for name in MODELS:
        c.step(name, lambda: check_model(c, name))
    return c.summary()


if __name__ == "__main__":
    sys.exit(main())
