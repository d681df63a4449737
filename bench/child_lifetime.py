#!/usr/bin/env python3
"""Where a test child's time outside its main() goes, from an strace of a whole eval.

Record (strace 6.x; --seccomp-bpf keeps the traced program at full speed between the process
system calls it stops on):
  strace -f --seccomp-bpf -tt -e trace=process -o trace.txt kernelfoundry eval task=... cand.cu
Then:
  python3 bench/child_lifetime.py trace.txt [--program /cache/bin/]

For every run of a program whose path contains --program (the task's test binaries), started
through bwrap or directly, it prints, in milliseconds:
  sandbox   from the spawn of its outermost wrapper (bwrap's execve) to the program's execve
  run       from the program's execve to its exit_group (main() and everything before it)
  exit      from exit_group to the process being gone (the kernel's teardown of its memory and
            of its device files: a GPU context is destroyed here)
  wrapper   from the program being gone to the wrapper being gone (bwrap's own shutdown)
  reaped    from the wrapper being gone to the parent's wait seeing it
"""
import argparse
import re
import statistics
import sys

LINE = re.compile(r"^(\d+)\s+(\d\d):(\d\d):(\d\d\.\d+) (.*)$")
CLONE_DONE = re.compile(r"(?:^|<\.\.\. )(?:clone3?|vfork|fork)\b.*\) = (\d+)$")
EXECVE = re.compile(r'^execve\("([^"]*)"')
WAIT_PID = re.compile(r"si_pid=(\d+), [^}]*si_code=CLD_(?:EXITED|KILLED|DUMPED)")
WAIT4_DONE = re.compile(r"(?:^wait4\(|<\.\.\. wait4 resumed>).*\) = (\d+)$")


def seconds(h, m, s):
    return int(h) * 3600 + int(m) * 60 + float(s)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("trace")
    ap.add_argument("--program", default="/cache/bin/",
                    help="a substring of the program's path (default: the task's test binaries)")
    args = ap.parse_args()

    parent, execs, exit_group, gone, reaped = {}, {}, {}, {}, {}
    for raw in open(args.trace, errors="replace"):
        m = LINE.match(raw.rstrip("\n"))
        if not m:
            continue
        pid, t, rest = int(m.group(1)), seconds(*m.group(2, 3, 4)), m.group(5)
        c = CLONE_DONE.search(rest)
        if c and int(c.group(1)) > 0:
            parent[int(c.group(1))] = pid
        e = EXECVE.match(rest)
        if e and not rest.endswith(("ENOENT (No such file or directory)", "<unfinished ...>")):
            execs.setdefault(pid, []).append((t, e.group(1)))
        elif e and rest.endswith("<unfinished ...>"):
            execs.setdefault(pid, []).append((t, e.group(1)))  # completes unless ENOENT follows
        if rest.startswith("exit_group("):
            exit_group.setdefault(pid, t)
        if rest.startswith("+++ exited") or rest.startswith("+++ killed"):
            gone.setdefault(pid, t)
        for w in (WAIT_PID.search(rest), WAIT4_DONE.search(rest)):
            if w and int(w.group(1)) > 0:
                reaped.setdefault(int(w.group(1)), t)

    wrappers = {p: min(t for t, path in runs if path.endswith("/bwrap"))
                for p, runs in execs.items() if any(path.endswith("/bwrap") for _, path in runs)}

    def outermost_wrapper(pid, t_exec):
        # The nearest ancestor that exec'd bwrap. Inside a new PID namespace clone returns the
        # namespace's pid, so the chain may break: then the latest bwrap started before the
        # program that outlived it. The program's own process when there is none.
        p = pid
        while p in parent:
            p = parent[p]
            if p in wrappers:
                return p
        around = [(t, b) for b, t in wrappers.items()
                  if t <= t_exec and gone.get(b, float("inf")) >= gone.get(pid, 0)]
        return max(around)[1] if around else pid

    rows = []
    for pid, runs in sorted(execs.items()):
        hits = [(t, path) for t, path in runs if args.program in path]
        if not hits:
            continue
        t_exec = hits[-1][0]
        wrapper = outermost_wrapper(pid, t_exec)
        t_wrap = wrappers.get(wrapper, t_exec)
        t_exit = exit_group.get(pid)
        t_gone = gone.get(pid)
        t_wgone = gone.get(wrapper, t_gone)
        t_reaped = reaped.get(wrapper)
        if None in (t_exit, t_gone, t_wgone, t_reaped):
            continue
        rows.append({"pid": pid, "sandbox": t_exec - t_wrap, "run": t_exit - t_exec,
                     "exit": t_gone - t_exit, "wrapper": t_wgone - t_gone,
                     "reaped": t_reaped - t_wgone})
    if not rows:
        sys.exit(f"no finished run of a program matching {args.program!r} in {args.trace}")
    keys = ["sandbox", "run", "exit", "wrapper", "reaped"]
    print("pid      " + "".join(f"{k:>10}" for k in keys) + "   (ms)")
    for r in rows:
        print(f"{r['pid']:<9}" + "".join(f"{1000 * r[k]:>10.1f}" for k in keys))
    print("median   " + "".join(f"{1000 * statistics.median(r[k] for r in rows):>10.1f}"
                                for k in keys))


if __name__ == "__main__":
    main()
