"""HTTP/1.1 over one keep-alive socket per thread.

A call costs a few tens of microseconds on the network and the server, so the client's own
Python is a large share of it; what keeps that share small:

- the request is written in one send, from bytes the caller may have built once (see
  ``Client.incr``);
- the answer is taken with ``recv`` straight into bytes: a small one arrives whole in one
  call, and only the two header fields the client acts on (``Content-Length``,
  ``Connection``) are looked for; the rest are parsed only if someone reads ``headers``
  (``http.client`` parses every header through email.parser, at about twice the cost per call;
  a buffered file's ``readline`` per header line costs a few microseconds more);
- on Linux the socket is blocking with the kernel's own send and receive timeouts
  (``SO_SNDTIMEO``, ``SO_RCVTIMEO``): ``socket.settimeout`` would make Python ``poll()`` before
  every send and every receive, two more system calls (about 4 µs) on every call. Elsewhere the
  client uses ``settimeout``, with the same meaning: at most ``timeout`` seconds waiting for any
  one send or receive.
"""

import errno
import json
import socket
import struct
import sys
import threading
import time
from typing import Any, Dict, Optional, Tuple
from urllib.parse import urlsplit

from .errors import BadRequest, Timeout, TallyError, Unavailable

_IDLE_SECONDS = 30.0  # under the server's 60 s default --idle-timeout, so it never closes first
_RECV = 4096  # a counter's answer is under 100 bytes; bigger answers read on to Content-Length
_MAX_HEAD = 65536
_KERNEL_TIMEOUTS = sys.platform.startswith("linux")
_TIMED_OUT = (errno.EAGAIN, errno.EWOULDBLOCK)  # what a kernel timeout makes recv and send raise


class Answer:
    """One HTTP answer: the status, the body, and the header block (parsed when read)."""

    __slots__ = ("status", "body", "head", "_headers")

    def __init__(self, status: int, headers: Optional[Dict[str, str]], body: bytes,
                 head: bytes = b""):
        self.status = status
        self.body = body
        self.head = head
        self._headers = headers

    @property
    def headers(self) -> Dict[str, str]:
        """Header names in lower case, to their values."""
        if self._headers is None:
            self._headers = _parse_headers(self.head)
        return self._headers

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


def _parse_headers(head: bytes) -> Dict[str, str]:
    headers = {}
    for line in head.decode("latin-1").split("\r\n")[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return headers


class _Connection:
    __slots__ = ("sock", "rest", "last_used", "used")

    def __init__(self, host: str, port: int, timeout: Optional[float]):
        sock = socket.create_connection((host, port), timeout=timeout)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if _KERNEL_TIMEOUTS and timeout is not None:
                # a zero timeval means "wait for ever": keep at least one microsecond
                seconds, micros = divmod(max(1, round(timeout * 1e6)), 1000000)
                tv = struct.pack("@ll", seconds, micros)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, tv)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, tv)
                sock.settimeout(None)
        except OSError:
            sock.close()
            raise
        self.sock = sock
        self.rest = b""  # bytes received past the last answer (none, from a server that behaves)
        self.last_used = time.monotonic()
        self.used = False

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


class Wire:
    """Sends requests to one server; safe to share between threads (each has its own socket)."""

    def __init__(self, url: str, token: Optional[str], timeout: Optional[float]):
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

    def json_prefix(self, method: str, path: str) -> bytes:
        """A request with a JSON body, up to the value of its Content-Length: what ``exchange``
        sends is this, the length, a blank line and the body."""
        return ("%s %s HTTP/1.1\r\n%sContent-Type: application/json\r\nContent-Length: "
                % (method, path, self._head)).encode("latin-1")

    def request(self, method: str, path: str, body: Optional[bytes] = None,
                idempotency_key: Optional[str] = None, repeatable: bool = False) -> Answer:
        """``repeatable``: the request applies once however often it is sent, key or none."""
        lines = "%s %s HTTP/1.1\r\n%s" % (method, path, self._head)
        if idempotency_key is not None:
            lines += 'Idempotency-Key: "%s"\r\n' % idempotency_key
        if body is not None:
            lines += "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body)
            data = lines.encode("latin-1") + body
        else:
            data = (lines + "\r\n").encode("latin-1")
        status, body, head = self.exchange(data, method == "GET" or idempotency_key is not None
                                           or repeatable)
        return Answer(status, None, body, head)

    def exchange(self, data: bytes, safe: bool) -> Tuple[int, bytes, bytes]:
        """Sends one whole request and reads its answer: its status, body and header block.
        ``safe``: sending it twice changes nothing more than sending it once (a GET, or a
        request with an Idempotency-Key), so it may be sent again on a fresh socket when a
        kept-alive one turns out closed."""
        local = self._local
        for attempt in (0, 1):
            conn = getattr(local, "conn", None)
            # the time before sending stands for the time the answer came: the idle check errs
            # early, and costs one clock read per call
            now = time.monotonic()
            if conn is None or now - conn.last_used > _IDLE_SECONDS:
                conn = self._connect(conn)
            reused = conn.used
            try:
                conn.sock.sendall(data)
                status, body, head, close = _read(conn)
            except (OSError, _Closed) as e:
                conn.close()
                local.conn = None
                nothing_came = isinstance(e, _Closed) and e.before_status
                if attempt == 0 and reused and nothing_came and safe:
                    continue  # a kept-alive socket the server had closed: send it afresh
                if isinstance(e, socket.timeout) or getattr(e, "errno", None) in _TIMED_OUT:
                    raise Timeout("no answer from Tally within %.3g s; the operation may have "
                                  "applied" % self.timeout)
                raise Timeout("the connection to Tally was lost during %s (%s); the "
                              "operation may have applied" % (_request_line(data), e))
            except TallyError:
                conn.close()
                local.conn = None
                raise
            if close:
                conn.close()
                local.conn = None
            else:
                conn.used = True
                conn.last_used = now
            return status, body, head
        raise AssertionError("unreachable")

    def _connect(self, stale: Optional[_Connection]) -> _Connection:
        if stale is not None:
            stale.close()
        try:
            conn = _Connection(self.host, self.port, self.timeout)
        except OSError as e:
            self._local.conn = None
            raise Unavailable("cannot connect to Tally at %s:%d: %s" % (self.host, self.port, e))
        self._local.conn = conn
        return conn


def _request_line(data: bytes) -> str:
    """'POST /v1/counters/k/incr' from a request's bytes, for messages."""
    return data[:data.find(b" HTTP/1.1\r\n")].decode("latin-1")


class _Closed(Exception):
    def __init__(self, before_status: bool):
        super().__init__("the server closed the connection")
        self.before_status = before_status


# How Tally's server begins a successful answer. An answer that starts so, whose next field
# ends the header, and that came whole in one receive, is taken with five operations on bytes;
# every other goes the general way. (Each operation on bytes costs about as much as the
# interpreter's whole work for the send and the receive: counted, not guessed.)
_OK_JSON = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: "
_OK_LENGTH_AT = len(_OK_JSON)


def _read(conn: _Connection) -> Tuple[int, bytes, bytes, bool]:
    """The next answer on the connection: status, body, header block, and whether the server
    will close the connection after it."""
    recv = conn.sock.recv
    buf = conn.rest
    if buf:
        conn.rest = b""
    else:
        buf = recv(_RECV)
        if not buf:
            raise _Closed(True)
        if buf.startswith(_OK_JSON):
            end = buf.find(b"\r\n\r\n", _OK_LENGTH_AT)
            if end > 0:
                try:
                    length = int(buf[_OK_LENGTH_AT:end])  # not digits: more fields follow
                except ValueError:
                    length = -1
                if len(buf) == end + 4 + length:
                    return 200, buf[end + 4:], buf[:end], False
    end = buf.find(b"\r\n\r\n")
    while end < 0:
        if len(buf) > _MAX_HEAD:
            raise TallyError("an answer's header is over %d bytes: not Tally?" % _MAX_HEAD)
        more = recv(_RECV)
        if not more:
            raise _Closed(False)
        buf += more
        end = buf.find(b"\r\n\r\n", max(0, len(buf) - len(more) - 3))
    try:
        status = int(buf[9:12])
    except ValueError:
        raise TallyError("not an HTTP answer: %r" % buf[:80])
    head = buf[:end]
    low = head.lower()
    start = end + 4
    i = low.find(b"\r\ncontent-length:")
    if i >= 0:
        j = low.find(b"\r\n", i + 17)
        need = start + int(head[i + 17:j] if j >= 0 else head[i + 17:])
        if len(buf) < need:
            buf = _read_to(conn.sock, buf, need)
        body = buf[start:need]
        rest = buf[need:]
    elif b"\r\ntransfer-encoding:" in low and b"chunked" in low:
        body, rest = _Chunks(conn.sock, buf, start).body()
    else:
        body, rest = b"", buf[start:]
    if rest:
        conn.rest = rest
    close = False
    i = low.find(b"\r\nconnection:")
    if i >= 0:
        j = low.find(b"\r\n", i + 13)
        close = (low[i + 13:j] if j >= 0 else low[i + 13:]).strip() == b"close"
    return status, body, head, close


def _read_to(sock: socket.socket, buf: bytes, need: int) -> bytes:
    """``buf`` and what follows it on the socket, ``need`` bytes in all (a large body: received
    into one buffer of its size, not grown by concatenation)."""
    out = bytearray(need)
    out[:len(buf)] = buf
    view = memoryview(out)
    got = len(buf)
    while got < need:
        n = sock.recv_into(view[got:])
        if n == 0:
            raise _Closed(False)
        got += n
    return bytes(out)


class _Chunks:
    """A chunked body (Tally sends Content-Length; a proxy in front may not)."""

    def __init__(self, sock: socket.socket, buf: bytes, pos: int):
        self.sock = sock
        self.data = bytearray(buf[pos:])
        self.pos = 0

    def _fill(self) -> None:
        more = self.sock.recv(65536)
        if not more:
            raise _Closed(False)
        self.data += more

    def _line(self) -> bytes:
        while True:
            i = self.data.find(b"\r\n", self.pos)
            if i >= 0:
                line = bytes(self.data[self.pos:i])
                self.pos = i + 2
                return line
            self._fill()

    def _take(self, n: int) -> bytes:
        while len(self.data) - self.pos < n:
            self._fill()
        out = bytes(self.data[self.pos:self.pos + n])
        self.pos += n
        return out

    def body(self) -> Tuple[bytes, bytes]:
        out = bytearray()
        while True:
            size = int(self._line().split(b";")[0], 16)
            if size == 0:
                while self._line():
                    pass  # trailer fields, up to the blank line
                return bytes(out), bytes(self.data[self.pos:])
            out += self._take(size)
            self._line()


def encode(obj: Any) -> bytes:
    """JSON as the server reads it; NaN and infinities are refused here, where the stack shows
    which call sent them."""
    try:
        return json.dumps(obj, separators=(",", ":"), allow_nan=False).encode("utf-8")
    except ValueError as e:
        raise BadRequest("%s: Tally's counters hold finite numbers" % e, 0, "bad_request")
