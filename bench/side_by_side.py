#!/usr/bin/env python3
"""Side by side: this KernelFoundry and the Python KernelFoundry 0.5.0 on the same CUDA softmax task.

Both tools evaluate the same candidate kernels (the EVOLVE block of examples/tasks/softmax_cuda and
hand-written kernels from bench/candidates and tests/gpu/candidates) without any LLM:
- ours: `.dist/bin/kernelfoundry eval` over the task (examples/tasks/softmax_cuda), one process per
  candidate (the first with empty caches: "cold"; then every candidate again with the caches kept:
  "warm"), and one job over all candidates ("in-job", per-candidate figures from results.json);
- theirs: `python -m kernelfoundry.algorithm run task=<folder> validate=true max_iters=0` (its
  documented "evaluate what is there, generate nothing" path) over bench/tasks/softmax_cuda_pykf with
  the candidate between the EVOLVE markers, one process per candidate sharing its database (the
  first with an empty one: "cold", the reference built and timed; later ones reuse its cached
  reference: "warm"), installed offline from bench/wheels (bench/fetch_python_kf.sh) into a venv
  that also sees the machine's PyTorch;
- Nsight Compute: `gpu__time_duration` (`--clock-control none`, `--cache-control all`) of every
  correct candidate and the reference, launched by the task's harness binary on its own (as
  bench/ncu_fidelity.py does), against each tool's own kernel time.
Order: ours (all candidates); the Python tool, which is slow (a PyTorch extension build per
candidate), on its first two candidates (cold, warm: up to --hard-limit-s); ncu (--ncu-budget-s);
then more of the Python tool's candidates while they fit in --budget-s.

Writes under --out: side_by_side.json (everything), side_by_side.txt (the tables) and
side_by_side_logs.tar.gz (every command's output).

Usage, on the GPU machine from the repository root (bench/make_dist.sh and bench/fetch_python_kf.sh
run on the CPU machine first; .dist and bench/wheels carried):
    python3 bench/side_by_side.py --out bench/results/h200
On the CPU machine, without a GPU: the plan, every file, the task folders and the offline install
of the wheels with the imports and the task parsing the Python tool does first:
    python3 bench/side_by_side.py --dry-run --out /tmp/sbs
"""

import argparse
import csv
import io
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TASK = "examples/tasks/softmax_cuda"
PY_TASK = "bench/tasks/softmax_cuda_pykf"
# "task:EVOLVE" is the task's own EVOLVE block (the naive kernel). The order is the Python tool's:
# it gets as many of these, from the first, as fit in the budget.
DEFAULT_CANDIDATES = [
    "task:EVOLVE",
    "tests/gpu/candidates/softmax_cuda/honest_warp_vec4.cu",
    "tests/gpu/candidates/softmax_cuda/wrong_sum.cu",
    "bench/candidates/softmax_cuda_reference_as_candidate.cu",
    "tests/gpu/candidates/softmax_cuda/warp_per_row.cu",
    "tests/gpu/candidates/softmax_cuda/honest_block_smem.cu",
    "tests/gpu/candidates/softmax_cuda/does_not_compile.cu",
]
# What the venv installs by name; their dependencies come from the machine's python where it has
# them in a fitting version, else from the wheels (every version pinned in the requirements file).
PY_INSTALL = [
    "kernelfoundry",
    "pytest-dependency",
    "hydra-core",
    "omegaconf",
    "python-dotenv",
    "sqlalchemy",
    "celery",
    "pydantic",
    "openai",
    "boto3",
    "clang",
]
PY_IMPORTS = [
    "kernelfoundry.algorithm.__main__",
    "kernelfoundry.algorithm.utils.validate_task",
    "kernelfoundry.eval_pipeline.tasks.build_custom_task_target",
    "kernelfoundry.conftest",
    "kernelfoundry.eval_pipeline.tasks.test_custom_task",
]
VERDICTS = {
    0: "no code",
    1: "compile error",
    2: "runtime error",
    3: "shape mismatch",
    4: "wrong values",
    5: "correct",
}
T0 = time.monotonic()
# A Python-tool run still going this long after --hard-limit-s is stopped.
KILL_GRACE_S = 45


def elapsed():
    return time.monotonic() - T0


def say(msg):
    print(f"[{elapsed():6.1f} s] {msg}", flush=True)


class Logs:
    """Every command's output, kept in the scratch dir and packed into one file at the end."""

    def __init__(self, root):
        self.dir = os.path.join(root, "logs")
        os.makedirs(self.dir, exist_ok=True)

    def path(self, name):
        return os.path.join(self.dir, re.sub(r"[^A-Za-z0-9_.-]", "_", name))

    def run(self, name, cmd, timeout=None, **kw):
        """Runs cmd, its output (stdout and stderr together) to the log `name`. Returns
        (exit code or None on timeout, wall seconds, output)."""
        start = time.monotonic()
        try:
            p = subprocess.run(
                cmd,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                errors="replace",
                timeout=timeout,
                **kw,
            )
            rc, out = p.returncode, p.stdout
        except subprocess.TimeoutExpired as e:
            rc = None
            out = (
                e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else e.stdout or ""
            )
            out += f"\n[side_by_side] killed after {timeout:.0f} s\n"
        wall = time.monotonic() - start
        with open(self.path(name), "w") as f:
            f.write("$ " + " ".join(cmd) + f"\n[exit {rc}, {wall:.2f} s]\n" + out)
        return rc, wall, out

    def pack(self, dest):
        with tarfile.open(dest, "w:gz") as tar:
            tar.add(self.dir, arcname="side_by_side_logs")


# ---------------------------------------------------------------------------------------------
# Candidates and the two task formats


def split_block(text, key, path):
    """(head up to and including the START marker line, block, tail from the END marker line)."""
    lines = text.splitlines(keepends=True)
    start = [i for i, l in enumerate(lines) if f"[{key}_START]" in l]
    end = [i for i, l in enumerate(lines) if f"[{key}_END]" in l]
    if len(start) != 1 or len(end) != 1 or end[0] < start[0]:
        raise SystemExit(f"{path}: expected one [{key}_START] ... [{key}_END] pair")
    s, e = start[0], end[0]
    return "".join(lines[: s + 1]), "".join(lines[s + 1 : e]), "".join(lines[e:])


def load_candidates(specs):
    out = []
    for spec in specs:
        if spec == "task:EVOLVE":
            path = os.path.join(ROOT, TASK, "softmax.cu")
            code = split_block(open(path).read(), "EVOLVE", path)[1]
            out.append(
                {
                    "name": "naive_evolve_block",
                    "source": f"{TASK}/softmax.cu EVOLVE block",
                    "code": code,
                }
            )
        else:
            path = spec if os.path.isabs(spec) else os.path.join(ROOT, spec)
            if not os.path.isfile(path):
                raise SystemExit(
                    f"--candidates: {spec} is not a file (paths are relative to {ROOT})"
                )
            out.append(
                {
                    "name": os.path.splitext(os.path.basename(path))[0],
                    "source": spec,
                    "code": open(path).read(),
                }
            )
    for c in out:
        c["kernels"] = sorted(
            set(re.findall(r"__global__\s+(?:[\w:<>,\s]+?\s+)?(\w+)\s*\(", c["code"]))
        )
    return out


def write_ours(cands, dest, tag):
    """One file per candidate, a unique first line so that no build is a cache hit of another run."""
    os.makedirs(dest, exist_ok=True)
    files = []
    for i, c in enumerate(cands):
        path = os.path.join(dest, f"{i:02d}_{c['name']}.cu")
        with open(path, "w") as f:
            f.write(f"// side_by_side {tag} {time.time_ns()}\n{c['code']}")
        files.append(path)
    return files


def write_py_task(template, cand, dest):
    """The Python tool's task folder with the candidate between its EVOLVE markers."""
    shutil.copytree(template, dest, ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    kpath = os.path.join(dest, "softmax_kernel.cu")
    head, _, tail = split_block(open(kpath).read(), "EVOLVE", kpath)
    code = cand["code"] if cand["code"].endswith("\n") else cand["code"] + "\n"
    with open(kpath, "w") as f:
        f.write(head + code + tail)
    return dest


# ---------------------------------------------------------------------------------------------
# The Python KernelFoundry: offline install and one evaluation


def host_site_dirs(python):
    code = (
        "import sys; print('\\n'.join(p for p in sys.path "
        "if p.endswith(('site-packages', 'dist-packages')) and __import__('os').path.isdir(p)))"
    )
    return subprocess.run(
        [python, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()


def install_python_kf(args, logs, venv):
    """A venv of the machine's python whose site-packages also reads that python's own (PyTorch,
    numpy, pytest, ...) through a .pth file, with the Python KernelFoundry installed into it from
    the wheels alone. Returns the venv's python and the install's seconds."""
    host = args.python
    rc, wall, out = logs.run("py_venv", [host, "-m", "venv", venv])
    if rc != 0:
        # No ensurepip (a distribution's python without its venv package): the venv then runs the
        # machine's own pip, which it reads through the .pth file below.
        shutil.rmtree(venv, ignore_errors=True)
        rc, wall, out = logs.run("py_venv_without_pip", [host, "-m", "venv", "--without-pip", venv])
    if rc != 0:
        raise SystemExit(
            f"cannot create a venv with {host}: see {logs.path('py_venv')}\n{out[-2000:]}"
        )
    vpy = os.path.join(venv, "bin", "python")
    purelib = subprocess.run(
        [vpy, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    with open(os.path.join(purelib, "_kf_sbs_host_site.pth"), "w") as f:
        f.write("\n".join(host_site_dirs(host)) + "\n")
    pins = {}
    for line in open(os.path.join(ROOT, args.requirements)):
        m = re.match(r"^([A-Za-z0-9_.-]+)==(\S+)", line.strip())
        if m:
            pins[m.group(1).lower().replace("_", "-")] = m.group(2)
    wheels = os.path.join(ROOT, args.wheels)
    have = {
        re.sub(r"[-_.]+", "-", w.split("-")[0].lower())
        for w in os.listdir(wheels)
        if w.endswith(".whl")
    }
    want = [n for n in PY_INSTALL if n in have]
    if "boto3" not in have:
        # fetch_python_kf.sh without FULL=1: kernelfoundry/algorithm/inference_server.py imports
        # boto3 and botocore at module load and uses neither (0.5.0).
        for module in ("boto3", "botocore"):
            with open(os.path.join(purelib, module + ".py"), "w") as f:
                f.write("# bench/side_by_side.py: an empty stand-in (bench/wheels has no boto3)\n")
    missing = [n for n in PY_INSTALL if n not in have and n != "boto3"]
    if missing:
        raise SystemExit(
            f"{args.wheels} lacks wheels for {', '.join(missing)}: run bench/fetch_python_kf.sh"
        )
    cmd = [
        vpy,
        "-m",
        "pip",
        "install",
        "--no-index",
        "--find-links",
        wheels,
        "--no-cache-dir",
        "--disable-pip-version-check",
    ] + [f"{n}=={pins[n]}" for n in want]
    rc, wall, out = logs.run("py_install", cmd)
    if rc != 0:
        raise SystemExit(
            f"offline install of the Python KernelFoundry failed ({logs.path('py_install')}):\n"
            f"{out[-3000:]}\nA package named in 'No matching distribution' is missing from "
            f"{args.wheels}: add it to {args.requirements} and run bench/fetch_python_kf.sh"
        )
    say(f"Python KernelFoundry installed in {wall:.1f} s ({venv})")
    return vpy, wall


def check_python_kf(vpy, logs, task_dir):
    """The imports of the evaluation path, and the task parsing its CLI does first (no GPU)."""
    code = (
        "import importlib, json, sys\n"
        f"for m in {PY_IMPORTS!r}: importlib.import_module(m)\n"
        "from kernelfoundry.eval_pipeline.task import Task\n"
        "task, _ = Task.create(sys.argv[1]); task.validate()\n"
        "print(json.dumps({'correctness_tests': task.correctness_tests,\n"
        "  'profile_tests': task.profile_tests,\n"
        "  'blocks': sorted(task.blocks), 'has_build_step': task.has_build_step,\n"
        "  'has_reference_build_step': task.has_reference_build_step, 'config': task.config}))\n"
    )
    rc, wall, out = logs.run("py_check", [vpy, "-c", code, task_dir])
    if rc != 0:
        raise SystemExit(
            f"the Python KernelFoundry does not import or parse the task:\n{out[-3000:]}"
        )
    return json.loads(out.strip().splitlines()[-1])


def shape_of_benchmark(name):
    m = re.search(r"\[(\d+)-(\d+)\]", name)
    return f"rows={m.group(1)},cols={m.group(2)}" if m else name


def run_python_kf(args, logs, vpy, task_dir, work, job, timeout, env):
    cmd = [
        vpy,
        "-m",
        "kernelfoundry.algorithm",
        "run",
        f"task={task_dir}",
        "task_origin=custom",
        f"job_name={job}",
        "validate=true",
        "max_iters=0",
        "save_exec_result=true",
        f"profiler_kernel={'null' if args.py_profiler == 'none' else args.py_profiler}",
    ]
    rc, wall, out = logs.run(f"py_{job}", cmd, timeout=timeout, cwd=work, env=env)
    row = {"command": " ".join(cmd), "exit": rc, "wall_s": wall}
    row.update(
        parse_python_kf(out, os.path.join(work, "results", job, "softmax_cuda", "validate.json"))
    )
    return row


def parse_python_kf(out, path):
    """Its phase times (from its log lines) and its result (validate.json, save_exec_result)."""
    row = {}
    # Its own phase log lines (kernelfoundry/eval_pipeline/tasks/*.py).
    phases, key = {}, "custom"
    for line in out.splitlines():
        m = re.search(r"Build '(\w+)' took ([\d.]+) seconds", line)
        if m:
            phases[f"build_{m.group(1)}_s"] = float(m.group(2))
        m = re.search(r"Start testing of (\S+)", line)
        if m:
            key = m.group(1)
        m = re.search(r"(Correctness|Performance) tests took ([\d.]+) seconds", line)
        if m:
            phases[f"{m.group(1).lower()}_{key}_s"] = float(m.group(2))
    row["phases_s"] = phases
    row["reference_cached"] = "Reusing cached reference result" in out
    if not os.path.exists(path):
        row["error"] = (out.strip().splitlines() or ["no output"])[-1][-500:]
        return row
    r = json.load(open(path))
    row.update(
        {
            "verdict": r.get("perf_score"),
            "compiled": r.get("compiled"),
            "correct": r.get("correctness"),
        }
    )
    if r.get("runtime_improvement", -1) > 0:
        row["speedup"] = r["runtime_improvement"]
    # {gpu_arch: {benchmark test id: {mean, median, ..., speedup, ref_speed}}} (ms, 3 digits)
    stats = {}
    for arch_or_name, v in (r.get("runtime_stats") or {}).items():
        nested = v if isinstance(v, dict) and "mean" not in v else {arch_or_name: v}
        for name, st in nested.items():
            if isinstance(st, dict) and "mean" in st:
                stats[shape_of_benchmark(name)] = {
                    k: st.get(k) for k in ("mean", "median", "min", "std", "speedup", "ref_speed")
                }
    row["runtime_stats"] = stats
    row["runtimes_ms"] = {shape: st["mean"] for shape, st in stats.items()}
    row["reference_ms"] = {
        shape: st["ref_speed"] for shape, st in stats.items() if st.get("ref_speed")
    }
    return row


# ---------------------------------------------------------------------------------------------
# Ours


def run_ours(args, logs, files, state, job, env, timeout):
    cmd = [
        args.cli,
        "eval",
        f"task={os.path.join(ROOT, args.task)}",
        f"job_name={job}",
        f"paths.logdir={state}/runs",
        f"paths.kernels_db_path={state}/kernels.sqlite3",
        f"paths.cache_dir={state}/cache",
    ] + files
    rc, wall, out = logs.run(f"ours_{job}", cmd, timeout=timeout, env=env)
    res = {"command": " ".join(cmd), "exit": rc, "wall_s": wall}
    try:
        results = json.load(open(os.path.join(state, "runs", job, "results.json")))
    except (OSError, ValueError):
        res["error"] = (out.strip().splitlines() or ["no output"])[-1][-500:]
        return res, []
    res["reference_ms"] = {
        s: t.get("median_ms") for s, t in (results.get("reference") or {}).items()
    }
    res["reference_timing"] = results.get("reference_timing")
    rows = []
    for k in results.get("kernels", []):
        row = {
            "verdict": k.get("verdict"),
            "speedup": k.get("speedup"),
            "interval": k.get("speedup_interval"),
            "reason": k.get("reason"),
            "runtimes_ms": {s: t.get("median_ms") for s, t in (k.get("runtimes") or {}).items()},
        }
        for key in (
            "build_s",
            "screen_s",
            "test_s",
            "check_s",
            "sanitize_s",
            "correctness_s",
            "benchmark_s",
        ):
            row[key] = k.get(key)
        row["candidate_s"] = sum(
            k.get(key) or 0 for key in ("build_s", "screen_s", "test_s", "check_s", "sanitize_s")
        )
        rows.append(row)
    return res, rows


# ---------------------------------------------------------------------------------------------
# Nsight Compute on the task's harness binary (bench/ncu_fidelity.py's way)


def cuda_include():
    nvcc = shutil.which("nvcc")
    return os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(nvcc))), "include")


class HarnessBuilder:
    """The task binary with a candidate in softmax.cu: task.cpp and reference.cu compiled once."""

    def __init__(self, args, logs, work):
        self.args, self.logs, self.work = args, logs, work
        os.makedirs(work, exist_ok=True)
        self.task_dir = os.path.join(ROOT, args.task)
        self.prefix = os.path.abspath(args.prefix)
        path = os.path.join(self.task_dir, "softmax.cu")
        self.head, self.evolve_block, self.tail = split_block(open(path).read(), "EVOLVE", path)
        self.objs = [
            self.compile(os.path.join(self.task_dir, "task.cpp"), "task.o"),
            self.compile(os.path.join(self.task_dir, "reference.cu"), "reference.o"),
        ]

    def compile(self, src, obj_name):
        obj = os.path.join(self.work, obj_name)
        if src.endswith(".cu"):
            cmd = ["nvcc", "-std=c++17", "-O3", "-lineinfo", "-arch=" + self.args.sm]
        else:
            cmd = ["g++", "-std=c++17", "-O2", "-I" + cuda_include()]
        cmd += [
            "-I" + self.task_dir,
            "-I" + os.path.join(self.prefix, "include"),
            "-c",
            src,
            "-o",
            obj,
        ]
        rc, _, out = self.logs.run(f"ncu_build_{obj_name}", cmd, timeout=300)
        if rc != 0:
            raise RuntimeError(f"building {obj_name} failed: {out[-1500:]}")
        return obj

    def binary(self, name, code):
        src = os.path.join(self.work, f"{name}_softmax.cu")
        with open(src, "w") as f:
            f.write(self.head + code + ("" if code.endswith("\n") else "\n") + self.tail)
        obj = self.compile(src, f"{name}_softmax.o")
        out = os.path.join(self.work, name)
        cmd = (
            ["g++", obj]
            + self.objs
            + [
                "-L" + os.path.join(self.prefix, "lib"),
                "-lkf_harness_cuda",
                "-L" + os.path.join(os.path.dirname(cuda_include()), "lib64"),
                "-lcudart_static",
                "-ldl",
                "-lrt",
                "-lpthread",
                "-o",
                out,
            ]
        )
        rc, _, log = self.logs.run(f"ncu_link_{name}", cmd, timeout=120)
        if rc != 0:
            raise RuntimeError(f"linking {name} failed: {log[-1500:]}")
        return out


def benchmark_shapes(binary):
    listing = subprocess.run([binary, "--list"], capture_output=True, text=True, check=True).stdout
    return [s["id"] for s in json.loads(listing)["benchmark_shapes"]]


def ncu_times(args, logs, binary, shape, ref, kernels, name):
    """Median gpu__time_duration per call in ms: the last --ncu-samples calls, the launches of a
    call summed when it launches several of the named kernels."""
    n = args.ncu_samples
    regex = "regex:^(" + "|".join(kernels) + ")$"
    cmd = [
        args.ncu,
        "--clock-control",
        "none",
        "--cache-control",
        "all",
        "--metrics",
        "gpu__time_duration.sum",
        "-k",
        regex,
        "--csv",
        binary,
        "--phase",
        "benchmark",
        "--shape",
        shape,
        "--min-samples",
        str(n),
        "--max-samples",
        str(n),
        "--warmup-iters",
        "1",
        "--warmup-time",
        "0",
        "--time-budget",
        "600",
    ]
    if ref:
        cmd.append("--ref")
    rc, wall, out = logs.run(f"ncu_{name}_{shape}", cmd, timeout=180, cwd=os.path.dirname(binary))
    return parse_ncu_csv(out, n), wall


def parse_ncu_csv(out, n):
    start = out.find('"ID"')
    if start < 0:
        return None
    values, names = [], []
    scale = {"ns": 1e-6, "nsecond": 1e-6, "us": 1e-3, "usecond": 1e-3, "ms": 1.0, "msecond": 1.0}
    for row in csv.DictReader(io.StringIO(out[start:])):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        values.append(
            float(row["Metric Value"].replace(",", ""))
            * scale.get(row.get("Metric Unit", "ns"), 1e-6)
        )
        names.append(row.get("Kernel Name"))
    per_call = max(1, len(set(names)))
    values = values[-n * per_call :]
    calls = [sum(values[i : i + per_call]) for i in range(0, len(values) - per_call + 1, per_call)]
    return statistics.median(calls) if calls else None


# ---------------------------------------------------------------------------------------------
# Report


def gap(x, ref):
    return (x - ref) / ref * 100 if x and ref else None


def geomean(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def fmt(x, spec=".3f", none="-"):
    return none if x is None else format(x, spec)


def report(summary):
    lines = [
        f"Side by side, {summary['date']} on {summary['machine'].get('gpu', '?')}: this KernelFoundry "
        f"({summary['ours_cli']}) and the Python KernelFoundry 0.5.0 (python "
        f"{summary['machine'].get('python', '?')}, torch {summary['machine'].get('torch', '?')}, "
        f"profiler_kernel={summary['py_profiler']}) on {TASK}; total {summary['wall_s']:.0f} s",
        "",
    ]
    lines.append(
        "Wall time per candidate (s). ours: `kernelfoundry eval` of that candidate alone "
        "(cold = first, empty caches), and its share of one job over all (in-job: build + "
        "screen + test + check + sanitizer); theirs: `python -m kernelfoundry.algorithm run "
        "validate=true max_iters=0` (cold = first, empty database; build = its extension "
        "build)."
    )
    hdr = [
        "candidate",
        "ours cold",
        "ours warm",
        "ours in-job",
        "theirs cold",
        "theirs warm",
        "theirs build",
        "theirs / ours",
    ]
    rows = []
    for c in summary["candidates"]:
        o, p = c.get("ours", {}), c.get("theirs") or {}
        pw, cold = p.get("wall_s"), p.get("cold")
        # cold against cold, warm against warm (one process per candidate on both sides)
        mine = o.get("cold_wall_s") if cold else o.get("warm_wall_s")
        ratio = pw / mine if pw and mine else None
        rows.append(
            [
                c["name"],
                fmt(o.get("cold_wall_s"), ".2f"),
                fmt(o.get("warm_wall_s"), ".2f"),
                fmt(o.get("in_job_s"), ".2f"),
                fmt(pw if cold else None, ".1f"),
                fmt(None if cold else pw, ".1f"),
                fmt((p.get("phases_s") or {}).get("build_custom_s") if p else None, ".1f"),
                fmt(ratio, ".1f") + ("x" if ratio else ""),
            ]
        )
    lines += table(hdr, rows)
    lines += ratio_lines(summary)
    lines.append("")
    lines.append(
        "Verdicts (0-5, 5 correct) and speedups over the reference (geometric mean over the "
        "three benchmark shapes); ncu: the same ratio of Nsight Compute's medians."
    )
    hdr = [
        "candidate",
        "ours verdict",
        "theirs verdict",
        "ours speedup [95% interval]",
        "in-job",
        "theirs speedup",
        "ncu speedup",
    ]
    rows = []
    for c in summary["candidates"]:
        o, p = c.get("ours", {}), c.get("theirs") or {}
        iv = o.get("interval")
        sp = fmt(o.get("speedup"))
        if iv and o.get("speedup"):
            sp += f" [{fmt(iv.get('lo'))}-{fmt(iv.get('hi'))}]"
        pv = "not run" if not p else "failed" if p.get("verdict") is None else str(p["verdict"])
        rows.append(
            [
                c["name"],
                fmt(o.get("verdict"), "d"),
                pv,
                sp,
                fmt(o.get("in_job_speedup")),
                fmt(p.get("speedup")),
                fmt(c.get("ncu_speedup")),
            ]
        )
    lines += table(hdr, rows)
    lines.append("")
    lines.append(
        "Kernel time per call (ms) against ncu gpu__time_duration (median of "
        f"{summary['ncu_samples']} calls, --cache-control all, --clock-control none): ours = "
        "the harness's median (cold L2), theirs = measure_runtime_torch's mean (host wall "
        "time per call in a loop, inputs replicated up to 128 MB)."
    )
    hdr = ["kernel", "shape", "ncu", "ours", "ours gap", "theirs", "theirs gap"]
    rows = []
    for item in [{"name": "reference", **summary.get("reference", {})}] + summary["candidates"]:
        for shape, n in (item.get("ncu_ms") or {}).items():
            o = (item.get("ours") or {}).get("runtimes_ms", {}).get(shape)
            t = (item.get("theirs") or {}).get("runtimes_ms", {}).get(shape)
            rows.append(
                [
                    item["name"],
                    shape,
                    fmt(n, ".4f"),
                    fmt(o, ".4f"),
                    fmt(gap(o, n), "+.1f") + ("%" if gap(o, n) is not None else ""),
                    fmt(t, ".4f"),
                    fmt(gap(t, n), "+.1f") + ("%" if gap(t, n) is not None else ""),
                ]
            )
    lines += table(hdr, rows)
    if summary.get("notes"):
        lines += [""] + [f"note: {n}" for n in summary["notes"]]
    return "\n".join(lines) + "\n"


def evaluation_overhead(ours, theirs):
    """Per candidate, the seconds spent outside the benchmark's own sampling: ours from the in-job
    row as the parent sees it (build, screen, the whole test child less its benchmark phase, as
    eval_overhead.py's "parent's view"), theirs its wall time less its performance tests."""
    row = ours.get("in_job") or {}
    build, screen, test, bench = (row.get(k) for k in ("build_s", "screen_s", "test_s", "benchmark_s"))
    mine = build + (screen or 0) + test - bench if None not in (build, test, bench) else None
    perf = [v for k, v in (theirs.get("phases_s") or {}).items() if k.startswith("performance_")]
    rest = theirs["wall_s"] - sum(perf) if theirs.get("wall_s") and perf else None
    return mine, rest


def ratio_lines(summary):
    """Theirs over ours per candidate: cold against cold, warm against warm and against in-job."""
    cold, warm, job, overhead = [], [], [], []
    for c in summary["candidates"]:
        o, p = c.get("ours", {}), c.get("theirs") or {}
        if not p.get("wall_s"):
            continue
        if p.get("cold"):
            if o.get("cold_wall_s"):
                cold.append(p["wall_s"] / o["cold_wall_s"])
            continue
        if o.get("warm_wall_s"):
            warm.append(p["wall_s"] / o["warm_wall_s"])
        if o.get("in_job_s"):
            job.append(p["wall_s"] / o["in_job_s"])
        mine, theirs = evaluation_overhead(o, p)
        if mine and theirs:
            overhead.append(theirs / mine)
    out = []
    for label, xs in (
        ("cold", cold),
        ("warm, one process each", warm),
        ("warm, against ours in-job", job),
        (
            "evaluation overhead (DESIGN.md section 12: theirs warm less its performance tests, "
            "ours in-job build + screen + test child less its benchmark phase)",
            overhead,
        ),
    ):
        if xs:
            out.append(
                f"theirs / ours, {label}: median {statistics.median(xs):.1f}x "
                f"({min(xs):.1f}x-{max(xs):.1f}x, {len(xs)} candidate(s))"
            )
    return out


def table(hdr, rows):
    widths = (
        [max(len(str(x)) for x in col) for col in zip(hdr, *rows)]
        if rows
        else [len(h) for h in hdr]
    )
    out = [
        "| " + " | ".join(h.ljust(w) for h, w in zip(hdr, widths)) + " |",
        "|" + "|".join("-" * (w + 2) for w in widths) + "|",
    ]
    out += ["| " + " | ".join(str(x).ljust(w) for x, w in zip(r, widths)) + " |" for r in rows]
    return out


def machine_info(python):
    info = {
        "python": subprocess.run(
            [python, "-c", "import sys; print(sys.version.split()[0])"],
            capture_output=True,
            text=True,
        ).stdout.strip()
    }
    p = subprocess.run(
        [python, "-c", "import torch; print(torch.__version__, torch.version.cuda)"],
        capture_output=True,
        text=True,
    )
    info["torch"] = p.stdout.strip() if p.returncode == 0 else "not importable"
    for key, cmd in (
        ("gpu", ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"]),
        ("nvcc", ["nvcc", "--version"]),
        ("ncu", ["ncu", "--version"]),
    ):
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
            info[key] = (p.stdout.strip().splitlines() or ["?"])[-1]
        except (OSError, subprocess.TimeoutExpired):
            info[key] = "not found"
    return info


# ---------------------------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="folder for side_by_side.{json,txt} and the logs")
    ap.add_argument("--cli", default=".dist/bin/kernelfoundry", help="our binary (install tree)")
    ap.add_argument("--prefix", default=".dist", help="our install tree (lib/, include/)")
    ap.add_argument("--task", default=TASK)
    ap.add_argument("--py-task", default=PY_TASK, help="the same task in the Python tool's format")
    ap.add_argument("--wheels", default="bench/wheels")
    ap.add_argument("--requirements", default="bench/python_kf_requirements.txt")
    ap.add_argument("--python", default=sys.executable, help="the machine's python with PyTorch")
    ap.add_argument(
        "--candidates",
        default=",".join(DEFAULT_CANDIDATES),
        help="comma-separated files (or task:EVOLVE), in the Python tool's order",
    )
    ap.add_argument(
        "--py-max", type=int, default=None, help="at most this many Python-tool candidates"
    )
    ap.add_argument(
        "--budget-s",
        type=float,
        default=450,
        help="the Python tool's third and later candidates run only when they should end before it",
    )
    ap.add_argument(
        "--hard-limit-s",
        type=float,
        default=510,
        help="the Python tool's first warm candidate should end before it; a run is stopped 45 s past it",
    )
    ap.add_argument(
        "--ncu-budget-s", type=float, default=75, help="seconds for the ncu part at most"
    )
    ap.add_argument(
        "--ncu-deadline-s",
        type=float,
        default=575,
        help="no ncu run starts past this (the GPU machine stops a command at 600 s)",
    )
    ap.add_argument("--ncu", default="ncu")
    ap.add_argument("--ncu-samples", type=int, default=10)
    ap.add_argument("--no-ncu", action="store_true")
    ap.add_argument(
        "--no-in-job", action="store_true", help="skip our one-job run over all candidates"
    )
    ap.add_argument("--sm", default="sm_90")
    ap.add_argument(
        "--py-profiler",
        default="none",
        help="the Python tool's profiler_kernel: none (like ours), or default (ncu)",
    )
    ap.add_argument(
        "--dry-run",
        action="store_true",
        help="no GPU: print the plan, check the files, build the task folders, install "
        "the wheels offline into a scratch venv and import/parse (unless --no-install)",
    )
    ap.add_argument("--no-install", action="store_true")
    ap.add_argument("--scratch", default=None, help="work folder (default: a new temp dir, kept)")
    args = ap.parse_args()
    os.chdir(ROOT)
    args.cli = os.path.abspath(args.cli)
    # Our install tree's libraries (gpu_session.sh puts them on LD_LIBRARY_PATH: OpenSSL, SQLite,
    # ICU, ... of the CPU machine) are for our binary alone, not for python, pip, torch or ncu.
    prefix_lib = os.path.abspath(os.path.join(args.prefix, "lib"))
    os.environ["LD_LIBRARY_PATH"] = os.pathsep.join(
        p
        for p in os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep)
        if p and not os.path.abspath(p).startswith(os.path.abspath(args.prefix))
    )
    os.makedirs(args.out, exist_ok=True)
    scratch = args.scratch or tempfile.mkdtemp(prefix="kf_sbs_")
    os.makedirs(scratch, exist_ok=True)
    logs = Logs(scratch)

    cands = load_candidates([s for s in args.candidates.split(",") if s])
    machine = machine_info(args.python)
    say(
        f"python {machine['python']} ({args.python}), torch {machine['torch']}; gpu {machine['gpu']}; "
        f"nvcc: {machine['nvcc']}; ncu: {machine['ncu']}; scratch {scratch}"
    )

    # Every file the run needs, before anything starts.
    need = [
        args.cli,
        os.path.join(args.prefix, "lib", "libkf_harness_cuda.a"),
        os.path.join(args.prefix, "include"),
        os.path.join(args.task, "softmax.cu"),
        os.path.join(args.task, "reference.cu"),
        os.path.join(args.task, "task.cpp"),
        args.requirements,
    ] + [
        os.path.join(args.py_task, f)
        for f in (
            "config.yaml",
            "conftest.py",
            "task.py",
            "softmax.h",
            "softmax_kernel.cu",
            "softmax_reference.cu",
        )
    ]
    missing = [p for p in need if not os.path.exists(p)]
    wheels = sorted(os.listdir(args.wheels)) if os.path.isdir(args.wheels) else []
    if not any(w.startswith("kernelfoundry-0.5.0-") for w in wheels):
        missing.append(f"{args.wheels}/kernelfoundry-0.5.0-*.whl (bash bench/fetch_python_kf.sh)")
    print("Plan:")
    print(f"  candidates ({len(cands)}), in the Python tool's order:")
    for i, c in enumerate(cands):
        print(
            f"    {i}. {c['name']:36s} kernels {', '.join(c['kernels']) or '- (ncu skips it)'}  "
            f"({c['source']})"
        )
    print(
        f"  ours: {args.cli} eval task={args.task}: candidate 0 cold, then each warm, then one job "
        f"over all{' (skipped)' if args.no_in_job else ''}"
    )
    print(
        f"  theirs: python -m kernelfoundry.algorithm run task=<{args.py_task} + candidate> "
        f"validate=true max_iters=0 profiler_kernel={args.py_profiler}, in order: the first two "
        f"up to {args.hard_limit_s:.0f} s, more while they fit in {args.budget_s:.0f} s"
        + (f", at most {args.py_max}" if args.py_max else "")
    )
    print(
        "  ncu: "
        + (
            "skipped"
            if args.no_ncu
            else f"{args.ncu_samples} calls a shape, reference and correct ones"
        )
    )
    print(
        f"  wheels: {len(wheels)} in {args.wheels} "
        f"({sum(os.path.getsize(os.path.join(args.wheels, w)) for w in wheels) / 2**20:.1f} MiB)"
    )
    if missing:
        for m in missing:
            print(f"  MISSING: {m}")
        raise SystemExit(f"{len(missing)} file(s) missing: see above")

    py_tasks = []
    for i, c in enumerate(cands):
        py_tasks.append(
            write_py_task(
                args.py_task, c, os.path.join(scratch, "py", "tasks", f"{i:02d}_{c['name']}")
            )
        )
    ours_cold_files = write_ours(cands[:1], os.path.join(scratch, "ours", "cold"), "cold")
    ours_warm_files = write_ours(cands, os.path.join(scratch, "ours", "warm"), "warm")
    ours_job_files = write_ours(cands, os.path.join(scratch, "ours", "job"), "job")

    if args.dry_run:
        print(
            f"  task folders: {os.path.join(scratch, 'py', 'tasks')}; our candidate files: "
            f"{os.path.join(scratch, 'ours')}"
        )
        if not args.no_install:
            vpy, _ = install_python_kf(args, logs, os.path.join(scratch, "py", "venv"))
            parsed = check_python_kf(vpy, logs, py_tasks[0])
            say(
                f"Python tool parses the task: {len(parsed['correctness_tests'])} correctness test "
                f"function(s), benchmark {parsed['profile_tests']}, blocks {parsed['blocks']}, "
                f"build steps {parsed['has_build_step']}/{parsed['has_reference_build_step']}"
            )
        logs.pack(os.path.join(args.out, "side_by_side_dry_run_logs.tar.gz"))
        say(f"dry run done; logs in {os.path.join(args.out, 'side_by_side_dry_run_logs.tar.gz')}")
        return 0

    env = dict(os.environ)
    host_bin = os.path.dirname(os.path.abspath(args.python))
    # nvcc for both tools and ncu; the host python's bin (ninja for torch's extension build).
    env["PATH"] = os.pathsep.join(
        p for p in ["/usr/local/cuda/bin", env.get("PATH", ""), host_bin] if p
    )
    our_env = dict(env)
    our_env["LD_LIBRARY_PATH"] = os.pathsep.join(
        p for p in [prefix_lib, env.get("LD_LIBRARY_PATH", "")] if p
    )
    notes = []
    summary = {
        "format": "kernelfoundry-side-by-side",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": machine,
        "ours_cli": args.cli,
        "task": args.task,
        "py_task": args.py_task,
        "py_profiler": args.py_profiler,
        "ncu_samples": args.ncu_samples,
        "budget_s": args.budget_s,
        "candidates": [
            {
                "name": c["name"],
                "source": c["source"],
                "kernels": c["kernels"],
                "ours": {},
                "theirs": None,
            }
            for c in cands
        ],
        "notes": notes,
    }

    # Ours: candidate 0 with empty caches, then each candidate in its own process with the caches
    # kept, then one job over all.
    state = os.path.join(scratch, "ours", "state")
    res, rows = run_ours(args, logs, ours_cold_files, state, "sbs_cold", our_env, 180)
    summary["ours_cold_job"] = res
    if rows:
        summary["candidates"][0]["ours"]["cold_wall_s"] = res["wall_s"]
    say(f"ours cold: {res['wall_s']:.2f} s ({rows[0]['verdict'] if rows else res.get('error')})")
    for i, f in enumerate(ours_warm_files):
        res, rows = run_ours(args, logs, [f], state, f"sbs_warm_{i:02d}", our_env, 120)
        o = summary["candidates"][i]["ours"]
        o["warm_wall_s"] = res["wall_s"]
        o["warm_job"] = res
        if rows:
            o.update(
                {k: rows[0][k] for k in ("verdict", "speedup", "interval", "reason", "runtimes_ms")}
            )
            o["reference_ms"] = res.get("reference_ms")
        say(
            f"ours warm {cands[i]['name']}: {res['wall_s']:.2f} s, verdict {o.get('verdict')}, "
            f"speedup {fmt(o.get('speedup'))}"
        )
    if not args.no_in_job:
        res, rows = run_ours(args, logs, ours_job_files, state, "sbs_job", our_env, 300)
        summary["ours_in_job"] = res
        for i, r in enumerate(rows):
            o = summary["candidates"][i]["ours"]
            o["in_job_s"] = r["candidate_s"]
            o["in_job"] = r
            o["in_job_speedup"] = r["speedup"]
        say(f"ours in one job: {res['wall_s']:.2f} s for {len(rows)} candidates")
    summary["reference"] = {
        "ours": {"runtimes_ms": (summary["candidates"][0]["ours"].get("reference_ms") or {})}
    }

    # Theirs: the first candidate (cold) always, the second (the first warm one) when it should end
    # before --hard-limit-s; then ncu; then more of theirs while they fit in --budget-s. A run
    # still going KILL_GRACE_S past the hard limit is stopped (the GPU machine allows 10 minutes).
    vpy, summary["py_install_s"] = install_python_kf(
        args, logs, os.path.join(scratch, "py", "venv")
    )
    check_python_kf(vpy, logs, py_tasks[0])
    py_env = dict(env)
    py_env["PATH"] = os.pathsep.join([os.path.dirname(vpy), env["PATH"]])
    py_env["PYTHONUNBUFFERED"] = "1"
    py_env["TORCH_EXTENSIONS_DIR"] = os.path.join(scratch, "py", "torch_extensions")
    work = os.path.join(scratch, "py", "work")
    os.makedirs(work, exist_ok=True)
    walls = []  # theirs, in order: the cold run first

    def run_theirs(indices, limit):
        for i in indices:
            if i >= len(cands) or (args.py_max is not None and i >= args.py_max):
                return False
            if i > 0:
                # A warm run skips the reference's build and timing: about half the cold one.
                estimate = max(walls[1:]) if len(walls) > 1 else 0.5 * walls[0]
                if elapsed() + estimate > limit:
                    notes.append(
                        f"the Python tool ran {i} of {len(cands)} candidates: the next (about "
                        f"{estimate:.0f} s) would end past {limit:.0f} s"
                    )
                    return False
            timeout = args.hard_limit_s + KILL_GRACE_S - elapsed()
            if timeout < 30:
                notes.append(f"the Python tool ran {i} of {len(cands)} candidates: no time left")
                return False
            c = cands[i]
            row = run_python_kf(args, logs, vpy, py_tasks[i], work, f"sbs_{i:02d}", timeout, py_env)
            row["cold"] = i == 0
            summary["candidates"][i]["theirs"] = row
            walls.append(row["wall_s"])
            say(
                f"theirs {'cold' if i == 0 else 'warm'} {c['name']}: {row['wall_s']:.1f} s, verdict "
                f"{row.get('verdict')}, speedup {fmt(row.get('speedup'))}, phases {row['phases_s']}"
                + (f", error: {row['error']}" if row.get("error") else "")
            )
            if row.get("reference_ms") and not summary["reference"].get("theirs"):
                summary["reference"]["theirs"] = {"runtimes_ms": row["reference_ms"]}
            if row["exit"] is None:
                notes.append(f"the Python tool's run of {c['name']} was stopped at the hard limit")
                return False
        return True

    more = run_theirs([0, 1], args.hard_limit_s)

    # ncu: the reference and every candidate either tool found correct, for --ncu-budget-s but
    # not past --ncu-deadline-s.
    if not args.no_ncu:
        ncu_end = min(elapsed() + args.ncu_budget_s, args.ncu_deadline_s)
        try:
            hb = HarnessBuilder(args, logs, os.path.join(scratch, "ncu"))
            todo = [("reference", True, ["softmax_reference_kernel"], None)]
            for i, c in enumerate(cands):
                t = summary["candidates"][i]
                correct = t["ours"].get("verdict") == 5 or (t["theirs"] or {}).get("verdict") == 5
                if correct and c["kernels"]:
                    todo.append((c["name"], False, c["kernels"], i))
            for name, ref, kernels, i in todo:
                if elapsed() > ncu_end:
                    notes.append(f"ncu stopped before {name}: its time is spent")
                    break
                # The reference binary runs --ref; its EVOLVE block is the task's own.
                binary = hb.binary(name, cands[i]["code"] if i is not None else hb.evolve_block)
                ncu_ms = {}
                for shape in benchmark_shapes(binary):
                    ncu_ms[shape], _ = ncu_times(args, logs, binary, shape, ref, kernels, name)
                target = summary["reference"] if ref else summary["candidates"][i]
                target["ncu_ms"] = ncu_ms
                say(
                    f"ncu {name}: "
                    + ", ".join(f"{s} {fmt(v, '.4f')} ms" for s, v in ncu_ms.items())
                )
        except (RuntimeError, OSError, subprocess.CalledProcessError, ValueError) as e:
            notes.append(f"ncu part failed: {e}")
            say(f"ncu part failed: {e}")
        ref_ncu = summary["reference"].get("ncu_ms") or {}
        for t in summary["candidates"]:
            if t.get("ncu_ms") and ref_ncu:
                t["ncu_speedup"] = geomean(
                    [
                        ref_ncu[s] / t["ncu_ms"][s]
                        for s in t["ncu_ms"]
                        if t["ncu_ms"].get(s) and ref_ncu.get(s)
                    ]
                )

    if more:
        run_theirs(range(2, len(cands)), args.budget_s)

    summary["wall_s"] = elapsed()
    with open(os.path.join(args.out, "side_by_side.json"), "w") as f:
        json.dump(summary, f, indent=1)
    text = report(summary)
    with open(os.path.join(args.out, "side_by_side.txt"), "w") as f:
        f.write(text)
    logs.pack(os.path.join(args.out, "side_by_side_logs.tar.gz"))
    print(text)
    say(f"done; {args.out}/side_by_side.{{json,txt}}, logs in side_by_side_logs.tar.gz")
    return 0


if __name__ == "__main__":
    sys.exit(main())
