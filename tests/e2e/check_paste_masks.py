#!/usr/bin/env python3
"""A loop whose carried value grows, over sizes the data decides (issue 41,
item 5): the pattern of torchvision's _onnx_paste_masks_in_image_loop, which
Mask R-CNN exports to paste each detection's mask into the image, written
with onnx.helper. The detections are the boxes whose score passes a
threshold (NonZero: a count the data decides, so the Loop runs at run time).
Per detection the body resizes its MxM mask (Resize, linear, half_pixel) to
its box's size given as data values, pads it with zeros above, below, left
and right (ConstantOfShape over data values, Concat) to the image, and
appends it to the carried result: res = Concat(res, Unsqueeze(mask)), res
starting as zeros [0, H, W].

The importer must make the grown carried value a scan output (its rows are
the iterations), make the resize's output dims run-time values, and check
when the model runs that each pasted mask has the image's H and W (dims the
data decides, equal only at run time). Compiled host-only and with --target
dnnl, run by `tessera run` against NumPy (bilinear resize as ONNX defines it,
within 1e-5), with several detections, one, and none (the trip count, read
from NonZero's count, must be read after NonZero runs); a box that reaches
past the image asks for a negative number of rows, and the run must stop
with an error naming the node, not write out of bounds."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_checker import checker_from_args  # noqa: E402

B, M, H, W = 6, 4, 24, 20  # candidate boxes, mask size, image size


def model():
    inits = []

    def c(name, value):
        inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def zeros_of(shape_name, out, nodes):
        nodes.append(helper.make_node("ConstantOfShape", [shape_name], [out],
                                      value=numpy_helper.from_array(np.zeros(1, np.float32))))

    # The body: (i, cond, res) -> (cond, res ++ [pasted mask i]).
    b = []

    def n(op, ins, outs, **kw):
        b.append(helper.make_node(op, ins, outs, **kw))
        return outs[0]

    n("Gather", ["kept_boxes", "i"], ["box"], axis=0)            # [4] i64: x0, y0, x1, y1
    n("Gather", ["kept_masks", "i"], ["mask"], axis=0)           # [M, M]
    for k, name in enumerate(["x0", "y0", "x1", "y1"]):
        n("Gather", ["box", c(f"at{k}", np.array([k], np.int64))], [name], axis=0)  # [1]
    n("Sub", ["x1", "x0"], ["w"]), n("Sub", ["y1", "y0"], ["h"])
    n("Reshape", ["mask", c("nchw", np.array([1, 1, M, M], np.int64))], ["mask4"])
    n("Concat", [c("ones2", np.array([1, 1], np.int64)), "h", "w"], ["sizes"], axis=0)
    n("Resize", ["mask4", "", "", "sizes"], ["resized4"], mode="linear",
      coordinate_transformation_mode="half_pixel", name="/paste/Resize")
    n("Gather", ["resized4", c("zero", np.array(0, np.int64))], ["resized3"], axis=0)
    n("Gather", ["resized3", "zero"], ["resized"], axis=0)       # [h, w]
    # Rows: zeros [y0, w], the mask, zeros [H - y1, w].
    n("Sub", [c("H", np.array([H], np.int64)), "y1"], ["below"])
    n("Concat", ["y0", "w"], ["top_shape"], axis=0), zeros_of("top_shape", "top", b)
    n("Concat", ["below", "w"], ["bottom_shape"], axis=0), zeros_of("bottom_shape", "bottom", b)
    n("Concat", ["top", "resized", "bottom"], ["column"], axis=0, name="/paste/Concat_rows")
    # Columns: zeros [rows, x0], the column, zeros [rows, W - x1].
    n("Shape", ["column"], ["column_shape"])
    n("Slice", ["column_shape", c("s0", np.array([0], np.int64)), c("s1", np.array([1], np.int64))],
      ["rows"])
    n("Sub", [c("W", np.array([W], np.int64)), "x1"], ["right"])
    n("Concat", ["rows", "x0"], ["left_shape"], axis=0), zeros_of("left_shape", "left", b)
    n("Concat", ["rows", "right"], ["right_shape"], axis=0), zeros_of("right_shape", "rightz", b)
    n("Concat", ["left", "column", "rightz"], ["pasted"], axis=1, name="/paste/Concat_cols")
    n("Unsqueeze", ["pasted", c("ax0", np.array([0], np.int64))], ["pasted3"])
    n("Concat", ["res_in", "pasted3"], ["res_out"], axis=0, name="/paste/Concat_append")
    n("Identity", ["cond_in"], ["cond_out"])
    body = helper.make_graph(
        b, "paste_one",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("res_in", TensorProto.FLOAT, [None, H, W])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("res_out", TensorProto.FLOAT, [None, H, W])])

    g = []

    def m(op, ins, outs, **kw):
        g.append(helper.make_node(op, ins, outs, **kw))
        return outs[0]

    m("Greater", ["scores", c("threshold", np.float32(0.5))], ["passes"])
    m("NonZero", ["passes"], ["nz"], name="/paste/NonZero")
    m("Reshape", ["nz", c("flat", np.array([-1], np.int64))], ["kept"])
    m("Gather", ["boxes", "kept"], ["kept_boxes"], axis=0)
    m("Gather", ["masks", "kept"], ["kept_masks"], axis=0)
    m("Shape", ["kept"], ["kept_shape"])
    m("Gather", ["kept_shape", c("first", np.array(0, np.int64))], ["trips"], axis=0)
    m("ConstantOfShape", [c("empty_shape", np.array([0, H, W], np.int64))], ["res0"],
      value=numpy_helper.from_array(np.zeros(1, np.float32)))
    m("Loop", ["trips", c("true", np.array(True)), "res0"], ["pasted_masks"], body=body,
      name="/paste/Loop")
    graph = helper.make_graph(
        g, "paste_masks",
        [helper.make_tensor_value_info("scores", TensorProto.FLOAT, [B]),
         helper.make_tensor_value_info("boxes", TensorProto.INT64, [B, 4]),
         helper.make_tensor_value_info("masks", TensorProto.FLOAT, [B, M, M])],
        [helper.make_tensor_value_info("pasted_masks", TensorProto.FLOAT, [None, H, W])], inits)
    mod = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(mod)
    return mod


def resize_linear(a, h, w):
    """ONNX Resize, mode linear, half_pixel, of a 2-D array to [h, w]."""
    def taps(n_in, n_out):
        src = np.clip((np.arange(n_out) + 0.5) * (n_in / n_out) - 0.5, 0, n_in - 1)
        lo = np.floor(src).astype(int)
        return lo, np.minimum(lo + 1, n_in - 1), src - lo
    y0, y1, fy = taps(a.shape[0], h)
    x0, x1, fx = taps(a.shape[1], w)
    rows = a[y0] * (1 - fy)[:, None] + a[y1] * fy[:, None]
    return rows[:, x0] * (1 - fx) + rows[:, x1] * fx


def reference(scores, boxes, masks):
    out = []
    for k in np.flatnonzero(scores > 0.5):
        x0, y0, x1, y1 = boxes[k]
        image = np.zeros((H, W), np.float64)
        image[y0:y1, x0:x1] = resize_linear(masks[k].astype(np.float64), y1 - y0, x1 - x0)
        out.append(image)
    return np.array(out, np.float32).reshape(-1, H, W)


def main():
    _, c = checker_from_args()
    rng = np.random.default_rng(11)
    masks = rng.standard_normal((B, M, M)).astype(np.float32)
    boxes = np.array([[0, 0, 5, 7], [3, 2, 20, 24], [10, 12, 13, 13], [1, 15, 19, 22],
                      [7, 3, 8, 11], [2, 4, 14, 9]], np.int64)  # x0, y0, x1, y1
    cases = {
        "four detections": np.array([0.9, 0.2, 0.8, 0.7, 0.1, 0.6], np.float32),
        "one detection": np.array([0.1, 0.9, 0.2, 0.3, 0.4, 0.0], np.float32),
        "no detection": np.zeros(B, np.float32),
    }
    path = c.path("paste_masks.onnx")
    onnx.save(model(), path)
    np.save(c.path("masks.npy"), masks)
    for target in ([], ["--target", "dnnl"]):
        label = "paste_masks" + ("_dnnl" if target else "")
        tsr = c.path(label + ".tsr")
        if c.step(label, lambda: c.tool("compile", path, *target, "-o", tsr)) is None:
            continue

        def run(scores, box_values):
            np.save(c.path("scores.npy"), scores)
            np.save(c.path("boxes.npy"), box_values)
            out = c.path(label + "_out.npz")
            r = c.tool("run", tsr, "--inputs", "scores=" + c.path("scores.npy"),
                       "--inputs", "boxes=" + c.path("boxes.npy"),
                       "--inputs", "masks=" + c.path("masks.npy"), "--outputs", out, rc=None)
            return r, out

        for name, scores in cases.items():
            what = f"{name} ({' '.join(target) or 'host'})"
            r, out = run(scores, boxes)
            if not c.ok(r.returncode == 0, what + ": runs", r.stdout + r.stderr):
                continue
            c.close(np.load(out)["pasted_masks"], reference(scores, boxes, masks), 1e-5, 1e-5,
                    what)
        # A box reaching past the image's bottom: H - y1 < 0 rows of zeros below
        # it (ONNX Runtime refuses the ConstantOfShape too).
        past = boxes.copy()
        past[0] = [0, 20, 5, 30]
        r, _ = run(cases["one detection"] * 0 + np.array([0.9, 0, 0, 0, 0, 0], np.float32), past)
        what = f"a box past the image ({' '.join(target) or 'host'})"
        c.ok(r.returncode != 0, what + ": the run stops", r.stdout + r.stderr)
        c.ok("node 'ConstantOfShape" in r.stderr and "negative" in r.stderr,
             what + ": the error names the node and the rule", r.stderr)
    return c.summary()


if __name__ == "__main__":
    sys.exit(main())
