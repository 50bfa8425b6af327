#!/usr/bin/python3
"""N calls of the client's incr (or of the raw socket loop of incr_vs_diskcache.py) against a
running server, for counting what a call costs the interpreter without the machine's noise:

    valgrind --tool=callgrind --callgrind-out-file=/dev/null \\
        /usr/bin/python3 clients/python/bench/incr_loop.py URL client|raw N [--src DIR]

Run it for two values of N; the difference of callgrind's "Collected" instruction counts,
divided by the difference of N, is the user-space instructions per call. --src runs another
copy of the client (e.g. an older one, from `git worktree` or `git archive`).
"""

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("url")
    p.add_argument("what", choices=("client", "raw"))
    p.add_argument("n", type=int)
    p.add_argument("--src", default=os.path.join(HERE, "..", "src"))
    a = p.parse_args()
    if a.what == "raw":
        sys.path.insert(0, HERE)
        from incr_vs_diskcache import raw_incr  # noqa: E402  (needs diskcache importable)
        incr, _ = raw_incr(a.url)
    else:
        sys.path.insert(0, a.src)
        from tally_client import Client  # noqa: E402
        client = Client(a.url)

        def incr():
            client.incr("k")
    for _ in range(a.n):
        incr()


if __name__ == "__main__":
    main()
