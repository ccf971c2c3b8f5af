#!/usr/bin/env python3
"""What Session.run costs on top of the C API, on a tiny model.

    PYTHONPATH=build/release/python /usr/bin/python3 bench/python_overhead.py --build build/release

Compiles y = relu(x * 2 + 1) (x f32[2, 3]) for the host, then, alternating, times
bench_c_api_loop (C API: bind, run, get and copy the output; one thread) and
Session(threads=1).run({"x": x}) in a loop, and prints both per-run times (the best
of --repeats rounds each) and their difference: the Python API's overhead.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def tiny_model(path):
    two = numpy_helper.from_array(np.array(2.0, np.float32), "two")
    one = numpy_helper.from_array(np.array(1.0, np.float32), "one")
    nodes = [helper.make_node("Mul", ["x", "two"], ["m"]),
             helper.make_node("Add", ["m", "one"], ["a"]),
             helper.make_node("Relu", ["a"], ["y"])]
    graph = helper.make_graph(
        nodes, "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])], [two, one])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build/release", help="the build tree (bench_c_api_loop)")
    ap.add_argument("--iterations", type=int, default=20000)
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    sys.path.insert(0, os.path.join(a.build, "python"))
    import tessera
    import tessera.runtime as rt

    with tempfile.TemporaryDirectory() as tmp:
        onnx_path, tsr = os.path.join(tmp, "tiny.onnx"), os.path.join(tmp, "tiny.tsr")
        tiny_model(onnx_path)
        tessera.compile(onnx_path, targets=[]).save(tsr)
        sess = rt.Session(tsr, threads=1)
        x = np.ones((2, 3), np.float32)
        feeds = {"x": x}
        for _ in range(1000):
            sess.run(feeds)
        c_best, py_best = float("inf"), float("inf")
        for _ in range(a.repeats):
            out = subprocess.run([os.path.join(a.build, "bench", "bench_c_api_loop"), tsr,
                                  str(a.iterations), "1"], capture_output=True, text=True,
                                 check=True).stdout
            c_best = min(c_best, float(out.split()[-1]))
            start = time.perf_counter_ns()
            for _ in range(a.iterations):
                sess.run(feeds)
            py_best = min(py_best, (time.perf_counter_ns() - start) / a.iterations)
    print(f"C API (bind, run, copy out):   {c_best / 1000:7.2f} us/run")
    print(f"Session.run({{'x': x}}):         {py_best / 1000:7.2f} us/run")
    print(f"Python API overhead:            {(py_best - c_best) / 1000:7.2f} us/run")


if __name__ == "__main__":
    main()
