#!/usr/bin/env python3
"""One thread under load (issue 41): `tessera run --threads 1` on a dnnl artifact while
another process keeps a core busy, against the same run with OMP_NUM_THREADS=1 (which
keeps OpenMP from ever starting a second thread).

A one-thread session must run on the calling thread alone. When a plugin's primitives
ran on two OpenMP threads anyway, the second one competed with the busy process and then
spun between runs: a YOLO-style model went from 9.4 ms to 16 ms. For each model the
artifact is compiled once with --target dnnl, then in --rounds interleaved rounds each way
is run (`--repeat` timed runs, the median), with a busy process (a Python loop) on the
machine the whole time. Printed per model: the lowest median of each way, their ratio
(issue 41 asks for at most 1.3), and the CPU seconds per run each way used (user +
system of the `tessera run` process over its whole life: above 1x the wall time of a run
means a second thread was busy).

  /usr/bin/python3 bench/threads_under_load.py --build build/release \\
      [--models bench/zoo/out/models/unet.onnx,...] [--repeat 20] [--rounds 3]

Without --models it writes a small U-Net-like block (convolutions, max pooling, a 2x2
transposed convolution, a concat), as python/tests/test_threads.py checks by CPU time.
Timings compare only within one run.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
LATENCY = re.compile(r"median ([0-9.]+) ms")


def run_timed(cmd, env):
    """The median ms of one `tessera run --print-time`, and the CPU ms per run its process
    used (user + system over its life, load included: an upper bound; above the median a
    second thread was busy)."""
    r = subprocess.run(["/usr/bin/time", "-f", "cpu %U %S"] + cmd, env=env, capture_output=True,
                       text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed: {r.stderr.strip()[-300:]}")
    m = LATENCY.search(r.stdout + r.stderr)
    cpu = re.search(r"cpu ([0-9.]+) ([0-9.]+)", r.stderr)
    if not m or not cpu:
        sys.exit(f"no latency in the output of {' '.join(cmd)}")
    runs = int(cmd[cmd.index("--repeat") + 1]) + 1  # and the warm-up
    return float(m.group(1)), (float(cpu[1]) + float(cpu[2])) / runs * 1000


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    ap.add_argument("--models", default="", help="comma-separated ONNX files (default: a block)")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    tessera = os.path.join(args.build, "core", "tools", "tessera")
    work = tempfile.mkdtemp(prefix="tessera_threads_")
    models = [m for m in args.models.split(",") if m]
    if not models:
        sys.path.insert(0, os.path.join(ROOT, "python", "tests"))
        sys.path.insert(0, os.path.join(args.build, "python"))  # test_threads imports tessera
        from test_threads import unet_block  # noqa: E402  (needs numpy and onnx)
        models = [unet_block(os.path.join(work, "block.onnx"))]
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        rows = []
        for model in models:
            name = os.path.splitext(os.path.basename(model))[0]
            tsr = os.path.join(work, name + ".tsr")
            subprocess.run([tessera, "compile", model, "-o", tsr, "--target", "dnnl",
                            "--mcpu", "native"], check=True, capture_output=True)
            cmd = [tessera, "run", tsr, "--threads", "1", "--repeat", str(args.repeat),
                   "--print-time"]
            base = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
            ways = {"--threads 1": base, "OMP_NUM_THREADS=1": dict(base, OMP_NUM_THREADS="1")}
            best = {w: None for w in ways}
            cpu = {w: None for w in ways}
            for _ in range(args.rounds):
                for way, env in ways.items():
                    ms, per_run = run_timed(cmd, env)
                    best[way] = ms if best[way] is None else min(best[way], ms)
                    cpu[way] = per_run if cpu[way] is None else min(cpu[way], per_run)
            rows.append((name, best, cpu))
            print(f"[{name}] done", file=sys.stderr, flush=True)
    finally:
        busy.kill()
    print("| model | --threads 1 ms | OMP_NUM_THREADS=1 ms | ratio | CPU ms/run (--threads 1 / "
          "OMP_NUM_THREADS=1) |")
    print("|---|---|---|---|---|")
    worst = 0.0
    for name, best, cpu in rows:
        ratio = best["--threads 1"] / best["OMP_NUM_THREADS=1"]
        worst = max(worst, ratio)
        print(f"| {name} | {best['--threads 1']:.2f} | {best['OMP_NUM_THREADS=1']:.2f} | "
              f"{ratio:.2f} | {cpu['--threads 1']:.1f} / {cpu['OMP_NUM_THREADS=1']:.1f} |")
    print(f"\nWith a busy process on the machine, lowest of {args.rounds} interleaved rounds' "
          f"medians of {args.repeat} runs. Worst ratio {worst:.2f} (issue 41: at most 1.3).")


if __name__ == "__main__":
    main()
