"""Tessera's exceptions and small value types, shared by tessera and tessera.runtime.

Every error Tessera raises is a ``tessera.Error``; the subclass says which status
code the runtime or the compiler gave (``tessera/c/status.h``), and the message is
Tessera's own ("input 'x': expected f32[1, 4], got f64[1, 4]").
"""
from typing import NamedTuple, Tuple, Union


class Error(RuntimeError):
    """Any error from Tessera."""

    code = None


class InvalidArgument(Error, ValueError):
    """TESSERA_STATUS_INVALID_ARGUMENT: a wrong dtype, shape, value or argument."""

    code = 1


class NotFound(Error, LookupError):
    """TESSERA_STATUS_NOT_FOUND: no such file, input, output or plugin."""

    code = 2


class FailedPrecondition(Error):
    """TESSERA_STATUS_FAILED_PRECONDITION: e.g. a closed session, a plugin the model needs is missing."""

    code = 3


class DataLoss(Error):
    """TESSERA_STATUS_DATA_LOSS: the artifact is corrupt, truncated or not an artifact."""

    code = 4


class Unimplemented(Error, NotImplementedError):
    """TESSERA_STATUS_UNIMPLEMENTED."""

    code = 5


class InternalError(Error):
    """TESSERA_STATUS_INTERNAL: a step of a run failed."""

    code = 6


class OutOfMemory(Error, MemoryError):
    """TESSERA_STATUS_OUT_OF_MEMORY."""

    code = 7


class CompileError(Error):
    """The compiler refused the model (import, partitioning, codegen): the message says why."""

    code = 1


class TensorInfo(NamedTuple):
    """An input or output of a model: its name, shape and NumPy dtype.

    A symbolic dim is the symbol's name (a str), as in ONNX Runtime. A
    sequence (``sequence`` True: a list of arrays whose number and sizes the
    data decides, fed and returned as a Python list) has the elements' dtype
    and one None per element dim (an empty shape when their rank varies).
    """

    name: str
    shape: Tuple[Union[int, str, None], ...]
    dtype: object
    sequence: bool = False
