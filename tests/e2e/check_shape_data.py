#!/usr/bin/env python3
"""Shape arguments that are data (issue 21, docs/design/0013 section 7):
ONNX Reshape, Expand, Tile, Slice and TopK whose shape, repeats, starts,
ends or K are model inputs or computed from them, so that the importer cannot know
them. Each imports with unbounded run-time dims (`tessera import` shows
them), compiles once host-only and once with --target dnnl, and runs in a
fresh process at several values, among them empty results, out-of-range
starts and ends, a 0 and a -1 in a Reshape, and an input dim that is a
symbol; every output is compared exactly with NumPy's, and with the
reference interpreter through `tessera conformance`. Values that ONNX
forbids (a Reshape that changes the element count, a shape that does not
broadcast, a negative repeat, a K past the axis) stop the run with an error naming the node.

Usage: check_shape_data.py --tessera BIN --source-dir DIR --out DIR
"""
import re
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from e2e_checker import checker_from_args

F32, I64 = TensorProto.FLOAT, TensorProto.INT64


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def model(nodes, inputs, outputs, initializers=()):
    g = helper.make_graph(nodes, "shape_data", inputs, outputs, list(initializers))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def reshape_model():
    """z = relu(Reshape(x, Concat(Unsqueeze(n), s))) with x f32[N, 6]: the
    leading dim a model input, as `x.view(n, ...)` exports."""
    nodes = [helper.make_node("Unsqueeze", ["n", "axes"], ["n1"]),
             helper.make_node("Concat", ["n1", "s"], ["shape"], axis=0),
             helper.make_node("Reshape", ["x", "shape"], ["y"], name="view"),
             helper.make_node("Relu", ["y"], ["z"])]
    return model(nodes, [vi("x", F32, ["N", 6]), vi("n", I64, []), vi("s", I64, [2])],
                 [vi("z", F32, None)],
                 [numpy_helper.from_array(np.array([0], np.int64), "axes")])


def reshape_reference(x, n, s):
    shape = [int(n)] + [int(v) for v in s]
    shape = [x.shape[i] if v == 0 else v for i, v in enumerate(shape)]
    return [np.maximum(x.reshape(shape), 0)]


def expand_model():
    return model([helper.make_node("Expand", ["x", "shape"], ["y"], name="widen")],
                 [vi("x", F32, [3, 1]), vi("shape", I64, [3])], [vi("y", F32, None)])


def tile_model():
    return model([helper.make_node("Tile", ["x", "r"], ["y"], name="tiles")],
                 [vi("x", F32, ["N", 3]), vi("r", I64, [2])], [vi("y", F32, None)])


def slice_model():
    """Slice over axes [0, 1] with steps [1, -2]: starts and ends inputs."""
    return model([helper.make_node("Slice", ["x", "st", "en", "axes", "steps"], ["y"],
                                   name="window")],
                 [vi("x", F32, [5, 6]), vi("st", I64, [2]), vi("en", I64, [2])],
                 [vi("y", F32, None)],
                 [numpy_helper.from_array(np.array([0, 1], np.int64), "axes"),
                  numpy_helper.from_array(np.array([1, -2], np.int64), "steps")])


def slice_reference(x, st, en):
    return [x[st[0]:en[0]:1, st[1]:en[1]:-2]]


def topk_model():
    return model([helper.make_node("TopK", ["x", "k"], ["values", "indices"], name="best", axis=1)],
                 [vi("x", F32, [3, 10]), vi("k", I64, [1])],
                 [vi("values", F32, None), vi("indices", I64, None)])


def topk_reference(x, k):
    order = np.argsort(-x, axis=1, kind="stable")[:, :int(k[0])]
    return [np.take_along_axis(x, order, 1), order.astype(np.int64)]


def main():
    a, c = checker_from_args()
    rng = np.random.default_rng(5)
    i64 = lambda v: np.array(v, np.int64)
    x24 = rng.standard_normal((4, 6)).astype(np.float32)
    x3 = np.array([[1.5], [-2.0], [3.25]], np.float32)
    cases = {
        "reshape": (reshape_model(), "view", reshape_reference, [
            {"x": x24, "n": i64(2), "s": i64([3, 4])},
            {"x": x24, "n": i64(-1), "s": i64([2, 2])},     # -1 inferred: 6
            {"x": x24, "n": i64(0), "s": i64([-1, 2])},     # 0 copies N = 4
            {"x": rng.standard_normal((7, 6)).astype(np.float32), "n": i64(42),
             "s": i64([1, 1])},
            {"x": rng.standard_normal((2, 6)).astype(np.float32), "n": i64(0),
             "s": i64([3, 2])},                             # 0 copies N = 2
        ], [{"x": x24, "n": i64(5), "s": i64([5, 1])},      # 25 elements for 24
            {"x": x24, "n": i64(-1), "s": i64([-1, 2])}]),  # two -1
        "expand": (expand_model(), "widen", lambda x, shape: [x * np.ones(shape, np.float32)], [
            {"x": x3, "shape": i64([2, 3, 4])},
            {"x": x3, "shape": i64([1, 1, 1])},
            {"x": x3, "shape": i64([1, 3, 0])},
            {"x": x3, "shape": i64([5, 1, 40])},
        ], [{"x": x3, "shape": i64([2, 2, 1])}]),          # 2 against x's 3
        "tile": (tile_model(), "tiles", lambda x, r: [np.tile(x, r)], [
            {"x": rng.standard_normal((2, 3)).astype(np.float32), "r": i64([1, 1])},
            {"x": rng.standard_normal((2, 3)).astype(np.float32), "r": i64([3, 2])},
            {"x": rng.standard_normal((5, 3)).astype(np.float32), "r": i64([0, 4])},
            {"x": rng.standard_normal((1, 3)).astype(np.float32), "r": i64([20, 7])},
        ], [{"x": rng.standard_normal((2, 3)).astype(np.float32), "r": i64([2, -1])}]),
        "slice": (slice_model(), "window", slice_reference, [
            {"x": np.arange(30, dtype=np.float32).reshape(5, 6), "st": i64([0, -1]),
             "en": i64([5, -100])},
            {"x": np.arange(30, dtype=np.float32).reshape(5, 6), "st": i64([1, 5]),
             "en": i64([3, 0])},
            {"x": np.arange(30, dtype=np.float32).reshape(5, 6), "st": i64([-100, 100]),
             "en": i64([100, -100])},
            {"x": np.arange(30, dtype=np.float32).reshape(5, 6), "st": i64([4, 2]),
             "en": i64([1, 4])},                               # empty on both axes
            {"x": np.arange(30, dtype=np.float32).reshape(5, 6), "st": i64([2, 0]),
             "en": i64([-1, -7])},
        ], []),
        "topk": (topk_model(), "best", topk_reference, [
            {"x": rng.permutation(30).reshape(3, 10).astype(np.float32), "k": i64([3])},
            {"x": rng.permutation(30).reshape(3, 10).astype(np.float32), "k": i64([0])},
            {"x": rng.permutation(30).reshape(3, 10).astype(np.float32), "k": i64([10])},
        ], [{"x": np.zeros((3, 10), np.float32), "k": i64([11])}]),
    }
    for label, (m, node, reference, good, bad) in cases.items():
        path = c.path(f"{label}.onnx")
        onnx.save(m, path)
        text = c.step(f"{label}: import", lambda: c.tool("import", path).stdout)
        if text is None:
            continue
        c.ok(re.search(rf"\b{node}_\w+\(0\)", text) is not None,
             f"{label}: a shape argument of data imports as unbounded run-time dims", text)
        for target in ("", "dnnl"):
            tag = f"{label} ({target or 'host'})"
            tsr = c.path(f"{label}_{target or 'host'}.tsr")
            args = ["compile", path, "-o", tsr] + (["--target", target] if target else [])
            if c.step(f"{tag}: compile", lambda: c.tool(*args)) is None:
                continue
            for i, feeds in enumerate(good):
                npz, out = c.path(f"{label}_{i}.npz"), c.path(f"{label}_{target}_{i}_out.npz")
                np.savez(npz, **feeds)
                if c.step(f"{tag} case {i}", lambda: c.tool("run", tsr, "--inputs", npz,
                                                            "--outputs", out)) is None:
                    continue
                got = np.load(out)
                for o, want in zip(m.graph.output, reference(**feeds)):
                    c.close(got[o.name], want, 0, 0, f"{tag} case {i} output '{o.name}'")
            for i, feeds in enumerate(bad):
                npz = c.path(f"{label}_bad{i}.npz")
                np.savez(npz, **feeds)
                r = c.tool("run", tsr, "--inputs", npz, "--outputs", c.path("bad_out.npz"),
                           rc=None)
                values = {k: v.tolist() for k, v in feeds.items() if k != "x"}
                c.ok(r.returncode != 0 and f"node '{node}'" in r.stderr and "must" in r.stderr,
                     f"{tag}: values ONNX forbids stop the run naming the node ({values})",
                     r.stderr)
        # The reference interpreter on the same models.
        for i, feeds in enumerate(good):
            want = dict(zip([o.name for o in m.graph.output], reference(**feeds)))
            folder = c.backend_folder(f"{label}_case{i}", path, feeds, want)
            c.conformance(folder, f"{label} case {i}: the reference interpreter")
    return c.summary()


if __name__ == "__main__":
    sys.exit(main())
