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
     inside these bounds for ~20 layers.
Generated files go to --out (the build tree).

Usage: check_dnnl_e2e.py --tessera BIN --source-dir DIR --out DIR
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper

from e2e_checker import Checker

MODELS = ["resnet18", "mobilenetv3"]
SIZE, WIDTH = 64, 0.5


def dnnl_regions(c, tsr, what):
    info = json.loads(c.tool("inspect", tsr, "--json").stdout)
    regions = info["metadata"]["regions"]
    ops = sum(r["ops"] for r in regions)
    c.ok("dnnl" in [p["name"] for p in info["metadata"]["plugins"]] and ops > 0,
         f"{what}: the artifact holds dnnl regions", str(regions))
    return len(regions), ops, info["metadata"]["host_steps"]


def check_tiny_cnn(c, source_dir):
    tir = os.path.join(source_dir, "examples", "models", "tiny_cnn.tir")
    outs = {}
    for label, extra in (("host", []), ("dnnl", ["--target", "dnnl"])):
        tsr = c.path(f"tiny_cnn_{label}.tsr")
        c.tool("compile", tir, *extra, "-o", tsr)
        out = c.path(f"tiny_cnn_{label}_out.npz")
        c.tool("run", tsr, "--seed", "7", "--outputs", out)
        outs[label] = dict(np.load(out))
    dnnl_regions(c, c.path("tiny_cnn_dnnl.tsr"), "tiny_cnn dnnl")
    c.ok(sorted(outs["host"]) == sorted(outs["dnnl"]), "tiny_cnn: the same outputs",
         f"{sorted(outs['host'])} vs {sorted(outs['dnnl'])}")
    for k in outs["host"]:
        c.close(outs["dnnl"][k], outs["host"][k], 1e-4, 1e-5, f"tiny_cnn: dnnl vs host '{k}'")


def backend_test(c, name, model, x, y):
    folder = c.path(f"test_{name}_dnnl")
    shutil.rmtree(folder, ignore_errors=True)
    ds = os.path.join(folder, "test_data_set_0")
    os.makedirs(ds)
    shutil.copyfile(model, os.path.join(folder, "model.onnx"))
    onnx.save_tensor(numpy_helper.from_array(x, "x"), os.path.join(ds, "input_0.pb"))
    onnx.save_tensor(numpy_helper.from_array(y, "logits"), os.path.join(ds, "output_0.pb"))
    return folder


def check_model(c, name):
    model, npy = c.path(f"{name}.onnx"), c.path(f"{name}_input.npy")
    x = np.load(npy)
    results = {}
    for label, extra in (("host", []), ("dnnl", ["--target", "dnnl"])):
        tsr = c.path(f"{name}_{label}.tsr")
        c.tool("compile", model, *extra, "-o", tsr)
        out = c.path(f"{name}_{label}_out.npz")
        c.tool("run", tsr, "--inputs", "x=" + npy, "--outputs", out)
        y = np.load(out)["logits"]
        c.ok(y.shape == (1, 1000) and np.isfinite(y).all() and 0.05 < y.std() < 50,
             f"{name} {label}: finite O(1) logits f32[1, 1000]", f"{y.shape} std {y.std():.3g}")
        results[label] = y
    regions, ops, steps = dnnl_regions(c, c.path(f"{name}_dnnl.tsr"), f"{name} dnnl")
    print(f"{name}: dnnl regions {regions} ({ops} ops), host steps {steps}; "
          f"max |host - dnnl| {np.abs(results['host'] - results['dnnl']).max():.3g}")
    folder = backend_test(c, name, model, x, results["dnnl"])
    conf = c.tool("conformance", folder, "--verbose", rc=None).stdout
    last = conf.strip().splitlines()[-1] if conf.strip() else ""
    c.ok(last == "1 passed, 0 failed, 0 unsupported", f"{name}: dnnl vs interpreter", conf)
    c.close(results["dnnl"], results["host"], 1e-3, 1e-4, f"{name}: dnnl vs host")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tessera", required=True)
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    c = Checker(a.tessera, a.out)
    try:
        check_tiny_cnn(c, a.source_dir)
    except RuntimeError as e:
        c.ok(False, "tiny_cnn: a command failed", str(e))
    make = os.path.join(a.source_dir, "bench", "models", "make_models.py")
    subprocess.run([sys.executable, make, "--out", a.out, "--size", str(SIZE),
                    "--width", str(WIDTH)], check=True, stdout=subprocess.DEVNULL)
    for name in MODELS:
        try:
            check_model(c, name)
        except RuntimeError as e:
            c.ok(False, f"{name}: a command failed", str(e))
    print(f"{c.passed} passed, {c.failed} failed")
    return 1 if c.failed else 0


if __name__ == "__main__":
    sys.exit(main())
