#!/usr/bin/env python3
"""The benchmark zoo (issue 18): real exported models compiled by Tessera in
several configurations and timed side by side with ONNX Runtime.

For each model of --models (exported by export.py into OUT/models first, the
missing ones only; export.py needs python3-torch and python3-torchvision):
  1. `tessera compile` it once per configuration of --configs (wall time of
     each compile recorded):
       host       no --target: everything on the host (LLVM)
       dnnl       --target dnnl
       ccompiler  --target ccompiler
       json       --target json
       best       --target dnnl,ccompiler,json (priority order: each op goes
                  to the first plugin that takes it)
       measure    the same with --placement measure (docs/design/0015: regions
                  and candidate partitions timed, the fastest kept)
       dnnl_measure  --target dnnl --placement measure --tune-threads 1 (nodes
                  that lose on dnnl withheld)
  2. in --rounds interleaved rounds (each round runs every configuration once
     at every thread count T of --threads, in order, then the next round),
     with OMP_NUM_THREADS=T and OpenMP's default wait policy (its threads
     spin a while before they sleep, as ONNX Runtime's do; with
     OMP_WAIT_POLICY=passive every one of a model's hundreds of primitives
     would wake a sleeping thread: 20x slower on the LSTM at 2 threads):
       tessera run M.tsr --inputs M_inputs.npz --outputs OUT.npz
                   --repeat N --print-time --threads T
       node ort_run.js M.onnx NAME=FILE.npy,... T N W OUTDIR
     keeping per configuration the lowest of its round medians;
  3. checks every output of every configuration against ONNX Runtime's at
     the same thread count: same shape, no NaN where ORT has none, and
     max |tessera - ort| <= 1e-3 * (max(ort) - min(ort)).
Then prints one markdown table (median ms per configuration and for ORT,
the ratios Tessera / ORT, compile seconds, the output check, a flag where the
dnnl build is slower than the host-only one), the geometric means of
Tessera / ORT per configuration and thread count, and the failures; the same
goes to OUT/zoo.md, and everything measured to OUT/zoo.json. A configuration
that fails to compile or run is reported in its cell and the rest goes on.
Exit status 1 when anything failed or disagreed with ORT, else 0. Progress
lines go to stderr as it runs (a full run takes many minutes).

ONNX Runtime is npm's onnxruntime-node in BUILD/ort, installed on first use
from bench/models/package.json (as bench/models/compare.py does) unless
--no-install. Needs numpy and onnx (Debian's /usr/bin/python3):
  /usr/bin/python3 bench/zoo/run.py [--build build/release] [--models a,b]
      [--configs host,dnnl,ccompiler,json,best] [--threads 1,2] [--repeat 20]
      [--warmup 3] [--rounds 3] [--out DIR] [--no-install] [--timeout 1800]
`./dev.sh bench zoo [ARGS...]` builds the release preset and runs this.
"""
import argparse
import datetime
import json
import math
import os
import platform
import re
import shutil
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bench", "models"))
from compare import ensure_ort  # noqa: E402  (installs onnxruntime-node on first use)

# export.py's models; any other NAME works whose NAME.onnx and NAME_inputs.npz
# (and NAME_<input>.npy) are in OUT/models.
ZOO = ["resnet50", "mobilenet_v2", "mobilenet_v3_large", "efficientnet_b0", "densenet121",
       "inception_v3", "googlenet", "squeezenet1_1", "shufflenet_v2_x1_0", "regnet_y_400mf",
       "convnext_tiny", "vit_b_16", "deeplabv3_mobilenet_v3_large",
       "ssdlite320_mobilenet_v3_large", "bert_encoder", "lstm", "gru", "rnn",
       # Issue 40: classes users bring that nobody tuned for.
       "unet", "dbnet", "wav2vec2_frontend", "yolov5s_body", "gpt_decoder", "r3d_18",
       "maxvit_t", "fcn_resnet50", "efficientnet_v2_s", "regnet_x_1_6gf", "mnasnet1_0",
       # Issue 41: two-stage and dense detectors (run-time counts through RoI pooling).
       "fasterrcnn_mobilenet_v3_large_320_fpn", "retinanet_resnet50_fpn",
       "maskrcnn_resnet50_fpn"]
# Each configuration's arguments to `tessera compile`. "measure" places by
# measurement (docs/design/0015) among the three plugins and the host.
CONFIGS = {"host": [], "dnnl": ["--target", "dnnl"], "ccompiler": ["--target", "ccompiler"],
           "json": ["--target", "json"], "best": ["--target", "dnnl,ccompiler,json"],
           "measure": ["--target", "dnnl,ccompiler,json", "--placement", "measure"],
           # dnnl alone, placed by measurement at one thread (issue 40: regions that lose
           # withheld node by node; the 1-thread column is the one it is tuned for).
           "dnnl_measure": ["--target", "dnnl", "--placement", "measure", "--tune-threads", "1"]}


def compile_flags(config, mcpu):
    """`tessera compile`'s flags for a configuration: CONFIGS[base], and
    --mcpu as the config's "@CPU" suffix says (`host@x86-64-v3`; @default:
    no --mcpu, tessera compile's own default), else `mcpu` (run.py --mcpu)."""
    base, at, cpu = config.partition("@")
    cpu = cpu if at else mcpu
    return CONFIGS[base] + ([] if cpu == "default" else ["--mcpu", cpu])


TESSERA_LATENCY = re.compile(r"median ([0-9.]+) ms")
ORT_LATENCY = re.compile(r"latency_ms median=([0-9.]+)")
RTOL = 1e-3
# Outputs that carry more rounding than RTOL allows between any two correct
# implementations: Mask R-CNN's masks are the sigmoid of logits summed
# through four 256-channel convolutions and a deconvolution of random
# weights, bilinearly pasted; host, dnnl and ORT differ pairwise by up to
# 2e-3 of the range there (2026-12-07), while boxes and scores agree to 1e-5.
RTOL_OF = {("maskrcnn_resnet50_fpn", "masks"): 3e-3}


def log(msg):
    print(msg, file=sys.stderr, flush=True)


class Failure(Exception):
    """A command failed; the message is its first error line."""


def run(cmd, timeout, env=None):
    """Runs `cmd`; returns (stdout, seconds). Raises Failure with the first
    line of its error (the first 'error:' line of stderr, else its last line)."""
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise Failure(f"timed out after {timeout} s") from None
    except OSError as e:  # e.g. the binary is being relinked
        raise Failure(f"cannot start {cmd[0]}: {e.strerror}") from None
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        lines = [l.strip() for l in (proc.stderr or proc.stdout).splitlines() if l.strip()]
        first = next((l for l in lines if "error" in l.lower()), lines[-1] if lines else "")
        if proc.returncode < 0:
            first = f"killed by signal {-proc.returncode}" + (f": {first}" if first else "")
        raise Failure(first or f"exit status {proc.returncode}")
    return proc.stdout, seconds


def error_line(e, onnx_path):
    """A Failure's message without the tool's prefix and the model's path."""
    msg = re.sub(r"^(tessera \w+: error: |ort_run\.js: )", "", str(e))
    return msg.replace(onnx_path + ": ", "").replace(onnx_path, os.path.basename(onnx_path))


def median_of(stdout, pattern):
    m = pattern.search(stdout)
    if not m:
        raise Failure("no latency line in the output: " + stdout.strip()[-200:])
    return float(m.group(1))


# Detections are sorted by score, and two of nearly equal score (1e-6 apart,
# the rounding of another summation order) may come in either order: each of
# ORT's rows is paired with the row of Tessera's of the same label whose box
# and score are nearest (greedily, ORT's rows by descending score), and rows
# are compared in that pairing.
ROWS_BY = {name: ("labels", "scores", "boxes") for name in (
    "ssdlite320_mobilenet_v3_large", "fasterrcnn_mobilenet_v3_large_320_fpn",
    "retinanet_resnet50_fpn", "maskrcnn_resnet50_fpn")}


def row_pairing(mine, theirs, keys):
    """The permutation of `mine`'s rows that pairs them with `theirs`' (see
    ROWS_BY); None when a key is missing or the row counts differ."""
    if not keys or any(k not in a for a in (mine, theirs) for k in keys):
        return None
    labels, scores, boxes = ([np.asarray(a[k], np.float64) for a in (mine, theirs)] for k in keys)
    if labels[0].shape != labels[1].shape or boxes[0].shape != boxes[1].shape:
        return None
    free = np.ones(len(labels[0]), bool)
    pairing = np.zeros(len(labels[1]), np.int64)
    for i in np.argsort(-scores[1], kind="stable"):
        candidates = np.flatnonzero(free & (labels[0] == labels[1][i]))
        if candidates.size == 0:
            return None
        cost = (np.abs(boxes[0][candidates] - boxes[1][i]).reshape(candidates.size, -1).sum(1)
                + 1e3 * np.abs(scores[0][candidates] - scores[1][i]))
        pairing[i] = candidates[int(np.argmin(cost))]
        free[pairing[i]] = False
    return pairing


def compare(tessera_npz, ort_dir, names, model=None):
    """Checks every ORT output (ort_dir/NAME.npy) against the member of
    `tessera_npz` of that name. Returns (worst relative error, problem or
    None); relative error = max |a - b| / (max(ort) - min(ort))."""
    worst = 0.0
    with np.load(tessera_npz) as got:
        refs = {n: np.load(os.path.join(ort_dir, n + ".npy")) for n in names}
        pairing = row_pairing(got, refs, ROWS_BY.get(model))
        for name in names:
            ref = refs[name].astype(np.float64)
            if name not in got.files:
                return worst, f"no output '{name}' (has {', '.join(got.files)})"
            out = got[name].astype(np.float64)
            if pairing is not None and out.shape == ref.shape and out.ndim >= 1:
                out = out[pairing]
            if out.shape != ref.shape:
                return worst, f"'{name}' shape {list(out.shape)}, ORT {list(ref.shape)}"
            if np.isnan(out).any() and not np.isnan(ref).any():
                return worst, f"'{name}' has NaN"
            spread = float(np.nanmax(ref) - np.nanmin(ref)) if ref.size else 0.0
            diff = float(np.nanmax(np.abs(out - ref))) if ref.size else 0.0
            if spread == 0.0:
                rel = 0.0 if diff == 0.0 else math.inf
            else:
                rel = diff / spread
            worst = max(worst, rel)
            if not rel <= RTOL_OF.get((model, name), RTOL):
                return worst, f"'{name}' max|diff| = {diff:.3g} = {rel:.2g} x ORT's range"
    return worst, None


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def cell(text):
    """Text for a markdown table cell."""
    text = text.replace("|", "\\|")
    return text if len(text) <= 80 else text[:77] + "..."


def bench_model(name, args, paths, ort_ok):
    """Compiles, runs and checks one model; returns its record."""
    onnx_path = os.path.join(paths["models"], name + ".onnx")
    with np.load(os.path.join(paths["models"], name + "_inputs.npz")) as z:
        input_names = list(z.files)
    ort_inputs = ",".join(f"{k}={os.path.join(paths['models'], f'{name}_{k}.npy')}"
                          for k in input_names)
    rec = {"model": name, "compile_s": {}, "summary": {}, "compile_errors": {},
           "run_errors": {t: {} for t in args.threads},
           "round_ms": {t: {} for t in args.threads}}
    tsr = {}
    for config in args.configs:
        path = os.path.join(paths["out"], "tsr", f"{name}_{config}.tsr")
        cmd = [paths["tessera"], "compile", onnx_path, "-o", path]
        cmd += compile_flags(config, args.mcpu)
        try:
            # Placement measurements cached with the outputs (a second run reuses them).
            stdout, seconds = run(cmd, args.timeout,
                                  env=dict(os.environ,
                                           TESSERA_CACHE_DIR=os.path.join(paths["out"], "cache")))
        except Failure as e:
            rec["compile_errors"][config] = f"compile failed: {error_line(e, onnx_path)}"
            log(f"[{name}] compile {config}: FAILED: {e}")
            continue
        tsr[config] = path
        rec["compile_s"][config] = seconds
        rec["summary"][config] = next(
            (l.strip() for l in stdout.splitlines() if l.startswith(("Partitioned", "No targets"))),
            "")
        log(f"[{name}] compile {config}: {seconds:.1f} s. {rec['summary'][config]}".rstrip())

    if "measure" in tsr:
        # What measure chose, and whether its artifact partitions as a single
        # configuration's does (then their times differ only by noise).
        shown = run([paths["tessera"], "inspect", tsr["measure"]], args.timeout)[0]
        chose = re.search(r"Placement: measured on .*, chose (.+)", shown)
        rec["chose"] = chose.group(1).replace('"', "") if chose else "?"

        def partition(summary):
            """A compile's partition line without its target list (no regions: the host's)."""
            if summary.startswith("No targets") or re.search(r" among [^:]+: 0 regions", summary):
                return "host"
            counts = re.search(r"\(([^)]*)\) with (\d+) of", summary)
            if not counts:
                return summary
            regions = {k: v for k, v in (kv.split(": ") for kv in counts[1].split(", "))
                       if v != "0"}
            return f"{sorted(regions.items())} with {counts[2]} ops"
        rec["same_as"] = [c for c in args.configs if c not in ("measure", "best") and c in tsr
                          and partition(rec["summary"][c]) == partition(rec["summary"]["measure"])]
    impls = [c for c in args.configs if c in tsr] + (["ort"] if ort_ok else [])
    for rnd in range(args.rounds):
        for t in args.threads:
            env = dict(os.environ, OMP_NUM_THREADS=str(t))
            env.pop("OMP_WAIT_POLICY", None)
            for impl in impls:
                if impl in rec["run_errors"][t]:
                    continue
                out = os.path.join(paths["out"], "outputs", f"{name}_t{t}_{impl}")
                if impl == "ort":
                    shutil.rmtree(out, ignore_errors=True)  # no stale outputs to compare with
                    cmd = ["node", os.path.join(HERE, "ort_run.js"), onnx_path, ort_inputs,
                           str(t), str(args.repeat), str(args.warmup), out,
                           "--ort-dir", paths["ort"]]
                    pattern = ORT_LATENCY
                else:
                    cmd = [paths["tessera"], "run", tsr[impl], "--inputs",
                           os.path.join(paths["models"], name + "_inputs.npz"),
                           "--outputs", out + ".npz", "--repeat", str(args.repeat),
                           "--print-time", "--threads", str(t)]
                    pattern = TESSERA_LATENCY
                try:
                    stdout, seconds = run(cmd, args.timeout, env)
                    ms = median_of(stdout, pattern)
                except Failure as e:
                    rec["run_errors"][t][impl] = f"run failed: {error_line(e, onnx_path)}"
                    rec["round_ms"][t].pop(impl, None)
                    log(f"[{name}] round {rnd + 1} threads={t} {impl}: FAILED: {e}")
                    continue
                rec["round_ms"][t].setdefault(impl, []).append(ms)
                log(f"[{name}] round {rnd + 1} threads={t} {impl}: median {ms:.2f} ms "
                    f"({seconds:.1f} s)")

    rec["ms"] = {t: {impl: min(v) for impl, v in rec["round_ms"][t].items()}
                 for t in args.threads}
    rec["check"] = {}
    for t in args.threads:
        ort_dir = os.path.join(paths["out"], "outputs", f"{name}_t{t}_ort")
        check = {}
        for config in args.configs:
            if config not in rec["ms"][t]:
                continue
            if "ort" not in rec["ms"][t]:
                check[config] = {"rel": None, "problem": "no ORT output to compare with"}
                continue
            names = sorted(f[:-4] for f in os.listdir(ort_dir) if f.endswith(".npy"))
            rel, problem = compare(os.path.join(paths["out"], "outputs",
                                                f"{name}_t{t}_{config}.npz"), ort_dir, names,
                                   name)
            check[config] = {"rel": rel, "problem": problem}
            if problem:
                log(f"[{name}] threads={t} {config} vs ORT: MISMATCH: {problem}")
        rec["check"][t] = check
    return rec


def render(records, args, ort_ok):
    """The markdown report (table, legend, geometric means, failures) and the
    list of failures."""
    configs = args.configs
    impls = configs + ["ort"]
    short = {"host": "h", "dnnl": "d", "ccompiler": "c", "json": "j", "best": "b", "measure": "m",
             "dnnl_measure": "dm"}

    def abbrev(config):
        base, at, cpu = config.partition("@")
        return short[base] + at + cpu
    head = (["model", "T"] + [f"{c} ms" for c in configs] + ["ORT ms"]
            + [f"{c}/ORT" for c in configs]
            + [f"compile s ({'/'.join(abbrev(c) for c in configs)})", "match", "flag"])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    failures, ratios = [], {(c, t): [] for c in configs for t in args.threads}
    for rec in records:
        name = rec["model"]
        for impl, err in rec["compile_errors"].items():
            failures.append(f"{name} {impl}: {err}")
        for i, t in enumerate(args.threads):
            ms = rec["ms"][t]
            for impl, err in rec["run_errors"][t].items():
                failures.append(f"{name} threads={t} {impl}: {err}")
            row, last_error = [name if i == 0 else "", str(t)], None
            for impl in impls:
                if impl in ms:
                    row.append(f"{ms[impl]:.2f}" if ms[impl] >= 1 else f"{ms[impl]:.3f}")
                    continue
                error = rec["compile_errors"].get(impl) or rec["run_errors"][t].get(impl)
                if impl in rec["compile_errors"] and i > 0:
                    row.append("(above)")
                elif error and error == last_error:
                    row.append("(same)")
                else:
                    row.append(cell(error) if error else "-")
                last_error = error
            for c in configs:
                if c in ms and ms.get("ort", 0) > 0 and ms[c] > 0:
                    ratios[(c, t)].append(ms[c] / ms["ort"])
                    row.append(f"{ms[c] / ms['ort']:.2f}")
                else:
                    row.append("-")
            row.append("/".join(f"{rec['compile_s'][c]:.1f}" if c in rec["compile_s"] else "x"
                                for c in configs) if i == 0 else "")
            checks = rec["check"][t]
            bad = [f"{c}: {v['problem']}" for c, v in checks.items() if v["problem"]]
            for b in bad:
                failures.append(f"{name} threads={t} {b}")
            rels = [v["rel"] for v in checks.values() if v["rel"] is not None]
            if bad:
                row.append(cell("; ".join(bad)))
            elif rels:
                row.append(f"ok ({max(rels):.1g})")
            else:
                row.append("-")
            flags = []
            # Each dnnl or placement configuration against the host-only one
            # compiled for the same CPU (dnnl@default against host@default;
            # else the plain host), and dnnl against ORT.
            for c in ms:
                base, at, cpu = c.partition("@")
                host = "host" + at + cpu if "host" + at + cpu in ms else "host"
                if base in ("dnnl", "measure", "dnnl_measure"):
                    if ms.get(host, 0) > 0 and (ms[c] or 0) > ms[host]:
                        flags.append(f"{c} slower than {host} ({ms[c] / ms[host]:.2f}x)")
                if base == "dnnl" and ms.get("ort", 0) > 0 and (ms[c] or 0) > ms["ort"]:
                    flags.append(f"{c} above ORT ({ms[c] / ms['ort']:.2f}x)")
            flag = "; ".join(flags)
            if i == 0 and "chose" in rec:
                chose = f"measure chose {rec['chose']}"
                if rec["same_as"]:
                    chose += f", the partition of {'/'.join(rec['same_as'])}"
                flag = f"{flag}; {chose}" if flag else chose
            row.append(flag)
            lines.append("| " + " | ".join(row) + " |")
    rounds = (f"the lowest of {args.rounds} interleaved rounds' medians" if args.rounds > 1
              else "one round")
    legend = [
        "",
        f"Median latency in ms of {args.repeat} runs ({rounds}; tessera run warms up once, "
        f"ORT {args.warmup} times), batch 1, T = threads (`--threads T`, OMP_NUM_THREADS=T, "
        "OpenMP's default wait policy; ORT intraOpNumThreads=T, spinning as by default). "
        f"Compiled with `--mcpu {args.mcpu}`. Configurations: host = no "
        "--target (all on the host); dnnl, ccompiler, json = `--target` that plugin; best = "
        "`--target dnnl,ccompiler,json`, plugins in priority order; measure = the same with "
        "`--placement measure` (docs/design/0015); X@CPU = X compiled with `--mcpu CPU` "
        "(X@default: with tessera compile's own default, x86-64-v3,x86-64-v4). X/ORT = Tessera's median / ORT's: below 1 Tessera is faster. "
        "compile s = wall seconds of `tessera compile` per configuration (x: failed). "
        f"match: every output of every configuration within {RTOL:g} x (max - min) of ORT's "
        "at the same T" + "".join(f" ({m}'s {o}: {t:g})" for (m, o), t in RTOL_OF.items()) +
        "; detections paired row by row (same label, nearest box and score); "
        "ok (e) gives the largest max|diff| / ORT's range. flag: the dnnl "
        "build is slower than the host-only one, or slower than ORT; what measure chose, and the single "
        "configuration whose partition its artifact has (the same regions: their times differ "
        "by run-to-run noise only). Timings compare only within one run.",
        "",
        "Geometric mean of Tessera / ORT over the models where both ran:",
        "",
        "| config | " + " | ".join(f"T={t}" for t in args.threads) + " |",
        "|---|" + "---|" * len(args.threads),
    ]
    for c in configs:
        cells = []
        for t in args.threads:
            g = geomean(ratios[(c, t)])
            cells.append("-" if g is None else f"{g:.2f} (n={len(ratios[(c, t)])})")
        legend.append(f"| {c} | " + " | ".join(cells) + " |")
    if not ort_ok:
        failures.append("ONNX Runtime is unavailable: no reference timings or outputs")
    if failures:
        legend += ["", "Failures:", ""] + [f"- {f}" for f in failures]
    head = (f"Benchmark zoo, {datetime.datetime.now():%Y-%m-%d %H:%M}, {cpu_name()}, "
            f"{os.cpu_count()} CPUs\n\n")
    return head + "\n".join(lines + legend) + "\n", failures


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build", "release"),
                    help="build folder: tessera is BUILD/core/tools/tessera, ONNX Runtime goes "
                         "to BUILD/ort (default: build/release)")
    ap.add_argument("--out", help="models (OUT/models), artifacts and outputs (default BUILD/zoo)")
    ap.add_argument("--models", default=",".join(ZOO),
                    help="comma-separated models: export.py's, or any NAME with NAME.onnx and "
                         "NAME_inputs.npz in OUT/models (default: all of export.py's)")
    ap.add_argument("--configs", default=",".join(CONFIGS),
                    help="comma-separated configurations (default: all): " + ", ".join(CONFIGS)
                         + "; each may end in @CPU, compiled with --mcpu CPU instead of --mcpu's "
                         "(host@default,host: tessera compile's default beside native)")
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts (default: 1,2)")
    ap.add_argument("--repeat", type=int, default=20, help="timed runs per median (default: 20)")
    ap.add_argument("--warmup", type=int, default=3, help="ORT's warm-up runs (default: 3)")
    ap.add_argument("--rounds", type=int, default=3,
                    help="interleaved rounds; each configuration keeps its lowest round median "
                         "(default: 3)")
    ap.add_argument("--no-install", action="store_true",
                    help="do not npm-install onnxruntime-node when it is missing")
    ap.add_argument("--mcpu", default="native",
                    help="tessera compile --mcpu (default: native, tuned for this machine as ORT's "
                         "kernels are, by dispatch at run time; tessera compile's own default, "
                         "x86-64-v3,x86-64-v4, loads the best of the two levels the CPU runs)")
    ap.add_argument("--timeout", type=int, default=1800,
                    help="seconds before a compile or run counts as failed (default: 1800)")
    args = ap.parse_args()
    args.models = [m for m in args.models.split(",") if m]
    args.configs = [c for c in args.configs.split(",") if c]
    args.threads = [int(t) for t in args.threads.split(",") if t]
    unknown = [c for c in args.configs if c.partition("@")[0] not in CONFIGS]
    if unknown:
        sys.exit(f"run.py: unknown configs {', '.join(unknown)}; known: {', '.join(CONFIGS)} "
                 "(each may end in @CPU: compiled with --mcpu CPU; @default: with tessera "
                 "compile's default)")
    out = args.out = args.out or os.path.join(args.build, "zoo")
    paths = {"tessera": os.path.join(args.build, "core", "tools", "tessera"),
             "ort": os.path.join(args.build, "ort"), "out": out,
             "models": os.path.join(out, "models")}
    if not os.access(paths["tessera"], os.X_OK):
        sys.exit(f"run.py: {paths['tessera']} is not an executable (build Tessera first)")
    for sub in ("models", "tsr", "outputs"):
        os.makedirs(os.path.join(out, sub), exist_ok=True)

    missing = [m for m in args.models
               if not os.path.exists(os.path.join(paths["models"], m + ".onnx"))]
    if missing:
        log(f"exporting {', '.join(missing)} into {paths['models']}")
        proc = subprocess.run([sys.executable, os.path.join(HERE, "export.py"),
                               "--out", paths["models"], "--models", ",".join(missing)],
                              stdout=sys.stderr)
        if proc.returncode != 0:
            sys.exit(f"run.py: export.py failed (exit {proc.returncode})")
    ort_ok = ensure_ort(paths["ort"], not args.no_install) is not None

    records = []
    for name in args.models:
        start = time.perf_counter()
        records.append(bench_model(name, args, paths, ort_ok))
        log(f"[{name}] done in {time.perf_counter() - start:.0f} s")
    report, failures = render(records, args, ort_ok)
    print("\n" + report)
    with open(os.path.join(out, "zoo.md"), "w") as f:
        f.write(report)
    with open(os.path.join(out, "zoo.json"), "w") as f:
        json.dump({"date": datetime.datetime.now().isoformat(timespec="seconds"),
                   "cpu": cpu_name(), "cpus": os.cpu_count(),
                   "options": {k: v for k, v in vars(args).items()},
                   "configs": {c: compile_flags(c, args.mcpu) for c in args.configs},
                   "rtol": RTOL,
                   "records": records, "failures": failures}, f, indent=2)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
