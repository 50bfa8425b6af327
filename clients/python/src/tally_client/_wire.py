"""HTTP/1.1 over one keep-alive socket per thread: the request written in one send, the answer
read through a buffered file. http.client would do, at about twice the cost per call (it parses
every header through email.parser); a client whose calls take tens of microseconds feels that."""

import json
import socket
import threading
import time
from typing import Any, Dict, Optional, Tuple
from urllib.parse import urlsplit

from .errors import BadRequest, Timeout, TallyError, Unavailable

_IDLE_SECONDS = 30.0  # under the server's 60 s default --idle-timeout, so it never closes first


class Answer:
    __slots__ = ("status", "headers", "body")

    def __init__(self, status: int, headers: Dict[str, str], body: bytes):
        self.status = status
        self.headers = headers
        self.body = body

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


class _Connection:
    __slots__ = ("sock", "reader", "last_used", "used")

    def __init__(self, host: str, port: int, timeout: float):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.reader = self.sock.makefile("rb", buffering=65536)
        self.last_used = time.monotonic()
        self.used = False

    def close(self) -> None:
        try:
            self.reader.close()
            self.sock.close()
        except OSError:
            pass


class Wire:
    """Sends requests to one server; safe to share between threads (each has its own socket)."""

    def __init__(self, url: str, token: Optional[str], timeout: float):
        parts = urlsplit(url)
        if parts.scheme != "http":
            raise ValueError("Tally's client speaks http:// (got %r); put a TLS proxy in front "
                             "or use http to a local tally serve" % url)
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or 80
        self.timeout = timeout
        host_field = self.host if ":" not in self.host else "[%s]" % self.host
        head = "Host: %s:%d\r\nUser-Agent: tally-client-python\r\n" % (host_field, self.port)
        if token:
            head += "Authorization: Bearer %s\r\n" % token
        self._head = head
        self._local = threading.local()

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def _connection(self) -> _Connection:
        conn = getattr(self._local, "conn", None)
        if conn is not None and time.monotonic() - conn.last_used > _IDLE_SECONDS:
            conn.close()
            conn = None
        if conn is None:
            try:
                conn = _Connection(self.host, self.port, self.timeout)
            except OSError as e:
                raise Unavailable("cannot connect to Tally at %s:%d: %s" % (self.host, self.port, e))
            self._local.conn = conn
        return conn

    def request(self, method: str, path: str, body: Optional[bytes] = None,
                idempotency_key: Optional[str] = None) -> Answer:
        lines = "%s %s HTTP/1.1\r\n%s" % (method, path, self._head)
        if idempotency_key is not None:
            lines += 'Idempotency-Key: "%s"\r\n' % idempotency_key
        if body is not None:
            lines += "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body)
            data = lines.encode("latin-1") + body
        else:
            data = (lines + "\r\n").encode("latin-1")
        safe = method == "GET" or idempotency_key is not None
        for attempt in (0, 1):
            conn = self._connection()
            reused = conn.used
            try:
                conn.sock.sendall(data)
                answer = _read(conn.reader)
            except (OSError, _Closed) as e:
                conn.close()
                self._local.conn = None
                nothing_came = isinstance(e, _Closed) and e.before_status
                if attempt == 0 and reused and nothing_came and safe:
                    continue  # a kept-alive socket the server had closed: send it afresh
                if isinstance(e, socket.timeout):
                    raise Timeout("no answer from Tally within %.3g s; the operation may have "
                                  "applied" % self.timeout)
                raise Timeout("the connection to Tally was lost during %s %s (%s); the "
                              "operation may have applied" % (method, path, e))
            conn.used = True
            conn.last_used = time.monotonic()
            if answer.headers.get("connection", "").lower() == "close":
                conn.close()
                self._local.conn = None
            return answer
        raise AssertionError("unreachable")


class _Closed(Exception):
    def __init__(self, before_status: bool):
        super().__init__("the server closed the connection")
        self.before_status = before_status


def _read(reader) -> Answer:
    status_line = reader.readline(65537)
    if not status_line:
        raise _Closed(True)
    try:
        status = int(status_line[9:12])
    except ValueError:
        raise TallyError("not an HTTP answer: %r" % status_line[:80])
    headers = {}
    while True:
        line = reader.readline(65537)
        if line in (b"\r\n", b"\n"):
            break
        if not line:
            raise _Closed(False)
        name, _, value = line.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    length = headers.get("content-length")
    if length is not None:
        body = reader.read(int(length))
    elif headers.get("transfer-encoding", "").lower() == "chunked":
        body = _chunks(reader)
    else:
        body = b""
    return Answer(status, headers, body)


def _chunks(reader) -> bytes:
    out = bytearray()
    while True:
        size = int(reader.readline(1024).split(b";")[0], 16)
        if size == 0:
            while reader.readline(65537) not in (b"\r\n", b"\n", b""):
                pass
            return bytes(out)
        out += reader.read(size)
        reader.readline(8)


def encode(obj: Any) -> bytes:
    """JSON as the server reads it; NaN and infinities are refused here, where the stack shows
    which call sent them."""
    try:
        return json.dumps(obj, separators=(",", ":"), allow_nan=False).encode("utf-8")
    except ValueError as e:
        raise BadRequest("%s: Tally's counters hold finite numbers" % e, 0, "bad_request")
