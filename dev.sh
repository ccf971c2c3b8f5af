#!/usr/bin/env bash
# Tessera's developer entry point; the README's quick-start commands call it.
#
#   ./dev.sh example   install dependencies, build (release), compile the bundled example
#                      model with every shipped plugin that is built, run it (with the CLI,
#                      then from Python against the reference interpreter)
#   ./dev.sh test      install dependencies, build (dev preset), run the whole test suite
#   ./dev.sh bench     build (release) and run the benchmarks
#   ./dev.sh bench zoo [ARGS...]
#                      build (release), install python3-torch and python3-torchvision if
#                      missing, and run the benchmark zoo of real exported models against
#                      ONNX Runtime (bench/zoo/run.py ARGS; bench/zoo/README.md)
#   ./dev.sh tsan      build libtessera_runtime and tests/threads under ThreadSanitizer
#                      (tsan preset; the artifact compiled by the dev build's tessera) and
#                      check 8 threads x 500 runs on one shared session, and two threads
#                      misusing the stateful calls: no report, the same outputs
#   ./dev.sh fuzz [TARGET [SECONDS]]
#                      build a libFuzzer target (fuzz preset, clang) and run it for
#                      SECONDS (default 300); no TARGET lists them (fuzz/README.md)
#
# Dependencies come from Debian 12's packages (cmake/install-deps.sh, which
# returns at once when everything is installed).
set -euo pipefail
cd "$(dirname "$0")"

jobs=$(nproc 2>/dev/null || echo 2)

build() {
  local preset=$1
  bash cmake/install-deps.sh
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset" -j "$jobs"
}

case "${1:-}" in
  example)
    build release
    tessera=./build/release/core/tools/tessera
    # Every shipped plugin that was built, fastest first.
    targets=""
    for p in dnnl ccompiler json; do
      if [ -f "build/release/lib/tessera/plugins/libtessera_$p.so" ]; then
        targets="${targets:+$targets,}$p"
      fi
    done
    "$tessera" compile examples/models/tiny_cnn.tir ${targets:+--target "$targets"} \
      -o build/release/tiny_cnn.tsr
    "$tessera" run build/release/tiny_cnn.tsr --repeat 100 --print-time
    # The same artifact from Python (tessera.runtime), against the reference interpreter.
    PYTHONPATH=build/release/python /usr/bin/python3 examples/python/run_artifact.py \
      build/release/tiny_cnn.tsr examples/models/tiny_cnn.tir
    ;;
  test)
    build dev
    ctest --preset dev -j "$jobs"
    ;;
  bench)
    if [ "${2:-}" = zoo ]; then
      shift 2
      build release
      if ! /usr/bin/python3 -c 'import torch, torchvision' 2>/dev/null; then
        SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
        $SUDO apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends \
          python3-torch python3-torchvision
      fi
      exec /usr/bin/python3 bench/zoo/run.py --build build/release "$@"
    fi
    build release
    ./build/release/bench/bench_ir
    ./build/release/bench/bench_partition
    ./build/release/bench/bench_runtime
    PYTHONPATH=build/release/python /usr/bin/python3 bench/python_overhead.py --build build/release
    /usr/bin/python3 bench/models/make_models.py --out build/release/models \
      --run ./build/release/core/tools/tessera --targets dnnl,ccompiler,json
    # Issue 7's comparison: Tessera+dnnl, host only, hand-written oneDNN and
    # ONNX Runtime (npm onnxruntime-node, installed on first use).
    /usr/bin/python3 bench/models/compare.py --build build/release --threads 1,2
    ;;
  tsan)
    # Only the runtime and the check are instrumented (a second full build does
    # not fit beside the suite); host-only artifacts on one-thread sessions:
    # oneDNN and libgomp are not instrumented, and their threads would be noise.
    bash cmake/install-deps.sh
    cmake --preset dev >/dev/null
    cmake --build --preset dev -j "$jobs" --target tessera
    cmake --preset tsan >/dev/null
    cmake --build --preset tsan -j "$jobs"
    TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1" cmake \
      -DTESSERA=build/dev/core/tools/tessera -DCHECK=build/tsan/tests/threads/tessera_threads_check \
      -DMODEL=examples/models/tiny_cnn.tir -DWORK_DIR=build/tsan/threads -DTARGETS=host \
      -P tests/threads/check_threads.cmake
    ;;
  fuzz)
    targets="text_ir passes partition compile symbolic onnx pattern npy plan artifact json_module"
    target=${2:-}
    if [ -z "$target" ] || ! [[ " $targets " == *" $target "* ]]; then
      echo "usage: ./dev.sh fuzz TARGET [SECONDS]; targets: $targets (fuzz/README.md)" >&2
      exit 2
    fi
    seconds=${3:-300}
    bash cmake/install-deps.sh
    # clang 19, its libFuzzer runtime and its OpenMP (the fuzz preset only).
    if ! command -v clang++-19 >/dev/null || ! [ -e /usr/lib/llvm-19/lib/libomp.so ] ||
       ! ls /usr/lib/llvm-19/lib/clang/19/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; then
      apt-get install -y -q clang-19 libclang-rt-19-dev libomp-19-dev
    fi
    cmake --preset fuzz >/dev/null
    cmake --build --preset fuzz -j "$jobs" --target "fuzz_$target"
    # New inputs go to build/fuzz/corpus/TARGET; failures to build/fuzz/findings.
    work=build/fuzz/corpus/$target
    mkdir -p "$work" build/fuzz/findings
    seeds=(fuzz/corpus/"$target")
    case $target in
      text_ir | passes | partition | compile) seeds+=(tests/lit examples/models) ;;
      onnx) seeds+=(/usr/share/libonnx-testdata/data) ;;
    esac
    "./build/fuzz/fuzz/fuzz_$target" "$work" "${seeds[@]}" -max_total_time="$seconds" \
      -rss_limit_mb=2048 -timeout=20 -print_final_stats=1 \
      -artifact_prefix="build/fuzz/findings/$target-"
    ;;
  *)
    echo "usage: ./dev.sh example|test|bench [zoo ARGS...]|fuzz" >&2
    exit 2
    ;;
esac
