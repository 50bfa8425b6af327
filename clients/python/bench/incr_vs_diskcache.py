#!/usr/bin/python3
"""The client's incr against python-diskcache's Cache.incr, from one Python thread, in one run.

    /usr/bin/python3 clients/python/bench/incr_vs_diskcache.py [TALLY_JAR]
        [--seconds 3] [--rounds 5] [--warmup 10]

Starts `tally serve --store file:DIR --port 0` and warms it up (the JIT compiles the server's
path: its first seconds are several times slower) with the calls measured below, in 1 s slices,
for at least --warmup seconds and until two slices of the client's incr agree within 3 %
(at most 60 s). Then each round times, in an order that rotates from round to round:

- diskcache: `Cache.incr` on one key (defaults: SQLite WAL, synchronous=NORMAL);
- raw: the floor under any Python client of this server, a socket loop sending one prebuilt
  request to the same route and reading until the answer's last byte (no parsing at all);
- client: the client's `incr` (one keep-alive connection);
- batch: `batch()` of 1000 increments per request (per counted unit).

Prints per round µs per call (per unit for the batch), and for raw and client the server's CPU
per call (user + system time of the java process, from /proc) and this process's; then each
round's ratios, and their medians. Ratios come from the same round, so a machine shared with
other work moves both sides. Needs the Debian package python3-diskcache (hence /usr/bin/python3).
"""

import argparse
import os
import shutil
import socket
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

_TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    """User + system CPU of a process, all its threads (its JIT and GC threads too)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


class Timed:
    """One row's figures for one slice: µs per unit of wall time, of the server's CPU, of ours."""

    def __init__(self, fn, seconds, units_per_call, server_pid):
        n = 0
        s0, c0, start = cpu_seconds(server_pid), time.process_time(), time.perf_counter()
        deadline = start + seconds
        while True:
            for _ in range(100):
                fn()
            n += 100
            now = time.perf_counter()
            if now >= deadline:
                break
        units = n * units_per_call / 1e6
        self.wall = (now - start) / units
        self.server_cpu = (cpu_seconds(server_pid) - s0) / units
        self.own_cpu = (time.process_time() - c0) / units


def raw_incr(url):
    """The same request as the client's incr, prebuilt, on one socket: send, then receive until
    the body's closing brace; nothing parsed."""
    host, port = url[len("http://"):].split(":")
    sock = socket.create_connection((host, int(port)))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    request = (b"POST /v1/counters/raw/incr HTTP/1.1\r\nHost: %s:%s\r\nUser-Agent: raw\r\n"
               b"Content-Type: application/json\r\nContent-Length: 11\r\n\r\n{\"delta\":1}"
               % (host.encode(), port.encode()))
    send, recv = sock.sendall, sock.recv

    def incr():
        send(request)
        answer = recv(4096)
        while not answer.endswith(b"}"):
            answer += recv(4096)
    return incr, sock


def main():
    p = argparse.ArgumentParser()
    p.add_argument("jar", nargs="?", default=server.DEFAULT_JAR)
    p.add_argument("--seconds", type=float, default=3)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--warmup", type=float, default=10)
    a = p.parse_args()
    os.environ["TALLY_JAR"] = a.jar
    dirs = [tempfile.mkdtemp(prefix="tally-bench-"), tempfile.mkdtemp(prefix="diskcache-bench-")]
    tally = server.Tally("file:" + dirs[0])
    pid = tally.process.proc.pid
    cache = diskcache.Cache(dirs[1])
    client = Client(tally.url)
    raw, raw_sock = raw_incr(tally.url)

    def batch():
        with client.batch() as b:
            for _ in range(1000):
                b.incr("batched")

    rows = [("diskcache", lambda: cache.incr("k"), 1),
            ("raw", raw, 1),
            ("client", lambda: client.incr("k"), 1),
            ("batch", batch, 1000)]
    results = {name: [] for name, _, _ in rows}
    print("load average before: %s" % open("/proc/loadavg").read().split(" ", 3)[:3])
    try:
        warm, start, last = [], time.monotonic(), None
        while True:
            for name, fn, units in rows:
                t = Timed(fn, 1 if name != "batch" else 0.3, units, pid)
                if name == "client":
                    warm.append(t.wall)
            elapsed = time.monotonic() - start
            settled = last is not None and abs(warm[-1] - last) <= 0.03 * last
            if (elapsed >= a.warmup and settled) or elapsed >= 60:
                break
            last = warm[-1]
        print("warm-up: %.0f s; client incr µs per call, each 1 s slice: %s"
              % (elapsed, " ".join("%.1f" % w for w in warm)))
        for r in range(a.rounds):
            k = r % len(rows)
            for name, fn, units in rows[k:] + rows[:k]:
                results[name].append(Timed(fn, a.seconds if name != "batch" else a.seconds / 10,
                                           units, pid))
        assert client.get("k") is not None
    finally:
        client.close()
        raw_sock.close()
        tally.stop()
        cache.close()
        for d in dirs:
            shutil.rmtree(d, ignore_errors=True)
    print("load average after:  %s" % open("/proc/loadavg").read().split(" ", 3)[:3])

    print("\nµs per call (batch: per counted unit); for raw and client also the server's CPU and "
          "this process's CPU per call")
    print("%-6s %10s %24s %24s %10s" % ("round", "diskcache", "raw (server, own CPU)",
                                        "client (server, own CPU)", "batch"))
    for r in range(a.rounds):
        d, w, c, b = (results[n][r] for n in ("diskcache", "raw", "client", "batch"))
        print("%-6d %10.2f %8.2f (%5.2f, %5.2f) %8.2f (%5.2f, %5.2f) %10.2f"
              % (r + 1, d.wall, w.wall, w.server_cpu, w.own_cpu, c.wall, c.server_cpu,
                 c.own_cpu, b.wall))

    def ratios(f):
        return [f(*(results[n][r] for n in ("diskcache", "raw", "client", "batch")))
                for r in range(a.rounds)]
    table = [
        ("diskcache / client incr (>= 1: client as fast or faster)",
         ratios(lambda d, w, c, b: d.wall / c.wall)),
        ("diskcache / batch per unit (target >= 10)", ratios(lambda d, w, c, b: d.wall / b.wall)),
        ("client incr / raw socket", ratios(lambda d, w, c, b: c.wall / w.wall)),
        ("client's own CPU - raw's own CPU, µs", ratios(lambda d, w, c, b: c.own_cpu - w.own_cpu)),
        ("server CPU / client incr wall time", ratios(lambda d, w, c, b: c.server_cpu / c.wall)),
    ]
    print("\nper round, then the median")
    for name, vals in table:
        print("%-58s %s   median %.2f" % (name, " ".join("%6.2f" % v for v in vals),
                                          statistics.median(vals)))


if __name__ == "__main__":
    main()
