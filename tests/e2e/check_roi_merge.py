#!/usr/bin/env python3
"""Dims the data decides, equal only when the model runs (issue 41, item 5):
the pattern of torchvision's MultiScaleRoIAlign as two-stage detectors
export it (_onnx_merge_levels), written with onnx.helper. Each RoI has a
level computed from the data; per level, NonZero picks its RoIs, their
features are gathered (roi_align in torchvision), and ScatterElements writes
them back at indices expanded to the features' shape, a shape that torch
writes as `where(shape == -1, 1, shape)` over Shape values holding the
NonZero count R.

- "one count": the indices and the features come from one NonZero, so both
  have R rows; `R == -1` must be decided false at compile time (a count is
  never negative), or Expand's shape becomes data and the scatter's rule
  fails to compile. inspect must show no run-time dim made for Expand.
- "two counts": the features are gathered by a second NonZero over the same
  mask (count R2), which no compile-time reasoning shows equal to R: the
  scatter is compiled with R2 = R checked when the model runs.
- "two masks": the second NonZero is over a different mask (a level off by
  one), so R2 differs from R at run time: the run must stop with an error
  naming the node and both dims, not scatter out of bounds.

Compiled host-only and with --target dnnl, run by `tessera run` in fresh
processes, against NumPy (exact: the result is a permutation of scaled
inputs), with levels spread over the three, and with one level empty.

The same rule for the inputs' own symbols: x [N, 4] + y [M, 4] (two names
for what is one batch), and a U-Net-style skip: x [1, 2, H, W] + upsample(
maxpool(x)), whose dims 2 floor(H / 2) equal H only for even H. Both compile;
they run where the dims agree and stop, naming the node, where not."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_checker import GraphParts, checker_from_args  # noqa: E402

N, C, S, LEVELS = 12, 3, 2, 3


def model(variant):
    g = GraphParts()
    inits, nodes, c, n = g.inits, g.nodes, g.const, g.node

    # levels = (score > 0) + (score > 1): 0, 1 or 2 per RoI, decided by data.
    c("zero", np.float32(0)), c("one_f", np.float32(1))
    n("Greater", ["score", "zero"], ["g0"]), n("Greater", ["score", "one_f"], ["g1"])
    n("Cast", ["g0"], ["l0"], to=TensorProto.INT64), n("Cast", ["g1"], ["l1"], to=TensorProto.INT64)
    n("Add", ["l0", "l1"], ["levels"])
    n("Shape", ["feats"], ["fshape"])
    n("ConstantOfShape", ["fshape"], ["res_0"],
      value=numpy_helper.from_array(np.zeros(1, np.float32)))
    c("minus1_4", np.array([-1, 1, 1, 1], np.int64)), c("minus1", np.array([-1], np.int64))
    c("i0", np.array(0, np.int64)), c("i1", np.array(1, np.int64))
    c("i2", np.array(2, np.int64)), c("i3", np.array(3, np.int64)), c("ax0", np.array([0], np.int64))
    res = "res_0"
    for k in range(LEVELS):
        p = f"/merge/L{k}_"
        lvl = c(p + "k", np.array(k, np.int64))
        n("Equal", ["levels", lvl], [p + "eq"], name=p + "Equal")
        n("NonZero", [p + "eq"], [p + "nz"], name=p + "NonZero")
        n("Transpose", [p + "nz"], [p + "nzt"], perm=[1, 0])
        n("Reshape", [p + "nzt", "minus1"], [p + "idx"])
        rows = p + "idx"
        if variant in ("two counts", "two masks"):
            other = c(p + "k2", np.array(k if variant == "two counts" else (k + 1) % LEVELS, np.int64))
            n("Equal", ["levels", other], [p + "eq2"], name=p + "Equal_2")
            n("NonZero", [p + "eq2"], [p + "nz2"], name=p + "NonZero_2")
            n("Reshape", [p + "nz2", "minus1"], [p + "idx2"])
            rows = p + "idx2"
        n("Gather", ["feats", rows], [p + "g"], axis=0)
        n("Mul", [p + "g", c(p + "scale", np.float32(k + 1))], [p + "upd"])
        n("Reshape", [p + "idx", "minus1_4"], [p + "index"])
        # torch's expand(index.size(0), upd.size(1), upd.size(2), upd.size(3))
        dims = []
        for d, (src, at) in enumerate([(p + "index", "i0"), (p + "upd", "i1"),
                                       (p + "upd", "i2"), (p + "upd", "i3")]):
            n("Shape", [src], [p + f"s{d}"])
            n("Gather", [p + f"s{d}", at], [p + f"d{d}"], axis=0)
            dims.append(n("Unsqueeze", [p + f"d{d}", "ax0"], [p + f"u{d}"]))
        n("Concat", dims, [p + "shape"], axis=0)
        n("Shape", [p + "shape"], [p + "sshape"])
        n("ConstantOfShape", [p + "sshape"], [p + "ones"],
          value=numpy_helper.from_array(np.ones(1, np.int64)))
        n("Mul", [p + "ones", "minus1"], [p + "neg"])
        n("Equal", [p + "shape", p + "neg"], [p + "is_neg"])
        n("Where", [p + "is_neg", p + "ones", p + "shape"], [p + "target"])
        n("Expand", [p + "index", p + "target"], [p + "expanded"], name=p + "Expand")
        res = n("ScatterElements", [res, p + "expanded", p + "upd"], [f"res_{k + 1}"],
                axis=0, name=p + "ScatterElements")
    n("Identity", [res], ["merged"])
    graph = helper.make_graph(
        nodes, "roi_merge",
        [helper.make_tensor_value_info("score", TensorProto.FLOAT, [N]),
         helper.make_tensor_value_info("feats", TensorProto.FLOAT, [N, C, S, S])],
        [helper.make_tensor_value_info("merged", TensorProto.FLOAT, [N, C, S, S])], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(m)
    return m


def named_dims_models():
    """{name: model} for the two models over the inputs' own symbols."""
    two_names = helper.make_graph(
        [helper.make_node("Add", ["x", "y"], ["z"], name="/skip/Add")], "two_names",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4]),
         helper.make_tensor_value_info("y", TensorProto.FLOAT, ["M", 4])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, ["N", 4])])
    skip = helper.make_graph(
        [helper.make_node("MaxPool", ["x"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
         helper.make_node("Resize", ["p", "", "scales"], ["u"], mode="nearest"),
         helper.make_node("Add", ["x", "u"], ["z"], name="/skip/Add")], "skip",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, "H", "W"])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 2, "H", "W"])],
        [numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")])
    return {name: helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
            for name, g in (("two_names", two_names), ("skip", skip))}


def skip_reference(x):
    n, ch, h, w = x.shape
    p = x.reshape(n, ch, h // 2, 2, w // 2, 2).max(axis=(3, 5))
    return x + p.repeat(2, axis=2).repeat(2, axis=3)


def named_dims_checks(c):
    rng = np.random.default_rng(3)
    for name, m in named_dims_models().items():
        path = c.path(name + ".onnx")
        onnx.save(m, path)
        tsr = c.path(name + ".tsr")
        if c.step(name, lambda: c.tool("compile", path, "-o", tsr)) is None:
            continue
        if name == "two_names":
            cases = [({"x": (3, 4), "y": (3, 4)}, True), ({"x": (3, 4), "y": (5, 4)}, False)]
        else:
            cases = [({"x": (1, 2, 8, 6)}, True), ({"x": (1, 2, 7, 6)}, False)]
        for shapes, agree in cases:
            arrays = {k: rng.standard_normal(v).astype(np.float32) for k, v in shapes.items()}
            args = []
            for k, v in arrays.items():
                np.save(c.path(f"{name}_{k}.npy"), v)
                args += ["--inputs", f"{k}={c.path(f'{name}_{k}.npy')}"]
            out = c.path(name + "_out.npz")
            r = c.tool("run", tsr, *args, "--outputs", out, rc=None)
            what = f"{name} at {shapes}"
            if agree:
                if c.ok(r.returncode == 0, what + ": runs", r.stderr):
                    want = (arrays["x"] + arrays["y"] if name == "two_names"
                            else skip_reference(arrays["x"]))
                    c.close(np.load(out)["z"], want, 0, 0, what)
            else:
                c.ok(r.returncode != 0 and "/skip/Add" in r.stderr and "must equal" in r.stderr,
                     what + ": the run stops, naming the node and the dims", r.stderr)


def reference(score, feats):
    levels = (score > 0).astype(np.int64) + (score > 1).astype(np.int64)
    return feats * (levels + 1).astype(np.float32)[:, None, None, None]


def main():
    _, c = checker_from_args()
    rng = np.random.default_rng(5)
    feats = rng.standard_normal((N, C, S, S)).astype(np.float32)
    inputs = {
        "spread": np.linspace(-1.5, 2.5, N).astype(np.float32),   # all three levels
        "level 1 empty": np.where(np.arange(N) % 2 == 0, -1.0, 3.0).astype(np.float32),
    }
    np.save(c.path("feats.npy"), feats)
    for variant in ("one count", "two counts", "two masks"):
        path = c.path(variant.replace(" ", "_") + ".onnx")
        onnx.save(model(variant), path)
        for target in ([], ["--target", "dnnl"]):
            label = variant.replace(" ", "_") + ("_dnnl" if target else "")
            tsr = c.path(label + ".tsr")
            if c.step(label, lambda: c.tool("compile", path, *target, "-o", tsr)) is None:
                continue
            info = c.tool("inspect", tsr).stdout
            c.ok("Expand_dim" not in info and "Expand" not in info.split("run-time dims")[-1],
                 f"{label}: Expand's shape is known at compile time (no run-time dim for it)",
                 info)
            for name, score in inputs.items():
                np.save(c.path("score.npy"), score)
                out = c.path(label + "_out.npz")
                run = c.tool("run", tsr, "--inputs", "score=" + c.path("score.npy"),
                             "--inputs", "feats=" + c.path("feats.npy"), "--outputs", out,
                             rc=None)
                what = f"{variant}, {name} ({' '.join(target) or 'host'})"
                if variant == "two masks":
                    # Level k's rows against level k+1's: the counts differ in
                    # both inputs (level 1 empty: 0 rows against 6).
                    c.ok(run.returncode != 0, what + ": the run stops", run.stdout + run.stderr)
                    c.ok("must equal dim 0 of argument 1" in run.stderr
                         and "/merge/L0_ScatterElements" in run.stderr,
                         what + ": the error names the node and the dims", run.stderr)
                    continue
                if not c.ok(run.returncode == 0, what + ": runs", run.stdout + run.stderr):
                    continue
                c.close(np.load(out)["merged"], reference(score, feats), 0, 0, what)
    named_dims_checks(c)
    return c.summary()


if __name__ == "__main__":
    sys.exit(main())
