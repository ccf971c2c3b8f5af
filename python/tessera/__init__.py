"""Tessera: compile neural-network models with bring-your-own-codegen plugins, and run them.

    import numpy as np
    import tessera
    import tessera.runtime

    artifact = tessera.compile("model.onnx", targets=["dnnl"], input_shapes={"x": (1, 3, 224, 224)})
    sess = tessera.runtime.Session(artifact, threads=2)
    y = sess.run({"x": np.random.rand(1, 3, 224, 224).astype(np.float32)})
    tessera.partition("model.onnx", targets=["dnnl"])   # a PartitionReport (draws in a notebook)

The compiler (compile, partition, plugins, import_onnx, interpret) is loaded on first
use; ``import tessera.runtime`` alone needs only libtessera_runtime. See docs/python.md.
"""
import importlib

from ._base import (CompileError, DataLoss, Error, FailedPrecondition, InternalError,
                    InvalidArgument, NotFound, OutOfMemory, TensorInfo, Unimplemented)

__version__ = "0.1.0"

_COMPILER_NAMES = {"compile", "partition", "plugins", "import_onnx", "interpret",
                   "PartitionReport", "Region", "HostOp", "Plugins"}
_ARTIFACT_NAMES = {"Artifact", "load"}

__all__ = sorted(_COMPILER_NAMES | _ARTIFACT_NAMES | {
    "runtime", "Error", "InvalidArgument", "NotFound", "FailedPrecondition", "DataLoss",
    "Unimplemented", "InternalError", "OutOfMemory", "CompileError", "TensorInfo"})


def __getattr__(name):
    if name in _COMPILER_NAMES:
        module = importlib.import_module(".compiler", __name__)
    elif name in _ARTIFACT_NAMES:
        module = importlib.import_module(".artifact", __name__)
    elif name == "runtime":
        return importlib.import_module(".runtime", __name__)
    else:
        raise AttributeError(f"module 'tessera' has no attribute '{name}'")
    value = getattr(module, name)
    globals()[name] = value
    return value


def __dir__():
    return __all__
