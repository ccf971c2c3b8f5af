"""tessera.compile / load / Artifact / runtime.Session against `tessera run` and the
reference interpreter (tessera.interpret)."""
import json
import subprocess

import numpy as np
import onnx
import pytest

import tessera
import tessera.runtime as rt
from conftest import affine_reference, run_cli
from make_ragged import ragged_list_model  # tests/onnx (conftest puts it on the path)


def test_dnnl_matches_tessera_run_and_interpreter(models, cli, tmp_path):
    # The "done when": compile with dnnl, run on NumPy, same as `tessera run`.
    art = tessera.compile(models["cnn"], targets=["dnnl"])
    assert art.plugins == ["dnnl"]
    x = np.random.default_rng(3).standard_normal((1, 3, 8, 8)).astype(np.float32)
    sess = rt.Session(art, threads=2)
    got = sess.run({"x": x})
    assert sorted(got) == ["feat", "logits"]
    assert got["logits"].shape == (1, 5) and got["logits"].dtype == np.float32

    path = tmp_path / "cnn.tsr"
    art.save(path)
    np.save(tmp_path / "x.npy", x)
    run_cli(cli, "run", path, "--inputs", f"x={tmp_path / 'x.npy'}", "--outputs",
            tmp_path / "out.npz")
    ref = np.load(tmp_path / "out.npz")
    for name in ("feat", "logits"):
        np.testing.assert_array_equal(got[name], ref[name])

    want = tessera.interpret(models["cnn"], {"x": x})
    for name in ("feat", "logits"):
        np.testing.assert_allclose(got[name], want[name], rtol=1e-4, atol=1e-4)


def test_compile_from_bytes_and_modelproto(models):
    x = np.linspace(-2, 2, 6, dtype=np.float32).reshape(2, 3)
    proto = onnx.load(models["affine"])
    with open(models["affine"], "rb") as f:
        data = f.read()
    for source in (models["affine"], data, proto):
        art = tessera.compile(source, targets=[])
        assert art.plugins == []
        np.testing.assert_array_equal(rt.Session(art).run({"x": x})["y"], affine_reference(x))


def test_host_code_levels(models):
    """The default builds x86-64-v3 and v4; the model says which one it loaded."""
    x = np.linspace(-2, 2, 6, dtype=np.float32).reshape(2, 3)
    art = tessera.compile(models["affine"], targets=[])
    meta = json.loads(rt.Model(art).metadata_json)
    levels = [level["cpu"] for level in meta["host_code"]]
    assert levels == ["x86-64-v4", "x86-64-v3"]
    with open("/proc/cpuinfo") as f:
        flags = next(line for line in f if line.startswith("flags")).split()
    v4 = {"avx512f", "avx512dq", "avx512cd", "avx512bw", "avx512vl"} <= set(flags)
    assert rt.Model(art).host_cpu == ("x86-64-v4" if v4 else "x86-64-v3")
    one = tessera.compile(models["affine"], targets=[], mcpu="x86-64-v2")
    assert rt.Model(one).host_cpu == "x86-64-v2"
    assert "host_code" in json.loads(rt.Model(one).metadata_json)
    np.testing.assert_array_equal(rt.Session(one).run({"x": x})["y"], affine_reference(x))


def test_artifact_save_load_and_metadata(models, tmp_path):
    art = tessera.compile(models["cnn"], targets=["dnnl", "ccompiler"], opt_level=1,
                          mcpu="x86-64-v2")
    assert [(t.name, t.shape, t.dtype) for t in art.inputs] == [("x", (1, 3, 8, 8),
                                                                 np.dtype(np.float32))]
    assert [t.name for t in art.outputs] == ["feat", "logits"]
    assert art.outputs[1].shape == (1, 5)
    assert "dnnl" in art.plugins
    assert art.regions, "dnnl took regions"
    assert "dnnl" in repr(art)
    path = tmp_path / "m.tsr"
    art.save(path)
    for loaded in (tessera.load(path), tessera.load(str(path)), tessera.load(path.read_bytes())):
        assert loaded.to_bytes() == art.to_bytes()
        assert loaded.inputs == art.inputs and loaded.plugins == art.plugins
    x = np.ones((1, 3, 8, 8), np.float32)
    a = rt.Session(path).run({"x": x})            # a path
    b = rt.Session(str(path)).run({"x": x})       # a str
    c = rt.Session(path.read_bytes()).run({"x": x})  # bytes
    d = rt.Session(rt.Model(path)).run({"x": x})  # a Model
    for other in (b, c, d):
        np.testing.assert_array_equal(a["logits"], other["logits"])


def test_session_info_and_ort_style_run(models):
    art = tessera.compile(models["two"], targets=[])
    sess = rt.Session(art)
    assert [(i.name, i.shape, i.dtype) for i in sess.inputs] == [
        ("a", (3,), np.dtype(np.float32)), ("b", (3,), np.dtype(np.float32))]
    assert [(o.name, o.shape, o.dtype) for o in sess.outputs] == [
        ("z", (3,), np.dtype(np.float32)), ("i", (), np.dtype(np.int64))]
    assert sess.get_inputs() == sess.inputs and sess.get_outputs() == sess.outputs  # ORT's names
    a = np.array([1, 5, 2], np.float32)
    b = np.array([0.5, 0.25, 4], np.float32)
    z, i = sess.run(None, {"a": a, "b": b})
    np.testing.assert_array_equal(z, a + b)
    assert i.dtype == np.int64 and i.shape == () and int(i) == 1
    (i2,) = sess.run(["i"], {"a": a, "b": b})
    assert int(i2) == 1
    out = sess.run({"a": [3.0, 1.0, 2.0], "b": b})  # a list is converted to the input's dtype
    np.testing.assert_array_equal(out["z"], np.array([3, 1, 2], np.float32) + b)
    assert int(out["i"]) == 0
    want = tessera.interpret(models["two"], {"a": a, "b": b})
    np.testing.assert_array_equal(want["z"], z)
    assert int(want["i"]) == 1


def test_symbolic_batch(models):
    art = tessera.compile(models["batched"], targets=[], input_shapes={"x": ("N:1..16", 4)})
    sess = rt.Session(art)
    assert sess.inputs[0].shape == ("N", 4)
    assert sess.outputs[0].shape == ("N", 3)
    assert sess.model.symbols == {"N": (1, 16)}
    for n in (1, 5, 16):
        x = np.random.default_rng(n).standard_normal((n, 4)).astype(np.float32)
        y = sess.run({"x": x})["y"]
        assert y.shape == (n, 3)
        want = tessera.interpret(models["batched"], {"x": x}, input_shapes={"x": (n, 4)})["y"]
        np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)
    with pytest.raises(tessera.InvalidArgument, match="x"):
        sess.run({"x": np.zeros((17, 4), np.float32)})  # outside N's bounds


def test_outputs_own_their_memory(models):
    sess = rt.Session(tessera.compile(models["affine"], targets=[]))
    x = np.ones((2, 3), np.float32)
    y1 = sess.run({"x": x})["y"]
    y2 = sess.run({"x": -x})["y"]
    np.testing.assert_array_equal(y1, affine_reference(x))  # not overwritten by the next run
    np.testing.assert_array_equal(y2, affine_reference(-x))
    assert y1.flags.owndata and y1.flags.writeable
    del sess
    np.testing.assert_array_equal(y1, affine_reference(x))  # outlives the session


def test_partition_report(models):
    report = tessera.partition(models["cnn"], targets=["dnnl"])
    assert report.targets == ["dnnl"]
    assert report.regions and all(r.target == "dnnl" for r in report.regions)
    assert sum(r.ops for r in report.regions) == report.offloaded_ops > 0
    assert all(r.flops > 0 for r in report.regions)
    assert all(r.symbol.startswith("tessera_") for r in report.regions)
    for h in report.host_ops:
        assert h.op and isinstance(h.reason, str)
    assert "dnnl" in report.summary and "dnnl" in str(report)
    dot = report.to_dot()
    assert dot.startswith("digraph") and "cluster" in dot
    page = report.to_html()
    assert "<svg" in page or "<html" in page.lower()
    assert report._repr_html_().startswith("<iframe") and "srcdoc=" in report._repr_html_()
    assert "dnnl" in report.ir
    # A target that takes nothing: everything on the host, each op with its reason.
    host_only = tessera.partition(models["two"], targets=["dnnl"])
    assert host_only.offloaded_ops == 0 or host_only.regions
    assert all(h.decisions for h in host_only.host_ops)


def test_plugins_and_import(models):
    p = tessera.plugins()
    names = p.names()
    for shipped in ("dnnl", "json", "ccompiler"):
        assert shipped in names
    dnnl = next(x for x in p.loaded if x["name"] == "dnnl")
    assert dnnl["version"] and dnnl["path"].endswith(".so") and "conv2d" in dnnl["ops"]
    assert isinstance(p.rejected, list) and p.search_path
    for r in p.rejected:
        assert r["path"] and r["reason"]
    text = tessera.import_onnx(models["cnn"])
    assert "@main" in text and "conv2d" in text
    assert "N" in tessera.import_onnx(models["batched"], input_shapes={"x": ("N", 4)})


def test_placement_by_measurement_and_replay(models, tmp_path, monkeypatch):
    # placement="measure" is `tessera compile --placement measure`: the decision is in the
    # artifact's metadata, and a placement file replays it into the same bytes.
    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path / "cache"))
    decision = tmp_path / "placement.json"
    art = tessera.compile(models["cnn"], targets=["dnnl"], placement="measure",
                          placement_file=decision, tune_budget=60)
    placed = art.metadata["placement"]
    assert placed["mode"] == "measured"
    got = [(c["targets"], c["rule"]) for c in placed["candidates"]]
    assert got[:3] == [(["dnnl"], "measured"), ([], "measured"), (["dnnl"], "priority")]
    assert all(c["ms"] > 0 for c in placed["candidates"] if c["rule"] == "measured")
    assert "Placement (measured)" in art.partition_summary
    replayed = tessera.compile(models["cnn"], targets=["dnnl"], placement_file=decision)
    assert replayed.to_bytes() == art.to_bytes()
    x = np.random.default_rng(5).standard_normal((1, 3, 8, 8)).astype(np.float32)
    want = tessera.interpret(models["cnn"], {"x": x})
    got = rt.Session(art).run({"x": x})
    np.testing.assert_allclose(got["logits"], want["logits"], rtol=1e-4, atol=1e-4)
    with pytest.raises(tessera.Error, match="placement must be 'priority' or 'measure'"):
        tessera.compile(models["cnn"], targets=["dnnl"], placement="fastest")
    with pytest.raises(tessera.Error, match="needs targets"):
        tessera.compile(models["cnn"], targets=[], placement="measure")


def test_no_targets_means_the_host_as_in_the_cli(models, cli, tmp_path):
    # One rule for both: without targets, everything runs on the host.
    art = tessera.compile(models["cnn"])
    assert art.plugins == [] and art.metadata.get("regions", []) == []
    subprocess.run([cli, "compile", str(models["cnn"]), "-o", str(tmp_path / "cli.tsr")],
                   check=True, capture_output=True)
    assert tessera.load(tmp_path / "cli.tsr").to_bytes() == art.to_bytes()
    with pytest.raises(tessera.InvalidArgument, match="targets"):
        tessera.partition(models["cnn"])  # as `tessera partition`, which needs --target


def test_on_host_keeps_named_nodes_on_the_host(models):
    # on_host is `tessera compile --on-host`: the named nodes run on the host, the rest on
    # the target; an unknown name is refused naming it.
    art = tessera.compile(models["cnn"], targets=["dnnl"], on_host=["conv"])
    plain = tessera.compile(models["cnn"], targets=["dnnl"])
    # The ONNX Conv is two calls (conv2d, bias_add): both stay on the host.
    assert [r["ops"] for r in plain.metadata["regions"]] == [7]
    assert [r["ops"] for r in art.metadata["regions"]] == [5]
    x = np.random.default_rng(6).standard_normal((1, 3, 8, 8)).astype(np.float32)
    want = tessera.interpret(models["cnn"], {"x": x})
    got = rt.Session(art).run({"x": x})
    np.testing.assert_allclose(got["logits"], want["logits"], rtol=1e-4, atol=1e-4)
    with pytest.raises(tessera.Error, match="no node named 'nope'"):
        tessera.compile(models["cnn"], targets=["dnnl"], on_host=["nope"])
    with pytest.raises(TypeError, match="on_host must be a list"):
        tessera.compile(models["cnn"], targets=["dnnl"], on_host="conv")


def test_sequence_inputs_and_outputs_are_lists(tmp_path):
    # A list in, a list out, whose length and element sizes the data decides.
    art = tessera.compile(ragged_list_model(), targets=[])
    assert [t.sequence for t in art.inputs] == [False, False, True]
    assert art.outputs[0].sequence and art.outputs[0].shape == (None,)
    sess = rt.Session(art)
    assert [t.sequence for t in sess.get_inputs()] == [False, False, True]
    x = np.arange(1, 9, dtype=np.float32)
    prefix = [np.array([7.0], np.float32), np.zeros(0, np.float32)]
    for n in (0, 1, 5, 8):
        feeds = {"n": np.array(n, np.int64), "x": x, "prefix": prefix}
        got = sess.run(feeds)
        want = [x[:i + 1] * 2 for i in reversed(range(n))] + prefix
        assert isinstance(got["parts"], list) and len(got["parts"]) == n + 2
        for g, w in zip(got["parts"], want):
            np.testing.assert_array_equal(g, w)
        assert got["count"] == n + 2
        ref = tessera.interpret(ragged_list_model(), feeds)
        assert len(ref["parts"]) == n + 2
        for g, r in zip(got["parts"], ref["parts"]):
            np.testing.assert_array_equal(g, r)
    with pytest.raises(tessera.InvalidArgument, match="is a sequence: give a list of arrays"):
        sess.run({"n": np.array(1, np.int64), "x": x, "prefix": x})
    with pytest.raises(tessera.InvalidArgument, match="element 0: expected rank 1, got 2"):
        sess.run({"n": np.array(1, np.int64), "x": x, "prefix": [np.zeros((2, 2), np.float32)]})


def test_profile_as_data(models, tmp_path):
    # Session.profile(): the runs inside the context, as rows and records; the
    # dnnl region's primitives come with oneDNN's implementation names.
    art = tessera.compile(models["cnn"], targets=["dnnl"])
    sess = rt.Session(art, threads=1)
    x = np.random.default_rng(0).standard_normal((1, 3, 8, 8)).astype(np.float32)
    sess.run({"x": x})
    with sess.profile() as prof:
        for _ in range(3):
            sess.run({"x": x})
    sess.run({"x": x})  # after the context: not recorded
    assert prof.runs == 3
    assert 0 < prof.steps_ms_per_run <= prof.ms_per_run
    rows = prof.table
    steps = [r for r in rows if r["parent"] is None]
    kernels = [r for r in rows if r["parent"] is not None]
    assert {r["category"] for r in steps} >= {"plugin"}
    assert all(r["calls"] % 3 == 0 and r["ms_per_run"] == pytest.approx(r["total_ms"] / 3)
               for r in rows)
    assert kernels and all(r["impl"] and rows[r["parent"]]["category"] == "plugin"
                           for r in kernels)
    assert "convolution" in {r["name"] for r in kernels}
    assert sum(r["share"] for r in steps) <= 1.0 + 1e-9
    records = prof.records
    assert sum(r["category"] == "run" for r in records) == 3
    assert all(r["duration_ns"] >= 0 and r["thread"] > 0 for r in records)
    assert "profile of 3 runs" in prof.format()
    prof.save(tmp_path / "trace.json")
    trace = json.loads((tmp_path / "trace.json").read_text())
    assert sum(e["ph"] == "X" for e in trace["traceEvents"]) == len(records)
    # A new context starts a new profile.
    with sess.profile() as again:
        sess.run({"x": x})
    assert again.runs == 1 and prof.runs == 3
