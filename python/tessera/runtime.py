"""tessera.runtime: run compiled Tessera artifacts from Python.

This module needs only libtessera_runtime (no compiler, no LLVM, no protobuf): an
application that runs artifacts made elsewhere imports just this.

    import numpy as np
    import tessera.runtime as rt

    sess = rt.Session("model.tsr", threads=2)
    outputs = sess.run({"x": np.zeros((1, 3, 224, 224), np.float32)})  # {name: ndarray}
    logits, = sess.run(["logits"], {"x": x})                             # ONNX Runtime's form
    with sess.profile() as prof:                                         # where the time goes
        sess.run({"x": x})
    print(prof.format()); prof.save("trace.json")                        # rows: prof.table

See docs/python.md.
"""
from ._base import (DataLoss, Error, FailedPrecondition, InternalError, InvalidArgument,
                    NotFound, OutOfMemory, TensorInfo, Unimplemented)
from ._runtime import Model, Profile, Session, set_plugin_path, version
from .artifact import Artifact, load

__all__ = ["Session", "Model", "Profile", "Artifact", "load", "TensorInfo", "set_plugin_path", "version",
           "Error", "InvalidArgument", "NotFound", "FailedPrecondition", "DataLoss",
           "Unimplemented", "InternalError", "OutOfMemory"]
