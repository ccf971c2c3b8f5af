"""Inputs are read in place (zero-copy), sessions run in parallel threads with the GIL
released, and PyTorch tensors pass through __dlpack__."""
import threading
import time

import numpy as np
import pytest

import tessera
import tessera.runtime as rt
from conftest import affine_reference


@pytest.fixture(scope="module")
def affine(models):
    return tessera.compile(models["affine"], targets=[])


def test_zero_copy_reads_the_callers_memory(affine):
    sess = rt.Session(affine)
    x = np.zeros((2, 3), np.float32)
    np.testing.assert_array_equal(sess.run({"x": x})["y"], affine_reference(x))
    assert sess._last_run_copies == 0
    x[0, 1] = 4.0  # change the caller's array in place: the next run sees it
    x[1, :] = -3.0
    np.testing.assert_array_equal(sess.run({"x": x})["y"], affine_reference(x))
    assert sess._last_run_copies == 0
    # A memoryview and a bytearray-backed array are buffers too.
    buf = bytearray(x.tobytes())
    view = np.frombuffer(buf, np.float32).reshape(2, 3)
    np.testing.assert_array_equal(sess.run({"x": view})["y"], affine_reference(x))
    assert sess._last_run_copies == 0
    buf[0:4] = np.float32(7).tobytes()
    assert sess.run({"x": memoryview(view)})["y"][0, 0] == 15.0


def test_threads_run_sessions_in_parallel(affine):
    errors = []
    per_thread = 200

    def worker(seed, session):
        try:
            rng = np.random.default_rng(seed)
            for _ in range(per_thread):
                x = rng.standard_normal((2, 3)).astype(np.float32)
                y = session.run({"x": x})["y"]
                np.testing.assert_array_equal(y, affine_reference(x))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    own = [threading.Thread(target=worker, args=(i, rt.Session(affine, threads=1)))
           for i in range(4)]
    shared_session = rt.Session(affine, threads=1)  # one session, several threads: they take turns
    shared = [threading.Thread(target=worker, args=(10 + i, shared_session)) for i in range(3)]
    for t in own + shared:
        t.start()
    for t in own + shared:
        t.join()
    assert not errors, errors


def make_slow(path):
    """x f32[512, 512] through 8 MatMuls by one weight: tens of ms per run."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    w = numpy_helper.from_array(
        (np.random.default_rng(0).standard_normal((512, 512)) / 23).astype(np.float32), "w")
    names = ["x"] + [f"h{i}" for i in range(7)] + ["y"]
    nodes = [helper.make_node("MatMul", [names[i], "w"], [names[i + 1]]) for i in range(8)]
    graph = helper.make_graph(
        nodes, "slow", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [512, 512])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [512, 512])], [w])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def test_gil_is_released_during_a_run(models):
    # While another thread is inside run(), this thread keeps waking from 1 ms sleeps
    # and running Python, which needs the GIL: dozens of times per run when run()
    # releases it, at most about once per run (between runs) when it does not.
    # Sleeping threads are scheduled promptly even on a busy machine.
    sess = rt.Session(tessera.compile(make_slow(str(models["dir"] / "slow.onnx")), targets=[]),
                      threads=1)
    x = np.ones((512, 512), np.float32)
    sess.run({"x": x})
    runs = 6
    done = threading.Event()

    def worker():
        for _ in range(runs):
            sess.run({"x": x})
        done.set()

    t = threading.Thread(target=worker)
    start = time.perf_counter()
    t.start()
    wakeups = 0
    while not done.is_set():
        time.sleep(0.001)
        wakeups += 1
    t.join()
    one_run = (time.perf_counter() - start) / runs
    print(f"one run {one_run * 1e3:.1f} ms; the other thread woke {wakeups / runs:.1f} times "
          f"per run")
    assert one_run > 0.015, "the model is too fast for this test to tell"
    assert wakeups > 6 * runs


def test_torch_tensor_through_dlpack(affine):
    torch = pytest.importorskip(
        "torch", reason="python3-torch is not installed: the __dlpack__ path is not tested")
    sess = rt.Session(affine)
    t = torch.linspace(-2, 2, 6, dtype=torch.float32).reshape(2, 3)
    y = sess.run({"x": t})["y"]
    np.testing.assert_array_equal(y, affine_reference(t.numpy()))
    assert sess._last_run_copies == 0  # read in place
    t[0, 0] = 10.0
    assert sess.run({"x": t})["y"][0, 0] == 21.0
    strided = torch.arange(12, dtype=torch.float32).reshape(2, 6)[:, ::2]
    np.testing.assert_array_equal(sess.run({"x": strided})["y"],
                                  affine_reference(strided.contiguous().numpy()))
    assert sess._last_run_copies == 1
    with pytest.raises(tessera.InvalidArgument, match="input 'x'"):
        sess.run({"x": t.double()})


def test_threads_compile_at_once(models):
    # tessera.compile from several threads: the calls take turns inside, each result right.
    results, errors = {}, []

    def worker(i):
        try:
            art = tessera.compile(models["affine"], targets=["ccompiler"] if i % 2 else [])
            x = np.full((2, 3), float(i) - 1.5, np.float32)
            results[i] = (x, rt.Session(art).run({"x": x})["y"])
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for x, y in results.values():
        np.testing.assert_array_equal(y, affine_reference(x))
    assert repr(rt.Session(tessera.compile(models["affine"], targets=[]))).startswith(
        "<tessera.runtime.Session inputs [x: float32[2, 3]]")
