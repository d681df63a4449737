#!/usr/bin/env bash
# Runs every test that needs no GPU (unit tests and end-to-end tests on the built CLI).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi
ctest --test-dir build --output-on-failure -j "$(nproc)" "$@"
