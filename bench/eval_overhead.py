#!/usr/bin/env python3
"""Per-candidate evaluation time, split into build / correctness / benchmark.

Evaluates N distinct variants of a task's EVOLVE block (its own text plus a unique comment, so
every candidate really rebuilds what it changed) with `kernelfoundry eval`, then reads the job's
results.json. The reference is built and timed once per job, before the candidates; it is not
in these figures. DESIGN.md §12's target covers build + correctness (the benchmark phase is
bounded by eval_config.time_budget per shape).

Usage, from the repository root:
    python3 bench/eval_overhead.py --task examples/tasks/softmax_ocl --n 5 \
        --out bench/results/eval_overhead_cpu_softmax_ocl.json
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time


def evolve_block(task_dir):
    for root, _, files in os.walk(task_dir):
        for name in sorted(files):
            path = os.path.join(root, name)
            try:
                text = open(path, encoding="utf-8").read()
            except (UnicodeDecodeError, OSError):
                continue
            m = re.search(r"\[EVOLVE_START\][^\n]*\n(.*?)\n[^\n]*\[EVOLVE_END\]", text, re.S)
            if m:
                return name, m.group(1)
    raise SystemExit(f"no EVOLVE block under {task_dir}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--task", required=True)
    ap.add_argument("--n", type=int, default=5)
    ap.add_argument("--cli", default="build/src/cli/kernelfoundry")
    ap.add_argument("--out", required=True)
    ap.add_argument("config", nargs="*", help="extra key=value config arguments")
    args = ap.parse_args()

    name, block = evolve_block(args.task)
    scratch = tempfile.mkdtemp(prefix="kf_bench_")
    files = []
    for i in range(args.n):
        path = os.path.join(scratch, f"variant_{i}{os.path.splitext(name)[1]}")
        with open(path, "w") as f:
            f.write(f"// bench variant {i} of {time.time_ns()}\n{block}\n")
        files.append(path)
    job = "bench_" + os.path.basename(os.path.normpath(args.task))
    cmd = [args.cli, "eval", "task=" + args.task, "job_name=" + job,
           "paths.logdir=" + os.path.join(scratch, "runs"),
           "paths.kernels_db_path=" + os.path.join(scratch, "kernels.sqlite3"),
           "paths.cache_dir=" + os.path.join(scratch, "cache")] + args.config + files
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.monotonic() - t0
    sys.stdout.write(p.stdout)
    if p.returncode != 0:
        sys.stderr.write(p.stderr)
        raise SystemExit(f"kernelfoundry eval failed with exit code {p.returncode}")
    results = json.load(open(os.path.join(scratch, "runs", job, "results.json")))
    ks = results["kernels"]
    split = {key: [k[key] for k in ks]
             for key in ("build_s", "test_s", "correctness_s", "benchmark_s", "screen_s",
                         "check_s") if all(key in k for k in ks)}
    # Static screening and the checker child (the split judge) belong to every candidate's
    # correctness cost; results.json has them since issue 8 (0 before).
    overhead = [k["build_s"] + k.get("screen_s", 0) + k["correctness_s"] + k.get("check_s", 0)
                for k in ks]
    # The parent's view: the build, screening, and the whole test and checker children (process
    # start, device and context set-up, correctness) except the benchmark phase's sampling.
    overhead_wall = [k["build_s"] + k.get("screen_s", 0) + k["test_s"] - k["benchmark_s"]
                     for k in ks]
    # Where the correctness and benchmark phases go, from each candidate's harness result file.
    steps, bench_steps, process_steps = {}, {}, {}
    for i in range(len(ks)):
        path = os.path.join(scratch, "runs", job, "kernels", f"{i:03d}", "result.json")
        try:
            phases = json.load(open(path)).get("phase_seconds", {})
        except OSError:
            continue
        for key, value in phases.items():
            if key.startswith("correctness."):
                steps.setdefault(key, []).append(value)
            elif key.startswith("benchmark."):
                bench_steps.setdefault(key, []).append(value)
            elif key.startswith(("device.", "host.", "process.")):
                # The whole process's device operations and host fills, all phases together.
                process_steps.setdefault(key, []).append(value)
        if "process.main" in phases:
            # The test child's start before main and its end after it, as the parent saw them
            # (test_s also holds the checker's time, check_s: left out here, shown on its own).
            process_steps.setdefault("process.outside_main", []).append(
                ks[i]["test_s"] - ks[i].get("check_s", 0) - phases["process.main"])
            process_steps.setdefault("process.check", []).append(ks[i].get("check_s", 0))
    summary = {
        "format": "kernelfoundry-eval-overhead",
        "task": args.task,
        "command": " ".join(cmd),
        "candidates": len(ks),
        "verdicts": [k.get("verdict") for k in ks],
        "median_s": {key: statistics.median(v) for key, v in split.items()},
        "median_build_plus_correctness_s": statistics.median(overhead),
        "median_overhead_wall_s": statistics.median(overhead_wall),
        "median_correctness_steps_s": {key: statistics.median(v) for key, v in steps.items()},
        "median_benchmark_steps_s": {key: statistics.median(v) for key, v in bench_steps.items()},
        "median_process_steps_s": {key: statistics.median(v) for key, v in process_steps.items()},
        "per_candidate": split,
        "job_wall_s": wall,
    }
    with open(args.out, "w") as f:
        json.dump(summary, f, indent=1)
    m = summary["median_s"]
    print(f"{args.task}: {len(ks)} candidates; median build {m['build_s']:.3f} s, correctness "
          f"{m['correctness_s']:.3f} s, benchmark {m['benchmark_s']:.3f} s; build+correctness "
          f"{summary['median_build_plus_correctness_s']:.3f} s; build + test child - benchmark "
          f"{summary['median_overhead_wall_s']:.3f} s; job wall {wall:.1f} s")
    for phase in ("correctness", "benchmark"):
        st = summary[f"median_{phase}_steps_s"]
        if st:
            print(f"  {phase} steps (median s): " +
                  ", ".join(f"{k.split('.', 1)[1]} {v:.3f}" for k, v in st.items()))
    if summary["median_process_steps_s"]:
        print("  whole process (median s): " +
              ", ".join(f"{k} {v:.3f}" for k, v in sorted(summary["median_process_steps_s"].items())))


if __name__ == "__main__":
    main()
