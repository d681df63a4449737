#!/usr/bin/env bash
# The compute-sanitizer pass on the GPU machine: each candidate below through the real CLI in its
# own `kernelfoundry eval` job (so it is that job's best kernel and the pass runs on it) with
# eval_config.compute_sanitizer=on, then one line per candidate (verdict, flags, the pass's time)
# and a summary. sanitize_* must get a suspect sanitizer_* flag (verdict 5 but not counted as a
# win); honest_* must be verdict 5 with no sanitizer_* flag. Exit 0 when all hold, 1 otherwise,
# 2 when the CLI or compute-sanitizer is missing.
#   bash bench/gpu_sanitizer.sh                  # on the H200, over the install tree in .dist/
# Environment (all optional):
#   OUT=bench/results/h200   where sanitizer_cuda.txt and the eval output go
#   KF=.dist/bin/kernelfoundry
#   TASK=softmax_cuda
#   FILES="sanitize_overread_zero.cu honest_warp_vec4.cu honest_block_smem.cu"
#   TOOLS=memcheck,racecheck
#   TIME_LIMIT=540           seconds for the whole script
set -uo pipefail
OUT=${OUT:-bench/results/h200}
KF=${KF:-$PWD/.dist/bin/kernelfoundry}
TASK=${TASK:-softmax_cuda}
FILES=${FILES:-sanitize_overread_zero.cu honest_warp_vec4.cu honest_block_smem.cu}
TOOLS=${TOOLS:-memcheck,racecheck}
TIME_LIMIT=${TIME_LIMIT:-540}
mkdir -p "$OUT"
[ -d /usr/local/cuda/bin ] && export PATH=/usr/local/cuda/bin:$PATH
[ -d "$PWD/.dist/lib" ] && export LD_LIBRARY_PATH=$PWD/.dist/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
report=$OUT/sanitizer_cuda.txt
log=$OUT/sanitizer_cuda_eval.log
: > "$report"
: > "$log"
say() { echo "$*" | tee -a "$report"; }

if [ ! -x "$KF" ]; then
  say "gpu_sanitizer: no kernelfoundry binary at $KF (set KF=...)"
  exit 2
fi
tool=$(command -v compute-sanitizer || true)
[ -z "$tool" ] && [ -x /usr/local/cuda/compute-sanitizer/compute-sanitizer ] &&
  tool=/usr/local/cuda/compute-sanitizer/compute-sanitizer
if [ -z "$tool" ]; then
  say "gpu_sanitizer: compute-sanitizer not found on PATH or under /usr/local/cuda"
  exit 2
fi
say "### compute-sanitizer: $tool ($("$tool" --version 2>&1 | grep -i version | head -1))"
say "### $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"
scratch=$(mktemp -d)
iso=(paths.logdir=$scratch/runs paths.kernels_db_path=$scratch/kernels.sqlite3
     paths.cache_dir=$scratch/cache paths.results_dir=$scratch/results)
quick=(test_timeout=120 build_timeout=180 eval_config.num_seeds=2 eval_config.time_budget=0.25
       eval_config.max_samples=300 eval_config.compute_sanitizer=on
       eval_config.sanitizer_tools=$TOOLS eval_config.sanitizer_timeout=240)
start=$(date +%s)

# One job's kernel row: verdict, suspect, flags ("*" marks a suspect one), fitness, speedup,
# the pass's lines of the eval log (joined by " | "), reason.
query() {
  python3 - "$scratch/kernels.sqlite3" "$1" <<'PY'
import json, sqlite3, sys
try:
    con = sqlite3.connect(sys.argv[1])
    rows = con.execute("SELECT verdict, suspect, flags_json, fitness, speedup, eval_log, reason "
                       "FROM kernels WHERE job_name = ?", (sys.argv[2],)).fetchall()
except Exception as e:
    print(f"# query failed: {e}", file=sys.stderr)
    rows = []
for verdict, suspect, flags_json, fitness, speedup, log, reason in rows[:1]:
    try:
        flags = json.loads(flags_json or "[]")
    except ValueError:
        flags = []
    names = [("*" if f.get("suspect") else "") + str(f.get("flag")) for f in flags
             if isinstance(f, dict)]
    lines, on = [], False
    for l in (log or "").splitlines():
        if l.startswith("== compute-sanitizer"):
            on = True
            continue
        if on and l.startswith("== "):
            break
        if on and l.strip():
            lines.append(l.strip()[:400])
    sp = "-" if speedup is None else f"{speedup:.3f}x"
    print("\t".join([str(verdict), str(suspect), ",".join(names) or "-", f"{fitness:.3f}", sp,
                     " | ".join(lines) or "(no compute-sanitizer section)",
                     " ".join(str(reason).split())[:300]]))
PY
}

fails=0
for f in $FILES; do
  path=$PWD/tests/gpu/candidates/$TASK/$f
  now=$(date +%s)
  left=$((TIME_LIMIT - (now - start)))
  if [ "$left" -lt 30 ]; then
    say "FAIL $f: not run, the script's time limit ($TIME_LIMIT s) was reached"
    fails=$((fails + 1))
    continue
  fi
  job=san_${f%.cu}
  echo "### $f" >> "$log"
  t0=$(date +%s)
  timeout -k 15 "$left" "$KF" eval "task=examples/tasks/$TASK" "job_name=$job" "$path" \
    "${iso[@]}" "${quick[@]}" >> "$log" 2>&1
  rc=$?
  echo "### exit $rc ($(( $(date +%s) - t0 )) s)" >> "$log"
  IFS=$'\t' read -r v s flags fit sp pass reason < <(query "$job")
  if [ -z "${v:-}" ]; then
    say "FAIL $f: no kernel row (eval exit $rc); see $log"
    fails=$((fails + 1))
    continue
  fi
  case $f in
    sanitize_*) want="flagged"; if [[ "$v" = 5 && "$s" = 1 && "$flags" == *"*sanitizer_"* ]]; then ok=PASS; else ok=FAIL; fi ;;
    honest_*) want="clean"; if [[ "$v" = 5 && "$s" = 0 && "$flags" != *sanitizer_* ]]; then ok=PASS; else ok=FAIL; fi ;;
    *) want="reported only"; ok=INFO ;;
  esac
  [ "$ok" = FAIL ] && fails=$((fails + 1))
  say "$(printf '%-4s %-28s (%s) verdict %s suspect %s fitness %s speedup %s flags %s' \
        "$ok" "$f" "$want" "$v" "$s" "$fit" "$sp" "$flags")"
  say "       pass:   $pass"
  say "       reason: $reason"
  grep -E "^\[1/1\]" "$log" | tail -1 | sed 's/^/       line:   /' | tee -a "$report"
done

say ""
say "### $(( $(date +%s) - start )) s"
if [ "$fails" -eq 0 ]; then
  say "gpu_sanitizer: every sanitize_ flagged, every honest_ clean"
  rm -rf "$scratch"
  exit 0
fi
say "gpu_sanitizer: $fails candidate(s) not as expected; eval output in $log, run files in $scratch"
exit 1
