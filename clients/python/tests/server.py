"""Starts real servers for the tests: `tally serve` from TALLY_JAR (the jar the build made) on a
file: store, and on a redis-server this starts itself."""

import os
import shutil
import socket
import subprocess
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_JAR = os.path.join(HERE, "..", "..", "..", "tally-server", "target", "tally.jar")


def _free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Process:
    def __init__(self, args, ready, log_name):
        self.dir = tempfile.mkdtemp(prefix="tally-py-")
        self.log = open(os.path.join(self.dir, log_name), "w+")
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=self.log, text=True)
        self.first_line = ""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            if ready(line):
                self.first_line = line.strip()
                return
        self.stop()
        self.log.seek(0)
        raise RuntimeError("%s did not start: %s" % (args[0], self.log.read()[-2000:]))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


class Redis:
    def __init__(self):
        exe = shutil.which("redis-server")
        if exe is None:
            raise RuntimeError("redis-server is not on the PATH: apt-get install -y redis-server")
        self.port = _free_port()
        self.dir = tempfile.mkdtemp(prefix="tally-py-redis-")
        self.proc = subprocess.Popen([exe, "--port", str(self.port), "--bind", "127.0.0.1",
                                      "--save", "", "--appendonly", "no", "--dir", self.dir],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.2).close()
                return
            except OSError:
                time.sleep(0.02)
        raise RuntimeError("redis-server did not listen on %d" % self.port)

    def uri(self) -> str:
        return "redis://127.0.0.1:%d" % self.port

    def stop(self):
        self.proc.kill()
        self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


class Tally:
    """`tally serve --store STORE --port 0`; ``url`` is where it listens."""

    def __init__(self, store: str, *extra: str):
        jar = os.environ.get("TALLY_JAR", DEFAULT_JAR)
        if not os.path.exists(jar):
            raise RuntimeError("no server jar at %s: build it (mvn -pl tally-server -am package "
                               "-DskipTests) or set TALLY_JAR" % jar)
        java = os.environ.get("JAVA", "java")
        self.process = Process([java, "-jar", jar, "serve", "--store", store, "--port", "0"]
                               + list(extra), lambda line: line.startswith("listening on"),
                               "tally.log")
        self.url = self.process.first_line[len("listening on "):].rstrip("/")

    def stop(self):
        self.process.stop()


def store_names():
    """The stores the suite runs on, without starting any: file, and redis unless
    TALLY_PY_SKIP_REDIS=1 says this machine has none. Starting waits for start_store, so a
    module that only imports this (a process the suite spawns) starts nothing."""
    return ["file"] + ([] if os.environ.get("TALLY_PY_SKIP_REDIS") == "1" else ["redis"])


def start_store(name):
    """(store URI, what to stop afterwards, or None) for a name of store_names()."""
    if name == "file":
        return "file:" + tempfile.mkdtemp(prefix="tally-py-file-"), None
    redis = Redis()
    return redis.uri(), redis
