#!/usr/bin/python3
"""The client's incr against python-diskcache's Cache.incr, from one Python thread, in one run.

    /usr/bin/python3 clients/python/bench/incr_vs_diskcache.py [TALLY_JAR] [--seconds 3] [--rounds 4]

Starts `tally serve --store file:DIR --port 0`, then alternates rounds: diskcache `Cache.incr` on
one key (defaults: SQLite WAL, synchronous=NORMAL), the client's `incr` (one keep-alive
connection), and `batch()` of 1000 increments per request (per counted unit). Prints µs per
call (per unit for the batch) for each round, the medians, and each ratio to diskcache.
Needs the Debian package python3-diskcache (hence /usr/bin/python3).
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "src"))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))

import diskcache  # noqa: E402
import server  # noqa: E402
from tally_client import Client  # noqa: E402


def timed(fn, seconds, units_per_call=1):
    n, start = 0, time.perf_counter()
    deadline = start + seconds
    while True:
        for _ in range(100):
            fn()
        n += 100
        now = time.perf_counter()
        if now >= deadline:
            return (now - start) / (n * units_per_call) * 1e6


def main():
    p = argparse.ArgumentParser()
    p.add_argument("jar", nargs="?", default=server.DEFAULT_JAR)
    p.add_argument("--seconds", type=float, default=3)
    p.add_argument("--rounds", type=int, default=4)
    a = p.parse_args()
    os.environ["TALLY_JAR"] = a.jar
    tally = server.Tally("file:" + tempfile.mkdtemp(prefix="tally-bench-"))
    cache = diskcache.Cache(tempfile.mkdtemp(prefix="diskcache-bench-"))
    client = Client(tally.url)

    def batch():
        with client.batch() as b:
            for _ in range(1000):
                b.incr("batched")

    rows = {"diskcache Cache.incr": [], "client incr": [], "client batch (per unit)": []}
    try:
        timed(lambda: cache.incr("k"), 1)
        timed(lambda: client.incr("k"), 2)  # the server's JIT compiles its path
        for r in range(a.rounds):
            rows["diskcache Cache.incr"].append(timed(lambda: cache.incr("k"), a.seconds))
            rows["client incr"].append(timed(lambda: client.incr("k"), a.seconds))
            rows["client batch (per unit)"].append(timed(batch, a.seconds / 10, 1000))
        assert client.get("k") is not None
    finally:
        client.close()
        tally.stop()
    base = statistics.median(rows["diskcache Cache.incr"])
    print("%-26s %s  %8s  %s" % ("", "µs per call, each round", "median", "diskcache / this"))
    for name, vals in rows.items():
        med = statistics.median(vals)
        print("%-26s %s  %8.2f  %.2fx" % (name, " ".join("%7.2f" % v for v in vals), med,
                                          base / med))


if __name__ == "__main__":
    main()
