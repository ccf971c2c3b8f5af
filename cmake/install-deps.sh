#!/usr/bin/env bash
# Installs Tessera's build and test dependencies from Debian 12's packages.
# Idempotent: when every package is already present it only checks and returns
# (well under a second). Needs root (or sudo) only when something is missing.
set -euo pipefail

packages=(
  cmake ninja-build ccache g++ git python3
  llvm-19-dev llvm-19-tools llvm-19 clang-19 libzstd-dev
  libdnnl-dev ocl-icd-opencl-dev
  libboost-dev libboost-filesystem-dev libjemalloc-dev
  libfmt-dev libspdlog-dev catch2 libcli11-dev libdlpack-dev nlohmann-json3-dev
  zlib1g-dev libprotobuf-dev protobuf-compiler libonnx-dev libonnx-testdata python3-onnx python3-numpy
  python3-dev python3-pybind11 pybind11-dev python3-pytest
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "tessera: installing ${#missing[@]} missing package(s): ${missing[*]}" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "tessera: need root (or sudo) to install: ${missing[*]}" >&2; exit 1
  fi
fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
