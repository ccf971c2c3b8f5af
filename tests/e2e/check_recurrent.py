#!/usr/bin/env python3
"""Recurrent ops end to end (issue 21): ONNX LSTM, GRU and RNN models
compiled host only and with --target dnnl, run by `tessera run` in fresh
processes at 1 and 2 threads, every output checked against NumPy's loop of
the ONNX equations (|a-b| <= 1e-5 + 1e-4 |b|).

  - A recurrence a core op expresses imports as one `lstm`, `gru` or `rnn`
    op and compiles to one host step per layer: an LSTM in f32 with the
    default activations and no clip, peepholes or input_forget (dnnl
    declines it, saying why: the host kernel is faster), a GRU with the
    default activations and either linear_before_reset, an RNN with Tanh,
    Relu or Sigmoid; the rest import as a loop over a compiled cell per
    direction (never unrolled). Covered: directions
    forward, reverse and bidirectional; B and initial_h / initial_c present
    or absent, as initializers or as inputs; W, R and B as initializers
    (laid out at compile time) and as model inputs (laid out by the kernel
    per run); layout 1; batch > 1; hidden sizes that are not multiples of
    the kernel's 16-unit panels; a subset of the outputs; two stacked layers;
    a symbolic sequence length (one artifact run at several lengths, LSTM
    and GRU, and a GRU with other activations, which loops over its cell).
  - A loop over the cell: an LSTM with peepholes, one with other
    activations, a GRU with other activations, an RNN with a different
    activation per direction; a handful of host steps, not one per time
    step.
  - The reference interpreter on two models (`tessera conformance`).
  - Refused with the node and the attribute named: per-batch sequence_lens,
    an unknown activation.

Usage: check_recurrent.py --tessera BIN --source-dir DIR --out DIR
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from e2e_checker import checker_from_args

F32 = TensorProto.FLOAT


def sig(v):
    return 1 / (1 + np.exp(-v))


ACTS = {"Sigmoid": sig, "Tanh": np.tanh, "Relu": lambda v: np.maximum(v, 0)}


def reference(kind, x, w, r, b=None, h0=None, c0=None, p=None, direction="forward",
              acts=None, lbr=0):
    """ONNX RNN / GRU / LSTM in layout 0, in float64: (Y, Y_h[, Y_c])."""
    x, w, r = (a.astype(np.float64) for a in (x, w, r))
    S, B, _ = x.shape
    D, GH, H = r.shape
    G = GH // H
    acts = acts or {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"],
                    "LSTM": ["Sigmoid", "Tanh", "Tanh"]}[kind] * D
    per = len(acts) // D
    y = np.zeros((S, D, B, H))
    yh, yc = np.zeros((D, B, H)), np.zeros((D, B, H))
    for d in range(D):
        f = [ACTS[a] for a in acts[d * per:(d + 1) * per]]
        wb = b[d, :GH] if b is not None else np.zeros(GH)
        rb = b[d, GH:] if b is not None else np.zeros(GH)
        h = h0[d].astype(np.float64) if h0 is not None else np.zeros((B, H))
        c = c0[d].astype(np.float64) if c0 is not None else np.zeros((B, H))
        pi, po, pf = (p[d, k * H:(k + 1) * H] if p is not None else 0 for k in range(3))
        steps = range(S - 1, -1, -1) if direction == "reverse" or d == 1 else range(S)
        for t in steps:
            xw = x[t] @ w[d].T + wb
            if kind == "LSTM":
                g = xw + h @ r[d].T + rb
                i = f[0](g[:, :H] + pi * c)
                fg = f[0](g[:, 2 * H:3 * H] + pf * c)
                c = fg * c + i * f[1](g[:, 3 * H:])
                h = f[0](g[:, H:2 * H] + po * c) * f[2](c)
            elif kind == "GRU":
                zr = f[0](xw[:, :2 * H] + h @ r[d, :2 * H].T + rb[:2 * H])
                z, rg = zr[:, :H], zr[:, H:]
                if lbr:
                    hh = f[1](xw[:, 2 * H:] + rg * (h @ r[d, 2 * H:].T + rb[2 * H:]))
                else:
                    hh = f[1](xw[:, 2 * H:] + (rg * h) @ r[d, 2 * H:].T + rb[2 * H:])
                h = (1 - z) * hh + z * h
            else:
                h = f[0](xw + h @ r[d].T + rb)
            y[t, d] = h
        yh[d], yc[d] = h, c
    return (y, yh, yc) if kind == "LSTM" else (y, yh)


def rand(rng, *shape, scale=1.0):
    return (rng.uniform(-scale, scale, shape)).astype(np.float32)


class Case:
    """One recurrent node; `as_inputs` names the optional inputs that are
    model inputs (the rest of those given are initializers)."""

    def __init__(self, name, kind, S, B, I, H, direction="forward", bias=True, initial=False,
                 peepholes=False, acts=None, layout=0, outputs=None, as_inputs=(), seed=0,
                 lbr=0):
        rng = np.random.default_rng(seed)
        D = 2 if direction == "bidirectional" else 1
        G = {"RNN": 1, "GRU": 3, "LSTM": 4}[kind]
        s = 1 / np.sqrt(H)
        self.name, self.kind, self.direction, self.layout = name, kind, direction, layout
        self.acts, self.lbr = acts, lbr
        self.x = rand(rng, S, B, I)
        self.data = {"W": rand(rng, D, G * H, I, scale=s), "R": rand(rng, D, G * H, H, scale=s)}
        if bias:
            self.data["B"] = rand(rng, D, 2 * G * H, scale=0.5)
        if initial:
            self.data["initial_h"] = rand(rng, D, B, H)
            if kind == "LSTM":
                self.data["initial_c"] = rand(rng, D, B, H)
        if peepholes:
            self.data["P"] = rand(rng, D, 3 * H, scale=0.5)
        self.outputs = outputs or (["Y", "Y_h", "Y_c"] if kind == "LSTM" else ["Y", "Y_h"])
        self.as_inputs = as_inputs
        self.H = H

    def model(self):
        order = ["X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P"]
        names = ["x"] + [n if n in self.data else "" for n in order[1:]]
        while names[-1] == "":
            names.pop()
        node_outs = [o if o in self.outputs else "" for o in ["Y", "Y_h", "Y_c"]]
        while node_outs[-1] == "":
            node_outs.pop()
        attrs = {"hidden_size": self.H, "direction": self.direction}
        if self.layout:
            attrs["layout"] = 1
        if self.acts:
            attrs["activations"] = self.acts
        if self.lbr:
            attrs["linear_before_reset"] = 1
        node = helper.make_node(self.kind, names, node_outs, name=self.name, **attrs)
        x = self.layout_x()
        inputs = [helper.make_tensor_value_info("x", F32, list(x.shape))]
        inits = []
        for n, a in self.data.items():
            a = self.layout_state(a) if n.startswith("initial") else a
            if n in self.as_inputs:
                inputs.append(helper.make_tensor_value_info(n, F32, list(a.shape)))
            else:
                inits.append(numpy_helper.from_array(a, n))
        outs = [helper.make_tensor_value_info(o, F32, None) for o in self.outputs]
        g = helper.make_graph([node], self.name, inputs, outs, inits)
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])

    def layout_x(self):
        return self.x.transpose(1, 0, 2).copy() if self.layout else self.x

    def layout_state(self, a):
        return a.transpose(1, 0, 2).copy() if self.layout else a

    def feeds(self):
        f = {"x": self.layout_x()}
        for n in self.as_inputs:
            a = self.data[n]
            f[n] = self.layout_state(a) if n.startswith("initial") else a
        return f

    def want(self):
        d = self.data
        res = reference(self.kind, self.x, d["W"], d["R"], d.get("B"), d.get("initial_h"),
                        d.get("initial_c"), d.get("P"), self.direction, self.acts, self.lbr)
        named = dict(zip(["Y", "Y_h", "Y_c"], res))
        if self.layout:
            named = {k: (v.transpose(2, 0, 1, 3) if k == "Y" else v.transpose(1, 0, 2))
                     for k, v in named.items()}
        return {k: named[k] for k in self.outputs}


def run_case(c, case, targets=("", "dnnl"), core_op=True):
    path = c.path(f"{case.name}.onnx")
    onnx.save(case.model(), path)
    text = c.tool("import", path).stdout
    op = case.kind.lower()
    if core_op:
        c.ok(text.count(f" {op}(") == 1 and " dense(" not in text,
             f"{case.name}: imports as one {op} op", text[-2000:])
    else:
        c.ok(f" {op}(" not in text and text.count(" = loop(") == (2 if case.direction ==
                                                                  "bidirectional" else 1),
             f"{case.name}: imports as a loop over its cell per direction", text[-2000:])
    npz = c.path(f"{case.name}_in.npz")
    np.savez(npz, **case.feeds())
    want = case.want()
    for target in targets:
        label = f"{case.name} ({target or 'host'})"
        tsr = c.path(f"{case.name}_{target or 'host'}.tsr")
        args = ["compile", path, "-o", tsr] + (["--target", target] if target else [])
        if c.step(f"{label}: compile", lambda: c.tool(*args)) is None:
            continue
        if not target:
            steps = c.inspect(tsr)["metadata"]["host_steps"]
            c.ok(steps <= (4 if core_op else 40),
                 f"{label}: a handful of host steps, not one per time step", str(steps))
        if core_op and target == "dnnl" and op == "lstm":
            # oneDNN's lstm_forward is slower than the host kernel: declined.
            report = c.tool("partition", path, "--target", "dnnl", "--report").stdout
            c.ok("declined by dnnl: dnnl: lstm: runs on the host" in report,
                 f"{label}: dnnl declines lstm, saying why", report)
        for threads in ("1", "2"):
            out = c.path(f"{case.name}_{target or 'host'}_{threads}.npz")
            if c.step(f"{label}: run", lambda: c.tool("run", tsr, "--inputs", npz, "--outputs",
                                                      out, "--threads", threads)) is None:
                continue
            got = np.load(out)
            for name, w in want.items():
                c.close(got[name], w.astype(np.float32), 1e-4, 1e-5,
                        f"{label} at {threads} threads: output '{name}'")
    return path


def stacked_model(c):
    """Two stacked LSTM layers as torch exports them (Squeeze between)."""
    rng = np.random.default_rng(5)
    S, B, I, H = 23, 1, 40, 36
    s = 1 / np.sqrt(H)
    w1, r1, b1 = rand(rng, 1, 4 * H, I, scale=s), rand(rng, 1, 4 * H, H, scale=s), rand(rng, 1, 8 * H)
    w2, r2, b2 = rand(rng, 1, 4 * H, H, scale=s), rand(rng, 1, 4 * H, H, scale=s), rand(rng, 1, 8 * H)
    axes = numpy_helper.from_array(np.array([1], np.int64), "axes")
    nodes = [helper.make_node("LSTM", ["x", "w1", "r1", "b1"], ["y1"], hidden_size=H, name="l1"),
             helper.make_node("Squeeze", ["y1", "axes"], ["x2"]),
             helper.make_node("LSTM", ["x2", "w2", "r2", "b2"], ["y2", "h2", "c2"],
                              hidden_size=H, name="l2")]
    inits = [numpy_helper.from_array(a, n) for a, n in
             ((w1, "w1"), (r1, "r1"), (b1, "b1"), (w2, "w2"), (r2, "r2"), (b2, "b2"))] + [axes]
    x = rand(rng, S, B, I)
    g = helper.make_graph(nodes, "stacked", [helper.make_tensor_value_info("x", F32, [S, B, I])],
                          [helper.make_tensor_value_info(n, F32, None) for n in ("y2", "h2", "c2")],
                          inits)
    path = c.path("stacked.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)]), path)
    y1 = reference("LSTM", x, w1, r1, b1)[0]
    want = reference("LSTM", y1[:, 0].astype(np.float32), w2, r2, b2)
    npz = c.path("stacked_in.npz")
    np.savez(npz, x=x)
    for target in ("", "dnnl"):
        tsr = c.path(f"stacked_{target or 'host'}.tsr")
        args = ["compile", path, "-o", tsr] + (["--target", target] if target else [])
        if c.step(f"stacked ({target or 'host'}): compile", lambda: c.tool(*args)) is None:
            continue
        for threads in ("1", "2"):
            out = c.path(f"stacked_{target or 'host'}_{threads}.npz")
            if c.step("stacked: run", lambda: c.tool("run", tsr, "--inputs", npz, "--outputs", out,
                                                     "--threads", threads)) is None:
                continue
            got = np.load(out)
            for name, w in zip(("y2", "h2", "c2"), want):
                c.close(got[name], w.astype(np.float32), 1e-4, 1e-5,
                        f"stacked ({target or 'host'}) at {threads} threads: '{name}'")


def symbolic_length(c, kind, acts=None):
    """An LSTM or GRU whose sequence length is a symbol: compiled once (N in
    1..20), run at several lengths."""
    case = Case(f"symlen_{kind}{'_acts' if acts else ''}", kind, 7, 3, 5, 20,
                direction="bidirectional", acts=acts, seed=15)
    model = case.model()
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "N"
    path = c.path(f"{case.name}.onnx")
    onnx.save(model, path)
    tsr = c.path(f"{case.name}.tsr")
    if c.step(f"{case.name}: compile", lambda: c.tool("compile", path, "--input-shape", "x=N:1..20,3,5",
                                                 "-o", tsr)) is None:
        return
    d = case.data
    for n in (1, 6, 20):
        x = np.random.default_rng(n).uniform(-1, 1, (n, 3, 5)).astype(np.float32)
        npz, out = c.path(f"{case.name}_{n}.npz"), c.path(f"{case.name}_{n}_out.npz")
        np.savez(npz, x=x)
        if c.step(f"{case.name}: run at N={n}", lambda: c.tool("run", tsr, "--inputs", npz, "--outputs",
                                                          out, "--threads", "2")) is None:
            continue
        got = np.load(out)
        want = reference(kind, x, d["W"], d["R"], d["B"], direction="bidirectional", acts=acts)
        for name, w in zip(("Y", "Y_h", "Y_c"), want):
            c.close(got[name], w.astype(np.float32), 1e-4, 1e-5,
                    f"{case.name} at N={n}: '{name}'")


def main():
    a, c = checker_from_args()

    cases = [
        Case("fwd", "LSTM", 10, 1, 12, 20, seed=1),
        Case("fwd_b3", "LSTM", 7, 3, 5, 16, initial=True, seed=2),
        Case("rev", "LSTM", 9, 2, 6, 17, direction="reverse", bias=False, initial=True, seed=3),
        Case("bidi", "LSTM", 6, 2, 4, 24, direction="bidirectional", initial=True, seed=4,
             as_inputs=("initial_h", "initial_c")),
        Case("bidi_layout1", "LSTM", 5, 3, 4, 8, direction="bidirectional", initial=True,
             layout=1, outputs=["Y", "Y_c"], seed=5),
        Case("weights_in", "LSTM", 8, 2, 7, 18, direction="bidirectional", initial=True,
             as_inputs=("W", "R", "B", "initial_h"), seed=6),
        Case("only_yh", "LSTM", 4, 1, 3, 5, outputs=["Y_h"], seed=7),
        Case("gru", "GRU", 5, 2, 3, 7, direction="bidirectional", initial=True, seed=10),
        Case("gru_lbr", "GRU", 9, 3, 4, 18, lbr=1, seed=11),
        Case("gru_weights_in", "GRU", 6, 2, 5, 17, direction="reverse", lbr=1, initial=True,
             as_inputs=("W", "R", "B"), seed=16),
        Case("gru_layout1", "GRU", 5, 3, 4, 8, layout=1, outputs=["Y_h"], seed=17),
        Case("rnn", "RNN", 6, 2, 3, 5, direction="reverse", initial=True, seed=12),
        Case("rnn_relu", "RNN", 7, 1, 4, 33, direction="bidirectional", acts=["Relu", "Relu"],
             seed=18),
    ]
    cell_loops = [
        Case("peepholes", "LSTM", 4, 2, 3, 6, peepholes=True, initial=True, seed=8),
        Case("lstm_relu", "LSTM", 4, 2, 3, 6, acts=["Sigmoid", "Relu", "Tanh"], seed=9),
        Case("gru_relu", "GRU", 5, 2, 3, 7, acts=["Sigmoid", "Relu"], seed=19),
        Case("rnn_mixed", "RNN", 6, 2, 3, 5, direction="bidirectional", acts=["Tanh", "Relu"],
             seed=20),
    ]
    for case in cases:
        run_case(c, case)
    for case in cell_loops:
        run_case(c, case, core_op=False)
    stacked_model(c)
    symbolic_length(c, "LSTM")
    symbolic_length(c, "GRU")
    symbolic_length(c, "GRU", acts=["Relu", "Tanh", "Sigmoid", "Relu"])

    # The reference interpreter (the lstm, gru and rnn ops' reference kernels).
    for case in (cases[1], cases[3], cases[8], cases[11], cell_loops[0], cell_loops[3]):
        path = c.path(f"{case.name}.onnx")
        want = {k: v.astype(np.float32) for k, v in case.want().items()}
        folder = c.backend_folder(f"{case.name}_backend", path, case.feeds(), want)
        c.conformance(folder, f"{case.name}: the reference interpreter")

    # Refusals name the node and what is refused.
    lens = Case("lens", "LSTM", 4, 2, 3, 5, seed=13).model()
    lens.graph.node[0].input[:] = ["x", "W", "R", "B", "lens"]
    lens.graph.initializer.append(numpy_helper.from_array(np.array([4, 2], np.int32), "lens"))
    path = c.path("lens.onnx")
    onnx.save(lens, path)
    r = c.tool("import", path, rc=None)
    c.ok(r.returncode != 0 and "node 'lens' (LSTM)" in r.stderr and "sequence_lens" in r.stderr,
         "per-batch sequence_lens is refused naming the node", r.stderr)
    bad = Case("bad_act", "LSTM", 4, 1, 3, 5, acts=["Sigmoid", "Tanh", "Swish"], seed=14).model()
    path = c.path("bad_act.onnx")
    onnx.save(bad, path)
    r = c.tool("import", path, rc=None)
    c.ok(r.returncode != 0 and "node 'bad_act' (LSTM)" in r.stderr
         and "attribute 'activations'" in r.stderr and "Swish" in r.stderr,
         "an unknown activation is refused naming the node, the attribute and the activation", r.stderr)
    return c.summary()


if __name__ == "__main__":
    sys.exit(main())
