#!/usr/bin/env python3
"""`tessera compile` -> artifact -> `tessera run` in a fresh process, end to end.

Every run is a new process that loads only the artifact (and, for regions,
the plugin), never the model. Checked against independent references:
  1. examples/models/tiny_cnn.tir, host only and with --target json: the
     outputs of `tessera run --seed S` against `tessera interpret --seed S
     --print-all` (the same random inputs; the interpreter prints 6
     significant digits: |a-b| <= 1e-5 + 1e-4 |b|), and the host and json
     artifacts against each other on .npz inputs (deflated, from NumPy);
  2. an ONNX CNN (tests/onnx/make_cnn.py's model, --input-shape
     x=2,3,17,19), host and json, against NumPy's computation of the same
     network (|a-b| <= 1e-4 + 1e-3 |b|);
  3. ONNX backend node tests (libonnx-testdata): model.onnx with
     test_data_set_0's inputs (input_N.pb -> .npz via onnx.numpy_helper)
     against its expected outputs (ONNX's own tolerance: rtol 1e-3,
     atol 1e-7; integers and bools exactly);
  4. `tessera inspect --json` of both tiny_cnn artifacts;
  5. bf16 inputs and outputs as '<u2' .npy arrays (NumPy has no bf16);
  6. error cases with their exact messages: a truncated artifact, a flipped
     byte, a wrong input shape and dtype, an unknown input name.
Generated files go to --out (the build tree).

Usage: check_compile_run.py --tessera BIN --source-dir DIR --out DIR
"""
import ctypes
import os
import re
import struct
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper

from e2e_checker import checker_from_args, onnx_cnn

NODE_TESTS = [
    "test_relu",
    "test_add_bcast",
    "test_sigmoid",
    "test_conv_with_strides_padding",
    "test_maxpool_2d_default",
    "test_averagepool_2d_pads",
    "test_softmax_axis_1",
    "test_gemm_default_no_bias",
    "test_matmul_2d",
    "test_transpose_default",
    "test_concat_2d_axis_0",
    "test_split_equal_parts_1d",  # several outputs
    "test_batchnorm_example",
    "test_argmax_default_axis_example",  # i64 output
]
NODE_TESTS_JSON = ["test_relu", "test_conv_with_strides_padding", "test_gemm_default_no_bias"]


def check_tiny_cnn(c, source):
    model = os.path.join(source, "examples", "models", "tiny_cnn.tir")
    want = c.interpreted_outputs(model, 7)
    c.ok(len(want) == 1, "tiny_cnn: the interpreter printed one output")
    x = np.random.default_rng(1).standard_normal((1, 3, 16, 16)).astype(np.float32)
    np.savez_compressed(c.path("tiny_in.npz"), x=x)
    results = {}
    for label, extra in (("host", []), ("json", ["--target", "json"]),
                         ("portable-O3", ["--mcpu", "x86-64", "--opt-level", "3"]),
                         ("O0", ["--opt-level", "0"])):
        tsr = c.path(f"tiny_{label}.tsr")
        log = c.tool("compile", model, *extra, "-o", tsr).stdout
        c.ok(f"Wrote {tsr}" in log, f"tiny_cnn {label}: compile reports the file", log)
        out = c.path(f"tiny_{label}_seed.npz")
        c.tool("run", tsr, "--seed", "7", "--outputs", out, "--threads", "1" if label != "O0" else "2")
        got = np.load(out)
        c.ok(list(got.keys()) == ["probs"], f"tiny_cnn {label}: output named 'probs'",
             str(list(got.keys())))
        c.close(got["probs"], want[0], 1e-4, 1e-5, f"tiny_cnn {label}: run vs interpret")
        out = c.path(f"tiny_{label}_npz.npz")
        c.tool("run", tsr, "--inputs", c.path("tiny_in.npz"), "--outputs", out, "--repeat", "3",
               "--print-time")
        results[label] = np.load(out)["probs"]
    c.close(results["host"], results["json"], 1e-4, 1e-6, "tiny_cnn: host vs json on .npz inputs")
    c.close(results["portable-O3"], results["host"], 1e-4, 1e-6,
            "tiny_cnn: portable x86-64 at O3 vs the host CPU at O2")
    meta = c.inspect(c.path("tiny_portable-O3.tsr"))["metadata"]
    c.ok(meta["target"]["cpu"] == "x86-64", "inspect: the portable artifact's cpu",
         str(meta["target"]))
    r = c.tool("compile", model, "--mcpu", "pentium9000", "-o", c.path("x.tsr"), rc=1)
    c.ok("unknown CPU 'pentium9000'" in r.stderr, "compile: an unknown --mcpu is named", r.stderr)

    # inspect --json
    host = c.inspect(c.path("tiny_host.tsr"))
    c.ok(host["format_version"] == 2, "inspect: format version")
    kinds = [s["kind"] for s in host["sections"]]
    c.ok(kinds == ["metadata", "plan", "weights", "host code", "host code"],
         "inspect: host sections (x86-64-v3 and v4 by default)", str(kinds))
    meta = host["metadata"]
    c.ok(meta["inputs"] == [{"name": "x", "dtype": "f32", "shape": [1, 3, 16, 16]}],
         "inspect: inputs", str(meta["inputs"]))
    c.ok(meta["outputs"] == [{"name": "probs", "dtype": "f32", "shape": [1, 10]}],
         "inspect: outputs", str(meta["outputs"]))
    c.ok(meta["host_steps"] == host["plan"]["host_steps"] > 0, "inspect: host steps")
    c.ok(meta["target"]["triple"].startswith("x86_64"), "inspect: triple", str(meta["target"]))
    c.ok(0 < host["plan"]["arena_bytes"] <= host["plan"]["activation_bytes_no_reuse"],
         "inspect: arena with reuse", str(host["plan"]))
    js = c.inspect(c.path("tiny_json.tsr"))
    c.ok([p["name"] for p in js["metadata"]["plugins"]] == ["json"], "inspect: json plugin")
    c.ok([s.get("type_key") for s in js["sections"] if s["kind"] == "external module"] == ["json"],
         "inspect: external module section", str(js["sections"]))
    c.ok(sum(r["ops"] for r in js["metadata"]["regions"]) == 12, "inspect: json regions' ops",
         str(js["metadata"]["regions"]))
    text = c.tool("inspect", c.path("tiny_json.tsr")).stdout
    c.ok("json 1.0.0: 1 region (12 ops), type keys: json" in text, "inspect: text", text)


def check_onnx_cnn(c, source):
    model, path, want = onnx_cnn(c, source)
    out_name = model.graph.output[0].name
    for label, extra in (("host", []), ("json", ["--target", "json"])):
        got, _ = c.compile_run(path, f"cnn_{label}", ["--input-shape", "x=2,3,17,19", *extra],
                               ["--inputs", "x=" + c.path("cnn_x.npy")])
        c.ok(list(got.keys()) == [out_name], f"onnx cnn {label}: output name", str(list(got.keys())))
        c.close(got[out_name], want, 1e-3, 1e-4, f"onnx cnn {label}: run vs numpy")
    # The format by content when the name says nothing: ONNX under another name, text IR
    # under another name, and a file that is neither (refused as ONNX, saying so).
    import shutil
    renamed = c.path("cnn_model.bin")
    shutil.copy(path, renamed)
    got, _ = c.compile_run(renamed, "cnn_renamed", ["--input-shape", "x=2,3,17,19"],
                           ["--inputs", "x=" + c.path("cnn_x.npy")])
    c.close(got[out_name], want, 1e-3, 1e-4, "an ONNX file named .bin is read as ONNX")
    tir = c.path("tiny_cnn.model")
    shutil.copy(os.path.join(source, "examples", "models", "tiny_cnn.tir"), tir)
    r = c.tool("compile", tir, "-o", c.path("tiny_renamed.tsr"))
    c.ok("Wrote" in r.stdout, "text IR named .model is read as text IR", r.stdout)
    junk = c.path("junk.model")
    with open(junk, "wb") as f:
        f.write(b"\x08\x07\xff\xff not a model")
    r = c.tool("compile", junk, "-o", c.path("junk.tsr"), rc=1)
    c.ok("not an ONNX model" in r.stderr, "a binary file that is no model is refused as ONNX",
         r.stderr)


def check_symbolic_batch(c, source):
    """The same ONNX CNN (its batch flows through the exporter's
    x.view(x.size(0), -1) chain) compiled once with a symbolic batch, run at
    three batch sizes in fresh processes against NumPy; a batch outside the
    bounds is an error naming the input, the dim and the symbol."""
    sys.path.insert(0, os.path.join(source, "tests", "onnx"))
    import make_cnn  # noqa: E402

    model, path, _ = onnx_cnn(c, source)
    out_name = model.graph.output[0].name
    w = make_cnn.weights()
    tsr = c.path("cnn_batch.tsr")
    c.tool("compile", path, "--input-shape", "x=N:1..8,3,17,19", "-o", tsr)
    inputs = c.inspect(tsr)["metadata"]["inputs"]
    c.ok(inputs[0]["shape"][0] < 0, "symbolic batch: the artifact's input keeps N", str(inputs))
    for n in (1, 3, 8):
        x = np.random.default_rng(n).standard_normal((n, 3, 17, 19)).astype(np.float32)
        np.save(c.path(f"cnn_x{n}.npy"), x)
        out = c.path(f"cnn_batch{n}_out.npz")
        c.tool("run", tsr, "--inputs", "x=" + c.path(f"cnn_x{n}.npy"), "--outputs", out)
        c.close(np.load(out)[out_name], make_cnn.reference(x, w), 1e-3, 1e-4,
                f"symbolic batch: N = {n} vs numpy")
    printed = c.tool("run", tsr, "--dim", "N=5").stdout
    c.ok("symbol N = 5" in printed and f"output '{out_name}': f32[5, 10]" in printed,
         "symbolic batch: random inputs at --dim N=5 give a [5, 10] output", printed)
    r = c.tool("run", tsr, "--dim", "M=5", rc=None)
    c.ok(r.returncode != 0 and "--dim 'M=5': expected NAME=VALUE with NAME a symbolic dim of "
         "the model's inputs (N)" in r.stderr, "symbolic batch: --dim of an unknown symbol",
         r.stderr)
    x = np.zeros((9, 3, 17, 19), np.float32)
    np.save(c.path("cnn_x9.npy"), x)
    r = c.tool("run", tsr, "--inputs", "x=" + c.path("cnn_x9.npy"), rc=None)
    c.ok(r.returncode != 0 and "input 'x': dim 0 (N) is 9, outside its bounds 1..8" in r.stderr,
         "symbolic batch: a batch above the bound is refused by name", r.stderr)


def check_node_tests(c, data):
    for name in NODE_TESTS:
        folder = os.path.join(data, name)
        model = onnx.load(os.path.join(folder, "model.onnx"))
        inits = {i.name for i in model.graph.initializer}
        inputs = [i.name for i in model.graph.input if i.name not in inits]
        outputs = [o.name for o in model.graph.output]
        ds = os.path.join(folder, "test_data_set_0")
        load = lambda f: numpy_helper.to_array(onnx.load_tensor(os.path.join(ds, f)))
        feeds = {n: load(f"input_{i}.pb") for i, n in enumerate(inputs)}
        expected = [load(f"output_{i}.pb") for i in range(len(outputs))]
        npz = c.path(f"{name}_in.npz")
        np.savez(npz, **feeds)
        for label in ["host"] + (["json"] if name in NODE_TESTS_JSON else []):
            tsr = c.path(f"{name}_{label}.tsr")
            extra = ["--target", "json"] if label == "json" else []
            try:
                c.tool("compile", os.path.join(folder, "model.onnx"), *extra, "-o", tsr)
                out = c.path(f"{name}_{label}_out.npz")
                c.tool("run", tsr, "--inputs", npz, "--outputs", out)
            except RuntimeError as e:
                c.ok(False, f"{name} {label}", str(e))
                continue
            got = np.load(out)
            c.ok(list(got.keys()) == outputs, f"{name} {label}: output names",
                 f"{list(got.keys())} vs {outputs}")
            for o, want in zip(outputs, expected):
                if o in got:
                    c.close(got[o], want, 1e-3, 1e-7, f"{name} {label}: output '{o}'")


def check_bf16(c):
    """bf16 has no NumPy dtype: inputs and outputs travel as '<u2' bit patterns."""
    tir = c.path("bf16.tir")
    open(tir, "w").write("def @main(%x: bf16[4], %y: f32[4]) -> (f32[4], bf16[4]) {\n"
                         "  %c = cast(%x) {dtype=f32}\n  %d = cast(%y) {dtype=bf16}\n"
                         "  %t = tuple(%c, %d)\n  return %t\n}\n")
    x = np.array([1.0, 2.5, -3.0, 0.15625], np.float32)  # exact in bf16
    bits = (x.view(np.uint32) >> 16).astype(np.uint16)
    np.save(c.path("bf16_x.npy"), bits)
    np.save(c.path("bf16_y.npy"), x)
    tsr = c.path("bf16.tsr")
    c.tool("compile", tir, "-o", tsr)
    out = c.path("bf16_out.npz")
    c.tool("run", tsr, "--inputs", f"x={c.path('bf16_x.npy')},y={c.path('bf16_y.npy')}",
           "--outputs", out)
    got = np.load(out)
    c.close(got["c"], x, 0, 0, "bf16: '<u2' input read as bf16")
    c.ok(got["d"].dtype == np.uint16, "bf16: output written as '<u2'", str(got["d"].dtype))
    c.close(got["d"], bits, 0, 0, "bf16: output bits")


def check_errors(c):
    tsr = c.path("tiny_host.tsr")
    data = open(tsr, "rb").read()

    def error(args, want, what):
        r = c.tool(*args, rc=1)
        c.ok(r.stderr == want + "\n", what, f"got {r.stderr!r}\nwant {want!r}")

    # Paths: a directory or a FIFO where a file is expected, an output whose
    # folder does not exist: one message each, before any work (a FIFO with
    # no writer must not hang the tool: each call has 60 s).
    folder, fifo = c.path("a_folder"), c.path("a_fifo")
    os.makedirs(folder, exist_ok=True)
    if os.path.exists(fifo):
        os.remove(fifo)
    os.mkfifo(fifo)
    model = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(__file__))), "examples",
                         "models", "tiny_cnn.tir")
    for kind, path, says in (("a directory", folder, "is a directory, not a file"),
                             ("a FIFO", fifo, "is a FIFO, not a regular file")):
        for args, tool in ((["run", path], "run"), (["inspect", path], "inspect"),
                           (["compile", path, "-o", c.path("x.tsr")], "compile"),
                           (["partition", path, "--target", "json"], "partition"),
                           (["run", tsr, "--inputs", "x=" + path], "run")):
            r = subprocess.run([c.tessera, *args], capture_output=True, text=True, timeout=60)
            c.ok(r.returncode == 1 and r.stderr.endswith(f"{path}: {says}\n"),
                 f"{tool}: {kind} given as a file", f"{args}: exit {r.returncode}: {r.stderr!r}")
    nowhere = c.path("no/such/folder/out.tsr")
    error(["compile", model, "-o", nowhere],
          f"tessera compile: error: {nowhere}: the folder '{os.path.dirname(nowhere)}' does not "
          "exist", "compile: an output folder that does not exist, before compiling")
    error(["compile", model, "-o", folder],
          f"tessera compile: error: {folder}: is a directory; give a file name",
          "compile: a directory as the output")
    error(["run", tsr, "--outputs", nowhere],
          f"tessera run: error: {nowhere}: the folder '{os.path.dirname(nowhere)}' does not "
          "exist", "run: an --outputs folder that does not exist")
    error(["partition", model, "--target", "json", "--html", folder],
          f"tessera partition: error: {folder}: is a directory; give a file name",
          "partition: a directory as --html")

    cut = c.path("truncated.tsr")
    open(cut, "wb").write(data[: len(data) // 2])
    error(["run", cut],
          f"tessera run: error: {cut}: truncated: the header says {len(data)} bytes, the file "
          f"has {len(data) // 2}", "a truncated artifact")
    # A flipped byte inside the largest section: that section's digest names it.
    kinds = {1: "metadata", 2: "plan", 3: "weights", 4: "host code", 5: "external module"}
    count = struct.unpack_from("<I", data, 16)[0]
    table = [struct.unpack_from("<IIQQ", data, 64 + 64 * i) for i in range(count)]
    index, (kind, _, offset, size) = max(enumerate(table), key=lambda e: e[1][3])
    flipped = bytearray(data)
    flipped[offset + size // 2] ^= 0x10
    bad = c.path("flipped.tsr")
    open(bad, "wb").write(bytes(flipped))
    want = f"corrupted: section {index} ({kinds[kind]}) does not match its SHA-256"
    error(["run", bad], f"tessera run: error: {bad}: {want}", "a flipped byte (run)")
    error(["inspect", bad], f"tessera inspect: error: {bad}: {want}", "a flipped byte (inspect)")
    # A flipped byte in the section table: the index digest.
    flipped = bytearray(data)
    flipped[64 + 30] ^= 0x01
    open(bad, "wb").write(bytes(flipped))
    error(["run", bad], f"tessera run: error: {bad}: corrupted: the header or section table "
          "does not match its SHA-256 (modified after compilation?)", "a flipped table byte")

    wrong = c.path("x_wrong.npy")
    np.save(wrong, np.zeros((1, 3, 16, 15), np.float32))
    error(["run", tsr, "--inputs", "x=" + wrong],
          f"tessera run: error: {wrong}: input 'x': expected f32[1, 3, 16, 16], got "
          "f32[1, 3, 16, 15]", "a wrong input shape")
    ints = c.path("x_i32.npy")
    np.save(ints, np.zeros((1, 3, 16, 16), np.int32))
    error(["run", tsr, "--inputs", "x=" + ints],
          f"tessera run: error: {ints}: input 'x': expected f32[1, 3, 16, 16], got "
          "i32[1, 3, 16, 16]", "a wrong input dtype")
    error(["run", tsr, "--inputs", "y=" + ints],
          f"tessera run: error: {ints}: the model has no input 'y' (inputs: 'x')",
          "an unknown input name")
    # A Fortran-order input is read into C order, as Python's tessera reads it.
    x = np.random.default_rng(4).standard_normal((1, 3, 16, 16)).astype(np.float32)
    corder, fortran = c.path("x_corder.npy"), c.path("x_fortran.npy")
    np.save(corder, x)
    np.save(fortran, np.asfortranarray(x))
    outs = []
    for f in (corder, fortran):
        c.tool("run", tsr, "--inputs", "x=" + f, "--outputs", c.path("fortran_out.npz"))
        outs.append(dict(np.load(c.path("fortran_out.npz"))))
    c.ok(all(np.array_equal(outs[0][k], outs[1][k]) for k in outs[0]),
         "a Fortran-order input gives the outputs of the same array in C order")


def check_foreign_cpu(c, source):
    """An artifact compiled for a CPU this machine lacks is refused, by
    `tessera run` and by the C API, with the missing features named, before
    any of its code is mapped (it would die of SIGILL)."""
    model = os.path.join(source, "examples", "models", "tiny_cnn.tir")
    foreign = None
    # GCC 12 knows the first two (the ccompiler part below builds C for the
    # same CPU): tigerlake's AVX512-VP2INTERSECT is on no later Intel server
    # CPU, Sapphire Rapids's AMX and AVX512-FP16 on no AMD one.
    for cpu in ("tigerlake", "sapphirerapids", "znver5", "graniterapids"):
        tsr = c.path(f"tiny_{cpu}.tsr")
        c.tool("compile", model, "--mcpu", cpu, "-o", tsr)
        if "the artifact will not load here" in c.tool("inspect", tsr).stdout:
            foreign = (cpu, tsr)
            break
    if not c.ok(foreign is not None, "a CPU this machine lacks features of, among four"):
        return
    cpu, tsr = foreign
    text = c.tool("inspect", tsr).stdout
    needs = re.search(r"host code needs: (.*)", text).group(1).split()
    lacks = re.search(r"this CPU \((.*)\) lacks: (.*): the artifact will not load here", text)
    c.ok("avx2" in needs and "avx512f" in needs and set(lacks.group(2).split()) <= set(needs),
         f"inspect: what the {cpu} artifact needs and this CPU lacks", text)
    missing = ", ".join(lacks.group(2).split())
    want = (f"host code (compiled for {cpu}) needs {missing}; this CPU ({lacks.group(1)}) lacks "
            f"{'it' if ',' not in missing else 'them'}; recompile with --mcpu=x86-64-v")
    r = c.tool("run", tsr, rc=1)
    c.ok(f"tessera run: error: {tsr}: {want}" in r.stderr and
         r.stderr.rstrip().endswith("or for this machine (--mcpu=native)"),
         "run: an artifact for a foreign CPU is refused, exit 1", r.stderr)
    # The C API (what an app links), through ctypes.
    lib = ctypes.CDLL(os.path.join(os.path.dirname(c.tessera), "..", "..", "lib",
                                   "libtessera_runtime.so"))
    lib.tessera_model_load.restype = ctypes.c_void_p
    lib.tessera_status_code.argtypes = [ctypes.c_void_p]
    lib.tessera_status_message.argtypes = [ctypes.c_void_p]
    lib.tessera_status_message.restype = ctypes.c_char_p
    lib.tessera_status_free.argtypes = [ctypes.c_void_p]
    model_handle = ctypes.c_void_p()
    status = lib.tessera_model_load(tsr.encode(), ctypes.byref(model_handle))
    code, message = lib.tessera_status_code(status), lib.tessera_status_message(status).decode()
    lib.tessera_status_free(status)
    c.ok(code == 3 and message.startswith(f"{tsr}: {want}") and not model_handle.value,
         "C API: tessera_model_load refuses it with FAILED_PRECONDITION", f"{code}: {message}")
    # The ccompiler plugin compiles its C for the same --mcpu (GCC's -march)
    # and its module's needs are recorded and checked the same way.
    cc = c.path(f"tiny_cc_{cpu}.tsr")
    c.tool("compile", model, "--target", "ccompiler", "--mcpu", cpu, "-o", cc)
    region = c.inspect(cc)["metadata"]["regions"][0]
    r = c.tool("run", cc, rc=1)
    c.ok(region["cpu"] == cpu and set(lacks.group(2).split()) <= set(region["features"]) and
         f"tessera run: error: {cc}: the module of region '{region['symbol']}' (plugin "
         f"'ccompiler', compiled for {cpu}) needs {missing}; this CPU" in r.stderr,
         "run: a ccompiler module compiled for a foreign CPU is refused", r.stderr)
    cc_default = c.path("tiny_cc_default.tsr")
    c.tool("compile", model, "--target", "ccompiler", "-o", cc_default)
    c.tool("run", cc_default)
    region = c.inspect(cc_default)["metadata"]["regions"][0]
    c.ok(region["cpu"] == "x86-64-v3" and "avx2" in region["features"] and
         "avx512f" not in region["features"],
         "compile: ccompiler's C follows the x86-64-v3 default", str(region))
    # For this machine (and the portable default) the same model loads and runs.
    native = c.path("tiny_native.tsr")
    c.tool("compile", model, "--mcpu", "native", "-o", native)
    c.tool("run", native)
    meta = c.inspect(c.path("tiny_host.tsr"))["metadata"]
    c.ok(meta["target"]["cpu"] == "x86-64-v3" and "avx2" in meta["target"]["features"]
         and "avx512f" not in meta["target"]["features"],
         "compile: x86-64-v3 by default, its features recorded", str(meta["target"]))


def main():
    a, c = checker_from_args(
        ("--onnx-data", dict(default="/usr/share/libonnx-testdata/data/node")))
    for step in (lambda: check_tiny_cnn(c, a.source_dir), lambda: check_onnx_cnn(c, a.source_dir),
                 lambda: check_symbolic_batch(c, a.source_dir),
                 lambda: check_node_tests(c, a.onnx_data), lambda: check_bf16(c),
                 lambda: check_errors(c), lambda: check_foreign_cpu(c, a.source_dir)):
        c.step("", step)
    return c.summary()


if __name__ == "__main__":
    sys.exit(main())
