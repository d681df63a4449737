#!/usr/bin/env bash
# The GPU machine's part of the checks and benchmarks, in one command per stage. Run from the
# repository root on the H200 machine over an install tree in .dist/ (built on the CPU machine:
#   cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DKF_GPU_TESTS=ON \
#     '-DCMAKE_INSTALL_RPATH=$ORIGIN/../lib' -DCMAKE_INSTALL_PREFIX=$PWD/.dist
#   cmake --build build-gpu && cmake --install build-gpu   # plus the non-glibc .so files it needs
# ), writing what it saw under $OUT (default bench/results/h200).
#   bash bench/gpu_session.sh validate   # CUDA examples, GPU e2e tests, eval overhead
#   bash bench/gpu_session.sh ncu        # timing fidelity against ncu
set -uo pipefail
stage=${1:?stage: validate or ncu}
OUT=${OUT:-bench/results/h200}
mkdir -p "$OUT"
[ -d /usr/local/cuda/bin ] && export PATH=/usr/local/cuda/bin:$PATH
KF=$PWD/.dist/bin/kernelfoundry
scratch=$(mktemp -d)
iso=(paths.logdir=$scratch/runs paths.kernels_db_path=$scratch/kernels.sqlite3 paths.cache_dir=$scratch/cache)
step() { echo; echo "### $*"; "$@"; echo "### exit $?"; }

{
  date -u
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.total --format=csv
  nvcc --version | tail -1
  g++ --version | head -1
  ldd "$KF" | grep -i "not found"
} > "$OUT/machine_$stage.txt" 2>&1

case $stage in
  validate)
    {
      step "$KF" run task=examples/tasks/softmax_cuda validate=true "${iso[@]}"
      step "$KF" run task=examples/tasks/matmul_cuda validate=true "${iso[@]}"
      step "$KF" kernels "${iso[@]}"
      KF_OPENCL_PLATFORM=NVIDIA step "$KF" run task=examples/tasks/softmax_ocl validate=true \
        gpu_arch=h200 job_name=softmax_ocl_nvidia "${iso[@]}"
    } > "$OUT/validate_examples.txt" 2>&1
    KF_CLI=$KF KF_SOURCE_DIR=$PWD step .dist/bin/gpu_e2e_test > "$OUT/gpu_e2e_test.txt" 2>&1
    for t in softmax_cuda matmul_cuda; do
      step python3 bench/eval_overhead.py --cli "$KF" --task examples/tasks/$t --n 5 \
        --out "$OUT/eval_overhead_$t.json"
    done > "$OUT/eval_overhead.txt" 2>&1
    ;;
  ncu)
    step python3 bench/ncu_fidelity.py --prefix .dist --out "$OUT/ncu_fidelity.json" \
      > "$OUT/ncu_fidelity.txt" 2>&1
    ;;
esac
tail -n 60 "$OUT"/*.txt
