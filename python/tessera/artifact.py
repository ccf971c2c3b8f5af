"""tessera.Artifact: a compiled model's bytes and what its metadata says.

Reading an artifact verifies it (digests, format) and parses its metadata without
loading any of its code or plugins; this needs only the runtime library.
"""
import json
import os

from . import _runtime
from ._base import NotFound, TensorInfo

_DTYPES = {"f16": "float16", "f32": "float32", "f64": "float64", "i8": "int8", "i16": "int16",
           "i32": "int32", "i64": "int64", "u8": "uint8", "u16": "uint16", "u32": "uint32",
           "u64": "uint64", "bool": "bool"}


def _dtype(name):
    import numpy
    return numpy.dtype(_DTYPES[name]) if name in _DTYPES else name


class Artifact:
    """A compiled model (what ``tessera compile`` writes to a .tsr file).

    ``tessera.compile(...)`` and ``tessera.load(path_or_bytes)`` make one; pass it
    to ``tessera.runtime.Session`` to run it, or ``save(path)`` it.
    """

    def __init__(self, data, name="<artifact>"):
        self._bytes = bytes(data)
        self._name = name
        self.metadata = json.loads(_runtime._artifact_metadata(self._bytes, name))

    def _tessera_artifact_bytes(self):
        return self._bytes

    def to_bytes(self):
        """The artifact file's bytes."""
        return self._bytes

    def save(self, path):
        """Writes the artifact to ``path`` (a .tsr file that ``tessera run`` and apps load)."""
        path = os.fspath(path)
        tmp = path + ".tmp"
        with open(tmp, "wb") as f:
            f.write(self._bytes)
        os.replace(tmp, path)

    def _infos(self, key):
        symbols = [s["name"] for s in self.metadata.get("symbols", [])]

        def dim(d):  # a negative dim is symbol -1 - d
            return symbols[-1 - d] if d < 0 and -1 - d < len(symbols) else d
        def info(t):
            if "sequence_rank" in t:  # a list of arrays: one None per element dim
                rank = max(t["sequence_rank"], 0)
                return TensorInfo(t["name"], (None,) * rank, _dtype(t["dtype"]), True)
            return TensorInfo(t["name"], tuple(dim(d) for d in t["shape"]), _dtype(t["dtype"]))
        return [info(t) for t in self.metadata.get(key, [])]

    @property
    def inputs(self):
        """TensorInfo(name, shape, dtype) per input (a symbolic dim is its name)."""
        return self._infos("inputs")

    @property
    def outputs(self):
        """TensorInfo(name, shape, dtype) per output."""
        return self._infos("outputs")

    @property
    def plugins(self):
        """The plugins the model needs to load (names), from its metadata."""
        return [p["name"] if isinstance(p, dict) else p for p in self.metadata.get("plugins", [])]

    @property
    def symbols(self):
        """name -> (lo, hi) of each symbolic dim (hi None: unbounded); {} for static shapes."""
        return {s["name"]: (s["lo"], s["hi"] if s["hi"] >= 0 else None)
                for s in self.metadata.get("symbols", [])}

    @property
    def regions(self):
        """The regions plugins compiled: dicts of symbol, plugin, ops (and cpu, features)."""
        return self.metadata.get("regions", [])

    def __len__(self):
        return len(self._bytes)

    def __repr__(self):
        ins = ", ".join(f"{t.name}: {t.dtype}{list(t.shape)}" for t in self.inputs)
        return (f"<tessera.Artifact {self._name} ({len(self._bytes)} bytes) inputs [{ins}] "
                f"plugins {self.plugins}>")


def load(path_or_bytes):
    """Reads an artifact from a path (str or os.PathLike) or from its bytes."""
    if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
        return Artifact(path_or_bytes)
    path = os.fspath(path_or_bytes)
    if not os.path.exists(path):
        raise NotFound(f"no such artifact file: '{path}'")
    with open(path, "rb") as f:
        return Artifact(f.read(), path)
