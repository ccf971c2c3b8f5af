#!/usr/bin/env python3
"""An end-to-end check of the ONNX importer on a small exported-style CNN.

Builds with python3-onnx a CNN whose weights are all in Constant nodes, whose
batch and spatial dims are symbolic ("N", "H", "W"), and which flattens its
features through a Shape -> Gather -> Unsqueeze -> Concat -> Reshape
sub-graph (what torch.onnx emits for x.view(x.size(0), -1)) before the
classifier. Then:
  1. `tessera import --input-shape x=2,3,17,19` must succeed, fold the shape
     sub-graph into constants, and print text IR that tessera-opt accepts;
  2. `tessera interpret --print-all` runs it with the reference interpreter;
     its outputs must match numpy's computation of the same network on the
     printed inputs (|a-b| <= 1e-4 + 1e-3 |b|);
  3. the same model with a numpy-computed test data set (exact inputs) must
     pass `tessera conformance`.
The generated files go to --out (the build tree), never into the source tree.

Usage: make_cnn.py --tessera BIN --tessera-opt BIN --out DIR
"""
import argparse
import os
import re
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SHAPE = (2, 3, 17, 19)


def weights(seed=0):
    rng = np.random.default_rng(seed)
    f = lambda *s: (rng.standard_normal(s) * 0.3).astype(np.float32)
    return {
        "w1": f(8, 3, 3, 3), "b1": f(8),
        "w2": f(16, 8, 3, 3), "b2": f(16),
        "wfc": f(10, 16), "bfc": f(10),
    }


def build_model(w):
    nodes = []

    def const(name, array):
        nodes.append(helper.make_node("Constant", [], [name], name=name + "_const",
                                      value=numpy_helper.from_array(array, name)))

    for k, v in w.items():
        const(k, v)
    nodes += [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1",
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1",
                         kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "w2", "b2"], ["c2"], name="conv2",
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("GlobalAveragePool", ["r2"], ["gap"], name="gap"),
        # x.view(x.size(0), -1)
        helper.make_node("Shape", ["gap"], ["shape"], name="shape"),
    ]
    const("zero", np.array(0, dtype=np.int64))
    const("axes0", np.array([0], dtype=np.int64))
    const("minus1", np.array([-1], dtype=np.int64))
    nodes += [
        helper.make_node("Gather", ["shape", "zero"], ["batch"], name="gather", axis=0),
        helper.make_node("Unsqueeze", ["batch", "axes0"], ["batch1"], name="unsqueeze"),
        helper.make_node("Concat", ["batch1", "minus1"], ["newshape"], name="concat", axis=0),
        helper.make_node("Reshape", ["gap", "newshape"], ["flat"], name="flatten"),
        helper.make_node("Gemm", ["flat", "wfc", "bfc"], ["logits"], name="fc", transB=1),
        helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=1),
    ]
    graph = helper.make_graph(
        nodes, "small_cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, "H", "W"])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["N", 10])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                              producer_name="tessera-tests")
    onnx.checker.check_model(model)
    return model


def conv2d(x, w, b, pad):
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    win = np.lib.stride_tricks.sliding_window_view(xp, w.shape[2:], axis=(2, 3))
    return np.einsum("nchwij,ocij->nohw", win, w, optimize=True) + b[None, :, None, None]


def reference(x, w):
    x = x.astype(np.float64)
    r1 = np.maximum(conv2d(x, w["w1"], w["b1"], 1), 0)
    n, c, h, wd = r1.shape
    h2, w2 = h // 2, wd // 2
    p1 = r1[:, :, :h2 * 2, :w2 * 2].reshape(n, c, h2, 2, w2, 2).max(axis=(3, 5))
    r2 = np.maximum(conv2d(p1, w["w2"], w["b2"], 1), 0)
    flat = r2.mean(axis=(2, 3)).reshape(n, -1)
    logits = flat @ w["wfc"].T.astype(np.float64) + w["bfc"]
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"FAILED: {' '.join(cmd)}\n{p.stdout}\n{p.stderr}")
    return p.stdout


def parse_printed(text, label):
    """The values `tessera interpret --print-all` printed after `label`."""
    m = re.search(re.escape(label) + r": f32\[([0-9, ]*)\]\n  \[([^\]]*)\]", text)
    if not m:
        sys.exit(f"FAILED: no '{label}' in the interpreter's output:\n{text}")
    shape = tuple(int(d) for d in m.group(1).split(",")) if m.group(1) else ()
    return np.array([float(v) for v in m.group(2).split(",")], dtype=np.float32).reshape(shape)


def check_close(got, want, what):
    if got.shape != want.shape:
        sys.exit(f"FAILED: {what}: shape {got.shape}, expected {want.shape}")
    bad = np.abs(got - want) > 1e-4 + 1e-3 * np.abs(want)
    if bad.any():
        i = np.argwhere(bad)[0]
        sys.exit(f"FAILED: {what}: element {tuple(i)}: got {got[tuple(i)]}, "
                 f"expected {want[tuple(i)]}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tessera", required=True)
    ap.add_argument("--tessera-opt", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    w = weights()
    model = build_model(w)
    path = os.path.join(args.out, "small_cnn.onnx")
    onnx.save(model, path)

    # 1. Import with the dims bound; the shape sub-graph must fold away.
    tir = os.path.join(args.out, "small_cnn.tir")
    spec = "x=" + ",".join(map(str, SHAPE))
    run([args.tessera, "import", path, "--input-shape", spec, "-o", tir])
    text = open(tir).read()
    if not text.startswith("module @small_cnn"):
        sys.exit(f"FAILED: unexpected IR:\n{text}")
    if "def @main(%x: f32[2, 3, 17, 19]) -> f32[2, 10]" not in text:
        sys.exit(f"FAILED: @main's signature is not the bound one:\n{text}")
    for op in ("gather(", "concat(", "unsqueeze("):
        if op in text:
            sys.exit(f"FAILED: the shape sub-graph was not folded ({op} remains):\n{text}")
    if 'output_names="probs"' not in text:
        sys.exit(f"FAILED: output_names missing:\n{text}")
    # The text round-trips through tessera-opt (parse, verify, print).
    again = run([args.tessera_opt, tir, "--passes=verify"])
    if again != text:
        sys.exit("FAILED: tessera-opt did not print the imported IR back unchanged")

    # 2. The reference interpreter against numpy on the printed inputs.
    out = run([args.tessera, "interpret", tir, "--passes=verify", "--print-all", "--seed", "7"])
    x = parse_printed(out, "input %x")
    got = parse_printed(out, "output 0")
    check_close(got, reference(x, w).astype(np.float32), "interpreter vs numpy")

    # 3. A backend test with exact inputs through the conformance runner.
    test = os.path.join(args.out, "test_small_cnn")
    ds = os.path.join(test, "test_data_set_0")
    os.makedirs(ds, exist_ok=True)
    onnx.save(model, os.path.join(test, "model.onnx"))
    x = np.random.default_rng(1).uniform(-1, 1, (3, 3, 12, 15)).astype(np.float32)
    onnx.save_tensor(numpy_helper.from_array(x), os.path.join(ds, "input_0.pb"))
    onnx.save_tensor(numpy_helper.from_array(reference(x, w).astype(np.float32)),
                     os.path.join(ds, "output_0.pb"))
    conf = run([args.tessera, "conformance", test])
    if conf.strip().splitlines()[-1] != "1 passed, 0 failed, 0 unsupported":
        sys.exit(f"FAILED: conformance:\n{conf}")
    print("small CNN: import, text round-trip, interpreter and conformance OK")


if __name__ == "__main__":
    main()
