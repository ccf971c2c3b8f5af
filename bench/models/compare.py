#!/usr/bin/env python3
"""Issue 7's comparison: Tessera (with a plugin, and host only), a
hand-written oneDNN program and ONNX Runtime on the same ONNX models.

For each model of --models (make_models.py's ResNet-18 and MobileNetV3-Small
at --size, weights also written as an .npz):
  1. `tessera compile` it host only and with `--target PLUGIN` (dnnl; json
     while the dnnl plugin is not built), printing the partition summary;
  2. for each thread count T of --threads, with OMP_NUM_THREADS=T for every
     process:
       tessera run M.tsr --threads T --repeat N --print-time   (both artifacts;
                                 1 warm-up, tessera run's fixed number)
       bench_dnnl_native --model M --repeat N --warmup W        (hand-written)
       node ort_bench.js M.onnx ... T N W                       (ONNX Runtime)
     each writing its logits;
  3. checks the outputs of every pair (same model and thread count) within
     max |a - b| <= RTOL * max |host logits| + ATOL (1e-3 and 1e-4 unless
     --rtol / --atol), and, unless --no-interp, each implementation's output
     at the first thread count against the reference interpreter (`tessera
     conformance` on the model with that output as the expected one:
     elementwise |interp - out| <= 1e-5 + 1e-3 |out|).
Then prints a table: median latencies (ms), the framework overhead of
Tessera+PLUGIN over the hand-written program (PLUGIN / hand-written - 1), the
speedup of Tessera+PLUGIN over ONNX Runtime (ORT / PLUGIN) and the largest
pairwise difference; also written to OUT/compare.md and OUT/compare.json.

ONNX Runtime comes from npm (onnxruntime-node) in --ort-dir; when it is
missing there, it is installed with `ONNXRUNTIME_NODE_INSTALL=skip npm
install` from bench/models/package.json (unless --no-install). When that is
impossible, a line says so and the rest runs. The exit status is 1 when an
implementation fails to build or run or outputs disagree, 0 otherwise.

Needs numpy and onnx (Debian's /usr/bin/python3 has both):
  /usr/bin/python3 bench/models/compare.py --build build/release [--plugin dnnl]
      [--models resnet18,mobilenetv3] [--threads 1,2] [--repeat 30] [--warmup 5]
      [--size 224] [--out DIR] [--tessera PATH] [--native PATH] [--ort-dir DIR]
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time

try:
    import numpy as np
    from onnx import numpy_helper
except ImportError as e:
    sys.exit(f"compare.py: {e}; run it with a python3 that has numpy and onnx "
             "(/usr/bin/python3 on Debian with python3-onnx)")

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
LATENCY = re.compile(r"latency_ms median=([0-9.]+)")
TESSERA_LATENCY = re.compile(r"median ([0-9.]+) ms")


class Failure(Exception):
    """An implementation could not be built or run; the message says which."""


def run(cmd, env=None, what=""):
    """Runs `cmd`, returning its stdout; raises Failure with its stderr."""
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        detail = (proc.stderr.strip() or proc.stdout.strip()).splitlines()[-5:]
        raise Failure(f"{what or cmd[0]} failed (exit {proc.returncode}): "
                      f"{' '.join(cmd)}\n    " + "\n    ".join(detail))
    return proc.stdout


def latency(stdout, pattern, what):
    m = pattern.search(stdout)
    if not m:
        raise Failure(f"{what}: no latency line in its output:\n{stdout.strip()[-500:]}")
    return float(m.group(1))


def ensure_ort(ort_dir, install):
    """The onnxruntime-node folder under `ort_dir`, installing it if needed
    and allowed; None (after saying why) when ONNX Runtime is unavailable."""
    pkg = os.path.join(ort_dir, "node_modules", "onnxruntime-node")
    if os.path.isdir(pkg):
        return pkg
    if not shutil.which("node"):
        print("ONNX Runtime: skipped: no `node` on PATH")
        return None
    if not install:
        print(f"ONNX Runtime: skipped: onnxruntime-node is not installed in {ort_dir} "
              "(--no-install)")
        return None
    if not shutil.which("npm"):
        print("ONNX Runtime: skipped: no `npm` on PATH to install onnxruntime-node")
        return None
    os.makedirs(ort_dir, exist_ok=True)
    shutil.copy(os.path.join(HERE, "package.json"), os.path.join(ort_dir, "package.json"))
    print(f"ONNX Runtime: installing onnxruntime-node into {ort_dir} ...", flush=True)
    env = dict(os.environ, ONNXRUNTIME_NODE_INSTALL="skip")
    proc = subprocess.run(["npm", "install", "--no-audit", "--no-fund"], cwd=ort_dir, env=env,
                          capture_output=True, text=True)
    if proc.returncode != 0 or not os.path.isdir(pkg):
        tail = (proc.stderr.strip() or proc.stdout.strip()).splitlines()[-3:]
        print("ONNX Runtime: skipped: `npm install onnxruntime-node` failed: " + " | ".join(tail))
        return None
    return pkg


def compile_model(tessera, onnx_path, tsr, target):
    """`tessera compile`; returns (seconds, partition summary line)."""
    cmd = [tessera, "compile", onnx_path, "-o", tsr] + (["--target", target] if target else [])
    start = time.perf_counter()
    out = run(cmd, what=f"tessera compile ({target or 'host only'})")
    seconds = time.perf_counter() - start
    summary = next((l.strip() for l in out.splitlines() if l.startswith("Partitioned")), "")
    return seconds, summary


def check_interp(tessera, onnx_path, outputs, workdir):
    """`tessera conformance` on the model once per output (name -> .npy):
    the reference interpreter against each. Returns name -> "ok" or the
    first mismatch."""
    root = os.path.join(workdir, "interp")
    shutil.rmtree(root, ignore_errors=True)
    x = np.load(os.path.join(os.path.dirname(onnx_path),
                             os.path.basename(onnx_path)[:-5] + "_input.npy"))
    for name, path in outputs.items():
        data = os.path.join(root, name, "test_data_set_0")
        os.makedirs(data)
        os.symlink(os.path.abspath(onnx_path), os.path.join(root, name, "model.onnx"))
        with open(os.path.join(data, "input_0.pb"), "wb") as f:
            f.write(numpy_helper.from_array(x, "x").SerializeToString())
        with open(os.path.join(data, "output_0.pb"), "wb") as f:
            f.write(numpy_helper.from_array(np.load(path), "logits").SerializeToString())
    proc = subprocess.run([tessera, "conformance", root], capture_output=True, text=True)
    result = {}
    for line in proc.stdout.splitlines():
        m = re.match(r"(PASS|FAIL|UNSUPPORTED|ERROR) (\S+?)(?::\s*(.*))?$", line.strip())
        if m and m.group(2) in outputs:
            verdict = "ok" if m.group(1) == "PASS" else f"{m.group(1)} {m.group(3) or ''}"
            result[m.group(2)] = verdict
    for name in outputs:
        result.setdefault(name, f"no result ({proc.stderr.strip()[-200:]})")
    return result


def record(ms, impl, value):
    """Appends one round's median latency of `impl`."""
    ms.setdefault(impl, []).append(value)


def fmt_ms(v):
    return "-" if v is None else f"{v:.2f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build", "release"),
                    help="build folder giving the defaults of --tessera, --native, --ort-dir "
                         "and --out")
    ap.add_argument("--tessera", help="tessera binary (BUILD/core/tools/tessera)")
    ap.add_argument("--native", help="bench_dnnl_native (BUILD/bench/bench_dnnl_native)")
    ap.add_argument("--ort-dir", help="where onnxruntime-node is (or gets) installed (BUILD/ort)")
    ap.add_argument("--no-install", action="store_true",
                    help="do not npm-install onnxruntime-node when it is missing")
    ap.add_argument("--out", help="folder for models, artifacts and outputs (BUILD/compare)")
    ap.add_argument("--plugin", default="dnnl", help="the plugin to compile for")
    ap.add_argument("--models", default="resnet18,mobilenetv3")
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    ap.add_argument("--repeat", type=int, default=30, help="timed runs (medians)")
    ap.add_argument("--warmup", type=int, default=5,
                    help="warm-up runs of the hand-written program and ORT")
    ap.add_argument("--rounds", type=int, default=1,
                    help="time every implementation this many times, interleaved, and keep "
                         "the lowest median (for a busy machine)")
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--rtol", type=float, default=1e-3)
    ap.add_argument("--atol", type=float, default=1e-4)
    ap.add_argument("--no-interp", action="store_true",
                    help="skip the check against the reference interpreter")
    args = ap.parse_args()
    tessera = args.tessera or os.path.join(args.build, "core", "tools", "tessera")
    native = args.native or os.path.join(args.build, "bench", "bench_dnnl_native")
    ort_dir = args.ort_dir or os.path.join(args.build, "ort")
    out = args.out or os.path.join(args.build, "compare")
    models = [m for m in args.models.split(",") if m]
    threads = [int(t) for t in args.threads.split(",") if t]
    for path, what in [(tessera, "--tessera"), (native, "--native")]:
        if not os.access(path, os.X_OK):
            sys.exit(f"compare.py: {what} {path} is not an executable "
                     "(configure with -DTESSERA_BUILD_BENCH=ON, build tessera and "
                     "bench_dnnl_native)")
    os.makedirs(out, exist_ok=True)

    ort = ensure_ort(ort_dir, not args.no_install)
    failures = []
    subprocess.run([sys.executable, os.path.join(HERE, "make_models.py"), "--out", out,
                    "--size", str(args.size), "--models", ",".join(models), "--weights-npz"],
                   check=True)

    plugin = args.plugin
    impls = [plugin, "host", "native"] + (["ort"] if ort else [])
    rows = []
    for model in models:
        onnx_path = os.path.join(out, model + ".onnx")
        x_path = os.path.join(out, model + "_input.npy")
        tsr = {}
        for target, label in [(plugin, plugin), ("", "host")]:
            tsr[label] = os.path.join(out, f"{model}_{label}.tsr")
            try:
                seconds, summary = compile_model(tessera, onnx_path, tsr[label], target)
                print(f"{model} {label}: compiled in {seconds:.2f} s. {summary}".rstrip(),
                      flush=True)
            except Failure as e:
                failures.append(str(e))
                print(f"{model} {label}: {e}", flush=True)
                tsr[label] = None
        interp_checked = args.no_interp
        for t in threads:
            env = dict(os.environ, OMP_NUM_THREADS=str(t))
            ms, outs = {}, {}
            for rnd, impl in [(r, i) for r in range(args.rounds) for i in impls]:
                if rnd and impl not in ms:
                    continue  # failed in the first round
                npy_out = os.path.join(out, f"{model}_t{t}_{impl}.npy")
                try:
                    if impl in (plugin, "host"):
                        if not tsr[impl]:
                            continue
                        npz = npy_out[:-4] + ".npz"
                        stdout = run([tessera, "run", tsr[impl], "--inputs", "x=" + x_path,
                                      "--outputs", npz, "--repeat", str(args.repeat),
                                      "--print-time", "--threads", str(t)], env,
                                     f"tessera run ({impl})")
                        record(ms, impl,
                               latency(stdout, TESSERA_LATENCY, f"tessera run ({impl})"))
                        np.save(npy_out, np.load(npz)["logits"])
                    elif impl == "native":
                        stdout = run([native, "--model", model,
                                      "--weights", os.path.join(out, model + "_weights.npz"),
                                      "--input", x_path, "--output", npy_out,
                                      "--repeat", str(args.repeat), "--warmup",
                                      str(args.warmup)], env, "bench_dnnl_native")
                        record(ms, impl, latency(stdout, LATENCY, "bench_dnnl_native"))
                    else:
                        stdout = run(["node", os.path.join(HERE, "ort_bench.js"), onnx_path,
                                      x_path, str(t), str(args.repeat), str(args.warmup),
                                      npy_out, "--ort-dir", ort_dir], env, "ort_bench.js")
                        record(ms, impl, latency(stdout, LATENCY, "ort_bench.js"))
                    outs[impl] = npy_out
                    print(f"  {model} threads={t} {impl}: median {ms[impl][-1]:.3f} ms"
                          + (f" (round {rnd + 1})" if args.rounds > 1 else ""), flush=True)
                except Failure as e:
                    failures.append(str(e))
                    print(f"  {model} threads={t} {impl}: {e}", flush=True)
                    ms.pop(impl, None)
                    outs.pop(impl, None)
            round_ms = ms
            ms = {k: min(v) for k, v in round_ms.items()}

            # Every pair within the tolerance scaled by the host's logits
            # (or the first output there is).
            arrays = {k: np.load(v).astype(np.float64) for k, v in outs.items()}
            scale_ref = arrays.get("host", next(iter(arrays.values()), None))
            tol = 0.0
            if scale_ref is not None:
                tol = args.rtol * float(np.abs(scale_ref).max()) + args.atol
            names = list(arrays)
            worst, worst_pair, diffs = 0.0, "", {}
            for i, a in enumerate(names):
                for b in names[i + 1:]:
                    if arrays[a].shape != arrays[b].shape:
                        failures.append(f"{model} threads={t}: {a} output shape "
                                        f"{arrays[a].shape} != {b}'s {arrays[b].shape}")
                        continue
                    d = float(np.abs(arrays[a] - arrays[b]).max())
                    diffs[f"{a}-{b}"] = d
                    if d >= worst:
                        worst, worst_pair = d, f"{a}/{b}"
                    if not d <= tol:
                        failures.append(f"{model} threads={t}: max |{a} - {b}| = {d:.3g} "
                                        f"> tolerance {tol:.3g}")
            interp = {}
            if not interp_checked and outs:
                interp = check_interp(tessera, onnx_path, outs, os.path.join(out, model))
                interp_checked = True
                for impl, verdict in interp.items():
                    print(f"  {model} threads={t} {impl} vs reference interpreter: {verdict}")
                    if verdict != "ok":
                        failures.append(f"{model} threads={t}: {impl} differs from the reference "
                                        f"interpreter: {verdict}")
            mp, mn, mo = ms.get(plugin), ms.get("native"), ms.get("ort")
            rows.append({
                "model": model, "threads": t, "ms": ms, "round_ms": round_ms,
                "overhead_pct": (mp / mn - 1) * 100 if mp and mn else None,
                "speedup_vs_ort": mo / mp if mp and mo else None,
                "max_diff": worst, "max_diff_pair": worst_pair, "tolerance": tol,
                "diffs": diffs, "interp": interp,
            })

    header = (f"| model | threads | Tessera+{plugin} ms | Tessera host ms "
              "| hand-written oneDNN ms | ORT ms | overhead vs hand-written | speedup vs ORT "
              "| max pairwise diff (tol) |")
    lines = [header, "|" + "---|" * 9]
    for r in rows:
        ms = r["ms"]
        overhead = "-" if r["overhead_pct"] is None else f"{r['overhead_pct']:+.1f}%"
        speedup = "-" if r["speedup_vs_ort"] is None else f"{r['speedup_vs_ort']:.2f}x"
        lines.append(
            f"| {r['model']} | {r['threads']} | {fmt_ms(ms.get(plugin))} "
            f"| {fmt_ms(ms.get('host'))} "
            f"| {fmt_ms(ms.get('native'))} | {fmt_ms(ms.get('ort'))} | {overhead} | {speedup} "
            f"| {r['max_diff']:.2g} {r['max_diff_pair']} ({r['tolerance']:.2g}) |")
    rounds = f", lowest of {args.rounds} interleaved rounds" if args.rounds > 1 else ""
    note = (f"Medians of {args.repeat} runs ({args.warmup} warm-ups; tessera run: 1){rounds}, "
            f"{args.size}x{args.size}, OMP_NUM_THREADS = threads; "
            f"ORT {'onnxruntime-node' if ort else 'skipped (not installed)'}. "
            f"Overhead = Tessera+{plugin} / hand-written - 1; speedup = ORT / Tessera+{plugin}; "
            "tol = rtol * max |host logits| + atol.")
    table = "\n".join(lines)
    print("\n" + table + "\n" + note)
    with open(os.path.join(out, "compare.md"), "w") as f:
        f.write(table + "\n\n" + note + "\n")
    with open(os.path.join(out, "compare.json"), "w") as f:
        json.dump({"plugin": plugin, "repeat": args.repeat, "warmup": args.warmup,
                   "rounds": args.rounds, "size": args.size, "ort": bool(ort), "rows": rows,
                   "failures": failures},
                  f, indent=2)
    if failures:
        print("\nFAILED:\n  " + "\n  ".join(failures))
        return 1
    print("All outputs agree.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
