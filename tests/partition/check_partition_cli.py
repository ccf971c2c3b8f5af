#!/usr/bin/env python3
"""`tessera partition` end to end on an ONNX CNN with the shipped json plugin.

Builds with python3-onnx a small CNN (weights as initializers) that mixes ops
the json plugin claims (Conv, Relu, GlobalAveragePool, Flatten, Gemm,
Softmax) with ops it does not list (Sin, Cos), so that the partition has
json regions, host ops no target supports, and a json region holding only a
Relu between Sin and Cos, which the default rule prunes (no compute-heavy
op). Then runs
    tessera partition model.onnx --target json --report --dot D --html H -o T
and checks the report (regions, host ops grouped by reason, ONNX node
names), the DOT file (and `dot -Tsvg` when Graphviz is installed), the HTML
file (self-contained: no http:// or https://) and the partitioned text IR
(tessera-opt reads it back). Also checks the one-line errors for an unknown
target and a missing model. Generated files go to --out (the build tree).

Usage: check_partition_cli.py --tessera BIN --tessera-opt BIN --out DIR
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def build_model():
    rng = np.random.default_rng(0)
    f = lambda *s: (rng.standard_normal(s) * 0.3).astype(np.float32)
    inits = {"w1": f(8, 3, 3, 3), "b1": f(8), "w2": f(16, 8, 3, 3), "b2": f(16),
             "wfc": f(10, 16), "bfc": f(10)}
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1",
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Sin", ["r1"], ["s1"], name="sin1"),
        helper.make_node("Relu", ["s1"], ["r_mid"], name="relu_mid"),
        helper.make_node("Cos", ["r_mid"], ["k1"], name="cos1"),
        helper.make_node("Conv", ["k1", "w2", "b2"], ["c2"], name="conv2",
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("GlobalAveragePool", ["r2"], ["gap"], name="gap"),
        helper.make_node("Flatten", ["gap"], ["flat"], name="flatten"),
        helper.make_node("Gemm", ["flat", "wfc", "bfc"], ["logits"], name="fc", transB=1),
        helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=1),
    ]
    graph = helper.make_graph(
        nodes, "partition_cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 8, 8])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["N", 10])],
        initializer=[numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                              producer_name="tessera-tests")
    onnx.checker.check_model(model)
    return model


def run(cmd, expect_ok=True):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if (p.returncode == 0) != expect_ok:
        sys.exit(f"FAILED (exit {p.returncode}): {' '.join(cmd)}\n{p.stdout}\n{p.stderr}")
    return p


def check(cond, what, text=""):
    if not cond:
        sys.exit(f"FAILED: {what}\n{text}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tessera", required=True)
    ap.add_argument("--tessera-opt", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    model = os.path.join(args.out, "partition_cnn.onnx")
    onnx.save(build_model(), model)
    dot = os.path.join(args.out, "partition_cnn.dot")
    html = os.path.join(args.out, "partition_cnn.html")
    tir = os.path.join(args.out, "partition_cnn.tir")
    for f in (dot, html, tir):
        if os.path.exists(f):
            os.remove(f)

    out = run([args.tessera, "partition", model, "--target", "json", "--input-shape",
               "x=1,3,8,8", "--report", "--dot", dot, "--html", html, "-o", tir]).stdout

    # The summary paragraph and the regions.
    check(out.startswith("Partitioned module 'partition_cnn' among json: "),
          "the report does not start with the summary", out)
    regions = re.findall(r"^  @(tessera_partition_cnn_json_\d+)  target json, (\d+) ops?, "
                         r"[0-9.]+ [kMGT]?FLOP$", out, re.M)
    check(len(regions) >= 2, "expected at least two json regions (conv1 and conv2 sides)", out)
    check(re.search(r"^    inputs:  f32\[1, 3, 8, 8\]", out, re.M), "region inputs missing", out)
    check(re.search(r"^    outputs: f32\[", out, re.M), "region outputs missing", out)

    # Host ops, by reason, with their ONNX node names.
    host = out[out.index("\nHost ops ("):]
    for name, op in (("sin1", "sin"), ("cos1", "cos")):
        check(re.search(rf"^    @main  {name}\S*  {op}$", host, re.M),
              f"host op {name} ({op}) not listed", out)
    check(re.search(r"^  .*pruned.*\(\d+\):$", host, re.M),
          "no group of pruned ops in the report", out)
    check(re.search(r"^    @main  relu_mid\S*  relu$", host, re.M),
          "the pruned relu_mid is not listed on the host", out)
    for line in re.findall(r"^  (\S.*) \(\d+\):$", host, re.M):
        check(line.strip() != "", "a host group without a reason", out)

    # DOT: a digraph with a json cluster, host nodes and edges.
    d = open(dot).read()
    check(d.startswith("digraph partition {") and d.rstrip().endswith("}"), "bad DOT", d)
    check("subgraph cluster_0" in d and "(json)" in d, "no json cluster in the DOT", d)
    check(re.search(r'label="sin\\nsin1', d), "no host node for sin1 in the DOT", d)
    check("shape=invhouse" in d and "shape=house" in d, "no input/output nodes in the DOT", d)
    check(re.search(r"n\d+ -> n\d+;", d), "no edges in the DOT", d)
    if shutil.which("dot"):
        run(["dot", "-Tsvg", dot, "-o", os.path.join(args.out, "partition_cnn.svg")])

    # HTML: self-contained, with the graph, the legend and the tables.
    h = open(html, encoding="utf-8").read()
    check(h.startswith("<!DOCTYPE html>") and h.rstrip().endswith("</html>"), "bad HTML")
    check("http://" not in h and "https://" not in h, "the HTML references the network")
    check("<svg" in h and "</svg>" in h, "no inline SVG in the HTML")
    for name, _ in regions:
        check(name in h, f"region {name} missing from the HTML")
    check("sin1" in h and "relu_mid" in h, "host ops missing from the HTML")

    # The partitioned module reads back.
    text = open(tir).read()
    check(re.search(r'attributes \{Compiler="json", global_symbol="tessera_partition_cnn_json_0"',
                    text), "no lifted json region in the text IR", text)
    run([args.tessera_opt, tir, "--passes=verify"])

    # One-line errors.
    e = run([args.tessera, "partition", model, "--target", "nosuch", "--input-shape",
             "x=1,3,8,8"], expect_ok=False).stderr
    check(e.count("\n") == 1 and "no plugin named 'nosuch' is loaded" in e,
          "unknown target: unexpected error", e)
    e = run([args.tessera, "partition", os.path.join(args.out, "missing.onnx"), "--target",
             "json"], expect_ok=False).stderr
    check(e.count("\n") == 1 and "missing.onnx" in e, "missing model: unexpected error", e)
    print(f"tessera partition: {len(regions)} json regions, report, DOT and HTML OK")


if __name__ == "__main__":
    main()
