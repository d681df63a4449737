#!/usr/bin/env python3
"""Search quality: how many LLM calls the search needs, against baselines, with a simulated model.

The task (bench/tasks/landscape_cpp) is a host kernel y = 2x + 1 whose run time is set by its
knobs through a hidden cost landscape (landscape.h: burn(landscape_cost(tiled, TILE, unroll,
simd, restrict))), so every candidate's true speedup is known and the optimum is 8.66x. Tiling is
a valley: a freshly tiled kernel (TILE 32 or 64) is slower than a tuned untiled one and pays off
only once TILE is tuned.

The simulated model is an OpenAI-compatible server on loopback (this file). It reads the prompt
it gets, takes the knobs of the "Current kernel" section's code and writes one changed kernel, as
a noisy improver: it draws three of the possible one-step changes (toggle simd or restrict,
double or halve the unroll or TILE, tile or untile), guesses each one's cost with a log-normal
error (sigma 0.3) and writes the one that looks best; in one answer of five it makes the
structural change instead (tiles an untiled kernel, or doubles or halves TILE). Its mistakes:
  - when it introduces tiling it forgets to declare tile_end (a compile error) with p = 0.6,
    unless its prompt holds that compile error ("'tile_end' was not declared"), which it then
    avoids: it learns only from failures it is shown;
  - with p = 0.07 it drops the last element (wrong values).
Nothing about the model is scripted per call: its answers follow from the prompt and from a
generator seeded by (seed, job, trial, branch), so a run is repeatable.

Strategies, each given the same budget of LLM calls (iterations x branches):
  search           this search as shipped (MAP-Elites islands, earlier failures in prompts)
  failures_hidden  the same with prompt.max_attempts=0 (no earlier attempts in prompts)
  greedy           every branch refines the best kernel so far (one island, exploit 1,
                   temperature 0), failures shown
  independent      every call starts from the EVOLVE block (one iteration of `budget` branches)
Reported per strategy over seeds: LLM calls until a correct candidate reaches 95% of the best
achievable speedup (true speedups, from each candidate's knobs; a run that never gets there counts
as budget + 1 and is marked), and the best speedup after the budget: the true speedup of the
kernel the job chose as best and the job's own measured figure with its interval.

Usage, from the repository root (about 2 s per candidate on the 2-core CPU machine):
    python3 bench/search_quality.py --seeds 5 --budget 32 --out bench/results/cpu/search_quality.json
"""
import argparse
import hashlib
import json
import math
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TASK = "bench/tasks/landscape_cpp"
BRANCHES = 4
TIMING = ["eval_config.time_budget=0.3", "eval_config.min_samples=5", "eval_config.num_seeds=1",
          "eval_config.profile_custom_model=false"]
STRATEGIES = {
    "search": [],
    "failures_hidden": ["prompt.max_attempts=0"],
    "greedy": ["search.num_islands=1", "search.exploit=1.0", "search.explore=0.0",
               "search.temperature=0"],
    "independent": None,  # one iteration of `budget` branches
}

# ---- the landscape (a copy of bench/tasks/landscape_cpp/landscape.h) ----
UNROLL_FLAT = [1.0, 0.85, 0.75, 0.8, 0.95]
UNROLL_TILED = [1.0, 0.8, 0.65, 0.55, 0.7]
TILE_COST = [1.8, 1.5, 1.25, 0.8, 0.35, 0.5, 0.9]  # TILE 16 .. 1024
UNROLLS = [1, 2, 4, 8, 16]
TILES = [16, 32, 64, 128, 256, 512, 1024]


def landscape_cost(k):
    u = 0 if k["unroll"] <= 1 else 1 if k["unroll"] <= 2 else 2 if k["unroll"] <= 4 else \
        3 if k["unroll"] <= 8 else 4
    cost = (UNROLL_TILED if k["tiled"] else UNROLL_FLAT)[u]
    if k["simd"]:
        cost *= 0.6 if k["restrict"] else 0.95
    elif k["restrict"]:
        cost *= 0.97
    if k["tiled"]:
        t, v = 0, 16
        while v < k["tile"] and t < 6:
            v, t = v * 2, t + 1
        cost *= TILE_COST[t]
    return cost


def best_cost():
    return min(landscape_cost({"tiled": tiled, "tile": tile, "unroll": u, "simd": s,
                               "restrict": r})
               for tiled in (False, True) for tile in TILES for u in UNROLLS
               for s in (False, True) for r in (False, True))


BURN = re.compile(r"burn\(landscape_cost\((true|false),\s*(\d+),\s*(\d+),\s*(true|false),\s*"
                  r"(true|false)\)\)")


def knobs_of(code):
    """The knobs a kernel's burn call states (the call that sets its run time), or None."""
    m = BURN.search(code or "")
    if not m:
        return None
    return {"tiled": m.group(1) == "true", "tile": int(m.group(2)), "unroll": int(m.group(3)),
            "simd": m.group(4) == "true", "restrict": m.group(5) == "true"}


# ---- the simulated model ----
def kernel_code(k, forget_tile_end=False, drop_last=False):
    b = lambda v: "true" if v else "false"  # noqa: E731
    rx = " __restrict" if k["restrict"] else ""
    lines = [f"void scale_shift(const float*{rx} x, float*{rx} y, long n) {{",
             f"  burn(landscape_cost({b(k['tiled'])}, {k['tile'] if k['tiled'] else 0}, "
             f"{k['unroll']}, {b(k['simd'])}, {b(k['restrict'])}));"]
    pragmas = ([f"#pragma GCC unroll {k['unroll']}"] if k["unroll"] > 1 else []) + \
        (["#pragma GCC ivdep"] if k["simd"] else [])
    tail = " - 1" if drop_last else ""
    if k["tiled"]:
        lines += [f"  constexpr int TILE = {k['tile']};",
                  "  for (long t = 0; t < n; t += TILE) {"]
        if not forget_tile_end:
            lines.append("    const long tile_end = t + TILE < n ? t + TILE : n;")
        lines += pragmas
        lines += [f"    for (long i = t; i < tile_end{tail}; ++i) y[i] = 2.0f * x[i] + 1.0f;",
                  "  }"]
    else:
        lines += pragmas
        lines.append(f"  for (long i = 0; i < n{tail}; ++i) y[i] = 2.0f * x[i] + 1.0f;")
    lines.append("}")
    return "\n".join(lines)


def moves_of(k):
    """Every one-step change of a kernel's knobs: (description, new knobs)."""
    out = [("toggle simd", {**k, "simd": not k["simd"]}),
           ("toggle restrict", {**k, "restrict": not k["restrict"]})]
    if k["unroll"] < 16:
        out.append(("unroll x2", {**k, "unroll": k["unroll"] * 2}))
    if k["unroll"] > 1:
        out.append(("unroll /2", {**k, "unroll": k["unroll"] // 2}))
    if k["tiled"]:
        if k["tile"] < 1024:
            out.append(("TILE x2", {**k, "tile": k["tile"] * 2}))
        if k["tile"] > 16:
            out.append(("TILE /2", {**k, "tile": k["tile"] // 2}))
        out.append(("untile", {**k, "tiled": False, "tile": 0}))
    else:
        out.append(("tile", {**k, "tiled": True, "tile": None}))  # TILE chosen when drawn
    return out


CURRENT = re.compile(r"## Current kernel.*?```(?:cpp|c\+\+)?\n(.*?)```", re.S)
ANY_BLOCK = re.compile(r"```(?:cpp|c\+\+)?\n(.*?)```", re.S)
BOLD = 0.2  # share of answers that make the structural change (tiling, or a TILE step)
TILE_END_ERROR = re.compile(r"[‘'`]tile_end[’'`] was not declared")


def simulated_answer(prompt, rng):
    """The model's answer to one prompt, and what it did (for the call log)."""
    m = CURRENT.search(prompt)
    parent = knobs_of(m.group(1)) if m else None
    if parent is None:  # no current kernel: start from the first kernel the prompt shows
        parent = next((knobs_of(c) for c in ANY_BLOCK.findall(prompt) if knobs_of(c)), None)
    if parent is None:
        parent = {"tiled": False, "tile": 0, "unroll": 1, "simd": False, "restrict": False}
    options = moves_of(parent)
    if rng.random() < BOLD:  # the structural change it likes to try, whatever it costs
        bold = [m for m in options if m[0] in ("tile", "TILE x2", "TILE /2")]
        drawn = [rng.choice(bold)]
    else:
        drawn = rng.sample(options, min(3, len(options)))
    guesses = []
    for name, k in drawn:
        if k["tile"] is None:
            k = {**k, "tile": rng.choice([32, 64])}
        guesses.append((landscape_cost(k) * math.exp(rng.gauss(0, 0.3)), name, k))
    _, name, child = min(guesses, key=lambda g: g[0])
    saw_error = bool(TILE_END_ERROR.search(prompt))
    forget = name == "tile" and not saw_error and rng.random() < 0.6
    drop_last = rng.random() < 0.07
    code = kernel_code(child, forget_tile_end=forget, drop_last=drop_last)
    text = (f"One change to the current kernel: {name}.\n\n```cpp\n{code}\n```\n")
    return text, {"move": name, "parent": parent, "child": child, "saw_tile_end_error": saw_error,
                  "forgot_tile_end": forget, "drop_last": drop_last}


class SimServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, seed, log_path):
        super().__init__(("127.0.0.1", 0), SimHandler)
        self.seed = seed
        self.log_file = open(log_path, "a")
        self.lock = threading.Lock()


class SimHandler(BaseHTTPRequestHandler):
    def log_message(self, format, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        call = dict(p.split("=", 1) for p in self.headers.get("X-KernelFoundry-Call", "").split(";")
                    if "=" in p)
        prompt = "\n".join(m["content"] if isinstance(m["content"], str)
                           else "".join(b.get("text", "") for b in m["content"])
                           for m in body.get("messages", []))
        key = f"{self.server.seed}:{call.get('job')}:{call.get('trial')}:{call.get('branch')}"
        rng = random.Random(int(hashlib.sha256(key.encode()).hexdigest()[:16], 16))
        if call.get("purpose", "generate") != "generate":
            text, what = "The kernel is fine.", {"purpose": call.get("purpose")}
        else:
            text, what = simulated_answer(prompt, rng)
        with self.server.lock:
            self.server.log_file.write(json.dumps({**call, **what}) + "\n")
            self.server.log_file.flush()
        out = json.dumps({
            "id": "sim-" + key, "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", "sim"),
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": len(prompt) // 4, "completion_tokens": len(text) // 4,
                      "total_tokens": (len(prompt) + len(text)) // 4}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


# ---- the jobs ----
def kernel_file(run_dir, trial, branch):
    d = os.path.join(run_dir, "kernels", "t%02d_b%02d" % (trial, branch))
    path = os.path.join(d, "code.txt")
    return open(path).read() if os.path.exists(path) else ""


def one_job(args, strategy, seed, scratch):
    server = SimServer(seed, os.path.join(scratch, "calls.jsonl"))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    job = f"sq_{strategy}_{seed}"
    if STRATEGIES[strategy] is None:
        shape = ["max_iters=1", f"branches_per_iteration={args.budget}",
                 f"limits.branches_per_iteration={max(64, args.budget)}"]
    else:
        shape = [f"max_iters={args.budget // BRANCHES}", f"branches_per_iteration={BRANCHES}"]
        shape += STRATEGIES[strategy]
    cmd = [args.cli, "run", "task=" + TASK, "job_name=" + job, f"seed={seed}",
           "paths.logdir=" + os.path.join(scratch, "runs"),
           "paths.kernels_db_path=" + os.path.join(scratch, "kernels.sqlite3"),
           "paths.cache_dir=" + os.path.join(scratch, "cache"),
           "paths.results_dir=" + os.path.join(scratch, "results"),
           "inference.servers=[{server_type: openai, model_name: simulated, "
           f"base_url: 'http://127.0.0.1:{port}/v1', api_key_env: null}}]"] + shape + TIMING
    env = {**os.environ, "OPENAI_API_KEY": "sim"}
    t0 = time.monotonic()
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wall = time.monotonic() - t0
    server.shutdown()
    server.log_file.close()
    if p.returncode != 0:
        sys.stderr.write(p.stdout[-4000:])
        raise SystemExit(f"kernelfoundry run failed ({strategy}, seed {seed}): exit "
                         f"{p.returncode}; files in {scratch}")
    run_dir = os.path.join(scratch, "runs", job)
    results = json.load(open(os.path.join(run_dir, "results.json")))
    return results, run_dir, wall, " ".join(cmd)


def score(results, run_dir, budget, target):
    """Calls to reach the target true speedup, the chosen kernel's speedups, verdict counts."""
    calls = sorted((k for k in results["kernels"] if k["trial"] >= 1),
                   key=lambda k: (k["trial"], k["branch"]))
    reached, best_true, verdicts = None, 0.0, {}
    for i, k in enumerate(calls, 1):
        verdicts[str(k["verdict"])] = verdicts.get(str(k["verdict"]), 0) + 1
        knobs = knobs_of(kernel_file(run_dir, k["trial"], k["branch"]))
        if k["verdict"] == 5 and knobs:
            best_true = max(best_true, 1.0 / landscape_cost(knobs))
            if reached is None and best_true >= target:
                reached = i
    best = next((k for k in results["kernels"] if k["uuid"] == results.get("best_uuid")), {})
    chosen = knobs_of(kernel_file(run_dir, best["trial"], best["branch"])) if best else None
    return {"calls": len(calls), "calls_to_95": reached if reached else budget + 1,
            "reached_95": reached is not None, "best_true_found": best_true,
            "chosen_true_speedup": 1.0 / landscape_cost(chosen) if chosen else None,
            "chosen_measured_speedup": best.get("speedup"),
            "chosen_interval": best.get("speedup_interval"), "verdicts": verdicts}


def summarise(rows):
    out = {}
    for strategy in STRATEGIES:
        rs = [r for r in rows if r["strategy"] == strategy]
        if not rs:
            continue
        calls = [r["calls_to_95"] for r in rs]
        chosen = [r["chosen_true_speedup"] or 0.0 for r in rs]
        out[strategy] = {
            "runs": len(rs), "reached_95": sum(r["reached_95"] for r in rs),
            "calls_to_95_median": statistics.median(calls),
            "calls_to_95_mean": statistics.fmean(calls), "calls_to_95_each": calls,
            "chosen_true_speedup_median": statistics.median(chosen),
            "chosen_true_speedup_mean": statistics.fmean(chosen),
            "chosen_measured_speedup_each": [r["chosen_measured_speedup"] for r in rs],
            "compile_errors": sum(r["verdicts"].get("1", 0) for r in rs),
            "wall_s_mean": statistics.fmean(r["wall_s"] for r in rs)}
    return out


def self_test(cli):
    """Checks the simulated model and the landscape's two copies; with a CLI, one short job."""
    every = [{"tiled": tiled, "tile": tile if tiled else 0, "unroll": u, "simd": s, "restrict": r}
             for tiled in (False, True) for tile in TILES for u in UNROLLS
             for s in (False, True) for r in (False, True)]
    for k in every:
        assert knobs_of(kernel_code(k)) == k, k
    assert abs(best_cost() - 0.1155) < 1e-9, best_cost()
    # landscape.h and the copy here agree on every configuration.
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "costs.cpp")
        with open(src, "w") as f:
            f.write('#include <cstdio>\n#include "landscape.h"\nint main() {\n')
            for k in every:
                f.write(f'  std::printf("%.9f\\n", landscape_cost({str(k["tiled"]).lower()}, '
                        f'{k["tile"]}, {k["unroll"]}, {str(k["simd"]).lower()}, '
                        f'{str(k["restrict"]).lower()}));\n')
            f.write("}\n")
        exe = os.path.join(tmp, "costs")
        subprocess.run(["g++", "-std=c++17", "-I", TASK, src, "-o", exe], check=True)
        got = [float(v) for v in subprocess.run([exe], check=True, capture_output=True,
                                                text=True).stdout.split()]
    assert all(abs(g - landscape_cost(k)) < 1e-6 for g, k in zip(got, every)), "tables differ"
    # The model changes the current kernel by one step, and forgets tile_end only when the
    # compile error is not in its prompt.
    flat = {"tiled": False, "tile": 0, "unroll": 4, "simd": True, "restrict": True}
    prompt = ("## Best kernel so far\n\n```cpp\n" + kernel_code({**flat, "unroll": 1}) +
              "\n```\n## Current kernel\n\n```cpp\n" + kernel_code(flat) + "\n```\n")
    error = "\nscale.cpp:5:22: error: 'tile_end' was not declared in this scope\n"
    for shown in (False, True):
        tiles = forgot = 0
        for i in range(2000):
            _, what = simulated_answer(prompt + (error if shown else ""), random.Random(i))
            assert what["parent"] == flat
            changed = [key for key in flat if what["child"][key] != flat[key]]
            assert len(changed) == 1 or set(changed) == {"tiled", "tile"}, what
            if what["move"] == "tile":
                tiles += 1
                forgot += what["forgot_tile_end"]
        assert tiles > 200, tiles
        rate = forgot / tiles
        assert (rate == 0) if shown else (0.5 < rate < 0.7), (shown, rate)
    print("self-test: simulated model and landscape ok")
    if cli:
        with tempfile.TemporaryDirectory() as out:
            args = argparse.Namespace(cli=cli, budget=BRANCHES)
            scratch = os.path.join(out, "job")
            os.makedirs(scratch)
            results, run_dir, _, _ = one_job(args, "search", 1, scratch)
            row = score(results, run_dir, BRANCHES, 0.95 / best_cost())
            assert row["calls"] == BRANCHES, row
            calls = [json.loads(line) for line in open(os.path.join(scratch, "calls.jsonl"))]
            assert len(calls) == BRANCHES and all(c["parent"] for c in calls), calls
            assert row["chosen_true_speedup"] and row["chosen_true_speedup"] >= 1.0, row
        print(f"self-test: one {BRANCHES}-call job through {cli} ok")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cli", default="build/src/cli/kernelfoundry")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--first-seed", type=int, default=1)
    ap.add_argument("--budget", type=int, default=32, help="LLM calls per job (multiple of 4)")
    ap.add_argument("--strategies", default=",".join(STRATEGIES))
    ap.add_argument("--keep", action="store_true", help="keep each job's temp dir")
    ap.add_argument("--out")
    ap.add_argument("--self-test", action="store_true",
                    help="check the simulated model and the landscape (and, with --cli, run one "
                         "short job) instead of measuring")
    args = ap.parse_args()
    if args.self_test:
        return self_test(args.cli if os.path.exists(args.cli) else None)
    if not args.out:
        raise SystemExit("--out is required")
    if args.budget % BRANCHES or args.budget > 256:
        raise SystemExit(f"--budget must be a multiple of {BRANCHES} and at most 256")
    optimum = 1.0 / best_cost()
    target = 0.95 * optimum
    rows = []
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        for strategy in args.strategies.split(","):
            scratch = tempfile.mkdtemp(prefix=f"kf_sq_{strategy}_{seed}_")
            results, run_dir, wall, cmd = one_job(args, strategy, seed, scratch)
            row = {"strategy": strategy, "seed": seed, "wall_s": wall,
                   **score(results, run_dir, args.budget, target), "command": cmd}
            moves = [json.loads(line) for line in open(os.path.join(scratch, "calls.jsonl"))]
            row["model_calls"] = len(moves)
            row["tile_end_errors_written"] = sum(m.get("forgot_tile_end", False) for m in moves)
            row["prompts_with_tile_end_error"] = sum(m.get("saw_tile_end_error", False)
                                                     for m in moves)
            rows.append(row)
            print(f"{strategy:16s} seed {seed}: calls to 95% {row['calls_to_95']:3d}"
                  f"{'' if row['reached_95'] else ' (not reached)'}, chosen "
                  f"{row['chosen_true_speedup'] or 0:.2f}x true / "
                  f"{row['chosen_measured_speedup'] or 0:.2f}x measured, "
                  f"{wall:.0f} s", flush=True)
            if not args.keep:
                shutil.rmtree(scratch, ignore_errors=True)
    summary = summarise(rows)
    for strategy, s in summary.items():
        print(f"{strategy:16s} calls to 95%: median {s['calls_to_95_median']}, mean "
              f"{s['calls_to_95_mean']:.1f} (reached in {s['reached_95']} of {s['runs']}); "
              f"best after {args.budget} calls: median {s['chosen_true_speedup_median']:.2f}x")
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"optimum_speedup": optimum, "target_speedup": target, "budget": args.budget,
                   "branches": BRANCHES, "timing": TIMING, "summary": summary, "runs": rows},
                  f, indent=1)


if __name__ == "__main__":
    main()
