#!/usr/bin/env python3
"""Where a CUDA candidate's build time goes, on this machine, and what the alternatives cost.

For each CUDA example's EVOLVE source (compiled the way the evaluator compiles it, see
src/lang/recipe.cpp) it reports the best of --n runs of:
  nvcc          the evaluator's nvcc command as it is
  nvcc_phases   nvcc --time: the seconds of each internal step (one run)
  split         the same internal steps from `nvcc --dryrun`, the host side (preprocess,
                cudafe++) and the device side (preprocess, cicc, ptxas, fatbinary) run at the same
                time, with the module id written beforehand so neither waits for the other
  link_<ld>     the task binary's link with each linker found (bfd, gold, lld)
and, when --run is given, runs the split-built task binary's correctness phase to show it works.

  python3 bench/build_steps.py --prefix .dist --out results.json [--n 5] [--run]
"""
import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time

EXAMPLES = {"softmax_cuda": "softmax.cu", "matmul_cuda": "matmul.cu"}


def timed(cmd, env=None, cwd=None):
    t0 = time.monotonic()
    p = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, shell=isinstance(cmd, str))
    dt = time.monotonic() - t0
    if p.returncode != 0:
        raise SystemExit(f"failed ({p.returncode}): {cmd}\n{p.stderr[-2000:]}")
    return dt


def best(n, fn):
    return min(fn() for _ in range(n))


def nvcc_cmd(nvcc, src, out, arch, extra=()):
    return [nvcc, "-std=c++17", "-O3", "-lineinfo", f"-arch={arch}", *extra,
            "-I" + os.path.dirname(src), "-c", src, "-o", out]


def dryrun_steps(nvcc, src, out, arch, keep_dir):
    """nvcc's internal commands and environment for one compile, its temporaries in keep_dir."""
    p = subprocess.run(nvcc_cmd(nvcc, src, out, arch) + ["--dryrun", "--keep", "--keep-dir", keep_dir],
                       capture_output=True, text=True)
    env, steps = dict(os.environ), []
    for line in p.stderr.splitlines():
        if not line.startswith("#$ "):
            continue
        body = line[3:]
        m = re.match(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", body)
        if m and " " not in m.group(1):
            value = m.group(2).strip()
            env[m.group(1)] = subprocess.run(["bash", "-c", f"printf %s {value}"], env=env,
                                             capture_output=True, text=True).stdout
            continue
        steps.append(body)
    return env, steps


def split_build(steps, env, keep_dir):
    """Runs nvcc's steps with the host and device sides side by side; returns the seconds."""
    host = [s for s in steps if re.match(r"^gcc .* -E .*-D__CUDACC__", s) and "__CUDA_ARCH__=" not in s]
    cudafe = [s for s in steps if s.startswith("cudafe++")]
    device = [s for s in steps if (re.match(r"^gcc .* -E ", s) and "__CUDA_ARCH__=" in s)
              or "cicc" in s.split(" ")[0] or s.startswith("ptxas") or s.startswith("fatbinary")]
    final = [s for s in steps if re.match(r"^gcc .* -c ", s)]
    if len(host) != 1 or len(cudafe) != 1 or len(final) != 1:
        raise SystemExit("unexpected nvcc --dryrun steps:\n" + "\n".join(steps))
    m = re.search(r'--module_id_file_name "([^"]+)"', cudafe[0])
    module_file = m.group(1)
    # The module id names this translation unit in the host stub and the device image; any
    # string unique to the compile works when both sides read the same file.
    with open(module_file, "w") as f:
        f.write("_%016x_kf_split_module" % (time.time_ns() & 0xFFFFFFFFFFFFFFFF))
    cudafe_cmd = cudafe[0].replace("--gen_module_id_file ", "")
    errors = []

    def run_all(cmds):
        for c in cmds:
            p = subprocess.run(["bash", "-c", c], env=env, cwd=keep_dir, capture_output=True, text=True)
            if p.returncode != 0:
                errors.append(c + "\n" + p.stderr[-2000:])
                return

    t0 = time.monotonic()
    a = threading.Thread(target=run_all, args=(host + [cudafe_cmd],))
    b = threading.Thread(target=run_all, args=(device,))
    a.start(), b.start(), a.join(), b.join()
    run_all(final)
    dt = time.monotonic() - t0
    if errors:
        raise SystemExit("split build failed:\n" + errors[0])
    return dt


def phases(nvcc, src, out, arch, scratch):
    csv = os.path.join(scratch, "time.csv")
    if os.path.exists(csv):
        os.remove(csv)
    subprocess.run(nvcc_cmd(nvcc, src, out, arch) + ["--time", csv], check=True, capture_output=True)
    rows = {}
    for line in open(csv).read().splitlines()[1:]:
        cols = [c.strip() for c in line.split(",")]
        if len(cols) >= 8:
            rows[cols[1]] = rows.get(cols[1], 0.0) + float(cols[6]) / 1000.0
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--prefix", default=".dist", help="install tree (include/, lib/)")
    ap.add_argument("--examples", default="examples/tasks")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--n", type=int, default=5)
    ap.add_argument("--run", action="store_true", help="run the split-built binary's correctness")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    cuda_root = os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))
    cxx = shutil.which("g++")
    linkers = {"bfd": []}
    for name in ("gold", "lld"):
        if shutil.which("ld." + name):
            linkers[name] = ["-fuse-ld=" + name]
    report = {"format": "kernelfoundry-build-steps", "machine": os.uname().nodename,
              "cpus": os.cpu_count(), "nvcc": subprocess.run([nvcc, "--version"], capture_output=True,
                                                          text=True).stdout.strip().splitlines()[-1],
              "linkers": sorted(linkers), "n": args.n, "tasks": {}}
    for task, evolve in EXAMPLES.items():
        task_dir = os.path.abspath(os.path.join(args.examples, task))
        scratch = tempfile.mkdtemp(prefix="kf_build_steps_")
        for f in os.listdir(task_dir):
            shutil.copy(os.path.join(task_dir, f), scratch)
        src = os.path.join(scratch, evolve)
        ref = os.path.join(scratch, "reference.cu")
        obj = os.path.join(scratch, "evolve.o")
        inc = ["-I" + scratch, "-I" + os.path.join(os.path.abspath(args.prefix), "include")]
        r = {}
        r["nvcc"] = best(args.n, lambda: timed(nvcc_cmd(nvcc, src, obj, args.arch)))
        r["nvcc_host_O0"] = best(args.n, lambda: timed(nvcc_cmd(nvcc, src, obj, args.arch,
                                                                 ["-Xcompiler", "-O0"])))
        r["nvcc_phases"] = phases(nvcc, src, obj, args.arch, scratch)

        def one_split():
            keep = tempfile.mkdtemp(dir=scratch)
            env, steps = dryrun_steps(nvcc, src, obj, args.arch, keep)
            return split_build(steps, env, keep)
        r["split"] = best(args.n, one_split)
        # The task binary, linked as the evaluator links it.
        timed(nvcc_cmd(nvcc, ref, os.path.join(scratch, "ref.o"), args.arch))
        timed([cxx, "-std=c++17", "-O3", "-I" + os.path.join(cuda_root, "include"), *inc, "-c",
               os.path.join(scratch, "task.cpp"), "-o", os.path.join(scratch, "task.o")])
        objs = [os.path.join(scratch, o) for o in ("task.o", "evolve.o", "ref.o")]
        lib = os.path.join(os.path.abspath(args.prefix), "lib")
        for name, flag in linkers.items():
            cmd = [cxx, *flag, *objs, "-L" + lib, "-lkf_harness_cuda", "-L" + os.path.join(cuda_root, "lib64"),
                   "-lcudart_static", "-ldl", "-lrt", "-lpthread", "-Wl,-z,relro,-z,now", "-o",
                   os.path.join(scratch, "task_bin_" + name)]
            r["link_" + name] = best(args.n, lambda: timed(cmd))
        if args.run:
            out = os.path.join(scratch, "run.json")
            p = subprocess.run([os.path.join(scratch, "task_bin_bfd"), "--phase", "correctness",
                                "--out", out], capture_output=True, text=True, cwd=scratch)
            r["split_binary_run"] = {"exit": p.returncode, "tail": (p.stdout + p.stderr)[-600:]}
        report["tasks"][task] = r
        print(task, json.dumps(r, indent=1), flush=True)
    with open(args.out, "w") as f:
        json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
