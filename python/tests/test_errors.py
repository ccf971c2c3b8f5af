"""Every error a Python user can cause raises a tessera.Error subclass with Tessera's
message, and none crashes the interpreter."""
import numpy as np
import pytest

import tessera
import tessera.runtime as rt
from conftest import affine_reference


@pytest.fixture(scope="module")
def sess(models):
    return rt.Session(tessera.compile(models["affine"], targets=[]))


def test_wrong_dtype(sess):
    with pytest.raises(tessera.InvalidArgument, match=r"input 'x'.*f32.*f64") as e:
        sess.run({"x": np.zeros((2, 3), np.float64)})
    assert isinstance(e.value, tessera.Error) and isinstance(e.value, ValueError)
    with pytest.raises(tessera.InvalidArgument, match="input 'x'"):
        sess.run({"x": np.zeros((2, 3), np.int32)})


def test_wrong_shape(sess):
    with pytest.raises(tessera.InvalidArgument, match=r"input 'x'.*\[2, 3\]"):
        sess.run({"x": np.zeros((3, 2), np.float32)})
    with pytest.raises(tessera.InvalidArgument, match="input 'x'"):
        sess.run({"x": np.zeros((6,), np.float32)})


def test_wrong_names_and_feeds(sess):
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(tessera.NotFound, match="no input 'z'.*'x'"):
        sess.run({"x": x, "z": x})
    with pytest.raises(tessera.InvalidArgument, match="input 'x' is not given"):
        sess.run({})
    with pytest.raises(tessera.NotFound, match="no output 'nope'"):
        sess.run(["nope"], {"x": x})
    with pytest.raises(tessera.InvalidArgument, match="feeds"):
        sess.run([1, 2, 3])
    with pytest.raises(tessera.InvalidArgument, match="feeds"):
        sess.run(None, None)
    with pytest.raises(tessera.InvalidArgument, match="output_names"):
        sess.run("y", {"x": x})
    with pytest.raises(tessera.InvalidArgument, match="str"):
        sess.run({1: x})
    with pytest.raises(tessera.InvalidArgument, match="input 'x'"):
        sess.run({"x": None})
    with pytest.raises(tessera.InvalidArgument, match="input 'x'"):
        sess.run({"x": object()})
    with pytest.raises(tessera.InvalidArgument, match="input 'x'"):
        sess.run({"x": "text"})
    with pytest.raises(tessera.InvalidArgument, match="input 'x'"):
        sess.run({"x": np.array([object()] * 6).reshape(2, 3)})
    # The session still works after every refusal.
    np.testing.assert_array_equal(sess.run({"x": x})["y"], affine_reference(x))


def test_non_contiguous_read_only_and_misaligned_inputs(sess):
    base = np.arange(12, dtype=np.float32).reshape(2, 6) - 5
    strided = base[:, ::2]
    assert not strided.flags.c_contiguous
    np.testing.assert_array_equal(sess.run({"x": strided})["y"], affine_reference(strided))
    assert sess._last_run_copies == 1
    fortran = np.asfortranarray(base[:, :3])
    np.testing.assert_array_equal(sess.run({"x": fortran})["y"], affine_reference(fortran))
    ro = np.array(base[:, :3])
    ro.flags.writeable = False
    np.testing.assert_array_equal(sess.run({"x": ro})["y"], affine_reference(ro))
    assert sess._last_run_copies == 0
    raw = np.zeros(6 * 4 + 1, np.uint8)
    misaligned = raw[1:].view(np.float32).reshape(2, 3)
    misaligned[...] = base[:, :3]
    np.testing.assert_array_equal(sess.run({"x": misaligned})["y"], affine_reference(misaligned))
    assert sess._last_run_copies == (1 if misaligned.ctypes.data % 4 else 0)
    big_endian = base[:, :3].astype(">f4")
    with pytest.raises(tessera.InvalidArgument, match="input 'x'"):
        sess.run({"x": big_endian})


class RefusesExport:
    """A tensor whose __dlpack__ raises, as a torch tensor that requires grad does."""

    def __dlpack__(self, stream=None):
        raise RuntimeError("Can't export tensors that require gradient, use tensor.detach()")


def test_a_tensor_that_refuses_to_export_raises_tessera_error(sess, models):
    with pytest.raises(tessera.InvalidArgument,
                       match=r"input 'x': a RefusesExport refused to export itself \(.*require "
                             r"gradient"):
        sess.run({"x": RefusesExport()})
    with pytest.raises(tessera.InvalidArgument, match="refused to export itself"):
        tessera.interpret(models["affine"], {"x": RefusesExport()})
    # The session still runs.
    x = np.ones((2, 3), np.float32)
    np.testing.assert_array_equal(sess.run({"x": x})["y"], affine_reference(x))


def test_closed_session(models):
    s = rt.Session(tessera.compile(models["affine"], targets=[]))
    s.close()
    assert s.closed
    with pytest.raises(tessera.FailedPrecondition, match="closed"):
        s.run({"x": np.zeros((2, 3), np.float32)})
    s.close()  # again: nothing
    with rt.Session(tessera.compile(models["affine"], targets=[])) as s2:
        s2.run({"x": np.zeros((2, 3), np.float32)})
    assert s2.closed


def test_bad_artifacts(models, tmp_path):
    with pytest.raises(tessera.NotFound):
        rt.Session(tmp_path / "missing.tsr")
    with pytest.raises(tessera.NotFound):
        tessera.load(tmp_path / "missing.tsr")
    with pytest.raises(tessera.DataLoss, match="not a Tessera artifact"):
        rt.Session(b"definitely not an artifact")
    with pytest.raises(tessera.DataLoss):
        tessera.load(b"TSRA" + b"\0" * 100)
    good = tessera.compile(models["affine"], targets=[]).to_bytes()
    damaged = bytearray(good)
    damaged[len(damaged) // 2] ^= 0xFF
    with pytest.raises(tessera.DataLoss):
        rt.Session(bytes(damaged))
    with pytest.raises(tessera.DataLoss):
        rt.Session(good[:-10])
    with pytest.raises(TypeError, match="artifact"):
        rt.Session(12345)
    with pytest.raises(tessera.InvalidArgument, match="threads"):
        rt.Session(good, threads=-1)


def test_compiler_errors(models, tmp_path):
    with pytest.raises(tessera.NotFound, match="missing.onnx"):
        tessera.compile(tmp_path / "missing.onnx")
    with pytest.raises(tessera.CompileError, match="nosuchplugin"):
        tessera.compile(models["affine"], targets=["nosuchplugin"])
    with pytest.raises(tessera.InvalidArgument, match="opt_level"):
        tessera.compile(models["affine"], targets=[], opt_level=7)
    with pytest.raises(tessera.CompileError):
        tessera.compile(b"not an onnx model", targets=[])
    with pytest.raises(tessera.CompileError, match="nope"):
        tessera.compile(models["affine"], targets=[], input_shapes={"nope": (1,)})
    with pytest.raises(tessera.InvalidArgument, match="input_shapes"):
        tessera.compile(models["affine"], targets=[], input_shapes={"x": 3})
    with pytest.raises(tessera.CompileError):
        tessera.compile(models["affine"], targets=[], mcpu="not-a-cpu")
    with pytest.raises(TypeError):
        tessera.compile(42)
    with pytest.raises(TypeError):
        tessera.compile(models["affine"], targets="dnnl")
    with pytest.raises(tessera.InvalidArgument, match="targets"):
        tessera.partition(models["affine"], targets=[])
    with pytest.raises(tessera.InvalidArgument, match="input 'x' is not given"):
        tessera.interpret(models["affine"], {})
    with pytest.raises(tessera.NotFound, match="no input 'q'"):
        tessera.interpret(models["affine"], {"x": np.zeros((2, 3), np.float32), "q": 1})
    with pytest.raises(tessera.InvalidArgument,
                       match=r"interpret: input 'x': expected f32\[2, 3\], got f32\[3, 3\]"):
        tessera.interpret(models["affine"], {"x": np.zeros((3, 3), np.float32)})
