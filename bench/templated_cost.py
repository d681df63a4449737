#!/usr/bin/env python3
"""Wall time to evaluate N combinations of a templated kernel against N separate candidates.

Issue 11's benchmark: the same N variants of reduction_cpp's row_sums (lanes x unroll of an
accumulator loop) evaluated two ways in `kernelfoundry eval` jobs on the CPU machine:
  templated  one candidate whose dispatcher lists all N combinations: one build, then each
             combination a child run of that build (checks; with more than 3 combinations a
             brief timing first, and the fastest 3 timed in full, side by side);
  separate   N plain candidates, one per variant: N builds and N child runs.
Each way runs in a fresh cache (no build reused across the two). Reports the job wall times, the
ratio, and that the two ways chose the same fastest variant (they should, within noise).

Usage, from the repository root (after scripts/setup.sh):
    python3 bench/templated_cost.py --n 8 --out bench/results/cpu/templated_cost_8.json
"""
import argparse
import itertools
import json
import os
import subprocess
import tempfile
import time

LANES = [1, 2, 4, 8, 16, 32, 64, 128]
UNROLL = [1, 2, 4, 8]


def variants(n):
    out = list(itertools.product(LANES, UNROLL))[:n]
    if len(out) < n:
        raise SystemExit(f"at most {len(LANES) * len(UNROLL)} variants")
    return out


BODY = """  for (long r = 0; r < rows; ++r) {
    const float* row = x + r * cols;
    float acc[kLanes] = {};
    long c = 0;
    for (; c + kLanes * kUnroll <= cols; c += kLanes * kUnroll)
#pragma GCC unroll 8
      for (int u = 0; u < kUnroll; ++u)
        for (int k = 0; k < kLanes; ++k) acc[k] += row[c + u * kLanes + k];
    float sum = 0.0f;
    for (; c < cols; ++c) sum += row[c];
    for (int k = 0; k < kLanes; ++k) sum += acc[k];
    y[r] = sum;
  }
"""


def templated_source(vs):
    lines = ["template <int kLanes, int kUnroll>",
             "void forward_templated(const float* x, float* y, long rows, long cols) {",
             BODY + "}", "",
             "void row_sums(const float* x, float* y, long rows, long cols, int lanes, int unroll) {"]
    for lanes, unroll in vs:
        lines.append(f"  if (lanes == {lanes} && unroll == {unroll}) "
                     f"return forward_templated<{lanes}, {unroll}>(x, y, rows, cols);")
    lines.append("}")
    return "\n".join(lines) + "\n"


def plain_source(lanes, unroll):
    return (f"constexpr int kLanes = {lanes}, kUnroll = {unroll};\n"
            "void row_sums(const float* x, float* y, long rows, long cols) {\n" + BODY + "}\n")


def run_job(cli, task, scratch, name, files, extra):
    cmd = [cli, "eval", f"task={task}", f"job_name={name}", f"paths.logdir={scratch}/runs",
           f"paths.kernels_db_path={scratch}/kernels.sqlite3", f"paths.cache_dir={scratch}/cache_{name}",
           "eval_config.profile_custom_model=false"] + extra + files
    start = time.time()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.time() - start
    if proc.returncode not in (0, 1):
        print(proc.stdout[-3000:], proc.stderr[-3000:])
        raise SystemExit(f"{name}: kernelfoundry eval failed ({proc.returncode})")
    results = json.load(open(os.path.join(scratch, "runs", name, "results.json")))
    return wall, results, proc.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", default="build/src/cli/kernelfoundry")
    ap.add_argument("--task", default="examples/tasks/reduction_cpp")
    ap.add_argument("--n", type=int, default=8)
    ap.add_argument("--extra", nargs="*", default=["eval_config.time_budget=0.5"],
                    help="key=value overrides for both ways")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    vs = variants(args.n)
    scratch = tempfile.mkdtemp(prefix="kf_templated_cost_")
    tpath = os.path.join(scratch, "templated.cpp")
    open(tpath, "w").write(templated_source(vs))
    plain = []
    for lanes, unroll in vs:
        p = os.path.join(scratch, f"lanes{lanes}_unroll{unroll}.cpp")
        open(p, "w").write(plain_source(lanes, unroll))
        plain.append(p)
    t_wall, t_res, _ = run_job(args.cli, args.task, scratch, "templated", [tpath], args.extra)
    s_wall, s_res, _ = run_job(args.cli, args.task, scratch, "separate", plain, args.extra)
    tk = t_res["kernels"][0]
    chosen = tk.get("template_params")
    fastest = max((k for k in s_res["kernels"] if k.get("speedup")), key=lambda k: k["speedup"])
    summary = {
        "format": "kernelfoundry-templated-cost",
        "task": args.task, "n": args.n, "extra": args.extra,
        "templated_wall_s": t_wall, "separate_wall_s": s_wall,
        "ratio_separate_over_templated": s_wall / t_wall,
        "templated_chosen": chosen, "templated_speedup": tk.get("speedup"),
        "separate_fastest": fastest.get("label"), "separate_fastest_speedup": fastest.get("speedup"),
        "templated_results": tk.get("template_results"),
    }
    with open(args.out, "w") as f:
        json.dump(summary, f, indent=1)
    print(f"N={args.n}: one build + {args.n} runs {t_wall:.1f} s; {args.n} builds + runs "
          f"{s_wall:.1f} s; ratio {s_wall / t_wall:.2f}x; templated chose {chosen} "
          f"({tk.get('speedup')}x), separate fastest {fastest.get('label')} "
          f"({fastest.get('speedup')}x)")


if __name__ == "__main__":
    main()
