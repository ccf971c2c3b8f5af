"""The compiler half of the tessera package: compile, partition, plugins, import_onnx, interpret.

Imported on first use of one of these names (``tessera.compile``...), so that
``import tessera.runtime`` never loads the compiler.
"""
import html as _html
import os
from typing import List, NamedTuple

from . import _compiler
from .artifact import Artifact

# As `tessera compile`: no targets means the host alone (name the plugins you want).
DEFAULT_TARGETS = ()


def _model_source(model):
    """A path stays a path; an onnx.ModelProto becomes its bytes."""
    if hasattr(model, "SerializeToString"):
        return model.SerializeToString()
    return model


def _targets(targets):
    if isinstance(targets, (str, bytes)):
        raise TypeError(f"targets must be a list of plugin names, e.g. ['dnnl', 'ccompiler'], "
                        f"not the string {targets!r}")
    return list(targets or [])


def compile(model, targets=DEFAULT_TARGETS, input_shapes=None, mcpu=None, opt_level=None,
            placement="priority", placement_file=None, tune_budget=120.0, tune_threads=0,
            on_host=None):
    """Compiles a model into an Artifact.

    model: a path (.onnx, or text IR), the bytes of an ONNX model, or an onnx.ModelProto.
    targets: plugins to offload to, in priority order (default none: everything on the host,
        as `tessera compile` without --target).
    input_shapes: {input name: shape} for an ONNX model's symbolic dims.
    mcpu: the CPUs the host code is for, comma-separated ("x86-64-v3", "native", ...);
        None: "x86-64-v3,x86-64-v4", one shared object each, the runtime loads the best
        one the CPU has (TESSERA_HOST_CPU forces one).
    opt_level: host code optimisation level 0-3; None: 2.
    placement: "priority" (each op to the first target that takes it) or "measure" (regions
        and candidate partitions timed on this machine, the fastest kept; cached in
        $TESSERA_CACHE_DIR), as `tessera compile --placement`.
    placement_file: with "measure", where to write the decision; with "priority", a decision
        to replay without measuring (the same artifact).
    tune_budget: seconds measuring may take.
    tune_threads: the threads measuring times with, those the artifact will run with (0:
        every core, the runtime's default).
    on_host: node names kept on the host whatever the targets take (ONNX node names), as
        `tessera compile --on-host`.
    """
    data, summary = _compiler.compile(_model_source(model), _targets(targets), input_shapes,
                                      mcpu, opt_level, placement, placement_file,
                                      float(tune_budget), int(tune_threads), on_host)
    artifact = Artifact(data, os.fspath(model) if isinstance(model, (str, os.PathLike))
                        else "<compiled>")
    artifact.partition_summary = summary
    return artifact


class Region(NamedTuple):
    """A region a plugin compiles: its function, target, op count and estimated FLOPs."""

    symbol: str
    target: str
    ops: int
    flops: float
    inputs: List[str]
    outputs: List[str]


class HostOp(NamedTuple):
    """An op left on the host, with what the partitioner decided about it.

    decisions: dicts of kind ("no_target", "declined", "pruned"), target and reason.
    """

    function: str
    node: str
    op: str
    decisions: list

    @property
    def reason(self):
        if not self.decisions:
            return "no decision recorded"
        return "; ".join(
            (f"{d['target']}: " if d["target"] else "") + (d["reason"] or d["kind"])
            for d in self.decisions)


class PartitionReport:
    """What partitioning decided: regions per target, host ops and why, the graph.

    In a notebook the report draws itself (``_repr_html_``).
    """

    def __init__(self, result):
        self.targets = list(result["targets"])
        self.regions = [Region(**r) for r in result["regions"]]
        self.host_ops = [HostOp(**h) for h in result["host"]]
        self.offloaded_ops = result["offloaded_ops"]
        self.summary = result["summary"]
        self.report = result["report"]
        self.ir = result["ir"]
        self._dot = result["dot"]
        self._html = result["html"]

    def to_dot(self):
        """The partitioned graph as Graphviz DOT (a cluster per region)."""
        return self._dot

    def to_html(self):
        """A self-contained HTML page: the graph (search, zoom, collapse) and the tables."""
        return self._html

    def _repr_html_(self):
        return ('<iframe style="width:100%;height:640px;border:1px solid #ccc" srcdoc="'
                + _html.escape(self._html, quote=True) + '"></iframe>')

    def __str__(self):
        return self.report

    def __repr__(self):
        return f"<tessera.PartitionReport: {self.summary.strip()}>"


def partition(model, targets=None, input_shapes=None, title=None):
    """Partitions a model among plugins (as ``tessera partition``) and returns a PartitionReport."""
    return PartitionReport(_compiler.partition(_model_source(model), _targets(targets),
                                               input_shapes, title or ""))


class Plugins(NamedTuple):
    """What plugin discovery found: loaded plugins, rejected candidates (path, reason), the search path."""

    loaded: list
    rejected: list
    search_path: list

    def names(self):
        return [p["name"] for p in self.loaded]


def plugins():
    """The plugins discovery loaded and the candidates it rejected with their reasons."""
    r = _compiler.plugins()
    return Plugins(r["loaded"], r["rejected"], r["search_path"])


def import_onnx(model, input_shapes=None):
    """Imports an ONNX model (path, bytes or onnx.ModelProto) and returns it as text IR."""
    return _compiler.import_onnx(_model_source(model), input_shapes)


def interpret(model, feeds, input_shapes=None):
    """Runs a model with the reference interpreter: {input name: array} -> {output name: ndarray}.

    The outputs are named as a compiled artifact names them, so the result compares
    directly with ``Session.run``'s.
    """
    return _compiler.interpret(_model_source(model), dict(feeds), input_shapes)
