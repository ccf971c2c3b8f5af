#!/usr/bin/env python3
"""One model, three code generators: ccompiler, dnnl and host regions alternating.

A small CNN written as text IR (random weights from a fixed seed) in which
the ops take turns between the targets of `--target ccompiler,dnnl`
(ccompiler asked first, dnnl for what ccompiler does not take):

  conv2d + bias_add + relu + erf       ccompiler
  conv2d_transpose (stride 2)          dnnl       (ccompiler has none)
  tanh, sin                            host       (sin: nobody; tanh: a
                                                   ccompiler region without a
                                                   compute-heavy op is pruned)
  conv2d + erf + max_pool2d           ccompiler  (a bare conv2d also matches
                                                   dnnl's pattern, whose bias
                                                   and activation are
                                                   optional; a match of one op
                                                   is no composite, so the
                                                   conv2d goes to ccompiler,
                                                   asked first)
  conv2d_transpose (stride 2)          dnnl
  cos                                  host

Checks:
  1. the artifact holds two regions of each plugin and host steps between
     them (inspect --json; the model is a chain, so they alternate), and
     `inspect --steps` / the JSON's plan.order list the steps in the order
     they run, each reading what the one before it wrote;
  2. `tessera run --seed S` matches `tessera interpret --seed S --print-all`
     (|a-b| <= 1e-5 + 1e-4 |b|; the interpreter prints 6 significant digits),
     at 1 and 2 threads;
  3. the host-only artifact of the same model agrees with it.

Usage: check_mixed_e2e.py --tessera BIN --out DIR
"""
import argparse
import json
import os
import re
import sys

import numpy as np

from e2e_checker import Checker


def tensor_text(a):
    return "[" + ", ".join(repr(float(v)) for v in a.ravel()) + "]"


def model_text():
    rng = np.random.default_rng(11)
    w1 = (rng.standard_normal((8, 4, 3, 3)) * 0.3).astype(np.float32)
    b1 = (rng.standard_normal(8) * 0.1).astype(np.float32)
    wt = (rng.standard_normal((8, 4, 3, 3)) * 0.3).astype(np.float32)
    w2 = (rng.standard_normal((8, 4, 3, 3)) * 0.3).astype(np.float32)
    wt2 = (rng.standard_normal((8, 3, 2, 2)) * 0.5).astype(np.float32)
    return f"""module @mixed
def @main(%x: f32[1, 4, 8, 8]) -> f32[1, 3, 8, 8] {{
  %w1 = constant f32[8, 4, 3, 3] {tensor_text(w1)}
  %b1 = constant f32[8] {tensor_text(b1)}
  %wt = constant f32[8, 4, 3, 3] {tensor_text(wt)}
  %w2 = constant f32[8, 4, 3, 3] {tensor_text(w2)}
  %wt2 = constant f32[8, 3, 2, 2] {tensor_text(wt2)}
  %c1 = conv2d(%x, %w1) {{pads=[1, 1, 1, 1]}}
  %a1 = bias_add(%c1, %b1)
  %r1 = relu(%a1)
  %e1 = erf(%r1)
  %d1 = conv2d_transpose(%e1, %wt) {{strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1]}}
  %t1 = tanh(%d1)
  %s1 = sin(%t1)
  %c2 = conv2d(%s1, %w2) {{strides=[2, 2], pads=[1, 1, 1, 1]}}
  %e2 = erf(%c2)
  %p = max_pool2d(%e2) {{pool_size=[2, 2], strides=[2, 2]}}
  %d2 = conv2d_transpose(%p, %wt2) {{strides=[2, 2]}}
  %k = cos(%d2)
  return %k
}}
"""


def interpreted(c, model, seed):
    text = c.tool("interpret", model, "--seed", str(seed), "--print-all").stdout
    m = re.search(r"^output 0: \w+\[([\d, ]*)\]\n  \[([^\]]*)\]", text, re.M)
    shape = [int(d) for d in m.group(1).split(",") if d.strip()]
    return np.array([float(v) for v in m.group(2).split(",")]).reshape(shape)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tessera", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    c = Checker(args.tessera, args.out)

    model = c.path("mixed.tir")
    with open(model, "w") as f:
        f.write(model_text())
    want = interpreted(c, model, 5)

    tsr = c.path("mixed.tsr")
    log = c.tool("compile", model, "--target", "ccompiler,dnnl", "-o", tsr).stdout
    c.ok("dnnl: " in log and "ccompiler: " in log, "compile: regions of both plugins", log)

    meta = json.loads(c.tool("inspect", tsr, "--json").stdout)["metadata"]
    targets = [r["plugin"] for r in meta["regions"]]
    c.ok(targets.count("dnnl") >= 2 and targets.count("ccompiler") >= 2,
         "inspect: at least two regions of each plugin", str(targets))
    c.ok(meta["host_steps"] >= 2, "inspect: host steps between the regions",
         str(meta["host_steps"]))

    # The steps in the order they run: the chain's targets in turn, each
    # step reading what the one before it wrote.
    order = json.loads(c.tool("inspect", tsr, "--json").stdout)["plan"]["order"]
    kinds = [s.get("plugin", s["kind"]) for s in order]
    c.ok(kinds == ["ccompiler", "dnnl", "host", "host", "ccompiler", "dnnl", "host"],
         "inspect: the steps in order", str(kinds))
    chained = all(order[i]["inputs"] == order[i - 1]["outputs"] for i in range(1, len(order)))
    c.ok(chained and order[0]["inputs"] == ["x: f32[1, 4, 8, 8]"]
         and order[-1]["outputs"] == ["k: f32[1, 3, 8, 8]"],
         "inspect: each step reads what the one before it wrote", json.dumps(order, indent=1))
    text = c.tool("inspect", tsr, "--steps").stdout
    c.ok("Steps: 7 (3 host, 4 plugin, 0 copies), in order:\n"
         "     0  plugin  tessera_mixed_ccompiler_0 (ccompiler): (x: f32[1, 4, 8, 8]) -> " in text
         and "     6  host    cos 'k' [tessera_host_2]: " in text,
         "inspect --steps: one line per step", text)

    name = meta["outputs"][0]["name"]
    outs = {}
    for threads in ("1", "2"):
        out = c.path(f"mixed_t{threads}.npz")
        c.tool("run", tsr, "--seed", "5", "--threads", threads, "--outputs", out)
        outs[threads] = np.load(out)[name]
        c.close(outs[threads], want, 1e-4, 1e-5, f"ccompiler+dnnl+host, {threads} thread(s), "
                "vs interpret")
    c.close(outs["2"], outs["1"], 1e-5, 1e-6, "1 thread vs 2 threads")

    host = c.path("mixed_host.tsr")
    c.tool("compile", model, "-o", host)
    out = c.path("mixed_host.npz")
    c.tool("run", host, "--seed", "5", "--outputs", out)
    c.close(outs["1"], np.load(out)[name], 1e-5, 1e-6, "ccompiler+dnnl+host vs host only")

    print(f"mixed e2e: {c.passed} passed, {c.failed} failed")
    return 1 if c.failed else 0


if __name__ == "__main__":
    sys.exit(main())
