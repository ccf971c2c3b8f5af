"""Fixtures of the Python API's tests: small ONNX models made with onnx.helper,
the `tessera` CLI (TESSERA_CLI) for reference runs, and a scratch folder.

ctest runs these with PYTHONPATH=<build>/python (tests/CMakeLists.txt).
"""
import os
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

# Model builders shared with the C++ suite's scripts (tests/onnx/make_ragged.py).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "tests", "onnx"))


def _save(model, path):
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return str(path)


def make_affine(path):
    """y = relu(x * 2 + 1), x f32[2, 3]: the tiny model (zero-copy, threads, overhead)."""
    two = numpy_helper.from_array(np.array(2.0, np.float32), "two")
    one = numpy_helper.from_array(np.array(1.0, np.float32), "one")
    nodes = [helper.make_node("Mul", ["x", "two"], ["m"], name="mul"),
             helper.make_node("Add", ["m", "one"], ["a"], name="add"),
             helper.make_node("Relu", ["a"], ["y"], name="relu")]
    graph = helper.make_graph(
        nodes, "affine", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])], [two, one])
    return _save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def affine_reference(x):
    return np.maximum(x * np.float32(2) + np.float32(1), np.float32(0))


def make_cnn(path, seed=0):
    """Conv 3->4 (3x3, pad 1) + Relu, GlobalAveragePool, Flatten, Gemm 4->5; x f32[1, 3, 8, 8].

    dnnl takes the conv and the dense; two outputs ("feat", "logits")."""
    rng = np.random.default_rng(seed)
    w = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "b")
    g = numpy_helper.from_array(rng.standard_normal((5, 4)).astype(np.float32), "g")
    c = numpy_helper.from_array(rng.standard_normal(5).astype(np.float32), "c")
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["conv"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["conv"], ["feat"], name="relu"),
             helper.make_node("GlobalAveragePool", ["feat"], ["pool"], name="pool"),
             helper.make_node("Flatten", ["pool"], ["flat"], name="flatten"),
             helper.make_node("Gemm", ["flat", "g", "c"], ["logits"], name="fc", transB=1)]
    graph = helper.make_graph(
        nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("feat", TensorProto.FLOAT, [1, 4, 8, 8]),
         helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 5])], [w, b, g, c])
    return _save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def make_batched(path):
    """y = relu(x @ w), x f32[N, 4] with a symbolic batch N."""
    rng = np.random.default_rng(1)
    w = numpy_helper.from_array(rng.standard_normal((4, 3)).astype(np.float32), "w")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["mm"], name="mm"),
             helper.make_node("Relu", ["mm"], ["y"], name="relu")]
    graph = helper.make_graph(
        nodes, "batched", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])], [w])
    return _save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def make_two_inputs(path):
    """z = a + b (f32[3]), i = argmax(a) (i64[]): two inputs, a float and an int output."""
    nodes = [helper.make_node("Add", ["a", "b"], ["z"], name="add"),
             helper.make_node("ArgMax", ["a"], ["i"], name="argmax", axis=0, keepdims=0)]
    graph = helper.make_graph(
        nodes, "two", [helper.make_tensor_value_info("a", TensorProto.FLOAT, [3]),
                       helper.make_tensor_value_info("b", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [3]),
         helper.make_tensor_value_info("i", TensorProto.INT64, [])])
    return _save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


@pytest.fixture(scope="session")
def models(tmp_path_factory):
    d = tmp_path_factory.mktemp("models")
    return {"affine": make_affine(d / "affine.onnx"), "cnn": make_cnn(d / "cnn.onnx"),
            "batched": make_batched(d / "batched.onnx"),
            "two": make_two_inputs(d / "two.onnx"), "dir": d}


@pytest.fixture(scope="session")
def cli():
    path = os.environ.get("TESSERA_CLI")
    if not path or not os.path.exists(path):
        pytest.fail("TESSERA_CLI must name the built `tessera` (ctest sets it)")
    return path


def run_cli(cli, *args):
    r = subprocess.run([cli, *map(str, args)], capture_output=True, text=True)
    assert r.returncode == 0, f"tessera {' '.join(map(str, args))} failed:\n{r.stdout}{r.stderr}"
    return r.stdout
