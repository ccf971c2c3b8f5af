#!/usr/bin/env python3
"""Run-time control flow end to end (issue 21, docs/design/0013): ONNX If
whose condition is a model input and Loop whose trip count and condition
are known only at run time, imported as `if` / `loop` ops, compiled
(host only and with --target dnnl), and run by `tessera run` in fresh
processes on inputs that take every path: both branches, zero, one and
several iterations, an early exit decided by the data. Every output is
checked against NumPy's computation of the same model (|a-b| <= 1e-5 +
1e-5 |b|) and against the reference interpreter through `tessera
conformance` (a backend-test folder per case).

A Loop with scan outputs, a constant trip count (100) and a condition the
data decides runs at run time too: its scan outputs have a run-time length
(0, a few, all 100 iterations), checked the same ways; so does one whose
trip count is an input (no bound: 0 to 100 rows, grown mid-run).

ONNX Scan over a sequence whose length is a symbol (read from the end,
stacked on axis 1, in order and prepended) runs as one loop over windows of
its input, at lengths 1 to 40, checked against NumPy.

ONNX ConstantOfShape whose shape is a model input (f32 and i32 values) runs
at shapes [3, 40], [0, 4], [20, 20], checked against np.full; a negative dim
stops the run naming the node.

ONNX Range over scalars that are model inputs (i64 and f32) compiles once
and runs at lengths 0 to 300 (memory grown mid-run past the first 16),
checked against np.arange; a zero step fails the run naming the node.

Also checked: the import keeps the ops (`tessera import` prints `if(` and
`loop(`), a constant condition still inlines its branch, the artifact's
plan has control steps (`tessera inspect --json`), and a Loop with scan
outputs and a run-time trip count runs with memory grown mid-run.

Usage: check_control_flow.py --tessera BIN --source-dir DIR --out DIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from e2e_checker import checker_from_args

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "onnx"))
from make_ragged import ragged_list_model  # noqa: E402  (shared with python/tests)

F32 = TensorProto.FLOAT


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def if_model():
    """y = If(c, then: relu(x * s) + b, else: x - s), s = sigmoid(x) computed
    outside both branches (a captured value), b an outer initializer (stays a
    constant); a second output is an outer value returned by the then branch
    directly and computed in the else branch."""
    b = numpy_helper.from_array(np.array([0.5, -1.0, 2.0], np.float32), "b")
    then_g = helper.make_graph(
        [helper.make_node("Mul", ["x", "s"], ["m"]),
         helper.make_node("Relu", ["m"], ["r"]),
         helper.make_node("Add", ["r", "b"], ["t_out"])],
        "then_g", [], [vi("t_out", F32, [2, 3]), vi("s", F32, [2, 3])])
    else_g = helper.make_graph(
        [helper.make_node("Sub", ["x", "s"], ["e_out"]),
         helper.make_node("Neg", ["s"], ["e_s"])],
        "else_g", [], [vi("e_out", F32, [2, 3]), vi("e_s", F32, [2, 3])])
    nodes = [helper.make_node("Sigmoid", ["x"], ["s"]),
             helper.make_node("If", ["c"], ["y", "z"], name="branch",
                              then_branch=then_g, else_branch=else_g)]
    g = helper.make_graph(nodes, "if_model", [vi("c", TensorProto.BOOL, []),
                                             vi("x", F32, [2, 3])],
                          [vi("y", F32, [2, 3]), vi("z", F32, [2, 3])], [b])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def if_reference(c, x):
    s = 1 / (1 + np.exp(-x.astype(np.float64)))
    if c:
        return np.maximum(x * s, 0) + np.array([0.5, -1.0, 2.0]), s
    return x - s, -s


def accumulate_nodes():
    """A loop body's nodes: acc_out = acc_in * k + x + i, cond_out = sum(acc_out)
    < limit (x, k and limit read from the enclosing graph)."""
    return [helper.make_node("Mul", ["acc_in", "k"], ["m"]),
            helper.make_node("Add", ["m", "x"], ["a"]),
            helper.make_node("Cast", ["i"], ["fi"], to=F32),
            helper.make_node("Add", ["a", "fi"], ["acc_out"]),
            helper.make_node("ReduceSum", ["acc_out"], ["total"], keepdims=0),
            helper.make_node("Less", ["total", "limit"], ["cond_out"])]


def loop_model():
    """acc_{i+1} = acc_i * k + x + i (x, k captured), carried while i < M and
    sum(acc) < limit (the body's condition, decided by the data)."""
    body = helper.make_graph(
        accumulate_nodes(), "body",
        [vi("i", TensorProto.INT64, []), vi("cond_in", TensorProto.BOOL, []),
         vi("acc_in", F32, [4])],
        [vi("cond_out", TensorProto.BOOL, []), vi("acc_out", F32, [4])])
    nodes = [helper.make_node("Loop", ["M", "", "acc0"], ["acc"], name="iterate", body=body)]
    g = helper.make_graph(nodes, "loop_model",
                          [vi("M", TensorProto.INT64, []), vi("acc0", F32, [4]),
                           vi("x", F32, [4]), vi("k", F32, [4]), vi("limit", F32, [])],
                          [vi("acc", F32, [4])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def loop_reference(m, acc, x, k, limit):
    acc = acc.astype(np.float64)
    cond = True
    i = 0
    while i < m and cond:
        acc = acc * k + x + i
        cond = acc.sum() < limit
        i += 1
    return acc


def scan_outputs_model():
    """acc_{i+1} = acc_i * k + x + i while i < 100 and sum(acc) < limit, the
    first condition an input; scan outputs: every iteration's acc and 2 i."""
    body = helper.make_graph(
        accumulate_nodes() + [helper.make_node("Add", ["i", "i"], ["twice"])],
        "body", [vi("i", TensorProto.INT64, []), vi("cond_in", TensorProto.BOOL, []),
                 vi("acc_in", F32, [4])],
        [vi("cond_out", TensorProto.BOOL, []), vi("acc_out", F32, [4]), vi("accs", F32, [4]),
         vi("twice", TensorProto.INT64, [])])
    # acc_out is both carried and scanned: the scan output is its copy.
    body.node.append(helper.make_node("Identity", ["acc_out"], ["accs"]))
    nodes = [helper.make_node("Loop", ["M", "c0", "acc0"], ["acc", "accs", "steps"],
                              name="decode", body=body)]
    g = helper.make_graph(nodes, "scan_outputs",
                          [vi("c0", TensorProto.BOOL, []), vi("acc0", F32, [4]),
                           vi("x", F32, [4]), vi("k", F32, [4]), vi("limit", F32, [])],
                          [vi("acc", F32, [4]), vi("accs", F32, [None, 4]),
                           vi("steps", TensorProto.INT64, [None])],
                          [numpy_helper.from_array(np.array(100, np.int64), "M")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def scan_outputs_reference(c0, acc0, x, k, limit):
    acc, accs, steps = acc0.astype(np.float64), [], []
    i, cond = 0, bool(c0)
    while i < 100 and cond:
        acc = acc * k + x + i
        cond = acc.sum() < limit
        accs.append(acc)
        steps.append(2 * i)
        i += 1
    return acc, np.array(accs).reshape(len(accs), 4), np.array(steps, np.int64)


def scan_loop_model():
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Identity", ["v_in"], ["v_out"]),
         helper.make_node("Identity", ["v_in"], ["scan"])],
        "body", [vi("i", TensorProto.INT64, []), vi("cond_in", TensorProto.BOOL, []),
                 vi("v_in", F32, [2])],
        [vi("cond_out", TensorProto.BOOL, []), vi("v_out", F32, [2]), vi("scan", F32, [2])])
    g = helper.make_graph([helper.make_node("Loop", ["M", "", "v"], ["vf", "ys"], name="scanner",
                                            body=body)],
                          "scan_loop", [vi("M", TensorProto.INT64, []), vi("v", F32, [2])],
                          [vi("vf", F32, [2]), vi("ys", F32, [None, 2])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def appending_model(consumers):
    """A scripted loop collecting its results in a list, as torch.onnx
    exports `for i in range(x.size(0)): h = tanh(h + x[i]); outs.append(h * 2)`:
    Loop over Shape(x)[0] carrying h and a sequence started by SequenceEmpty,
    the body appending with SequenceInsert; `consumers` read the sequence
    (node, output name, output rank)."""
    body = helper.make_graph(
        [helper.make_node("Gather", ["x", "i"], ["xi"]),
         helper.make_node("Add", ["h_in", "xi"], ["pre"]),
         helper.make_node("Tanh", ["pre"], ["h_out"]),
         helper.make_node("Mul", ["h_out", "two"], ["y_t"]),
         helper.make_node("SequenceInsert", ["outs_in", "y_t"], ["outs_out"]),
         helper.make_node("Identity", ["c"], ["c_out"])],
        "body", [vi("i", TensorProto.INT64, []), vi("c", TensorProto.BOOL, []),
                 vi("h_in", F32, [3]),
                 helper.make_tensor_sequence_value_info("outs_in", F32, None)],
        [vi("c_out", TensorProto.BOOL, []), vi("h_out", F32, [3]),
         helper.make_tensor_sequence_value_info("outs_out", F32, None)],
        [numpy_helper.from_array(np.array(2, np.float32), "two")])
    nodes = [helper.make_node("SequenceEmpty", [], ["outs0"], dtype=F32),
             helper.make_node("Shape", ["x"], ["shape"]),
             helper.make_node("Gather", ["shape", "zero"], ["n"]),
             helper.make_node("Loop", ["n", "true", "h0", "outs0"], ["h", "outs"], body=body,
                              name="collect")]
    outputs = [vi("h", F32, [3])]
    for node, name, rank in consumers:
        nodes.append(node)
        outputs.append(vi(name, F32 if name != "length" else TensorProto.INT64, [None] * rank))
    g = helper.make_graph(nodes, "appending", [vi("x", F32, ["T", 3])], outputs,
                          [numpy_helper.from_array(np.array(0, np.int64), "zero"),
                           numpy_helper.from_array(np.array(True), "true"),
                           numpy_helper.from_array(np.zeros(3, np.float32), "h0")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def run_cases(c, model_path, label, cases, reference, output_names, targets):
    """Compiles once per target list, runs every case in a fresh process."""
    for target in targets:
        tsr = c.path(f"{label}{'_' + target if target else ''}.tsr")
        args = ["compile", model_path, "-o", tsr] + (["--target", target] if target else [])
        if c.step(f"{label}: compile {target or 'host'}", lambda: c.tool(*args)) is None:
            continue
        plan = c.inspect(tsr)["plan"]
        c.ok(plan.get("control_steps", 0) > 0, f"{label} ({target or 'host'}): the plan has "
             "control steps", str(plan.get("control_steps")))
        for i, feeds in enumerate(cases):
            npz = c.path(f"{label}_case{i}.npz")
            np.savez(npz, **feeds)
            out = c.path(f"{label}_{target or 'host'}_case{i}_out.npz")
            if c.step(f"{label} case {i}", lambda: c.tool("run", tsr, "--inputs", npz,
                                                           "--outputs", out)) is None:
                continue
            got = np.load(out)
            want = reference(**feeds)
            for name, w in zip(output_names, want):
                c.close(got[name], np.asarray(w, np.float32), 1e-5, 1e-5,
                        f"{label} ({target or 'host'}) case {i} output '{name}'")


def main():
    a, c = checker_from_args()
    targets = ["", "dnnl"]

    # If on an input.
    path = c.path("if_model.onnx")
    onnx.save(if_model(), path)
    text = c.tool("import", path).stdout
    c.ok(" = if(" in text, "If on an input imports as an if op", text)
    x = np.array([[-1.5, 0.25, 2.0], [0.75, -0.5, 3.0]], np.float32)
    cases = [{"c": np.array(True), "x": x}, {"c": np.array(False), "x": x}]
    run_cases(c, path, "if", cases, lambda c, x: if_reference(bool(c), x), ["y", "z"], targets)
    for i, feeds in enumerate(cases):
        y, z = if_reference(bool(feeds["c"]), feeds["x"])
        folder = c.backend_folder(f"if_case{i}", path, feeds,
                                {"y": y.astype(np.float32), "z": z.astype(np.float32)})
        c.conformance(folder, f"if case {i}: the reference interpreter")
    # A constant condition still inlines the taken branch.
    folded = if_model()
    folded.graph.input.pop(0)
    folded.graph.initializer.append(numpy_helper.from_array(np.array(False), "c"))
    folded_path = c.path("if_constant.onnx")
    onnx.save(folded, folded_path)
    text = c.tool("import", folded_path).stdout
    c.ok(" = if(" not in text and "subtract(" in text and "relu(" not in text,
         "a constant condition inlines the taken branch", text)

    # Loop with a run-time trip count and a data-dependent exit.
    path = c.path("loop_model.onnx")
    onnx.save(loop_model(), path)
    text = c.tool("import", path).stdout
    c.ok(" = loop(" in text, "Loop with a run-time trip count imports as a loop op", text)
    acc0 = np.array([0.5, -0.25, 1.0, 0.0], np.float32)
    xs = np.array([0.1, 0.2, -0.3, 0.4], np.float32)
    k = np.array([1.5, 0.5, -1.0, 2.0], np.float32)
    cases = [
        {"M": np.array(0, np.int64), "acc0": acc0, "x": xs, "k": k, "limit": np.float32(1e9)},
        {"M": np.array(1, np.int64), "acc0": acc0, "x": xs, "k": k, "limit": np.float32(1e9)},
        {"M": np.array(7, np.int64), "acc0": acc0, "x": xs, "k": k, "limit": np.float32(1e9)},
        # the data ends it: sum(acc) passes 20 after a few iterations of 100
        {"M": np.array(100, np.int64), "acc0": acc0, "x": xs, "k": k, "limit": np.float32(20)},
    ]
    n_iters = []
    for feeds in cases:
        acc, it, cond = feeds["acc0"].astype(np.float64), 0, True
        while it < feeds["M"] and cond:
            acc = acc * feeds["k"] + feeds["x"] + it
            cond = acc.sum() < feeds["limit"]
            it += 1
        n_iters.append(it)
    c.ok(n_iters[3] not in (0, 100), "the early-exit case stops in the middle", str(n_iters))
    run_cases(c, path, "loop", cases,
              lambda M, acc0, x, k, limit: [loop_reference(int(M), acc0, x, k, float(limit))],
              ["acc"], targets)
    for i, feeds in enumerate(cases):
        want = loop_reference(int(feeds["M"]), feeds["acc0"], feeds["x"], feeds["k"],
                              float(feeds["limit"])).astype(np.float32)
        folder = c.backend_folder(f"loop_case{i}", path, feeds, {"acc": want})
        c.conformance(folder, f"loop case {i}: the reference interpreter")

    # Scan outputs of a run-time loop: a run-time length bounded by the
    # constant trip count.
    path = c.path("scan_outputs.onnx")
    onnx.save(scan_outputs_model(), path)
    text = c.tool("import", path).stdout
    c.ok(" = loop(" in text and "scans=2" in text and "decode_count(0, 100)" in text,
         "Loop with scan outputs and a run-time condition imports as a loop op, its length a "
         "run-time symbol bounded by the trip count", text)
    base = {"acc0": acc0, "x": xs, "k": k}
    cases = [{"c0": np.array(False), **base, "limit": np.float32(1e9)},
             {"c0": np.array(True), **base, "limit": np.float32(20)},
             {"c0": np.array(True), **base, "limit": np.float32(3e38)}]
    lengths = [len(scan_outputs_reference(**f)[2]) for f in cases]
    c.ok(lengths[0] == 0 and 0 < lengths[1] < 100 and lengths[2] == 100,
         "the scan cases run 0, a few and all 100 iterations", str(lengths))
    run_cases(c, path, "scan_outputs", cases, scan_outputs_reference, ["acc", "accs", "steps"],
              targets)
    for i, feeds in enumerate(cases):
        acc, accs, steps = scan_outputs_reference(**feeds)
        folder = c.backend_folder(f"scan_outputs_case{i}", path, feeds,
                                {"acc": acc.astype(np.float32), "accs": accs.astype(np.float32),
                                 "steps": steps})
        c.conformance(folder, f"scan outputs case {i}: the reference interpreter")

    # Scan outputs of a loop whose trip count is an input have no bound: the
    # session plans 16 rows first and grows them mid-run (20 and 100 rows).
    path = c.path("scan_loop.onnx")
    onnx.save(scan_loop_model(), path)
    text = c.tool("import", path).stdout
    c.ok(" = loop(" in text and "scanner_count(0)" in text,
         "Loop with scan outputs and a run-time trip count imports as a loop op, its length an "
         "unbounded run-time symbol", text)
    v = np.array([0.5, -2.0], np.float32)
    cases = [{"M": np.array(m, np.int64), "v": v} for m in (0, 1, 20, 100, 3)]
    run_cases(c, path, "scan_loop", cases, lambda M, v: [v, np.tile(v, (int(M), 1))],
              ["vf", "ys"], targets)
    # Scan over a symbolic sequence length: a loop over windows.
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "x_t"], ["s_out"]),
         helper.make_node("Mul", ["s_out", "w"], ["y_t"])],
        "body", [vi("s_in", F32, [2]), vi("x_t", F32, [2])],
        [vi("s_out", F32, [2]), vi("y_t", F32, [2])])
    node = helper.make_node("Scan", ["s0", "x"], ["s", "y"], num_scan_inputs=1, body=body,
                            name="scan", scan_input_directions=[1], scan_output_axes=[1])
    g = helper.make_graph([node], "scan_model",
                          [vi("s0", F32, [2]), vi("x", F32, ["L", 2]), vi("w", F32, [2])],
                          [vi("s", F32, [2]), vi("y", F32, [2, "L"])])
    path = c.path("scan_symbolic.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    text = c.tool("import", path).stdout
    c.ok(" = loop(" in text and "dynamic_slice(" in text,
         "Scan over a symbolic length imports as a loop over windows", text)

    def scan_reference(s0, x, w):
        s, ys = s0.astype(np.float64), []
        for t in range(len(x) - 1, -1, -1):
            s = s + x[t]
            ys.append(s * w)
        return s, np.array(ys).reshape(len(x), 2).T

    rng = np.random.default_rng(3)
    cases = [{"s0": rng.standard_normal(2).astype(np.float32),
              "x": rng.standard_normal((n, 2)).astype(np.float32),
              "w": rng.standard_normal(2).astype(np.float32)} for n in (1, 5, 40)]
    run_cases(c, path, "scan_symbolic", cases, scan_reference, ["s", "y"], targets)
    # The same with its scan output prepended (scan_output_directions 1).
    g.node[0].attribute.append(helper.make_attribute("scan_output_directions", [1]))
    path = c.path("scan_symbolic_reversed.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    run_cases(c, path, "scan_symbolic_reversed", cases,
              lambda s0, x, w: (lambda s, y: (s, y[:, ::-1]))(*scan_reference(s0, x, w)),
              ["s", "y"], targets)

    # A scripted loop appending to a list: the sequence becomes a scan output
    # (stacked), read by ConcatFromSequence (torch.stack on axis 0, torch.cat
    # on axis 1), SequenceAt(-1) and SequenceLength.
    consumers = [
        (helper.make_node("ConcatFromSequence", ["outs"], ["stacked"], axis=0, new_axis=1), "stacked", 2),
        (helper.make_node("ConcatFromSequence", ["outs"], ["joined"], axis=0, new_axis=0), "joined", 1),
        (helper.make_node("ConcatFromSequence", ["outs"], ["columns"], axis=1, new_axis=1), "columns", 2),
        (helper.make_node("SequenceAt", ["outs", "minus_one"], ["last"]), "last", 1),
        (helper.make_node("SequenceLength", ["outs"], ["length"]), "length", 0),
    ]
    m = appending_model(consumers)
    m.graph.initializer.append(numpy_helper.from_array(np.array(-1, np.int64), "minus_one"))
    path = c.path("appending.onnx")
    onnx.save(m, path)
    text = c.tool("import", path).stdout
    c.ok(" = loop(" in text and "scans=1" in text,
         "a loop appending to a sequence imports as a loop with a scan output", text)
    rng = np.random.default_rng(7)
    cases = [{"x": rng.standard_normal((n, 3)).astype(np.float32)} for n in (1, 5, 40)]

    def appending_want(x):
        h, ys = np.zeros(3), []
        for t in range(len(x)):
            h = np.tanh(h + x[t])
            ys.append(h * 2)
        ys = np.array(ys).reshape(len(x), 3)
        return [h, ys, ys.reshape(-1), ys.T, ys[-1], np.array(len(x), np.int64)]

    names = ["h", "stacked", "joined", "columns", "last", "length"]
    run_cases(c, path, "appending", cases, appending_want, names, targets)
    for i, feeds in enumerate(cases):
        want = dict(zip(names, appending_want(**feeds)))
        want = {k: (v if k == "length" else v.astype(np.float32)) for k, v in want.items()}
        folder = c.backend_folder(f"appending_case{i}", path, feeds, want)
        c.conformance(folder, f"appending case {i}: the reference interpreter")
    # A body that reads its sequence (its length) is not an appended one: the
    # loop carries a sequence of run-time length (seq_length, seq_insert in
    # the body; concat_from_seq after it), compiled and run.
    m = appending_model([consumers[0]])
    body = m.graph.node[3].attribute[0].g
    body.node.append(helper.make_node("SequenceLength", ["outs_in"], ["len_in"]))
    body.node.append(helper.make_node("Cast", ["len_in"], ["len_f"], to=F32))
    body.node[3].input[1] = "two_or_len"
    body.node.insert(3, helper.make_node("Add", ["two", "len_f"], ["two_or_len"]))
    path = c.path("appending_read.onnx")
    onnx.save(m, path)
    text = c.tool("import", path).stdout
    c.ok("seq_insert(" in text and "seq(f32[_])" in text and "concat_from_seq(" in text,
         "a loop whose body reads its sequence carries a sequence of run-time length", text)

    def reading_want(x):
        h, ys = np.zeros(3), []
        for t in range(len(x)):
            h = np.tanh(h + x[t])
            ys.append(h * (2 + t))
        return [h, np.array(ys).reshape(len(x), 3)]

    run_cases(c, path, "appending_read", cases, reading_want, ["h", "stacked"], targets)

    # ConstantOfShape over a shape that is an input: one unbounded run-time
    # dim per element.
    for value in (np.array([7.5], np.float32), np.array([-3], np.int32)):
        label = f"fill_{value.dtype.name}"
        elem = TensorProto.FLOAT if value.dtype == np.float32 else TensorProto.INT32
        g = helper.make_graph(
            [helper.make_node("ConstantOfShape", ["shape"], ["y"], name="fill",
                              value=numpy_helper.from_array(value))],
            label, [vi("shape", TensorProto.INT64, [2])], [vi("y", elem, None)])
        path = c.path(f"{label}.onnx")
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
        text = c.tool("import", path).stdout
        c.ok("fill_dim0(0)" in text and "fill_dim1(0)" in text,
             f"{label}: ConstantOfShape over an input has one run-time dim per element", text)
        tsr = c.path(f"{label}.tsr")
        if c.step(f"{label}: compile", lambda: c.tool("compile", path, "-o", tsr)) is None:
            continue
        for i, dims in enumerate(((3, 40), (0, 4), (20, 20))):
            npz, out = c.path(f"{label}_{i}.npz"), c.path(f"{label}_{i}_out.npz")
            np.savez(npz, shape=np.array(dims, np.int64))
            if c.step(f"{label} {dims}", lambda: c.tool("run", tsr, "--inputs", npz, "--outputs",
                                                        out)) is None:
                continue
            c.close(np.load(out)["y"], np.full(dims, value[0], value.dtype), 0, 0,
                    f"{label}: ConstantOfShape at {dims}")
        npz = c.path(f"{label}_negative.npz")
        np.savez(npz, shape=np.array((4, -2), np.int64))
        r = c.tool("run", tsr, "--inputs", npz, "--outputs", c.path("negative_out.npz"), rc=None)
        c.ok(r.returncode != 0 and "node 'fill' (ConstantOfShape): the shape must not hold a "
             "negative dim" in r.stderr, f"{label}: a negative dim stops the run naming the node",
             r.stderr)

    # Range over run-time scalars: an unbounded run-time length.
    for elem, np_type in ((TensorProto.INT64, np.int64), (TensorProto.FLOAT, np.float32)):
        label = f"range_{np.dtype(np_type).name}"
        g = helper.make_graph(
            [helper.make_node("Range", ["s", "l", "d"], ["r"], name="positions"),
             helper.make_node("Mul", ["r", "r"], ["sq"])],
            label, [vi(n, elem, []) for n in ("s", "l", "d")],
            [vi("r", elem, [None]), vi("sq", elem, [None])])
        path = c.path(f"{label}.onnx")
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
        text = c.tool("import", path).stdout
        c.ok("range_count(" in text and "positions_count(0)" in text,
             f"{label}: Range over inputs imports with an unbounded run-time length", text)
        for target in targets:
            tsr = c.path(f"{label}_{target or 'host'}.tsr")
            args = ["compile", path, "-o", tsr] + (["--target", target] if target else [])
            compiled = c.step(f"{label}: compile {target or 'host'}", lambda: c.tool(*args))
            if compiled is None:
                continue
            said = compiled.stdout + compiled.stderr
            c.ok("run-time dims: positions_count (0.., no upper bound): the data decides" in said,
                 f"{label}: compile names the run-time dim and says it has no bound", said)
            for i, (a, b, st) in enumerate(((3, 50, 2), (0, 0, 1), (-7, 293, 1), (10, -3, -4),
                                            (1, 6, 1))):
                feeds = {"s": np.array(a, np_type), "l": np.array(b, np_type),
                         "d": np.array(st, np_type)}
                npz, out = c.path(f"{label}_{i}.npz"), c.path(f"{label}_{target or 'host'}_{i}.npz")
                np.savez(npz, **feeds)
                if c.step(f"{label} case {i}", lambda: c.tool("run", tsr, "--inputs", npz,
                                                               "--outputs", out)) is None:
                    continue
                want = np.arange(a, b, st).astype(np_type)
                got = np.load(out)
                c.close(got["r"], want, 0, 0, f"{label} ({target or 'host'}) range({a}, {b}, {st})")
                c.close(got["sq"], want * want, 1e-6, 0,
                        f"{label} ({target or 'host'}) range({a}, {b}, {st}) squared")
            npz = c.path(f"{label}_zero.npz")
            np.savez(npz, s=np.array(0, np_type), l=np.array(5, np_type), d=np.array(0, np_type))
            r = c.tool("run", tsr, "--inputs", npz, "--outputs", c.path("zero_out.npz"), rc=None)
            c.ok(r.returncode != 0 and "range_count 'positions'" in r.stderr,
                 f"{label} ({target or 'host'}): a zero step fails naming the node", r.stderr)

    # A list of tensors of different lengths, in and out (ONNX's
    # test_loop13_seq with a given list): `tessera run` takes a sequence
    # input's elements from the .npz members NAME.0, NAME.1, ... and writes a
    # sequence output's the same way.
    path = c.path("ragged.onnx")
    onnx.save(ragged_list_model(), path)
    for target in targets:
        tsr = c.path(f"ragged_{target or 'host'}.tsr")
        args = ["compile", path, "-o", tsr] + (["--target", target] if target else [])
        if c.step(f"ragged: compile {target or 'host'}", lambda: c.tool(*args)) is None:
            continue
        meta = c.inspect(tsr)["metadata"]
        c.ok([i.get("sequence_rank") for i in meta["inputs"]] == [None, None, 1],
             "ragged: the metadata marks the sequence input", str(meta["inputs"]))
        shown = c.tool("inspect", tsr).stdout
        c.ok("prefix: seq(f32[_])" in shown and "parts: seq(f32[_])" in shown,
             "ragged: tessera inspect shows the sequence input and output", shown)
        x = np.arange(1, 9, dtype=np.float32)
        for n in (0, 3, 8):
            prefix = [np.array([5, 6], np.float32)]
            npz, out = c.path(f"ragged_{n}.npz"), c.path(f"ragged_{target or 'host'}_{n}_out.npz")
            np.savez(npz, n=np.array(n, np.int64), x=x, **{"prefix.0": prefix[0]})
            r = c.step(f"ragged n={n}", lambda: c.tool("run", tsr, "--inputs", npz,
                                                      "--outputs", out))
            if r is None:
                continue
            c.ok(f"output 'parts': a sequence of {n + 1} element" in r.stdout,
                 f"ragged n={n}: the run prints the sequence", r.stdout)
            got = np.load(out)
            want = [x[:i + 1] * 2 for i in reversed(range(n))] + prefix
            c.ok(sorted(k for k in got.files if k.startswith("parts.")) ==
                 sorted(f"parts.{k}" for k in range(n + 1)), f"ragged n={n}: one member per "
                 "element", str(got.files))
            for k, w in enumerate(want):
                c.close(got[f"parts.{k}"], w, 0, 0, f"ragged ({target or 'host'}) n={n} part {k}")
        r = c.tool("run", tsr)  # random: a list of two elements
        c.ok("output 'parts': a sequence of" in r.stdout, "ragged: runs on random inputs", r.stdout)
        npz = c.path("ragged_gap.npz")
        np.savez(npz, n=np.array(1, np.int64), x=x, **{"prefix.1": x})
        r = c.tool("run", tsr, "--inputs", npz, rc=None)
        c.ok(r.returncode != 0 and "element prefix.0 is missing" in r.stderr,
             "ragged: a missing element is named", r.stderr)
    return c.summary()


if __name__ == "__main__":
    sys.exit(main())
