#!/usr/bin/env python3
"""Timing fidelity: the harness's median kernel time against Nsight Compute's gpu__time_duration.

For each CUDA example, each benchmark shape, and both implementations (the EVOLVE block as
written and the reference), then hand-written candidates of other speeds (CANDIDATES), this runs the task binary twice on its own (cold samples, the
harness's default stopping rule) and once under ncu (48 fixed samples, cache control "all", clocks
left alone), then reports the harness medians, their spread, the ncu median, and the gap. Both
sides move the buffers to new places every 8 timed calls (KF_HARNESS_MOVE_BUFFERS=1, which the
harness's benchmark without a judge obeys), so each median is over several placements;
--no-moves keeps one placement (KF_HARNESS_MOVE_BUFFERS=0 in both).

Usage (on the GPU machine, from the repository root, after an install into PREFIX):
    python3 bench/ncu_fidelity.py --prefix .dist --out bench/results/ncu_fidelity_h200.json
"""
import argparse
import csv
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

EXAMPLES = {
    # task folder: (candidate kernel, reference kernel)
    "softmax_cuda": ("softmax_naive", "softmax_reference_kernel"),
    "matmul_cuda": ("matmul_tiled", "matmul_reference_kernel"),
}
# Hand-written candidates of other speeds (the GPU tests' honest kernels, not a model's output),
# each in place of the task's EVOLVE file: (task, EVOLVE file, candidate file, kernel). The fast
# softmax kernels take 12-16 us on the smallest benchmark shape (the shortest kernels here).
CANDIDATES = [
    ("softmax_cuda", "softmax.cu", "tests/gpu/candidates/softmax_cuda/honest_warp_vec4.cu",
     "softmax_warp_vec4"),
    ("softmax_cuda", "softmax.cu", "tests/gpu/candidates/softmax_cuda/warp_per_row.cu",
     "softmax_warp"),
    ("softmax_cuda", "softmax.cu", "tests/gpu/candidates/softmax_cuda/honest_block_smem.cu",
     "softmax_block"),
    ("matmul_cuda", "matmul.cu", "tests/gpu/candidates/matmul_cuda/honest_regblock.cu",
     "matmul_regblock"),
]


def build(prefix, task_dir, out_bin, sm):
    sources = sorted(os.path.join(task_dir, f) for f in os.listdir(task_dir) if f.endswith(".cu"))
    objs = []
    for src in sources + [os.path.join(task_dir, "task.cpp")]:
        obj = out_bin + "." + os.path.basename(src) + ".o"
        if src.endswith(".cu"):
            cmd = ["nvcc", "-std=c++17", "-O3", "-lineinfo", "-arch=" + sm]
        else:
            cmd = ["g++", "-std=c++17", "-O2", "-I" + cuda_include()]
        cmd += ["-I" + task_dir, "-I" + os.path.join(prefix, "include"), "-c", src, "-o", obj]
        subprocess.run(cmd, check=True)
        objs.append(obj)
    cuda_lib = os.path.join(os.path.dirname(cuda_include()), "lib64")
    subprocess.run(["g++"] + objs + ["-L" + os.path.join(prefix, "lib"), "-lkf_harness_cuda",
                    "-L" + cuda_lib, "-lcudart_static", "-ldl", "-lrt", "-lpthread", "-o", out_bin],
                   check=True)


def cuda_include():
    nvcc = subprocess.run(["which", "nvcc"], capture_output=True, text=True, check=True).stdout.strip()
    return os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(nvcc))), "include")


def shapes(binary):
    out = subprocess.run([binary, "--list"], capture_output=True, text=True, check=True).stdout
    listing = json.loads(out)
    return [s["id"] for s in listing["benchmark_shapes"]]


def run_env(serial=True, moves=True):
    env = dict(os.environ)
    # CUPTI's serialised kernel records (the harness's default) or the concurrent ones.
    env["KF_HARNESS_CUPTI_SERIAL"] = "1" if serial else "0"
    env["KF_HARNESS_MOVE_BUFFERS"] = "1" if moves else "0"
    return env


def harness_median(binary, shape, ref, workdir, warm=False, serial=True, moves=True):
    out = os.path.join(workdir, "h.json")
    cmd = [binary, "--phase", "benchmark", "--shape", shape, "--out", out]
    if ref:
        cmd.append("--ref")
    if warm:
        cmd.append("--warm")
    subprocess.run(cmd, check=True, capture_output=True, cwd=workdir, env=run_env(serial, moves))
    with open(out) as f:
        stats = json.load(f)["stats"][shape]
    return stats["median_ms"], stats["n"]


def ncu_median(ncu, binary, shape, ref, kernel, workdir, cache_control="all", samples=48,
               moves=True):
    cmd = [ncu, "--clock-control", "none", "--cache-control", cache_control, "--metrics",
           "gpu__time_duration.sum", "-k", "regex:^" + kernel + "$", "--csv", binary, "--phase",
           "benchmark", "--shape", shape, "--min-samples", str(samples), "--max-samples", str(samples),
           "--warmup-iters", "1", "--warmup-time", "0", "--time-budget", "600"]
    if ref:
        cmd.append("--ref")
    if cache_control == "none":
        cmd.append("--warm")
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=workdir, env=run_env(moves=moves))
    text = p.stdout
    start = text.find('"ID"')
    if start < 0:
        raise RuntimeError("ncu printed no CSV:\n" + p.stdout[-2000:] + p.stderr[-2000:])
    values = []
    for row in csv.DictReader(io.StringIO(text[start:])):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        v = float(row["Metric Value"].replace(",", ""))
        unit = row.get("Metric Unit", "ns")
        scale = {"ns": 1e-6, "nsecond": 1e-6, "us": 1e-3, "usecond": 1e-3, "ms": 1.0, "msecond": 1.0}
        values.append(v * scale.get(unit, 1e-6))
    # The first launches are the harness's warm-up and its expected-output run; keep the timed ones.
    return statistics.median(values[-samples:]), len(values)


def measure(args, task, binary, impl, kernel, ref, work, rows):
    warm = args.cache_control == "none"
    for shape in shapes(binary):
        if args.shape and args.shape not in shape:
            continue
        moves = not args.no_moves
        h1, n1 = harness_median(binary, shape, ref, work, warm, moves=moves)
        h2, n2 = harness_median(binary, shape, ref, work, warm, moves=moves)
        nm, nn = ncu_median(args.ncu, binary, shape, ref, kernel, work, args.cache_control,
                            args.ncu_samples, moves)
        row = {
            "task": task, "impl": impl, "kernel": kernel, "cache_control": args.cache_control,
            "moves": moves, "ncu_samples": args.ncu_samples,
            "shape": shape, "harness_median_ms": [h1, h2], "harness_n": [n1, n2],
            "repeat_spread_pct": abs(h1 - h2) / min(h1, h2) * 100,
            "ncu_median_ms": nm, "ncu_launches": nn,
            "gap_pct": (statistics.mean([h1, h2]) - nm) / nm * 100,
        }
        other = ""
        if args.concurrent_too:
            c1, _ = harness_median(binary, shape, ref, work, warm, serial=False, moves=moves)
            c2, _ = harness_median(binary, shape, ref, work, warm, serial=False, moves=moves)
            row["concurrent_harness_median_ms"] = [c1, c2]
            row["concurrent_gap_pct"] = (statistics.mean([c1, c2]) - nm) / nm * 100
            other = f"  concurrent {c1:9.4f} {c2:9.4f} ms gap {row['concurrent_gap_pct']:+.2f}%"
        rows.append(row)
        print(f"{task:13s} {impl:18s} {shape:24s} harness {h1:9.4f} {h2:9.4f} ms "
              f"(spread {row['repeat_spread_pct']:.2f}%)  ncu {nm:9.4f} ms  "
              f"gap {row['gap_pct']:+.2f}%{other}", flush=True)
        with open(args.out, "w") as f:  # after every row: a cut-off run keeps its rows
            json.dump({"format": "kernelfoundry-ncu-fidelity", "rows": rows}, f, indent=1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--prefix", default=".dist")
    ap.add_argument("--sm", default="sm_90")
    ap.add_argument("--ncu", default="ncu")
    ap.add_argument("--out", required=True)
    ap.add_argument("--examples-only", action="store_true",
                    help="only the examples' own kernels, not the hand-written candidates")
    ap.add_argument("--cache-control", choices=["all", "none"], default="all",
                    help="ncu's cache control; none also times the harness warm (--warm)")
    ap.add_argument("--only", default="", help="only tasks, kernels or candidate files naming this")
    ap.add_argument("--shape", default="", help="only the shapes whose id contains this")
    ap.add_argument("--concurrent-too", action="store_true",
                    help="also time with CUPTI's concurrent kernel records "
                         "(KF_HARNESS_CUPTI_SERIAL=0), against the same ncu run")
    ap.add_argument("--ncu-samples", type=int, default=48, help="timed calls under ncu")
    ap.add_argument("--no-moves", action="store_true",
                    help="keep one buffer placement per process (KF_HARNESS_MOVE_BUFFERS=0)")
    args = ap.parse_args()
    rows = []
    work = tempfile.mkdtemp(prefix="kf_ncu_")
    prefix = os.path.abspath(args.prefix)
    for task, kernels in EXAMPLES.items():
        if args.only and args.only not in task and args.only not in " ".join(kernels):
            continue
        binary = os.path.join(work, task)
        build(prefix, os.path.abspath(os.path.join("examples", "tasks", task)), binary, args.sm)
        measure(args, task, binary, "candidate", kernels[0], False, work, rows)
        measure(args, task, binary, "reference", kernels[1], True, work, rows)
    if args.examples_only:
        return
    for task, evolve, path, kernel in CANDIDATES:
        if args.only and args.only not in task and args.only not in path:
            continue
        task_dir = os.path.join(work, "task_" + kernel)
        shutil.copytree(os.path.join("examples", "tasks", task), task_dir)
        shutil.copy(path, os.path.join(task_dir, evolve))
        binary = os.path.join(work, kernel)
        build(prefix, task_dir, binary, args.sm)
        measure(args, task, binary, os.path.basename(path), kernel, False, work, rows)


if __name__ == "__main__":
    sys.exit(main())
