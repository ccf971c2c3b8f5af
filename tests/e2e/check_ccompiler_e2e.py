#!/usr/bin/env python3
"""The ccompiler plugin end to end: `tessera compile --target ccompiler` ->
artifact -> `tessera run` in fresh processes.

  1. examples/models/tiny_cnn.tir with --target ccompiler: `tessera run
     --seed S` against `tessera interpret --seed S --print-all` (6 printed
     digits: |a-b| <= 1e-5 + 1e-4 |b|), and on .npy inputs against the
     host-only artifact (|a-b| <= 1e-6 + 1e-4 |b|);
  2. a model whose regions alternate between ccompiler, dnnl and the host
     (conv2d/relu -> conv2d_transpose -> sin -> reshape/batch_matmul/dense/
     softmax) with --target ccompiler,dnnl (conv2d_transpose is dnnl's
     alone): the partition holds both plugins, and the run matches the
     interpreter and the host-only artifact;
  3. the ONNX CNN of tests/onnx/make_cnn.py (x=2,3,17,19) against NumPy's
     computation of the same network (|a-b| <= 1e-4 + 1e-3 |b|);
  4. MobileNetV3-Small of bench/models/make_models.py (32x32, width 0.5:
     depthwise convs, hard_swish, squeeze-excite) against the host-only
     artifact (|a-b| <= 1e-4 + 1e-3 |b|);
  5. `tessera inspect --source ccompiler` prints the generated C with the
     op comments; an unknown plugin is an error naming what the file has;
  6. the ccompiler artifact runs with CC and TESSERA_CC pointing nowhere (no
     compiler is needed at load).

Usage: check_ccompiler_e2e.py --tessera BIN --source-dir DIR --out DIR
"""
import os
import subprocess
import sys

import numpy as np

from e2e_checker import checker_from_args, make_models, onnx_cnn


def compile_and_run(c, model, label, targets, inputs, extra=()):
    """Compiles `model` (host only when targets is empty) and runs it on the
    .npy inputs; the outputs (npz) and the artifact's path."""
    return c.compile_run(model, label, [*extra, *(["--target", targets] if targets else [])],
                         ["--inputs", inputs, "--threads", "1"])


def regions(c, tsr):
    return [r.get("plugin") for r in c.inspect(tsr)["metadata"]["regions"]]


def check_seeded(c, model, tsr, what):
    want = c.interpreted_outputs(model, 7)
    out = c.path("seeded_out.npz")
    c.tool("run", tsr, "--seed", "7", "--outputs", out)
    got = np.load(out)
    c.ok(len(want) == len(got.keys()), f"{what}: output count", f"{len(want)} vs {list(got.keys())}")
    for w, k in zip(want, got.keys()):
        c.close(got[k], w, 1e-4, 1e-5, f"{what}: run --seed vs interpret ('{k}')")


def check_tiny_cnn(c, source):
    model = os.path.join(source, "examples", "models", "tiny_cnn.tir")
    x = np.random.default_rng(1).standard_normal((1, 3, 16, 16)).astype(np.float32)
    np.save(c.path("tiny_x.npy"), x)
    host, _ = compile_and_run(c, model, "tiny_host", "", "x=" + c.path("tiny_x.npy"))
    cc, tsr = compile_and_run(c, model, "tiny_cc", "ccompiler", "x=" + c.path("tiny_x.npy"))
    c.ok(regions(c, tsr) == ["ccompiler"], "tiny_cnn: one ccompiler region", str(regions(c, tsr)))
    c.close(cc["probs"], host["probs"], 1e-4, 1e-6, "tiny_cnn: ccompiler vs host")
    check_seeded(c, model, tsr, "tiny_cnn ccompiler")
    return tsr


def f32hex(a):
    return "0x" + np.ascontiguousarray(a, dtype="<f4").tobytes().hex()


def check_mixed(c):
    rng = np.random.default_rng(3)
    w1 = rng.standard_normal((4, 3, 3, 3)).astype(np.float32) * 0.3
    wt = rng.standard_normal((4, 2, 2, 2)).astype(np.float32) * 0.3
    wb = rng.standard_normal((1, 128, 16)).astype(np.float32) * 0.2
    wd = rng.standard_normal((8, 16)).astype(np.float32) * 0.3
    tir = c.path("mixed.tir")
    with open(tir, "w") as f:
        f.write(f"""module @mixed
def @main(%x: f32[1, 3, 8, 8]) -> f32[1, 4, 8] {{
  %w1 = constant f32[4, 3, 3, 3] {f32hex(w1)}
  %wt = constant f32[4, 2, 2, 2] {f32hex(wt)}
  %wb = constant f32[1, 128, 16] {f32hex(wb)}
  %wd = constant f32[8, 16] {f32hex(wd)}
  %c1 = conv2d(%x, %w1) {{pads=[1, 1, 1, 1]}} : f32[1, 4, 8, 8]
  %r1 = relu(%c1) : f32[1, 4, 8, 8]
  %t = conv2d_transpose(%r1, %wt) {{strides=[2, 2]}} : f32[1, 2, 16, 16]
  %s = sin(%t) : f32[1, 2, 16, 16]
  %f = reshape(%s) {{newshape=[1, 4, 128]}} : f32[1, 4, 128]
  %bm = batch_matmul(%f, %wb) : f32[1, 4, 16]
  %d = dense(%bm, %wd) : f32[1, 4, 8]
  %y = softmax(%d) : f32[1, 4, 8]
  return %y
}}
""")
    x = rng.standard_normal((1, 3, 8, 8)).astype(np.float32)
    np.save(c.path("mixed_x.npy"), x)
    host, _ = compile_and_run(c, tir, "mixed_host", "", "x=" + c.path("mixed_x.npy"))
    mixed, tsr = compile_and_run(c, tir, "mixed_cc_dnnl", "ccompiler,dnnl",
                                 "x=" + c.path("mixed_x.npy"))
    r = regions(c, tsr)
    c.ok(r == ["ccompiler", "dnnl", "ccompiler"], "mixed: ccompiler, dnnl, ccompiler regions",
         str(r))
    meta = c.inspect(tsr)["metadata"]
    c.ok(meta["host_steps"] > 0, "mixed: host steps between the regions", str(meta["host_steps"]))
    key = list(mixed.keys())[0]
    c.close(mixed[key], host[key], 1e-4, 1e-6, "mixed: ccompiler,dnnl vs host")
    check_seeded(c, tir, tsr, "mixed ccompiler,dnnl")


def check_onnx_cnn(c, source):
    model, path, want = onnx_cnn(c, source)
    got, tsr = compile_and_run(c, path, "cnn_cc", "ccompiler", "x=" + c.path("cnn_x.npy"),
                               ["--input-shape", "x=2,3,17,19"])
    c.ok("ccompiler" in regions(c, tsr), "onnx cnn: ccompiler regions", str(regions(c, tsr)))
    c.close(got[model.graph.output[0].name], want, 1e-3, 1e-4, "onnx cnn: ccompiler vs numpy")


def check_mobilenet(c, source):
    make_models(source, c.out, 32, 0.5, "--models", "mobilenetv3", capture_output=True)
    model, npy = c.path("mobilenetv3.onnx"), c.path("mobilenetv3_input.npy")
    host, _ = compile_and_run(c, model, "mnv3_host", "", "x=" + npy)
    cc, tsr = compile_and_run(c, model, "mnv3_cc", "ccompiler", "x=" + npy)
    c.ok(len(regions(c, tsr)) > 0, "mobilenetv3: ccompiler regions", str(regions(c, tsr)))
    c.close(cc["logits"], host["logits"], 1e-3, 1e-4, "mobilenetv3: ccompiler vs host")


def check_inspect_and_no_compiler(c, tsr):
    text = c.tool("inspect", tsr, "--source", "ccompiler").stdout
    c.ok("generated by the Tessera ccompiler plugin" in text, "inspect --source: the C header",
         text[:300])
    c.ok("/* node 'conv1' (conv2d): strides=[1, 1], pads=[1, 1, 1, 1]" in text,
         "inspect --source: an op comment", text[:2000])
    c.ok("fused into the output loop: batch_norm" not in text and "(dense)" in text,
         "inspect --source: the dense node", "")
    r = c.tool("inspect", tsr, "--source", "nope", rc=1)
    c.ok(r.stderr == f"tessera inspect: error: no module of plugin 'nope' in {tsr}; it has: "
         "ccompiler\n", "inspect --source: an unknown plugin", r.stderr)
    env = dict(os.environ, CC="/nonexistent/cc", TESSERA_CC="/nonexistent/cc")
    out = c.path("nocc_out.npz")
    r = subprocess.run([c.tessera, "run", tsr, "--inputs", "x=" + c.path("tiny_x.npy"),
                        "--outputs", out], capture_output=True, text=True, env=env)
    c.ok(r.returncode == 0, "run without a C compiler", r.stderr)
    if r.returncode == 0:
        c.close(np.load(out)["probs"], np.load(c.path("tiny_cc_out.npz"))["probs"], 0, 0,
                "run without a C compiler: same outputs")


def main():
    a, c = checker_from_args()
    tiny = None
    steps = [("tiny_cnn", lambda: check_tiny_cnn(c, a.source_dir)),
             ("mixed", lambda: check_mixed(c)),
             ("onnx cnn", lambda: check_onnx_cnn(c, a.source_dir)),
             ("mobilenetv3", lambda: check_mobilenet(c, a.source_dir))]
    for name, step in steps:
        r = c.step(name, step, errors=(RuntimeError, subprocess.CalledProcessError))
        tiny = r if name == "tiny_cnn" else tiny
    if tiny:
        c.step("inspect", lambda: check_inspect_and_no_compiler(c, tiny))
    return c.summary()


if __name__ == "__main__":
    sys.exit(main())
