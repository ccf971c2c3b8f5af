#!/usr/bin/env python3
"""One artifact for every image size, timed (issue 21): a zoo model exported
with dynamic N, H and W, compiled once with symbolic dims, against an
artifact compiled for each size alone and against ONNX Runtime, at several
sizes, side by side in the same run.

  1. export.py's model (default deeplabv3_mobilenet_v3_large) exported again
     with dynamic_axes {0: N, 2: H, 3: W} on its image input and output
     (OUT/NAME_dynamic.onnx; needs python3-torch and python3-torchvision);
  2. `tessera compile` once with --input-shape x=N:1..2,3,H:LO..HI,W:LO..HI,
     and once per size with x=1,3,H,W (same --configs target list, default
     host only); compile seconds recorded;
  3. per size, a seeded input; in --rounds interleaved rounds, the symbolic
     artifact, the artifact of that size, and ORT (node ort_run.js) each run
     --repeat times after a warm-up at every --threads count;
  4. every output of both artifacts checked against ORT's:
     max |tessera - ort| <= 1e-3 * (max(ort) - min(ort)).
Prints a markdown table: per size and thread count, the lowest round median
of each (ms), symbolic / static and static / ORT. Exit status 1 when an
output disagrees or a run fails.

  /usr/bin/python3 bench/zoo/sizes.py [--build build/release]
      [--model deeplabv3_mobilenet_v3_large] [--sizes 224x224,320x240,160x416]
      [--bounds 64..512] [--target dnnl] [--threads 1,2] [--repeat 20]
      [--rounds 3] [--out DIR]
"""
import argparse
import os
import re
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bench", "models"))
from compare import ensure_ort  # noqa: E402

TESSERA_LATENCY = re.compile(r"median ([0-9.]+) ms")
ORT_LATENCY = re.compile(r"latency_ms median=([0-9.]+)")


def export_dynamic(name, path):
    """export.py's model NAME, exported with symbolic N, H, W."""
    import warnings
    import torch
    warnings.filterwarnings("ignore")  # the exporter's; export.py --verbose shows them
    sys.path.insert(0, HERE)
    import export as zoo  # noqa: E402
    build, spec, output_names = zoo.MODELS[name]
    torch.manual_seed(zoo.SEED)
    model = build().eval()
    zoo.randomise(model, torch.Generator().manual_seed(zoo.SEED),
                  tuple(zoo.make_inputs(spec, torch.Generator().manual_seed(zoo.SEED + 2))
                        .values()))
    inputs = zoo.make_inputs(spec, torch.Generator().manual_seed(zoo.SEED + 1))
    (input_name,) = list(spec)
    axes = {input_name: {0: "N", 2: "H", 3: "W"}}
    axes.update({o: {0: "N", 2: "H", 3: "W"} for o in output_names})
    torch.onnx.export(model, tuple(inputs.values()), path + ".tmp", opset_version=17,
                      input_names=[input_name], output_names=output_names, dynamic_axes=axes)
    os.replace(path + ".tmp", path)
    return input_name


def run(cmd, pattern, env=None):
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    m = pattern.search(proc.stdout)
    if proc.returncode != 0 or not m:
        raise RuntimeError(f"{' '.join(cmd)}: exit {proc.returncode}\n{proc.stderr[-2000:]}")
    return float(m.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    ap.add_argument("--model", default="deeplabv3_mobilenet_v3_large")
    ap.add_argument("--sizes", default="224x224,320x240,160x416")
    ap.add_argument("--bounds", default="64..512", help="H and W bounds of the symbolic artifact")
    ap.add_argument("--target", default="", help="--target of both artifacts (default: host)")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    out = args.out or os.path.join(args.build, "bench_sizes")
    os.makedirs(out, exist_ok=True)
    tessera = os.path.join(args.build, "core", "tools", "tessera")
    ort_dir = os.path.join(args.build, "ort")
    if ensure_ort(ort_dir, True) is None:
        sys.exit("sizes.py: ONNX Runtime (npm onnxruntime-node) is not available")
    sizes = [tuple(int(v) for v in s.split("x")) for s in args.sizes.split(",")]
    threads = [int(t) for t in args.threads.split(",")]
    target = ["--target", args.target] if args.target else []

    onnx_path = os.path.join(out, args.model + "_dynamic.onnx")
    print(f"exporting {args.model} with dynamic N, H, W", file=sys.stderr, flush=True)
    input_name = export_dynamic(args.model, onnx_path)

    def compile_(shape, tsr):
        start = time.perf_counter()
        subprocess.run([tessera, "compile", onnx_path, "--input-shape", f"{input_name}={shape}",
                        "-o", tsr, *target], check=True, capture_output=True)
        return time.perf_counter() - start

    symbolic = os.path.join(out, "symbolic.tsr")
    compile_s = {"symbolic": compile_(f"N:1..2,3,H:{args.bounds},W:{args.bounds}", symbolic)}
    feeds, static = {}, {}
    for h, w in sizes:
        static[(h, w)] = os.path.join(out, f"static_{h}x{w}.tsr")
        compile_s[f"{h}x{w}"] = compile_(f"1,3,{h},{w}", static[(h, w)])
        feeds[(h, w)] = os.path.join(out, f"x_{h}x{w}.npy")
        np.save(feeds[(h, w)],
                np.random.default_rng(h * 1000 + w).standard_normal((1, 3, h, w))
                .astype(np.float32))

    best, failures = {}, []
    for rnd in range(args.rounds):
        for t in threads:
            env = dict(os.environ, OMP_NUM_THREADS=str(t))
            for h, w in sizes:
                print(f"round {rnd + 1}, {t} thread(s), {h}x{w}", file=sys.stderr, flush=True)
                ort_out = os.path.join(out, f"ort_{h}x{w}_t{t}")
                for kind, tsr in (("symbolic", symbolic), ("static", static[(h, w)])):
                    npz = os.path.join(out, f"{kind}_{h}x{w}_t{t}.npz")
                    ms = run([tessera, "run", tsr, "--inputs", f"{input_name}={feeds[(h, w)]}",
                              "--outputs", npz, "--repeat", str(args.repeat), "--print-time",
                              "--threads", str(t)], TESSERA_LATENCY, env)
                    key = (h, w, t, kind)
                    best[key] = min(best.get(key, ms), ms)
                ms = run(["node", os.path.join(HERE, "ort_run.js"), onnx_path,
                          f"{input_name}={feeds[(h, w)]}", str(t), str(args.repeat), "3",
                          ort_out, "--ort-dir", ort_dir], ORT_LATENCY, env)
                best[(h, w, t, "ort")] = min(best.get((h, w, t, "ort"), ms), ms)
                if rnd == 0:
                    for kind in ("symbolic", "static"):
                        got = np.load(os.path.join(out, f"{kind}_{h}x{w}_t{t}.npz"))
                        for name in got.files:
                            ref = np.load(os.path.join(ort_out, name + ".npy"))
                            err = float(np.abs(got[name] - ref).max())
                            tol = 1e-3 * float(ref.max() - ref.min())
                            if got[name].shape != ref.shape or not err <= tol:
                                failures.append(f"{kind} {h}x{w} t{t} '{name}': max error {err} "
                                                f"> {tol}")

    print(f"{args.model}, one artifact for H, W in {args.bounds} against one per size "
          f"({args.target or 'host'}; lowest of {args.rounds} round medians, "
          f"{args.repeat} runs each; compile s: " +
          ", ".join(f"{k} {v:.1f}" for k, v in compile_s.items()) + ")\n")
    print("| size | threads | symbolic ms | static ms | ORT ms | symbolic / static | "
          "static / ORT |")
    print("|---|---|---|---|---|---|---|")
    for h, w in sizes:
        for t in threads:
            s, st, o = (best[(h, w, t, k)] for k in ("symbolic", "static", "ort"))
            print(f"| {h}x{w} | {t} | {s:.1f} | {st:.1f} | {o:.1f} | {s / st:.2f} | "
                  f"{st / o:.2f} |")
    for f in failures:
        print("FAIL: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
