#!/usr/bin/env bash
# Installs KernelFoundry's build dependencies (Debian 12 packages) and builds it into build/.
set -euo pipefail
cd "$(dirname "$0")/.."
PACKAGES=(build-essential cmake ninja-build pkg-config libyaml-cpp-dev nlohmann-json3-dev
          libsqlite3-dev libcurl4-openssl-dev libssl-dev libarchive-dev libgtest-dev libgmock-dev
          ocl-icd-opencl-dev opencl-headers pocl-opencl-icd clinfo
          bubblewrap  # bwrap: the sandbox of candidate builds and runs (docs/security.md)
          linux-perf  # perf stat: profiling kernels on the CPU (README: Profiling)
          python3)  # python3: the scripted LLM server of the tests and the bench scripts
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# The CUDA toolkit is optional: with nvcc on PATH (or in /usr/local/cuda) CUDA tasks can be built.
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo ${KF_CMAKE_ARGS:-}
cmake --build build -j "$(nproc)"
