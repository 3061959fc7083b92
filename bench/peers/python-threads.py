#!/usr/bin/env python3
"""python-threads.py -- CPython peer for `bin/spindle bench threads`.

The same six workloads as bench/threads.ss, N iterations at a time in three
modes:
  sequential       N iterations in a row
  threading        N threading.Thread threads (one GIL: no parallelism)
  multiprocessing  N multiprocessing.Process processes (fork), one iteration
                   each, results through a Queue; process start is timed
and prints one line per cell on stdout:
  python.WORKLOAD.MODE.nN SPEEDUP x REAL_MS CPU_MS GC_MS
(speedup over the sequential cell of the same N; CPU: this process's
process_time plus its reaped children's user+system time; GC: time spent in
the cyclic collector of this process, from gc.callbacks).  `#` lines are notes;
progress goes to stderr.

Usage: python3 bench/peers/python-threads.py [--n 1,2] [--quick] [--runs K]
         [--workloads LIST] [--sizes WL=V,...] [--dirs D1,D2]
bench/threads.ss passes all of these; it gives CPython a fib 7 smaller than
its own (CPython is ~30x slower than Chez on naive fib), the other sizes equal.
"""
import contextvars
import gc
import io
import multiprocessing
import os
import sys
import threading
import time

sys.setrecursionlimit(10000)

# ---------------------------------------------------------------- workloads


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def strfib_star(n):
    return n if n < 2 else int(str(strfib_star(n - 1) + strfib_star(n - 2)))


# Python has no parameters; a context variable is the nearest thing.
current_radix = contextvars.ContextVar("current_radix", default=10)


def num_to_str(x):
    r = current_radix.get()
    if r == 10:
        return str(x)
    raise ValueError("only radix 10")


def str_to_num(s):
    return int(s, current_radix.get())


def strfib(n):
    return n if n < 2 else str_to_num(num_to_str(strfib(n - 1) + strfib(n - 2)))


HASH_NUMS_ROUNDS = 3


def hash_nums(k):
    n = 10 ** k
    acc = 0
    for r in range(HASH_NUMS_ROUNDS):
        h = {}
        for i in range(n):
            h[i] = i + r
        for i in range(n):
            acc += h.get(i, 0)
    return acc


def hash_digs(m):
    buf = io.StringIO()
    for i in range(m):
        buf.write(str(i))
    return hash(buf.getvalue())


SKIPPED_DIRS = ("results", "compiled", "__pycache__")


def hash_tree(d, acc):
    for name in sorted(os.listdir(d)):
        if name.startswith("."):
            continue
        p = os.path.join(d, name)
        if os.path.islink(p):
            continue
        if os.path.isdir(p):
            if name not in SKIPPED_DIRS:
                acc = hash_tree(p, acc)
        elif os.path.isfile(p):
            with open(p, encoding="utf-8", errors="replace", newline="") as f:
                acc = (acc + hash(f.read())) & 0xFFFFFFFF
    return acc


def hash_dir(passes, dirs):
    acc = 0
    for _ in range(passes):
        for d in dirs:
            if os.path.isdir(d):
                acc = hash_tree(d, acc)
    return acc


def run_workload(name, size, dirs):
    if name == "fib":
        return fib(size)
    if name == "strfib*":
        return strfib_star(size)
    if name == "strfib":
        return strfib(size)
    if name == "hash-nums":
        return hash_nums(size)
    if name == "hash-digs":
        return hash_digs(size)
    if name == "hash-dir":
        return hash_dir(size, dirs)
    raise ValueError("unknown workload " + name)


def process_main(q, name, size, dirs):
    q.put(run_workload(name, size, dirs))


# ---------------------------------------------------------------- timing
gc_ms = 0.0
_gc_t0 = [0.0]


def _gc_callback(phase, info):
    global gc_ms
    if phase == "start":
        _gc_t0[0] = time.perf_counter()
    else:
        gc_ms += (time.perf_counter() - _gc_t0[0]) * 1000.0


def cpu_ms():
    t = os.times()
    return (time.process_time() + t.children_user + t.children_system) * 1000.0


def run_mode(mode, n, name, size, dirs):
    if mode == "sequential":
        return [run_workload(name, size, dirs) for _ in range(n)]
    if mode == "threading":
        results = [None] * n

        def body(i):
            results[i] = run_workload(name, size, dirs)

        ts = [threading.Thread(target=body, args=(i,)) for i in range(n)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        return results
    if mode == "multiprocessing":
        ctx = multiprocessing.get_context("fork")
        q = ctx.Queue()
        ps = [ctx.Process(target=process_main, args=(q, name, size, dirs)) for _ in range(n)]
        for p in ps:
            p.start()
        results = [q.get() for _ in range(n)]
        for p in ps:
            p.join()
        return results
    raise ValueError(mode)


def measure(thunk):
    gc.collect()
    g0 = gc_ms
    c0 = cpu_ms()
    t0 = time.perf_counter()
    v = thunk()
    t1 = time.perf_counter()
    return ((t1 - t0) * 1000.0, cpu_ms() - c0, gc_ms - g0, v)


def main():
    args = sys.argv[1:]

    def option(name, default):
        for i, a in enumerate(args[:-1]):
            if a == name:
                return args[i + 1]
        return default

    def split_list(s):
        return [x for x in s.split(",") if x]

    quick = "--quick" in args
    runs = int(option("--runs", "3"))
    cores = os.cpu_count() or 1
    ns = [int(x) for x in split_list(option("--n", ",".join(str(n) for n in (1, 2, 4, 8) if n <= cores)))]
    if quick:
        sizes = {"fib": 29, "strfib*": 27, "strfib": 27, "hash-nums": 5, "hash-digs": 600000, "hash-dir": 40}
    else:
        sizes = {"fib": 33, "strfib*": 30, "strfib": 30, "hash-nums": 6, "hash-digs": 3000000, "hash-dir": 200}
    for kv in split_list(option("--sizes", "")):
        k, v = kv.split("=")
        sizes[k] = int(v)
    workloads = split_list(option("--workloads", "fib,strfib*,strfib,hash-nums,hash-digs,hash-dir"))
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(here))
    dirs = split_list(option("--dirs", ",".join(os.path.join(root, d) for d in ("lib", "tests", "bench", "examples"))))
    modes = ["sequential", "threading", "multiprocessing"]
    gc.callbacks.append(_gc_callback)
    start = time.perf_counter()

    for wl in workloads:
        size = sizes[wl]
        expected = run_workload(wl, size, dirs)
        changed = 0  # measurements whose results differed
        for n in ns:
            best = {}
            for _ in range(runs):
                for m in modes:
                    res = measure(lambda: run_mode(m, n, wl, size, dirs))
                    if any(v != expected for v in res[3]):
                        changed += 1
                    if m not in best or res[0] < best[m][0]:
                        best[m] = res
            seq = best["sequential"][0]
            for m in modes:
                r = best[m]
                print("python.%s.%s.n%d %.3f x %.3f %.3f %.3f" % (wl, m, n, seq / max(r[0], 1e-3), r[0], r[1], r[2]))
            sys.stdout.flush()
            print("  [python %.1f s] %s n=%d: %s" % (
                time.perf_counter() - start, wl, n,
                ", ".join("%s %.2fx" % (m, seq / best[m][0]) for m in modes)), file=sys.stderr)
        if changed:
            print("# %s: %d measurement(s) gave other results than the warmup (hash-dir: files changed)" % (wl, changed))


if __name__ == "__main__":
    main()
