#!/usr/bin/env python3
"""One artifact for every image size (issue 21): an ONNX segmentation-style
model made the way exporters make it (onnx.helper, symbolic N, H and W as
dim_params; the output resized back to the input's size through
Shape -> Slice -> Concat -> Resize, and by scales) compiled once with `--input-shape
x=N:1..2,3,H:1..256,W:1..256`, host-only and with --target dnnl (and once more
with no --input-shape at all, the dims then unbounded), and run by
`tessera run` in fresh processes at several sizes against a NumPy reference
(float64; |a-b| <= 1e-4 + 1e-4 |b|). An input too small for the model is an
error naming the op; an input above its bound names the input and symbol."""
import os
import re
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_checker import checker_from_args  # noqa: E402

RNG = np.random.default_rng(21)
W1 = RNG.standard_normal((6, 3, 3, 3)).astype(np.float32) * 0.5
B1 = RNG.standard_normal(6).astype(np.float32) * 0.1
W2 = RNG.standard_normal((6, 6, 3, 3)).astype(np.float32) * 0.3
W3 = RNG.standard_normal((4, 6, 1, 1)).astype(np.float32) * 0.5


def model():
    def const(name, array):
        return numpy_helper.from_array(np.asarray(array), name)

    nodes = [
        # 3x3 stride 2 unpadded: H >= 3 needed; then a 2x2 pool: H >= 5.
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], strides=[2, 2], name="down"),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2],
                         name="pool"),
        # Dilated like DeepLabV3's ASPP: on maps no wider than 3 only the
        # centre tap reads the input.
        helper.make_node("Conv", ["p1", "w2"], ["c2"], dilations=[3, 3], pads=[3, 3, 3, 3],
                         name="aspp"),
        helper.make_node("Add", ["c2", "p1"], ["a2"]),
        helper.make_node("Conv", ["a2", "w3"], ["logits"], name="classifier"),
        helper.make_node("Shape", ["x"], ["xs"]),
        helper.make_node("Shape", ["logits"], ["ls"]),
        helper.make_node("Slice", ["xs", "two", "four"], ["hw"]),
        helper.make_node("Slice", ["ls", "zero", "two"], ["nc"]),
        helper.make_node("Concat", ["nc", "hw"], ["sizes"], axis=0),
        helper.make_node("Resize", ["logits", "", "", "sizes"], ["out"], mode="linear",
                         coordinate_transformation_mode="half_pixel", name="upsample"),
        # By scales (F.interpolate(scale_factor=2)): dims floor(2 * h).
        helper.make_node("Resize", ["logits", "", "scales"], ["up2"], mode="nearest",
                         coordinate_transformation_mode="asymmetric", nearest_mode="floor",
                         name="twice"),
    ]
    inits = [const("w1", W1), const("b1", B1), const("w2", W2), const("w3", W3),
             const("zero", np.array([0], np.int64)), const("two", np.array([2], np.int64)),
             const("four", np.array([4], np.int64)),
             const("scales", np.array([1, 1, 2, 2], np.float32))]
    graph = helper.make_graph(
        nodes, "segment",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, "H", "W"])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, ["N", 4, "H", "W"]),
         helper.make_tensor_value_info("up2", TensorProto.FLOAT, ["N", 4, None, None])], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(m)
    return m


def conv(x, w, stride=1, pad=0, dilation=1, bias=None):
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    k = w.shape[2]
    span = (k - 1) * dilation + 1
    win = np.lib.stride_tricks.sliding_window_view(xp, (span, span), axis=(2, 3))
    win = win[:, :, ::stride, ::stride, ::dilation, ::dilation]
    y = np.einsum("nchwij,ocij->nohw", win, w.astype(np.float64), optimize=True)
    return y if bias is None else y + bias[None, :, None, None]


def resize_linear(x, oh, ow):
    """ONNX Resize, linear, half_pixel, along the last two dims."""
    def taps(n_in, n_out):
        src = np.clip((np.arange(n_out) + 0.5) * n_in / n_out - 0.5, 0, n_in - 1)
        lo = np.floor(src).astype(int)
        hi = np.minimum(lo + 1, n_in - 1)
        return lo, hi, src - lo
    lo, hi, f = taps(x.shape[2], oh)
    x = x[:, :, lo, :] * (1 - f)[None, None, :, None] + x[:, :, hi, :] * f[None, None, :, None]
    lo, hi, f = taps(x.shape[3], ow)
    return x[:, :, :, lo] * (1 - f) + x[:, :, :, hi] * f


def reference(x):
    x = x.astype(np.float64)
    r1 = np.maximum(conv(x, W1, stride=2, bias=B1), 0)
    n, c, h, w = r1.shape
    p1 = r1[:, :, :h // 2 * 2, :w // 2 * 2].reshape(n, c, h // 2, 2, w // 2, 2).max(axis=(3, 5))
    logits = conv(conv(p1, W2, pad=3, dilation=3) + p1, W3)
    up2 = np.repeat(np.repeat(logits, 2, axis=2), 2, axis=3)
    return resize_linear(logits, x.shape[2], x.shape[3]), up2


def run_sizes(c, tsr, label, sizes):
    """`tessera run` of one artifact at each (n, h, w), against NumPy."""
    for n, h, w in sizes:
        x = RNG.standard_normal((n, 3, h, w)).astype(np.float32)
        xp, out = c.path(f"{label}_x_{n}_{h}_{w}.npy"), c.path(f"{label}_{n}_{h}_{w}.npz")
        np.save(xp, x)
        if c.step(f"{label} {n}x3x{h}x{w}",
                  lambda: c.tool("run", tsr, "--inputs", "x=" + xp, "--outputs", out)) is None:
            continue
        got, (want, want2) = np.load(out), reference(x)
        c.close(got["out"], want, 1e-4, 1e-4, f"{label}: {n}x3x{h}x{w} vs numpy")
        c.close(got["up2"], want2, 1e-4, 1e-4, f"{label}: {n}x3x{h}x{w} by scales vs numpy")


WH = RNG.standard_normal((8, 3, 3, 3)).astype(np.float32) * 0.5
BH = RNG.standard_normal(8).astype(np.float32) * 0.1
WFC = RNG.standard_normal((5, 8)).astype(np.float32) * 0.5
BFC = RNG.standard_normal(5).astype(np.float32) * 0.1
HEADS = {"ReduceMean": lambda r: r.mean(axis=(2, 3)), "ReduceSum": lambda r: r.sum(axis=(2, 3)),
         "ReduceMax": lambda r: r.max(axis=(2, 3))}


def head_model(reduce_op):
    """Conv (stride 2, pad 1) -> Relu -> `reduce_op` over H and W -> Gemm, as
    torch.onnx.export writes x.mean((2, 3)) with dynamic H and W (opset 17:
    axes as an attribute for all but ReduceSum, whose axes are an input)."""
    inits = [numpy_helper.from_array(a, n) for a, n in
             ((WH, "wh"), (BH, "bh"), (WFC, "wfc"), (BFC, "bfc"))]
    if reduce_op == "ReduceSum":
        inits.append(numpy_helper.from_array(np.array([2, 3], np.int64), "axes"))
        reduce = helper.make_node(reduce_op, ["r", "axes"], ["m"], keepdims=0, name="head")
    else:
        reduce = helper.make_node(reduce_op, ["r"], ["m"], axes=[2, 3], keepdims=0, name="head")
    nodes = [helper.make_node("Conv", ["x", "wh", "bh"], ["c"], strides=[2, 2], pads=[1] * 4,
                              name="stem"),
             helper.make_node("Relu", ["c"], ["r"]), reduce,
             helper.make_node("Gemm", ["m", "wfc", "bfc"], ["y"], transB=1, name="fc")]
    graph = helper.make_graph(
        nodes, "classifier", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, "H", "W"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5])], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(m)
    return m


def check_heads(c):
    for reduce_op, fold in HEADS.items():
        path = c.path(f"head_{reduce_op}.onnx")
        onnx.save(head_model(reduce_op), path)
        for target in ("", "dnnl"):
            label = f"{reduce_op} head, {target or 'host'}"
            tsr = c.path(f"head_{reduce_op}_{target or 'host'}.tsr")
            args = ["compile", path, "-o", tsr] + (["--target", target] if target else [])
            if c.step(f"compile {label}", lambda: c.tool(*args)) is None:
                continue
            # No inputs: random ones at sizes the model runs at, chosen and said so;
            # only the inputs' dims are printed (no derived or internal symbol).
            r = c.tool("run", tsr)
            syms = re.findall(r"^symbol (\S+) = (\d+)(.*)$", r.stdout, re.M)
            c.ok(sorted(n for n, _, _ in syms) == ["H", "W"]
                 and all("chosen: doubled" in note for _, _, note in syms)
                 and "output 'y': f32[1, " in r.stdout,
                 f"{label}: `tessera run` with no inputs chooses H and W it runs at", r.stdout)
            r = c.tool("run", tsr, "--dim", "H=9", "--dim", "W=5")
            c.ok(re.search(r"^symbol H = 9$", r.stdout, re.M) is not None,
                 f"{label}: --dim sets a dim", r.stdout)
            for h, w in ((1, 1), (2, 7), (64, 64), (33, 100)):
                x = RNG.standard_normal((1, 3, h, w)).astype(np.float32)
                xp, out = c.path(f"head_x_{h}_{w}.npy"), c.path(f"head_{h}_{w}.npz")
                np.save(xp, x)
                if c.step(f"{label} at {h}x{w}", lambda: c.tool(
                        "run", tsr, "--inputs", "x=" + xp, "--outputs", out)) is None:
                    continue
                r = np.maximum(conv(x.astype(np.float64), WH, stride=2, pad=1, bias=BH), 0)
                want = fold(r) @ WFC.T.astype(np.float64) + BFC
                c.close(np.load(out)["y"], want, 1e-4, 1e-4, f"{label} at {h}x{w} vs numpy")


def main():
    a, c = checker_from_args()
    check_heads(c)
    path = c.path("segment.onnx")
    onnx.save(model(), path)
    for target in ("", "dnnl"):
        label = target or "host"
        tsr = c.path(f"segment_{label}.tsr")
        args = ["compile", path, "--input-shape", "x=N:1..2,3,H:1..256,W:1..256", "-o", tsr]
        compiled = c.step(f"compile {label}",
                          lambda: c.tool(*(args + (["--target", target] if target else []))))
        if compiled is None:
            continue
        text = c.tool("inspect", tsr).stdout
        if target:
            # dnnl takes symbolic dims (plugin ABI 1.4): the convs, the pool,
            # the 1x1 classifier and the resize back to the input's size
            # (its 'size' attribute holds H and W) run there, a plan per shape.
            c.ok("dnnl 1.0.0: 1 region (8 ops)" in text,
                 f"{label}: the convs and the pool run on dnnl over symbolic dims", text)
        symbols = c.inspect(tsr)["metadata"].get("symbols", [])
        derived = {s["name"]: s for s in symbols if "formula" in s}
        c.ok({"N", "H", "W"} <= {s["name"] for s in symbols} and len(derived) == 6,
             f"{label}: N, H, W and the 6 dims derived from them", str(symbols))
        c.ok("= floor((H - 1) / 2): 1..127 (dim 2 of conv2d 'down'" in text,
             f"{label}: inspect shows how the conv's height is computed", text)
        # Sizes where every dilated tap reads the input, only the centre, or
        # rows or columns only; odd sizes that the strides floor.
        run_sizes(c, tsr, label,
                  ((1, 5, 5), (2, 37, 50), (1, 96, 33), (1, 256, 17), (2, 64, 64)))
        small = c.path("segment_small.npy")
        np.save(small, np.zeros((1, 3, 4, 9), np.float32))
        r = c.tool("run", tsr, "--inputs", "x=" + small, rc=None)
        c.ok(r.returncode != 0 and "of max_pool2d 'pool'" in r.stderr and
             "with" in r.stderr and "too small for this model" in r.stderr,
             f"{label}: an input too small for the pool is refused naming it", r.stderr)
        big = c.path("segment_big.npy")
        np.save(big, np.zeros((3, 3, 8, 8), np.float32))
        r = c.tool("run", tsr, "--inputs", "x=" + big, rc=None)
        c.ok(r.returncode != 0 and "input 'x': dim 0 (N) is 3, outside its bounds 1..2"
             in r.stderr, f"{label}: a batch above its bound is refused by name", r.stderr)
    # No --input-shape: the dims the model leaves free stay symbolic (1..,
    # unbounded), compile says so, and with dnnl (plugin ABI 1.4) the convs
    # still run there; one artifact at two sizes against NumPy.
    tsr = c.path("segment_unbound.tsr")
    compiled = c.step("compile dnnl, no --input-shape",
                      lambda: c.tool("compile", path, "--target", "dnnl", "-o", tsr))
    if compiled is not None:
        c.ok("Symbolic dims: N 1.. (input 'x' dim 0), H 1.. (input 'x' dim 2), W 1.. "
             "(input 'x' dim 3)" in compiled.stdout,
             "unbound: tessera compile lists the symbolic dims and the rule", compiled.stdout)
        c.ok("dnnl 1.0.0: 1 region (8 ops)" in c.tool("inspect", tsr).stdout,
             "unbound: the convs run on dnnl")
        run_sizes(c, tsr, "unbound", ((1, 29, 31), (3, 300, 64)))
    return c.summary()


if __name__ == "__main__":
    sys.exit(main())
