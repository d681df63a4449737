#!/usr/bin/env python3
"""Orchestrator overhead and peak memory of whole search jobs against a zero-latency LLM server.

Runs `kernelfoundry run` on a trivial task (bench/tasks/trivial_cpp: y = x + 1) against the
scripted loopback server (tests/llm_server/kf_llm_server.py), whose every answer is a correct
kernel, for several candidate counts (max_iters x branches_per_iteration), each job in its own
temp dir (logdir, database, build cache, results). Two modes:
  cached  every answer is the EVOLVE block as written, so each candidate's build is a cache hit
          (the reference build of the same job already built that package);
  fresh   every answer carries a unique comment, so each candidate really recompiles its file
          and links (the harness objects still come from the cache).
From results.json: the union of every kernel's timeline intervals (llm, build, test) and the
reference's, and overhead share = 1 - union / wall_s (wall_s: the search's own clock, from its
start to the last results.json write). The parent's wall (process start to exit) is reported as
well. The gaps are split into: before the reference build, inside the reference / seed /
iterations, between iterations, and after the last test. Memory: the kernelfoundry process's own
peak (VmHWM from /proc/<pid>/status, polled until it exits; compilers and test binaries are other
processes and not in it), its last VmRSS, and for comparison wait4's ru_maxrss (which also covers
the reaped children).

Usage, from the repository root:
    python3 bench/orchestrator_overhead.py --candidates 8,32,96 --branches 4 \
        --modes cached,fresh --out bench/results/cpu/orchestrator_overhead.json
"""
import argparse
import json
import math
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from eval_overhead import evolve_block  # noqa: E402  (returns (file name, block text))

SERVER = "tests/llm_server/kf_llm_server.py"
TIMING = ["eval_config.time_budget=0.05", "eval_config.min_samples=3", "eval_config.num_seeds=1",
          "eval_config.cold_samples=false"]


def answer(code):
    return "The same loop.\n\n```cpp\n" + code.rstrip("\n") + "\n```\n"


def start_server(scratch, script):
    path = os.path.join(scratch, "script.json")
    with open(path, "w") as f:
        json.dump(script, f)
    port_file = os.path.join(scratch, "port")
    log = os.path.join(scratch, "server.jsonl")
    proc = subprocess.Popen([sys.executable, SERVER, "--script", path, "--port-file", port_file,
                             "--log", log])
    deadline = time.monotonic() + 10
    while not os.path.exists(port_file):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit("the scripted LLM server did not start")
        time.sleep(0.02)
    return proc, int(open(port_file).read()), log


def proc_status(pid):
    """VmHWM and VmRSS in KiB, own utime+stime in s; None once the process is gone or a zombie."""
    try:
        text = open(f"/proc/{pid}/status").read()
        stat = open(f"/proc/{pid}/stat").read()
    except OSError:
        return None
    vals = dict(re.findall(r"^(VmHWM|VmRSS):\s+(\d+) kB", text, re.M))
    if "VmHWM" not in vals:
        return None
    fields = stat[stat.rindex(")") + 2:].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return int(vals["VmHWM"]), int(vals["VmRSS"]), cpu


def run_job(cmd, poll_s):
    """Runs cmd, polling its own memory until exit. Returns the measurements and its output."""
    out = tempfile.TemporaryFile()
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    hwm = rss = 0
    cpu = 0.0
    series = []  # [t, VmRSS MiB], one point per 0.25 s
    while True:
        st = proc_status(p.pid)
        now = time.monotonic() - t0
        if st:
            hwm, rss, cpu = max(hwm, st[0]), st[1], st[2]
            if not series or now - series[-1][0] >= 0.25:
                series.append([round(now, 3), round(rss / 1024, 2)])
        _, status, ru = os.wait4(p.pid, os.WNOHANG)
        if _ == p.pid:
            wall = time.monotonic() - t0
            p.returncode = os.waitstatus_to_exitcode(status)
            break
        time.sleep(poll_s)
    out.seek(0)
    return {"rc": p.returncode, "parent_wall_s": wall, "peak_rss_kib": hwm, "last_rss_kib": rss,
            "own_cpu_s": cpu, "wait4_maxrss_kib": ru.ru_maxrss, "rss_series_mib": series,
            "output": out.read().decode("utf-8", "replace")}


def union_len(spans):
    total, cur_s, cur_e = 0.0, None, None
    for s, e in sorted(spans):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        total += cur_e - cur_s
    return total


def covered(spans, lo, hi):
    return union_len([(max(s, lo), min(e, hi)) for s, e in spans if min(e, hi) > max(s, lo)])


def analyse(results):
    """Union of the timeline intervals and where the rest of wall_s goes."""
    wall = results["wall_s"]
    spans, kinds = [], {"llm": 0.0, "build": 0.0, "test": 0.0}
    by_trial = {}
    ref = [tuple(v) for v in results["reference_timeline"].values()]
    for k in results["kernels"]:
        for kind, (s, e) in (k.get("timeline") or {}).items():
            spans.append((s, e))
            kinds[kind] = kinds.get(kind, 0.0) + (e - s)
            by_trial.setdefault(k["trial"], []).append((s, e))
    for (s, e), kind in zip(ref, results["reference_timeline"].keys()):
        kinds[kind] += e - s
    every = spans + ref
    union = union_len(every)

    def window(sp):
        return min(s for s, _ in sp), max(e for _, e in sp)

    gaps = {"before_reference": window(ref)[0]}
    r0, r1 = window(ref)
    gaps["inside_reference"] = (r1 - r0) - covered(every, r0, r1)
    prev_end, inside, between, between_list, inside_list = r1, 0.0, 0.0, [], []
    for t in sorted(by_trial):
        w0, w1 = window(by_trial[t])
        g = w0 - prev_end
        if t == 0:
            gaps["reference_to_seed"] = g
        else:
            between += g
            between_list.append(g)
        if t == 0:
            gaps["inside_seed"] = (w1 - w0) - covered(every, w0, w1)
        else:
            inside_list.append((w1 - w0) - covered(every, w0, w1))
            inside += inside_list[-1]
        prev_end = w1
    gaps["between_iterations"] = between
    gaps["inside_iterations"] = inside
    gaps["after_last_test"] = wall - prev_end
    return {"wall_s": wall, "union_s": union, "overhead_s": wall - union,
            "overhead_share": 1 - union / wall, "sum_s": kinds, "gaps_s": gaps,
            "between_iterations_each_s": between_list, "inside_iterations_each_s": inside_list}


def one_job(args, mode, candidates, block):
    iters = max(1, math.ceil(candidates / args.branches))
    n = iters * args.branches
    scratch = tempfile.mkdtemp(prefix=f"kf_orch_{mode}_{n}_")
    if mode == "cached":
        script = {"responses": [], "default": {"content": answer(block)}}
    else:
        # One distinct answer per candidate: the comment changes the file, so the build misses.
        stamp = time.time_ns()
        body = block.rstrip("\n").split("\n")
        script = {"responses": [{"content": answer("\n".join(
            body[:1] + [f"  // bench variant {i} of {stamp}"] + body[1:]))} for i in range(n)],
                  "default": {"content": answer(block)}}
    server, port, log = start_server(scratch, script)
    job = "orch_" + mode
    try:
        cmd = [args.cli, "run", "task=" + args.task, "job_name=" + job, f"max_iters={iters}",
               f"branches_per_iteration={args.branches}",
               "paths.logdir=" + os.path.join(scratch, "runs"),
               "paths.kernels_db_path=" + os.path.join(scratch, "kernels.sqlite3"),
               "paths.cache_dir=" + os.path.join(scratch, "cache"),
               "paths.results_dir=" + os.path.join(scratch, "results"),
               f"inference.servers=[{{server_type: openai, model_name: scripted, "
               f"base_url: 'http://127.0.0.1:{port}/v1'}}]"] + TIMING + args.config
        m = run_job(cmd, args.poll)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=10)
    if m["rc"] != 0:
        sys.stderr.write(m["output"])
        raise SystemExit(f"kernelfoundry run failed with exit code {m['rc']} ({scratch})")
    results = json.load(open(os.path.join(scratch, "runs", job, "results.json")))
    a = analyse(results)
    verdicts = {}
    for k in results["kernels"]:
        verdicts[str(k["verdict"])] = verdicts.get(str(k["verdict"]), 0) + 1
    calls = [json.loads(line) for line in open(log)]
    row = {"mode": mode, "candidates": n, "max_iters": iters, "branches": args.branches,
           "kernels_in_results": len(results["kernels"]), "verdicts": verdicts,
           "llm_calls": len(calls), "llm_status": sorted({c["status"] for c in calls}),
           "parent_wall_s": m["parent_wall_s"],
           "overhead_share_parent": 1 - a["union_s"] / m["parent_wall_s"],
           "outside_wall_s": m["parent_wall_s"] - a["wall_s"],
           "peak_rss_mib": m["peak_rss_kib"] / 1024, "last_rss_mib": m["last_rss_kib"] / 1024,
           "wait4_maxrss_mib_incl_children": m["wait4_maxrss_kib"] / 1024,
           "own_cpu_s": m["own_cpu_s"], **a, "rss_series_mib": m["rss_series_mib"],
           "command": " ".join(cmd), "scratch": scratch}
    if not args.keep:
        subprocess.run(["rm", "-rf", scratch])
        row["scratch"] = None
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--task", default="bench/tasks/trivial_cpp")
    ap.add_argument("--cli", default="build/src/cli/kernelfoundry")
    ap.add_argument("--candidates", default="8,32,96", help="comma-separated candidate counts")
    ap.add_argument("--branches", type=int, default=4, help="branches_per_iteration")
    ap.add_argument("--modes", default="cached,fresh", help="cached, fresh or both")
    ap.add_argument("--poll", type=float, default=0.01, help="seconds between /proc polls")
    ap.add_argument("--keep", action="store_true", help="keep the temp dirs")
    ap.add_argument("--out", required=True)
    ap.add_argument("config", nargs="*", help="extra key=value config arguments")
    args = ap.parse_args()

    _, block = evolve_block(args.task)
    counts = [int(c) for c in args.candidates.split(",")]
    rows = []
    for mode in args.modes.split(","):
        for c in counts:
            rows.append(one_job(args, mode, c, block))
            r = rows[-1]
            print(f"  {mode} {r['candidates']}: wall {r['wall_s']:.2f} s, overhead "
                  f"{100 * r['overhead_share']:.1f}%, peak RSS {r['peak_rss_mib']:.1f} MiB",
                  file=sys.stderr)
    summary = {"format": "kernelfoundry-orchestrator-overhead", "task": args.task,
               "cores": os.cpu_count(), "timing_config": TIMING + args.config,
               "targets": {"overhead_share_max": 0.05, "memory": "flat in candidates"},
               "runs": rows}
    with open(args.out, "w") as f:
        json.dump(summary, f, indent=1)

    print(f"{args.task}, branches_per_iteration={args.branches}, {os.cpu_count()} cores; "
          f"overhead = 1 - union(llm, build, test intervals) / wall_s (target <= 5%)")
    print(f"{'mode':<7}{'cand':>5}{'wall_s':>8}{'parent':>8}{'union':>8}{'ovh%':>7}{'ovh%par':>8}"
          f"{'llm_s':>7}{'build_s':>8}{'test_s':>7}{'peakMiB':>8}{'lastMiB':>8}{'cpu_s':>7}")
    for r in rows:
        s = r["sum_s"]
        print(f"{r['mode']:<7}{r['candidates']:>5}{r['wall_s']:>8.2f}{r['parent_wall_s']:>8.2f}"
              f"{r['union_s']:>8.2f}{100 * r['overhead_share']:>7.2f}"
              f"{100 * r['overhead_share_parent']:>8.2f}{s['llm']:>7.2f}{s['build']:>8.2f}"
              f"{s['test']:>7.2f}{r['peak_rss_mib']:>8.1f}{r['last_rss_mib']:>8.1f}"
              f"{r['own_cpu_s']:>7.2f}")
    print("gaps (s): before_ref / inside_ref / ref_to_seed / inside_seed / inside_iters / "
          "between_iters (first, last) / after_last_test / outside wall_s")
    for r in rows:
        g, b = r["gaps_s"], r["between_iterations_each_s"]
        print(f"{r['mode']:<7}{r['candidates']:>5}  {g['before_reference']:.3f} / "
              f"{g['inside_reference']:.3f} / {g['reference_to_seed']:.3f} / "
              f"{g['inside_seed']:.3f} / {g['inside_iterations']:.3f} / "
              f"{g['between_iterations']:.3f} ({b[0]:.4f}, {b[-1]:.4f}) / "
              f"{g['after_last_test']:.3f} / {r['outside_wall_s']:.3f}")
    print("per-iteration gaps, mean of the first and the last quarter of the iterations (ms): "
          "between iterations; inside an iteration")

    def quarters(v):
        q = max(1, len(v) // 4)
        return 1000 * sum(v[:q]) / q, 1000 * sum(v[-q:]) / q

    for r in rows:
        b = quarters(r["between_iterations_each_s"])
        i = quarters(r["inside_iterations_each_s"])
        print(f"{r['mode']:<7}{r['candidates']:>5}  between {b[0]:.2f} -> {b[1]:.2f}; "
              f"inside {i[0]:.2f} -> {i[1]:.2f}")
    print("verdicts: " + "; ".join(f"{r['mode']} {r['candidates']}: {r['verdicts']}" for r in rows))


if __name__ == "__main__":
    main()
