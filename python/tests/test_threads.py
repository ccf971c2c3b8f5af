"""One thread means one thread (issue 41): a session created with threads=1 runs a dnnl
artifact on the calling thread alone, and nothing spins after its runs return.

oneDNN fixes the thread count of many primitives when they are created (convolutions,
products, jit pooling, jit reorders); a module loaded under two threads ran its max pools
and depth-to-space reorders on two in a one-thread session, and the second OpenMP thread
then spun through every run. The check is CPU accounting, not timing: each thread's CPU
time from /proc/self/task while the runs go, and while the process sleeps after them.
"""
import os
import time

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import tessera
import tessera.runtime as rt

TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds():
    """{thread id: user + system CPU seconds} of this process's threads."""
    out = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except FileNotFoundError:  # the thread ended
            continue
        out[int(tid)] = (int(fields[11]) + int(fields[12])) / TICK  # utime, stime
    return out


def busy_threads(before, after, threshold):
    """The threads that used more than `threshold` CPU seconds between two samples."""
    return {t: after[t] - before.get(t, 0.0) for t in after
            if after[t] - before.get(t, 0.0) > threshold}


def unet_block(path):
    """Conv -> ReLU -> MaxPool -> ConvTranspose 2x2 stride 2 -> Concat with the input ->
    Conv: the kinds whose oneDNN primitives fix their threads at creation."""
    rng = np.random.default_rng(0)
    w = lambda *s: numpy_helper.from_array(rng.standard_normal(s).astype(np.float32) * 0.1)
    inits = [w(16, 8, 3, 3), w(16), w(16, 8, 2, 2), w(8), w(8, 16, 3, 3), w(8)]
    for t, n in zip(inits, ["w1", "b1", "wt", "bt", "w2", "b2"]):
        t.name = n
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1] * 4),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             helper.make_node("MaxPool", ["r1"], ["p1"], name="pool", kernel_shape=[2, 2],
                              strides=[2, 2]),
             helper.make_node("ConvTranspose", ["p1", "wt", "bt"], ["up"], name="up",
                              kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Concat", ["up", "x"], ["cat"], name="cat", axis=1),
             helper.make_node("Conv", ["cat", "w2", "b2"], ["y"], name="conv2", pads=[1] * 4)]
    vi = lambda n, c: helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, c, 96, 96])
    g = helper.make_graph(nodes, "unet_block", [vi("x", 8)], [vi("y", 8)], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


@pytest.fixture(scope="module")
def dnnl_block(tmp_path_factory):
    path = unet_block(str(tmp_path_factory.mktemp("threads") / "block.onnx"))
    return path, tessera.compile(path, targets=["dnnl"])


def test_one_thread_session_runs_dnnl_on_the_calling_thread(dnnl_block):
    path, art = dnnl_block
    # Loaded while OpenMP may use every core: the plugin builds its primitives then.
    sess = rt.Session(art, threads=1)
    x = np.random.default_rng(1).standard_normal((1, 8, 96, 96)).astype(np.float32)
    want = tessera.interpret(path, {"x": x})["y"]
    np.testing.assert_allclose(sess.run({"x": x})["y"], want, rtol=1e-4, atol=1e-4)
    caller = __import__("threading").get_native_id()
    before = cpu_seconds()
    start = time.monotonic()
    while time.monotonic() - start < 1.5:  # enough CPU time for 10 ms ticks to count
        sess.run({"x": x})
    after = cpu_seconds()
    used = after[caller] - before.get(caller, 0.0)
    others = {t: s for t, s in busy_threads(before, after, 0.0).items() if t != caller}
    assert used > 0.5, f"the calling thread used {used:.2f} s of 1.5 s: the runs did not run on it"
    # One 10 ms tick of slack per other thread; a spinning OpenMP thread takes 40-100%.
    assert sum(others.values()) <= 0.02 * len(others) + 0.05 * used, (
        f"threads besides the caller used CPU during one-thread runs: {others} "
        f"(the caller: {used:.2f} s)")
    # Nothing spins after the runs return.
    before = cpu_seconds()
    time.sleep(0.5)
    idle = busy_threads(before, cpu_seconds(), 0.0)
    assert sum(idle.values()) <= 0.03, f"threads used CPU after the runs returned: {idle}"
