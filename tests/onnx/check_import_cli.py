#!/usr/bin/env python3
"""Checks `tessera import`'s command line: its errors (missing file, not a
model, truncated model, bad --input-shape, unknown or unbound inputs) and
that its output round-trips through tessera-opt. Models are generated into
--out (the build tree) with python3-onnx; they use only Constant nodes (built
into the importer), so this test does not depend on the converter families.

Usage: check_import_cli.py --tessera BIN --tessera-opt BIN --out DIR
"""
import argparse
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

failures = []


def expect(cmd, rc, stderr_has=None, stdout=None):
    p = subprocess.run(cmd, capture_output=True, text=True)
    what = " ".join(cmd)
    if p.returncode != rc:
        failures.append(f"{what}: exit {p.returncode}, expected {rc}\n{p.stderr}")
    if stderr_has is not None and stderr_has not in p.stderr:
        failures.append(f"{what}: stderr lacks {stderr_has!r}:\n{p.stderr}")
    if stdout is not None and p.stdout != stdout:
        failures.append(f"{what}: unexpected stdout:\n{p.stdout}")
    return p.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tessera", required=True)
    ap.add_argument("--tessera-opt", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    t = a.tessera

    weights = np.arange(4096, dtype=np.float32).reshape(64, 64)
    node = helper.make_node("Constant", [], ["y"], name="weights",
                            value=numpy_helper.from_array(weights, "w"))
    graph = helper.make_graph(
        [node], "cli_model",
        [helper.make_tensor_value_info("img", TensorProto.FLOAT, ["N", 3, "H", 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [64, 64])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    good = os.path.join(a.out, "model.onnx")
    onnx.save(model, good)
    data = open(good, "rb").read()

    # Success: -o FILE, -o - and no -o print the same text, which round-trips.
    tir = os.path.join(a.out, "model.tir")
    expect([t, "import", good, "--input-shape", "img=2,3,5,8", "-o", tir], 0)
    text = open(tir).read()
    expect([t, "import", good, "--input-shape", "img=2,3,5,8", "-o", "-"], 0, stdout=text)
    expect([t, "import", good, "--input-shape", "img=2,3,5,8"], 0, stdout=text)
    if "def @main(%img: f32[2, 3, 5, 8]) -> f32[64, 64]" not in text:
        failures.append(f"unexpected IR:\n{text}")
    expect([a.tessera_opt, tir, "--passes=verify"], 0, stdout=text)

    # Errors.
    missing = os.path.join(a.out, "missing.onnx")
    expect([t, "import", missing], 1, f"{missing}: cannot open the file (no such file)")
    junk = os.path.join(a.out, "junk.onnx")
    open(junk, "wb").write(b"\x0a\xff\xff\xff\xff\x0f not a model")
    expect([t, "import", junk], 1, f"{junk}: not an ONNX model (protobuf parse failed)")
    truncated = os.path.join(a.out, "truncated.onnx")
    open(truncated, "wb").write(data[: len(data) // 2])
    expect([t, "import", truncated], 1, f"{truncated}: not an ONNX model")
    expect([t, "import", good, "--input-shape", "img=2,3a,5,8"], 1,
           "bad input shape 'img=2,3a,5,8': dim 1 ('3a') is not a non-negative integer, a "
           "symbol name (N), or a range (1..8, N:1..8, H:32..)")
    expect([t, "import", good, "--input-shape", "img=2,x,5,8"], 1,
           "input 'img': dim 1 is 3 in the model ([N, 3, H, 8]), the bound shape "
           "[2, x, 5, 8] gives x")
    # Symbols stay symbolic: a name, and an unnamed range named after the
    # model's dim_param.
    out = expect([t, "import", good, "--input-shape", "img=B,3,4..64,8"], 0)
    if "def @main(%img: f32[B, 3, H(4, 64), 8]) -> f32[64, 64]" not in out:
        failures.append(f"unexpected IR for a symbolic binding:\n{out}")
    expect([t, "import", good, "--input-shape", "img"], 1,
           "bad input shape 'img': expected NAME=D1,D2,...")
    expect([t, "import", good, "--input-shape", "image=1,3,5,8"], 1,
           "names 'image', which is not a graph input (the inputs are: img)")
    # Unbound dims stay symbolic (the README's rule).
    out = expect([t, "import", good], 0)
    if "def @main(%img: f32[N, 3, H, 8])" not in out:
        failures.append(f"unexpected IR for unbound dims:\n{out}")
    expect([t, "import", good, "--input-shape", "img=1,3,5,9"], 1,
           "input 'img': dim 3 is 8 in the model ([N, 3, H, 8]), the bound shape "
           "[1, 3, 5, 9] gives 9")

    # An unbound batch dim shared by two inputs is one symbol; tessera compile
    # lists it with the rule, and -v notes it at import.
    graph2 = helper.make_graph(
        [helper.make_node("Constant", [], ["y"], name="weights",
                          value=numpy_helper.from_array(weights, "w"))], "batch_model",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, ["batch", 4]),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [64, 64])])
    batch = os.path.join(a.out, "batch.onnx")
    onnx.save(helper.make_model(graph2, opset_imports=[helper.make_opsetid("", 13)]), batch)
    out = expect([t, "import", batch], 0)
    if "def @main(%a: f32[batch, 4], %b: f32[batch, 4])" not in out:
        failures.append(f"unexpected IR for the unbound batch:\n{out}")
    tsr = os.path.join(a.out, "batch.tsr")
    out = expect([t, "compile", batch, "-o", tsr], 0)
    if ("Symbolic dims: batch 1.. (input 'a' dim 0, input 'b' dim 0). The artifact runs "
            "at every size within these bounds") not in out:
        failures.append(f"tessera compile does not list the unbound batch:\n{out}")
    out = expect([t, "import", batch, "--input-shape", "a=3,4"], 0)
    if "def @main(%a: f32[3, 4], %b: f32[3, 4])" not in out:
        failures.append(f"binding 'a' did not bind the shared 'batch' of 'b':\n{out}")

    if failures:
        sys.exit("FAILED:\n" + "\n".join(failures))
    print("tessera import: command line OK")


if __name__ == "__main__":
    main()
