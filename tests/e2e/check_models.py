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
import sys

import numpy as np

from e2e_checker import checker_from_args, make_models

MODELS = ["resnet18", "mobilenetv3"]
SIZE, WIDTH = 64, 0.5


def check_model(c, name):
    model, npy = c.path(f"{name}.onnx"), c.path(f"{name}_input.npy")
    x = np.load(npy)
    results = {}
    for label, extra in (("host", []), ("json", ["--target", "json"])):
        got = c.compile_run(model, f"{name}_{label}", extra, ["--inputs", "x=" + npy])[0]
        if not c.ok(list(got.keys()) == ["logits"], f"{name} {label}: output 'logits'",
                    str(list(got.keys()))):
            return
        y = got["logits"]
        c.ok(y.shape == (1, 1000) and y.dtype == np.float32, f"{name} {label}: f32[1, 1000]",
             f"{y.dtype}{list(y.shape)}")
        c.ok(np.isfinite(y).all() and 0.05 < y.std() < 50, f"{name} {label}: logits O(1)",
             f"std {y.std():.3g}, finite {np.isfinite(y).all()}")
        results[label] = y
    meta = c.inspect(c.path(f"{name}_json.tsr"))["metadata"]
    ops = sum(r["ops"] for r in meta["regions"])
    c.ok([p["name"] for p in meta["plugins"]] == ["json"] and ops > 0,
         f"{name} json: the artifact holds json regions", str(meta["regions"]))
    print(f"{name}: json regions {len(meta['regions'])} ({ops} ops), "
          f"host steps {meta['host_steps']}; "
          f"max |host - json| {np.abs(results['host'] - results['json']).max():.3g}")

    # The reference interpreter on the same input, through the conformance
    # runner: a backend-test folder with one data set per artifact.
    folder = c.backend_test(f"test_{name}", model, x, [results["host"], results["json"]])
    c.conformance(folder, f"{name}: host and json vs interpreter")
    c.close(results["host"], results["json"], 1e-3, 1e-4, f"{name}: host vs json")


def main():
    a, c = checker_from_args()
    make_models(a.source_dir, a.out, SIZE, WIDTH)
    for name in MODELS:
        c.step(name, lambda: check_model(c, name))
    return c.summary()


if __name__ == "__main__":
    sys.exit(main())
