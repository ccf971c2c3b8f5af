#!/usr/bin/env python3
"""Larger composed models end to end: ResNet-18 and MobileNetV3-Small.

bench/models/make_models.py writes both networks small (64x64 input, half
the channels: --size 64 --width 0.5; 20-odd conv layers each with batch
norm, depthwise convs, squeeze-excite, residual adds, pooling and dense
layers) with a seeded input. For each model:
  1. `tessera compile` host only and with --target json (the json artifact
     must hold json regions: `tessera inspect --json`);
  2. `tessera run --inputs x=<model>_input.npy --outputs out.npz` in a fresh
     process for each artifact: a 1x1000 "logits" output, finite, O(1) and
     not constant (random weights scaled to keep activations O(1), so the
     comparisons below measure something);
  3. the reference interpreter on exactly that input: a backend-test folder
     (model.onnx, test_data_set_0 = input + the host artifact's outputs,
     test_data_set_1 = input + the json artifact's outputs) that `tessera
     conformance` must pass. Its tolerance is |a-b| <= 1e-5 + 1e-3 |b|;
  4. host against json artifact: |a-b| <= 1e-4 + 1e-3 |b|.
Tolerances: f32 with a different summation order per kernel (vectorised
host code, the plugin's loops, the interpreter) gives relative errors of a
few ulps per layer growing roughly with depth and sqrt(reduction length)
(up to 4608 here): ~20 layers leave 1e-5-ish relative error on O(1) logits,
well inside rtol 1e-3; the absolute terms cover logits near zero.
Generated files go to --out (the build tree).

Usage: check_models.py --tessera BIN --source-dir DIR --out DIR
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


def backend_test(c, name, model, x, outputs):
    """A backend-test folder: one data set per artifact, same input."""
    folder = c.path(f"test_{name}")
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    shutil.copyfile(model, os.path.join(folder, "model.onnx"))
    for i, out in enumerate(outputs):
        ds = os.path.join(folder, f"test_data_set_{i}")
        os.makedirs(ds)
        onnx.save_tensor(numpy_helper.from_array(x, "x"), os.path.join(ds, "input_0.pb"))
        onnx.save_tensor(numpy_helper.from_array(out, "logits"), os.path.join(ds, "output_0.pb"))
    return folder


def check_model(c, name):
    model, npy = c.path(f"{name}.onnx"), c.path(f"{name}_input.npy")
    x = np.load(npy)
    results = {}
    for label, extra in (("host", []), ("json", ["--target", "json"])):
        tsr = c.path(f"{name}_{label}.tsr")
        c.tool("compile", model, *extra, "-o", tsr)
        out = c.path(f"{name}_{label}_out.npz")
        c.tool("run", tsr, "--inputs", "x=" + npy, "--outputs", out)
        got = np.load(out)
        if not c.ok(list(got.keys()) == ["logits"], f"{name} {label}: output 'logits'",
                    str(list(got.keys()))):
            return
        y = got["logits"]
        c.ok(y.shape == (1, 1000) and y.dtype == np.float32, f"{name} {label}: f32[1, 1000]",
             f"{y.dtype}{list(y.shape)}")
        c.ok(np.isfinite(y).all() and 0.05 < y.std() < 50, f"{name} {label}: logits O(1)",
             f"std {y.std():.3g}, finite {np.isfinite(y).all()}")
        results[label] = y
    info = json.loads(c.tool("inspect", c.path(f"{name}_json.tsr"), "--json").stdout)
    ops = sum(r["ops"] for r in info["metadata"]["regions"])
    c.ok([p["name"] for p in info["metadata"]["plugins"]] == ["json"] and ops > 0,
         f"{name} json: the artifact holds json regions", str(info["metadata"]["regions"]))
    print(f"{name}: json regions {len(info['metadata']['regions'])} ({ops} ops), "
          f"host steps {info['metadata']['host_steps']}; "
          f"max |host - json| {np.abs(results['host'] - results['json']).max():.3g}")

    # The reference interpreter on the same input, through the conformance runner.
    folder = backend_test(c, name, model, x, [results["host"], results["json"]])
    conf = c.tool("conformance", folder, "--verbose", rc=None).stdout
    last = conf.strip().splitlines()[-1] if conf.strip() else ""
    c.ok(last == "1 passed, 0 failed, 0 unsupported", f"{name}: host and json vs interpreter",
         conf)
    c.close(results["host"], results["json"], 1e-3, 1e-4, f"{name}: host vs json")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tessera", required=True)
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    c = Checker(a.tessera, a.out)
    make = os.path.join(a.source_dir, "bench", "models", "make_models.py")
    subprocess.run([sys.executable, make, "--out", a.out, "--size", str(SIZE),
                    "--width", str(WIDTH)], check=True)
    for name in MODELS:
        try:
            check_model(c, name)
        except RuntimeError as e:
            c.ok(False, f"{name}: a command failed", str(e))
    print(f"{c.passed} passed, {c.failed} failed")
    return 1 if c.failed else 0


if __name__ == "__main__":
    sys.exit(main())
