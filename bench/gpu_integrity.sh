#!/usr/bin/env bash
# The CUDA integrity check of the GPU machine: every adversarial (adv_*), honest (honest_*) and
# probe (probe_*) candidate under tests/gpu/candidates/<task>/ through the real CLI, one
# `kernelfoundry eval` job per task, then one line per candidate (verdict, suspect flags, reason)
# and a summary: each adv_* must be caught (verdict < 5 or suspect), or, when its header says
# "// Expected: defeated", may instead be correct and clean (its trick never fires, so it
# computes honestly and gains nothing), each honest_* must be
# verdict 5 and not suspect; probe_* are reported only. Exit 0 when all hold, 1 otherwise.
#   bash bench/gpu_integrity.sh                  # on the H200, over the install tree in .dist/
# Environment (all optional):
#   OUT=bench/results/h200   where integrity_cuda.txt and the eval output go
#   KF=.dist/bin/kernelfoundry
#   TASKS="softmax_cuda matmul_cuda"   packages under examples/tasks/
#   CAND_ROOT=tests/gpu/candidates     candidates under CAND_ROOT/<task>/
#   ONLY="adv_memo.cu honest_tiled32.cu"   only these file names
#   TIME_LIMIT=480           seconds for the whole script (split over the tasks)
#   REPORT=integrity_cuda.txt
# A dry run of the non-GPU parts on the CPU machine:
#   KF=build-gpuadv/src/cli/kernelfoundry TASKS=reduction_cpp CAND_ROOT=tests/e2e/candidates \
#     ONLY="adv_call_reference.cpp honest_omp_rows.cpp" OUT=/tmp/integ bash bench/gpu_integrity.sh
set -uo pipefail
OUT=${OUT:-bench/results/h200}
KF=${KF:-$PWD/.dist/bin/kernelfoundry}
TASKS=${TASKS:-softmax_cuda matmul_cuda}
CAND_ROOT=${CAND_ROOT:-tests/gpu/candidates}
ONLY=${ONLY:-}
TIME_LIMIT=${TIME_LIMIT:-480}
REPORT=${REPORT:-integrity_cuda.txt}
mkdir -p "$OUT"
[ -d /usr/local/cuda/bin ] && export PATH=/usr/local/cuda/bin:$PATH
[ -d "$PWD/.dist/lib" ] && export LD_LIBRARY_PATH=$PWD/.dist/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
report=$OUT/$REPORT
log=$OUT/${REPORT%.txt}_eval.log
: > "$report"
: > "$log"
say() { echo "$*" | tee -a "$report"; }

if [ ! -x "$KF" ]; then
  say "gpu_integrity: no kernelfoundry binary at $KF (set KF=...)"
  exit 2
fi
scratch=$(mktemp -d)
iso=(paths.logdir=$scratch/runs paths.kernels_db_path=$scratch/kernels.sqlite3
     paths.cache_dir=$scratch/cache paths.results_dir=$scratch/results)
# Short timing, bounded steps: the point is the verdicts, not precise speedups.
quick=(test_timeout=90 build_timeout=180 eval_config.inactivity_timeout=60
       eval_config.num_seeds=2 eval_config.time_budget=0.25 eval_config.min_samples=10
       eval_config.max_samples=300 eval_config.warmup_min_time=0.02 eval_config.warmup_min_iters=3
       eval_config.profile_custom_model=false eval_config.profile_original_model=false)
start=$(date +%s)

# Reads one job's kernels from the database: one tab-separated line per kernel, in branch order:
# branch, verdict, suspect, flags (comma-separated, "*" marks a suspect one), speedup, reason,
# marker lines a candidate printed ("ADV-MARK: ...").
query() {
  python3 - "$scratch/kernels.sqlite3" "$1" <<'PY'
import json, sqlite3, sys
db, job = sys.argv[1], sys.argv[2]
try:
    con = sqlite3.connect(db)
    rows = con.execute("SELECT branch, verdict, suspect, flags_json, speedup, reason, eval_log "
                       "FROM kernels WHERE job_name = ? ORDER BY branch", (job,)).fetchall()
except Exception as e:  # no database yet: the job failed before storing anything
    print(f"# query failed: {e}", file=sys.stderr)
    rows = []
def clean(s):
    return " ".join(str(s).split())
for branch, verdict, suspect, flags_json, speedup, reason, log in rows:
    try:
        flags = json.loads(flags_json or "[]")
    except ValueError:
        flags = []
    names = []
    for f in flags if isinstance(flags, list) else []:
        if isinstance(f, dict):
            names.append(("*" if f.get("suspect") else "") + str(f.get("flag", f.get("name", "?"))))
        else:
            names.append(str(f))
    marks = [clean(l[l.find("ADV-MARK:"):]) for l in (log or "").splitlines() if "ADV-MARK:" in l]
    sp = "-" if speedup is None else f"{speedup:.3f}x"
    print("\t".join([str(branch), str(verdict), str(suspect), ",".join(names) or "-", sp,
                     clean(reason)[:300] or "-", " | ".join(dict.fromkeys(marks))[:300] or "-"]))
PY
}

fails=0
declare -a summary=()
judge() {  # file verdict suspect flags speedup reason marks
  local f=$1 v=$2 s=$3 flags=$4 sp=$5 reason=$6 marks=$7 want ok
  case $f in
    adv_*)
      want="must be caught"
      if [ "$v" -lt 5 ] 2>/dev/null || [ "$s" = 1 ]; then
        ok=PASS
      elif [ "$v" = 5 ] && grep -q "^// Expected: defeated" "$CAND_ROOT/$task/$f"; then
        # Its trick never fires (it computes the result honestly): correct, clean, no gain.
        want="must be caught or defeated"; ok=PASS
      else
        ok=FAIL
      fi ;;
    honest_*) want="must be clean"; if [ "$v" = 5 ] && [ "$s" = 0 ]; then ok=PASS; else ok=FAIL; fi ;;
    *) want="reported only"; ok=INFO ;;
  esac
  [ "$ok" = FAIL ] && fails=$((fails + 1))
  say "$(printf '%-4s %-14s %-30s verdict %-2s suspect %-1s speedup %-9s flags %s' \
        "$ok" "$task" "$f" "$v" "$s" "$sp" "$flags")"
  say "       reason: $reason"
  [ "$marks" != "-" ] && say "       marks:  $marks"
  summary+=("$ok $task/$f ($want)")
}

ntasks=$(echo $TASKS | wc -w)
taskno=0
for task in $TASKS; do
  taskno=$((taskno + 1))
  dir=$CAND_ROOT/$task
  files=()
  for f in "$dir"/adv_* "$dir"/honest_* "$dir"/probe_*; do
    [ -f "$f" ] || continue
    name=$(basename "$f")
    if [ -n "$ONLY" ] && ! [[ " $ONLY " == *" $name "* ]]; then continue; fi
    case $f in /*) files+=("$f") ;; *) files+=("$PWD/$f") ;; esac
  done
  say "### $task: ${#files[@]} candidate(s) from $dir"
  attempt=0
  # A job stops at a candidate that hits an environment error (nothing is stored for it): that
  # one is reported as not evaluated and the rest go to a new job.
  while [ ${#files[@]} -gt 0 ]; do
    attempt=$((attempt + 1))
    now=$(date +%s)
    left=$((TIME_LIMIT - (now - start)))
    share=$((left / (ntasks - taskno + 1)))
    if [ "$share" -lt 20 ]; then
      for f in "${files[@]}"; do
        judge "$(basename "$f")" 9 0 - - "not evaluated: the script's time limit ($TIME_LIMIT s) was reached" -
        # 9 is no verdict: an adv_ counts as not caught, an honest_ as failed.
      done
      break
    fi
    job=integrity_${task}_${attempt}
    echo "### $task attempt $attempt ($share s): ${#files[@]} file(s)" >> "$log"
    timeout -k 15 "$share" "$KF" eval "task=examples/tasks/$task" "job_name=$job" "${files[@]}" \
      "${iso[@]}" "${quick[@]}" >> "$log" 2>&1
    rc=$?
    echo "### exit $rc" >> "$log"
    n=0
    while IFS=$'\t' read -r branch v s flags sp reason marks; do
      [ -n "$branch" ] || continue
      [ "$branch" -lt ${#files[@]} ] || continue
      judge "$(basename "${files[$branch]}")" "$v" "$s" "$flags" "$sp" "$reason" "$marks"
      n=$((branch + 1))
    done < <(query "$job")
    if [ "$n" -ge ${#files[@]} ]; then break; fi
    why="not evaluated: the eval job stopped (exit $rc$([ $rc = 124 ] && echo ', time limit')); see $log"
    judge "$(basename "${files[$n]}")" 9 0 - - "$why" -
    files=("${files[@]:$((n + 1))}")
  done
done

say ""
say "### summary ($(( $(date +%s) - start )) s)"
for line in "${summary[@]}"; do say "$line"; done
if [ "$fails" -eq 0 ]; then
  say "gpu_integrity: every adv_ caught, every honest_ clean"
  rm -rf "$scratch"
  exit 0
fi
say "gpu_integrity: $fails candidate(s) not as expected; eval output in $log, run files in $scratch"
exit 1
