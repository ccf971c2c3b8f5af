#!/usr/bin/env python3
"""Run-time values (issue 21): a detector head with its post-processing made
the way torchvision exports SSD (onnx.helper, the node pattern of
torchvision's postprocess_detections and batched_nms at opset 13): per class
Greater -> NonZero -> GatherND, TopK by min(count, k) computed from Shape,
labels from ConstantOfShape, Concat over the classes, an If on whether any
box is left whose else branch offsets the boxes per label and runs
NonMaxSuppression, then the best `keep` by Slice and Gather. Every count is
decided by the data. Compiled host-only and with --target dnnl (the convs go
to oneDNN), run by `tessera run` in fresh processes against a NumPy
reference of the same computation (float32; boxes and scores within
1e-5 + 1e-5 |b|, labels exact): with detections in every class, with
suppression, with some classes empty, with no detection at all (the If's
empty branch), and with 8 classes (a concat of more counts than a host step
fits per symbol)."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_checker import GraphParts, checker_from_args  # noqa: E402

H, W, F = 6, 10, 8  # feature map and channels: 60 anchors
THRESHOLD, TOPK, IOU, KEEP = 0.3, 6, 0.45, 20


def anchors():
    ys, xs = np.meshgrid(np.arange(H, dtype=np.float32), np.arange(W, dtype=np.float32),
                         indexing="ij")
    c = np.stack([ys.ravel() * 10, xs.ravel() * 10], axis=1)
    return np.concatenate([c - 8, c + 8], axis=1).astype(np.float32)  # [y1, x1, y2, x2]


def weights(classes, seed):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((classes, F, 1, 1)).astype(np.float32),
            (rng.standard_normal(classes) * 0.5 - 1.0).astype(np.float32),
            rng.standard_normal((4, F, 1, 1)).astype(np.float32) * 0.5)


def model(classes, seed):
    wc, bc, wb = weights(classes, seed)
    g = GraphParts()
    inits, nodes, c, n = g.inits, g.nodes, g.const, g.node

    c("wc", wc), c("bc", bc), c("wb", wb), c("anchors", anchors())
    n("Conv", ["x", "wc", "bc"], ["logits"], name="/head/cls")
    n("Sigmoid", ["logits"], ["prob"])
    n("Transpose", ["prob"], ["prob_t"], perm=[0, 2, 3, 1])
    n("Reshape", ["prob_t", c("shape_s", np.array([H * W, classes], np.int64))], ["scores"])
    n("Conv", ["x", "wb"], ["deltas"], name="/head/box")
    n("Transpose", ["deltas"], ["deltas_t"], perm=[0, 2, 3, 1])
    n("Reshape", ["deltas_t", c("shape_b", np.array([H * W, 4], np.int64))], ["d"])
    n("Mul", ["d", c("four", np.float32(4))], ["d4"])
    n("Add", ["anchors", "d4"], ["raw"])
    n("Max", ["raw", c("lo", np.float32(0))], ["raw0"])
    n("Min", ["raw0", c("hi", np.float32(100))], ["boxes"])
    c("zero", np.int64(0)), c("ax0", np.array([0], np.int64)), c("one", np.array([1], np.int64))
    c("kmax", np.array([TOPK], np.int64)), c("thr", np.float32(THRESHOLD))
    per = {"b": [], "s": [], "l": []}
    for k in range(classes):
        p = f"c{k}_"
        n("Gather", ["scores", c(p + "k", np.int64(k))], [p + "s"], axis=1)
        n("Greater", [p + "s", "thr"], [p + "m"])
        n("NonZero", [p + "m"], [p + "nz"], name=f"/NonZero_{k}")
        n("Transpose", [p + "nz"], [p + "t"], perm=[1, 0])
        n("GatherND", [p + "s", p + "t"], [p + "sc"])
        n("GatherND", ["boxes", p + "t"], [p + "bx"])
        n("Shape", [p + "sc"], [p + "shape"])
        n("Gather", [p + "shape", "zero"], [p + "n"], axis=0)
        n("Unsqueeze", [p + "n", "ax0"], [p + "n1"])
        n("Concat", ["kmax", p + "n1"], [p + "kk"], axis=0)
        n("ReduceMin", [p + "kk"], [p + "kmin"], keepdims=0)
        n("Reshape", [p + "kmin", "one"], [p + "k1"])
        n("TopK", [p + "sc", p + "k1"], [p + "v", p + "i"], axis=-1, largest=1, sorted=1,
          name=f"/TopK_{k}")
        n("Gather", [p + "bx", p + "i"], [p + "b"], axis=0)
        n("Shape", [p + "v"], [p + "vs"])
        n("ConstantOfShape", [p + "vs"], [p + "l"],
          value=numpy_helper.from_array(np.array([k + 1], np.int64)))
        per["b"].append(p + "b"), per["s"].append(p + "v"), per["l"].append(p + "l")
    n("Concat", per["b"], ["all_boxes"], axis=0)
    n("Concat", per["s"], ["all_scores"], axis=0)
    n("Concat", per["l"], ["all_labels"], axis=0)

    def const(name, value):
        return helper.make_node("Constant", [], [name],
                                value=numpy_helper.from_array(np.asarray(value), name))

    else_nodes = [
        const("e_one", np.float32(1)), const("e_ax1", np.array([1], np.int64)),
        const("e_ax0", np.array([0], np.int64)), const("e_max", np.array([2**62], np.int64)),
        const("e_iou", np.array([IOU], np.float32)), const("e_two", np.array([2], np.int64)),
        helper.make_node("ReduceMax", ["all_boxes"], ["max_coordinate"], keepdims=0),
        helper.make_node("Cast", ["all_labels"], ["labels_f"], to=TensorProto.FLOAT),
        helper.make_node("Add", ["max_coordinate", "e_one"], ["m1"]),
        helper.make_node("Mul", ["labels_f", "m1"], ["offsets"]),
        helper.make_node("Unsqueeze", ["offsets", "e_ax1"], ["offsets1"]),
        helper.make_node("Add", ["all_boxes", "offsets1"], ["boxes_for_nms"]),
        helper.make_node("Unsqueeze", ["boxes_for_nms", "e_ax0"], ["b3"]),
        helper.make_node("Unsqueeze", ["all_scores", "e_ax0"], ["s2"]),
        helper.make_node("Unsqueeze", ["s2", "e_ax0"], ["s3"]),
        helper.make_node("NonMaxSuppression", ["b3", "s3", "e_max", "e_iou"], ["selected"]),
        helper.make_node("Gather", ["selected", "e_two"], ["sel2"], axis=1),
        helper.make_node("Squeeze", ["sel2", "e_ax1"], ["keep_idx"]),
    ]
    # As the exporter writes them: subgraph outputs without shapes.
    else_g = helper.make_graph(else_nodes, "else", [],
                               [helper.make_tensor_value_info("keep_idx", TensorProto.INT64, None)])
    then_g = helper.make_graph([const("empty", np.zeros(0, np.int64))], "then", [],
                               [helper.make_tensor_value_info("empty", TensorProto.INT64, None)])
    n("Shape", ["all_boxes"], ["all_shape"])
    n("ReduceProd", ["all_shape"], ["numel"], keepdims=0)
    n("Equal", ["numel", "zero"], ["is_empty"])
    n("If", ["is_empty"], ["kept"], then_branch=then_g, else_branch=else_g, name="/If")
    n("Slice", ["kept", "ax0", c("keep", np.array([KEEP], np.int64)), "ax0"], ["top"])
    n("Gather", ["all_boxes", "top"], ["det_boxes"], axis=0)
    n("Gather", ["all_scores", "top"], ["det_scores"], axis=0)
    n("Gather", ["all_labels", "top"], ["det_labels"], axis=0)
    graph = helper.make_graph(
        nodes, "detector", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, F, H, W])],
        [helper.make_tensor_value_info("det_boxes", TensorProto.FLOAT, ["D", 4]),
         helper.make_tensor_value_info("det_scores", TensorProto.FLOAT, ["D"]),
         helper.make_tensor_value_info("det_labels", TensorProto.INT64, ["D"])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def iou_above(a, b, threshold):
    """ONNX NonMaxSuppression's test, in float32 (corner boxes)."""
    a, b = a.astype(np.float32), b.astype(np.float32)
    y0, x0 = max(min(a[0], a[2]), min(b[0], b[2])), max(min(a[1], a[3]), min(b[1], b[3]))
    y1, x1 = min(max(a[0], a[2]), max(b[0], b[2])), min(max(a[1], a[3]), max(b[1], b[3]))
    if y1 <= y0 or x1 <= x0:
        return False
    inter = np.float32((y1 - y0) * (x1 - x0))
    area_a = np.float32(abs(a[2] - a[0]) * abs(a[3] - a[1]))
    area_b = np.float32(abs(b[2] - b[0]) * abs(b[3] - b[1]))
    union = np.float32(area_a + area_b - inter)
    return area_a > 0 and area_b > 0 and union > 0 and inter / union > np.float32(threshold)


def reference(x, classes, seed):
    wc, bc, wb = weights(classes, seed)
    feats = x[0].reshape(F, H * W).T  # [60, F]
    scores = 1 / (1 + np.exp(-(feats @ wc[:, :, 0, 0].T + bc)))
    boxes = np.clip(anchors() + (feats @ wb[:, :, 0, 0].T) * 4, 0, 100).astype(np.float32)
    scores = scores.astype(np.float32)
    all_b, all_s, all_l = [], [], []
    for k in range(classes):
        idx = np.nonzero(scores[:, k] > np.float32(THRESHOLD))[0]
        sc = scores[idx, k]
        order = np.argsort(-sc, kind="stable")[:min(TOPK, len(idx))]
        all_b.append(boxes[idx][order]), all_s.append(sc[order])
        all_l.append(np.full(len(order), k + 1, np.int64))
    all_b = np.concatenate(all_b).reshape(-1, 4)
    all_s, all_l = np.concatenate(all_s), np.concatenate(all_l)
    if all_b.size == 0:
        keep = np.zeros(0, np.int64)
    else:
        shifted = all_b + (all_l.astype(np.float32) * (all_b.max() + 1))[:, None]
        keep = []
        for i in np.argsort(-all_s, kind="stable"):
            if all(not iou_above(shifted[i], shifted[j], IOU) for j in keep):
                keep.append(i)
        keep = np.array(keep, np.int64)
    top = keep[:KEEP]
    return all_b[top], all_s[top], all_l[top]


def main():
    a, c = checker_from_args()
    cases = {  # name: (classes, weights seed, input scale; 0: nothing above the threshold)
        "three classes": (3, 1, 1.0),
        "eight classes": (8, 2, 1.0),
        "large activations": (3, 3, 3.0),
        "no detection": (3, 1, 0.0),
    }
    for classes, seed in sorted({(k, s) for k, s, _ in cases.values()}):
        path = c.path(f"detector_{classes}_{seed}.onnx")
        onnx.save(model(classes, seed), path)
        for target in ([], ["--target", "dnnl"]):
            label = f"detector_{classes}_{seed}" + ("_dnnl" if target else "")
            tsr = c.path(label + ".tsr")
            if c.step(label, lambda: c.tool("compile", path, *target, "-o", tsr)) is None:
                continue
            for name, (k, s, scale) in cases.items():
                if (k, s) != (classes, seed):
                    continue
                x = (np.random.default_rng(7).standard_normal((1, F, H, W)) * scale).astype(
                    np.float32)
                if scale == 0:  # every score sigmoid(bias) < threshold: no box at all
                    x = np.zeros_like(x)
                np.save(c.path("x.npy"), x)
                out = c.path(label + "_out.npz")
                if c.step(name, lambda: c.tool("run", tsr, "--inputs", "x=" + c.path("x.npy"),
                                               "--outputs", out)) is None:
                    continue
                got = np.load(out)
                want = reference(x, k, s)
                what = f"{name} ({' '.join(target) or 'host'})"
                c.close(got["det_boxes"], want[0], 1e-5, 1e-5, what + ": boxes")
                c.close(got["det_scores"], want[1], 1e-5, 1e-5, what + ": scores")
                c.close(got["det_labels"], want[2], 0, 0, what + ": labels")
                if name == "no detection":
                    c.ok(want[0].shape == (0, 4), "the no-detection input detects nothing")
                if name == "large activations":
                    c.ok(len(want[2]) > 0 and len(set(want[2].tolist())) > 1,
                         "detections of several classes", str(want[2]))
            info = c.tool("inspect", tsr).stdout
            c.ok("the data decides (nonzero '/NonZero_0': its count)" in info,
                 f"{label}: inspect names the run-time counts", info)
    return c.summary()


if __name__ == "__main__":
    sys.exit(main())
