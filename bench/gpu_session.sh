#!/usr/bin/env bash
# The GPU machine's part of the checks and benchmarks, in one command per stage. Run from the
# repository root on the H200 machine over an install tree in .dist/ (built on the CPU machine by
# bench/make_dist.sh, which also copies the shared libraries and bwrap; by hand:
#   cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DKF_GPU_TESTS=ON \
#     '-DCMAKE_INSTALL_RPATH=$ORIGIN/../lib' -DCMAKE_INSTALL_PREFIX=$PWD/.dist
#   cmake --build build-gpu && cmake --install build-gpu   # plus the non-glibc .so files it needs
# ), writing what it saw under $OUT (default bench/results/h200).
#   bash bench/gpu_session.sh validate   # CUDA examples, GPU e2e tests, eval overhead
#   bash bench/gpu_session.sh ncu        # timing fidelity against ncu
#   bash bench/gpu_session.sh search     # a 2 x 2 evolutionary job on softmax_cuda, replaying the
#                                        # GPU test candidates (hand-written, not a model's output)
#   bash bench/gpu_session.sh integrity  # CUDA adversarial and honest candidates (gpu_integrity.sh)
#   bash bench/gpu_session.sh split      # the split nvcc build against nvcc as a whole
#   OLD=old/.dist bash bench/gpu_session.sh overhead  # per-candidate cost, this tree vs $OLD
#                                        # (TASKS="softmax_cuda" ROUNDS="1 2" pick a part)
#   bash bench/gpu_session.sh profile    # Nsight Compute profiling of CUDA candidates and the
#                                        # reference (the GPU e2e test, and the eval logs shown)
#   bash bench/gpu_session.sh archs      # an OCL job over the GPU (NVIDIA OpenCL) and the CPU
#                                        # (PoCL) in one run, and a replayed CUDA job with
#                                        # profiling whose second prompt shows the ncu summaries
#   bash bench/gpu_session.sh tune       # kernelfoundry tune against Kernel Tuner on a 24-combination
#                                        # CUDA SGEMM space (bench/tune_matmul.py; Kernel Tuner's
#                                        # wheels carried in bench/wheels_kt, see bench/README.md)
#   bash bench/gpu_session.sh serial     # CUPTI's serialised and concurrent records against ncu, eval overhead
#   bash bench/gpu_session.sh verify     # CUPTI tests, timing-related integrity cases, matmul vs ncu
#   bash bench/gpu_session.sh self       # the softmax reference against itself: two jobs of 6
#                                        # copies (each copy's per-shape ratios), then eval overhead;
#                                        # with OLD=$PWD/old/.dist, that tree's jobs alternate in
#   bash bench/gpu_session.sh fidelity   # softmax against ncu over placements (and kept on one),
#                                        # the stale-pointer candidate, eval overhead
#   bash bench/gpu_session.sh placement  # does a kernel's time move with where its buffers lie
#                                        # (bench/placement_probe.cu, three processes)
#   bash bench/gpu_session.sh sbs        # side by side with the Python KernelFoundry 0.5.0
#                                        # (bench/side_by_side.py; bench/wheels carried; SBS_ARGS
#                                        # passes more arguments, e.g. "--budget-s 400 --py-max 2")
set -uo pipefail
# The install tree may travel packed (.dist_pack/dist.tgz, `tar czf .dist_pack/dist.tgz .dist`):
# the whole .dist is larger than what the GPU machine's working tree may carry.
[ -d .dist ] || [ ! -f .dist_pack/dist.tgz ] || tar xzf .dist_pack/dist.tgz
stage=${1:?stage: validate, ncu, search, overhead, split, integrity, profile, archs, tune, serial, verify, self, fidelity, placement or sbs}
OUT=${OUT:-bench/results/h200}
mkdir -p "$OUT"
[ -d /usr/local/cuda/bin ] && export PATH=/usr/local/cuda/bin:$PATH
KF=$PWD/.dist/bin/kernelfoundry
# The copied libraries' own dependencies (libcurl -> libssh2, ...) are found through this: RUNPATH
# covers only the binaries' direct dependencies. Candidate children do not inherit it (sandbox).
export LD_LIBRARY_PATH=$PWD/.dist/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
scratch=$(mktemp -d)
iso=(paths.logdir=$scratch/runs paths.kernels_db_path=$scratch/kernels.sqlite3 paths.cache_dir=$scratch/cache)
step() { echo; echo "### $*"; "$@"; echo "### exit $?"; }
# The examples' configs say gpu_arch h200; the machine may be an H100: they get its profile name.
use_this_gpu() {
  case $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1) in
    *H200*) gpu=h200 ;; *H100*) gpu=h100 ;; *) gpu=native ;;
  esac
  sed -i "s/^gpu_arch: h200/gpu_arch: $gpu/" examples/tasks/*/config.yaml
}

{
  date -u
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.total --format=csv
  nvcc --version | tail -1
  g++ --version | head -1
  lscpu | grep -E "^(Model name|CPU\(s\)):"
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
  search)
    # The recorded answers: the GPU test candidates as fenced CUDA blocks, pinned per branch.
    replay=$scratch/replay
    mkdir -p "$replay"
    pin() { printf 'Recorded candidate %s.\n\n```cuda\n' "$2" > "$replay/$1.md"
            cat tests/gpu/candidates/softmax_cuda/$2 >> "$replay/$1.md"; printf '```\n' >> "$replay/$1.md"; }
    pin t1_b0 warp_per_row.cu; pin t1_b1 wrong_sum.cu; pin t2_b0 out_of_bounds.cu
    pin t2_b1 does_not_compile.cu
    {
      step "$KF" run task=examples/tasks/softmax_cuda max_iters=2 branches_per_iteration=2 \
        job_name=softmax_cuda_replay \
        "inference.servers=[{server_type: replay, model_name: recorded-gpu-candidates, replay_path: '$replay'}]" \
        "${iso[@]}"
      step "$KF" kernels job=softmax_cuda_replay "${iso[@]}"
      step "$KF" jobs "${iso[@]}"
    } > "$OUT/search_softmax_cuda.txt" 2>&1
    ;;
  overhead)
    # Per-candidate cost of the CUDA examples, this tree against an older install tree in $OLD
    # (e.g. a commit before a change, built by make_dist.sh and unpacked there), alternating
    # old and new per task so drift of the machine hits both alike.
    use_this_gpu
    for t in ${TASKS:-softmax_cuda matmul_cuda}; do
      for round in ${ROUNDS:-1 2}; do
        if [ -n "${OLD:-}" ]; then
          LD_LIBRARY_PATH=$OLD/lib step python3 bench/eval_overhead.py --cli "$OLD/bin/kernelfoundry" \
            --task examples/tasks/$t --n 3 --out "$OUT/eval_overhead_before_${t}_$round.json"
        fi
        step python3 bench/eval_overhead.py --cli "$KF" --task examples/tasks/$t --n 3 \
          --out "$OUT/eval_overhead_${t}_$round.json"
      done
    done > "$OUT/eval_overhead_compare$(printf '_%s' ${TASKS:-}).txt" 2>&1
    ;;
  split)
    # The split nvcc build against nvcc as a whole (KF_NVCC_SPLIT=0), alternating, two rounds.
    for round in 1 2; do
      for t in softmax_cuda matmul_cuda; do
        KF_NVCC_SPLIT=0 step python3 bench/eval_overhead.py --cli "$KF" --task examples/tasks/$t \
          --n 3 --out "$OUT/eval_overhead_nosplit_${t}_$round.json"
        step python3 bench/eval_overhead.py --cli "$KF" --task examples/tasks/$t --n 3 \
          --out "$OUT/eval_overhead_split_${t}_$round.json"
      done
    done > "$OUT/eval_overhead_split.txt" 2>&1
    step python3 bench/build_steps.py --prefix .dist --n 5 --run --out "$OUT/build_steps.json" \
      > "$OUT/build_steps.txt" 2>&1
    ;;
  integrity)
    use_this_gpu
    # Writes $OUT/integrity_cuda.txt; its exit status says whether every verdict was as expected.
    OUT=$OUT KF=$KF step bash bench/gpu_integrity.sh > "$OUT/integrity_stdout.txt" 2>&1
    ;;
  profile)
    KF_CLI=$KF KF_SOURCE_DIR=$PWD step .dist/bin/gpu_e2e_test --gtest_filter='CudaProfile.*' \
      > "$OUT/profile_e2e_test.txt" 2>&1
    {
      for pair in softmax_cuda:honest_warp_vec4.cu matmul_cuda:honest_tiled32.cu; do
        t=${pair%%:*} c=${pair#*:}
        step "$KF" eval task=examples/tasks/$t job_name=profile_$t eval_config.profile_original_model=true gpu_arch=native \
          tests/gpu/candidates/$t/$c "${iso[@]}"
        python3 -c 'import sqlite3,sys; r=sqlite3.connect(sys.argv[1]).execute("select eval_log, length(profile_json) from kernels where job_name=?", (sys.argv[2],)).fetchall(); print("\n".join(f"{x[0]}\n(profile_json: {x[1]} bytes)" for x in r) or "no kernel")' \
          "$scratch/kernels.sqlite3" "profile_$t"
      done
    } > "$OUT/profile_cuda.txt" 2>&1
    ;;
  archs)
    use_this_gpu
    # The OpenCL backend's own tests (strided copies, perturbation) on NVIDIA's OpenCL.
    KF_OPENCL_PLATFORM=NVIDIA step .dist/bin/harness_opencl_test > "$OUT/harness_opencl_nvidia.txt" 2>&1
    {
      for c in correct.cl honest_local_tree.cl slower.cl; do
        POCL_DEVICES=pthread step "$KF" eval task=examples/tasks/softmax_ocl job_name=ocl_archs \
          "gpu_arch=$gpu,cpu" "arch_targets=$gpu=opencl:nvidia,cpu=opencl:portable" \
          tests/e2e/candidates/softmax_ocl/$c "${iso[@]}"
      done
      if [ -n "${REF_ARCH:-}" ]; then
        # The reference timed on the GPU, the candidates run on the CPU (reference_gpu_arch).
        POCL_DEVICES=pthread step "$KF" eval task=examples/tasks/softmax_ocl job_name=ocl_ref_gpu \
          gpu_arch=cpu reference_gpu_arch=$gpu "arch_targets=$gpu=opencl:nvidia,cpu=opencl:portable" \
          tests/e2e/candidates/softmax_ocl/honest_local_tree.cl "${iso[@]}"
      fi
      python3 -c 'import sqlite3,sys; r=sqlite3.connect(sys.argv[1]).execute("select job_name, gpu_arch, verdict, speedup, eval_log from kernels where job_name like ? order by rowid", ("ocl_%",)).fetchall(); print("\n\n".join(f"--- {x[0]} {x[1]} verdict {x[2]} speedup {x[3]}\n{x[4]}" for x in r) or "no kernel")' \
        "$scratch/kernels.sqlite3"
    } > "$OUT/archs_ocl.txt" 2>&1
    replay=$scratch/replay
    mkdir -p "$replay"
    for pair in t1_b0:honest_block_smem.cu t2_b0:honest_warp_vec4.cu; do
      { printf 'Recorded candidate %s.\n\n```cuda\n' "${pair#*:}"
        cat tests/gpu/candidates/softmax_cuda/${pair#*:}; printf '```\n'; } > "$replay/${pair%%:*}.md"
    done
    {
      step "$KF" run task=examples/tasks/softmax_cuda max_iters=2 branches_per_iteration=1 \
        job_name=softmax_cuda_profiled eval_config.profile_original_model=true \
        "inference.servers=[{server_type: replay, model_name: recorded-gpu-candidates, replay_path: '$replay'}]" \
        "${iso[@]}"
      for f in $(find "$scratch/runs/softmax_cuda_profiled" -name prompt.md | sort); do
        echo; echo "===== $f"; cat "$f"
      done
    } > "$OUT/profile_prompt_cuda.txt" 2>&1
    ;;
  tune)
    use_this_gpu
    # Kernel Tuner and the packages it imports that the machine lacks: wheels unpacked as they are
    # (numpy and CuPy are the machine's own).
    python3 -c 'import sys, zipfile, glob; [zipfile.ZipFile(w).extractall(sys.argv[1]) for w in glob.glob("bench/wheels_kt/*.whl")]' "$scratch/kt"
    # Two combinations over the device's limits: one ptxas refuses (skipped before running), one
    # that fails at launch (4096 threads per block).
    step "$KF" tune task=examples/tasks/matmul_cuda job_name=tune_over_limit \
      tests/gpu/candidates/matmul_cuda/templated_over_limit.cu "${iso[@]}" > "$OUT/tune_over_limit.txt" 2>&1
    cat "$scratch/runs/tune_over_limit/kernels/000/eval_log.txt" >> "$OUT/tune_over_limit.txt"
    PYTHONPATH=$scratch/kt PYTHONUNBUFFERED=1 step python3 bench/tune_matmul.py --cli "$KF" \
      --out "$OUT/tune_matmul.json" > "$OUT/tune_matmul.txt" 2>&1
    ;;
  serial)
    # Issue 9 items 2 and 3: CUPTI's serialised (the default) and concurrent kernel records, each against
    # the same ncu run (softmax_cuda's kernels and candidates), then the per-candidate cost of both
    # CUDA examples (5 candidates each; the test child's phase_seconds include device.close and
    # process.main).
    use_this_gpu
    timeout 270 python3 bench/ncu_fidelity.py --prefix .dist --only softmax_cuda --concurrent-too \
      --out "$OUT/ncu_fidelity_serial.json" > "$OUT/ncu_fidelity_serial.txt" 2>&1
    for t in softmax_cuda matmul_cuda; do
      timeout 130 python3 bench/eval_overhead.py --cli "$KF" --task examples/tasks/$t --n 5 \
        --out "$OUT/eval_overhead_${t}.json" > "$OUT/eval_overhead_${t}.txt" 2>&1
    done
    ;;
  verify)
    # The checks the serialised-records default (2026-12-07) still lacks on a GPU, in one call of
    # about 5 minutes: the CUPTI tests, the timing-related adversarial and honest candidates, and
    # matmul_cuda's kernels against ncu both ways.
    use_this_gpu
    step .dist/bin/gpu_cupti_test > "$OUT/gpu_cupti_test.txt" 2>&1
    ONLY="adv_private_stream.cu adv_host_thread.cu adv_device_clock.cu adv_event_interpose.cu \
adv_memcpy_precomputed.cu adv_timed_less_work.cu honest_warp_vec4.cu honest_block_smem.cu \
honest_tiled32.cu honest_regblock.cu" TIME_LIMIT=200 OUT=$OUT KF=$KF \
      step bash bench/gpu_integrity.sh > "$OUT/integrity_stdout.txt" 2>&1
    timeout 150 python3 bench/ncu_fidelity.py --prefix .dist --only matmul_cuda --concurrent-too \
      --out "$OUT/ncu_fidelity_matmul.json" > "$OUT/ncu_fidelity_matmul.txt" 2>&1
    ;;
  self)
    # Issue 9 item 1 on the GPU (+-0.5%): two jobs, so two judge processes, of six copies each.
    # With OLD=old/.dist (an older install tree), its jobs alternate with this tree's, on one GPU.
    use_this_gpu
    for round in 1 2; do
      for tree in this ${OLD:+old}; do
        cli=$KF libs=$LD_LIBRARY_PATH
        [ "$tree" = old ] && cli=$OLD/bin/kernelfoundry libs=$OLD/lib
        LD_LIBRARY_PATH=$libs timeout 120 python3 bench/self_speedup.py --cli "$cli" \
          --task examples/tasks/softmax_cuda --n 6 \
          --candidate bench/candidates/softmax_cuda_reference_as_candidate.cu \
          --out "$OUT/self_speedup_softmax_cuda_${tree}_$round.json" \
          > "$OUT/self_speedup_softmax_cuda_${tree}_$round.txt" 2>&1
      done
    done
    [ "${OVERHEAD:-1}" = 0 ] ||  # OVERHEAD=0 leaves the eval-overhead run out
      timeout 130 python3 bench/eval_overhead.py --cli "$KF" --task examples/tasks/softmax_cuda --n 5 \
        --out "$OUT/eval_overhead_softmax_cuda.json" > "$OUT/eval_overhead_softmax_cuda.txt" 2>&1
    ;;
  fidelity)
    # ncu against the harness with both sides moving the buffers every 8 calls (the default), the
    # short shape again with one placement each, the stale-pointer candidate, the per-candidate cost.
    use_this_gpu
    ONLY="adv_stale_pointers.cu honest_warp_vec4.cu" TASKS=softmax_cuda TIME_LIMIT=90 OUT=$OUT \
      KF=$KF step bash bench/gpu_integrity.sh > "$OUT/integrity_stdout.txt" 2>&1
    timeout 270 python3 bench/ncu_fidelity.py --prefix .dist --only softmax_cuda \
      --out "$OUT/ncu_fidelity_moves.json" > "$OUT/ncu_fidelity_moves.txt" 2>&1
    timeout 100 python3 bench/ncu_fidelity.py --prefix .dist --only softmax_cuda --shape rows=4096 \
      --no-moves --out "$OUT/ncu_fidelity_kept.json" > "$OUT/ncu_fidelity_kept.txt" 2>&1
    for t in softmax_cuda matmul_cuda; do
      timeout 60 python3 bench/eval_overhead.py --cli "$KF" --task examples/tasks/$t --n 5 \
        --out "$OUT/eval_overhead_${t}.json" > "$OUT/eval_overhead_${t}.txt" 2>&1
    done
    ;;
  placement)
    nvcc -std=c++17 -O3 -arch=native -Iexamples/tasks/softmax_cuda -o "$scratch/probe" \
      bench/placement_probe.cu > "$OUT/placement_probe.txt" 2>&1
    for seed in 1 2 3; do
      echo "### process $seed"; "$scratch/probe" 8 30 "$seed"
    done >> "$OUT/placement_probe.txt" 2>&1
    ;;
  sbs)
    use_this_gpu
    # Writes $OUT/side_by_side.{json,txt} and side_by_side_logs.tar.gz; about 8 minutes.
    PYTHONUNBUFFERED=1 step python3 bench/side_by_side.py --cli "$KF" --out "$OUT" ${SBS_ARGS:-} \
      > "$OUT/side_by_side_stdout.txt" 2>&1
    ;;
esac
tail -n 60 "$OUT"/*.txt
