#!/usr/bin/python3
"""python-diskcache's Cache.incr, measured the way FileStoreComparison measures Tally's file store.

Run by dev.tally.bench.FileStoreComparison (one case per run), or by hand with the system Python,
where the Debian package python3-diskcache installs the module:

    /usr/bin/python3 diskcache_incr.py --case one-key --dir /tmp/dc --seconds 5

Cases:
    one-key      one thread incrementing one key
    many-keys    one thread incrementing 10,000 keys in turn (each created by a first pass)
    processes    two processes incrementing one key, started together
    latency      one thread on one key, every call timed with perf_counter_ns

Prints one line: RESULT case=... ops=... seconds=... final=... [p50_ns=... p99_ns=... p999_ns=... max_ns=...
timer_ns=...]
where final is the counter's value read back afterwards (it must equal the increments made).
The Cache is opened with diskcache's defaults (SQLite in WAL mode, synchronous=NORMAL).
"""

import argparse
import multiprocessing
import time

import diskcache

KEYS = 10_000
BATCH = 100


def timed_loop(step, seconds):
    """Calls step() in batches until `seconds` have passed; returns (calls, elapsed seconds)."""
    ops = 0
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        for _ in range(BATCH):
            step()
        ops += BATCH
        now = time.perf_counter()
        if now >= deadline:
            return ops, now - start


def one_key(directory, seconds):
    with diskcache.Cache(directory) as cache:
        cache.incr("hot")  # the key exists before timing starts, as for Tally
        ops, elapsed = timed_loop(lambda: cache.incr("hot"), seconds)
        return dict(ops=ops, seconds=elapsed, final=cache.get("hot") - 1)


def many_keys(directory, seconds):
    keys = ["k:%d" % i for i in range(KEYS)]
    with diskcache.Cache(directory) as cache:
        for k in keys:
            cache.incr(k)  # first pass: create every key, untimed
        position = [0]

        def step():
            i = position[0]
            cache.incr(keys[i])
            position[0] = i + 1 if i + 1 < KEYS else 0

        ops, elapsed = timed_loop(step, seconds)
        total = sum(cache.get(k) for k in keys) - KEYS
        return dict(ops=ops, seconds=elapsed, final=total)


def _child(directory, seconds, ready, go, results):
    with diskcache.Cache(directory) as cache:
        cache.incr("warm")
        ready.release()
        go.wait()
        ops, elapsed = timed_loop(lambda: cache.incr("hot"), seconds)
        results.put((ops, elapsed))


def processes(directory, seconds, n=2):
    ctx = multiprocessing.get_context("spawn")  # a fresh interpreter each: no inherited SQLite handle
    ready = ctx.Semaphore(0)
    go = ctx.Event()
    results = ctx.Queue()
    with diskcache.Cache(directory) as cache:
        cache.set("hot", 0)
    children = [ctx.Process(target=_child, args=(directory, seconds, ready, go, results)) for _ in range(n)]
    for c in children:
        c.start()
    for _ in children:
        ready.acquire()
    go.set()
    runs = [results.get() for _ in children]
    for c in children:
        c.join()
    with diskcache.Cache(directory) as cache:
        final = cache.get("hot")
    ops = sum(r[0] for r in runs)
    rate = sum(r[0] / r[1] for r in runs)  # each process's rate over its own run
    return dict(ops=ops, seconds=ops / rate, final=final)


def latency(directory, seconds):
    clock = time.perf_counter_ns
    samples = []
    with diskcache.Cache(directory) as cache:
        cache.incr("hot")
        deadline = clock() + int(seconds * 1e9)
        while True:
            t0 = clock()
            cache.incr("hot")
            t1 = clock()
            samples.append(t1 - t0)
            if t1 >= deadline:
                break
        final = cache.get("hot") - 1
    timer = []
    for _ in range(100_000):
        t0 = clock()
        t1 = clock()
        timer.append(t1 - t0)
    samples.sort()
    timer.sort()
    n = len(samples)
    return dict(ops=n, seconds=sum(samples) / 1e9, final=final, p50_ns=samples[n // 2],
                p99_ns=samples[n * 99 // 100], p999_ns=samples[n * 999 // 1000], max_ns=samples[-1],
                timer_ns=timer[len(timer) // 2])


CASES = {"one-key": one_key, "many-keys": many_keys, "processes": processes, "latency": latency}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--case", required=True, choices=sorted(CASES))
    parser.add_argument("--dir", required=True, help="a new directory for the cache")
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()
    result = CASES[args.case](args.dir, args.seconds)
    fields = " ".join("%s=%s" % (k, v) for k, v in result.items())
    print("RESULT case=%s version=%s %s" % (args.case, diskcache.__version__, fields), flush=True)


if __name__ == "__main__":
    main()
