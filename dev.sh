#!/usr/bin/env bash
# Tessera's developer entry point; the README's quick-start commands call it.
#
#   ./dev.sh example   install dependencies, build (release), compile the bundled example
#                      model with every shipped plugin that is built, run it
#   ./dev.sh test      install dependencies, build (dev preset), run the whole test suite
#   ./dev.sh bench     build (release) and run the benchmarks
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
    ;;
  test)
    build dev
    ctest --preset dev -j "$jobs"
    ;;
  bench)
    build release
    ./build/release/bench/bench_ir
    ./build/release/bench/bench_partition
    ./build/release/bench/bench_runtime
    /usr/bin/python3 bench/models/make_models.py --out build/release/models \
      --run ./build/release/core/tools/tessera --targets dnnl,ccompiler,json
    # Issue 7's comparison: Tessera+dnnl, host only, hand-written oneDNN and
    # ONNX Runtime (npm onnxruntime-node, installed on first use).
    /usr/bin/python3 bench/models/compare.py --build build/release --threads 1,2
    ;;
  *)
    echo "usage: ./dev.sh example|test|bench" >&2
    exit 2
    ;;
esac
