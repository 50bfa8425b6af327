"""The client's HTTP reading against answers `tally serve` does not give but a proxy or a dying
server can: split into pieces, chunked, in capitals, `Connection: close`, large, none at all,
and a kept-alive socket closed under the client. The peer is a socket that sends what each
test scripts."""

import os
import socket
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

from tally_client import Client, Timeout, limits  # noqa: E402
from tally_client import _wire  # noqa: E402


def read_request(conn):
    """One request's bytes from the socket, or b'' if the client closed it."""
    data = b""
    while b"\r\n\r\n" not in data:
        more = conn.recv(65536)
        if not more:
            return b""
        data += more
    head, _, body = data.partition(b"\r\n\r\n")
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
            while len(body) < length:
                body += conn.recv(65536)
    return head + b"\r\n\r\n" + body


def ok(body, *fields):
    head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n" + b"".join(
        f + b"\r\n" for f in fields)
    return head + b"content-length: %d\r\n\r\n" % len(body) + body


class Peer:
    """Accepts connections on a local port; ``answer(n, request)`` gives the bytes to send for
    the n-th request on a connection (None: close it, ... : send nothing and wait)."""

    def __init__(self, answer):
        self.answer = answer
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.url = "http://127.0.0.1:%d" % self.sock.getsockname()[1]
        self.connections = 0
        self.requests = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        n = 0
        with conn:
            while True:
                request = read_request(conn)
                if not request:
                    return
                self.requests.append(request)
                out = self.answer(n, request)
                n += 1
                if out is None:
                    return
                if out is ...:
                    time.sleep(30)
                    return
                for piece in out if isinstance(out, list) else [out]:
                    conn.sendall(piece)

    def close(self):
        self.sock.close()


class WireTest(unittest.TestCase):
    def peer(self, answer):
        p = Peer(answer)
        self.addCleanup(p.close)
        return p

    def client(self, url, **options):
        c = Client(url, **options)
        self.addCleanup(c.close)
        return c

    def test_answer_in_pieces(self):
        whole = ok(b'{"key":"k","value":41}')
        p = self.peer(lambda n, r: [whole[i:i + 1] for i in range(len(whole))])
        c = self.client(p.url)
        self.assertEqual([c.incr("k") for _ in range(3)], [41, 41, 41])
        self.assertEqual(p.connections, 1)

    def test_chunked_answer_in_capitals(self):
        body = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: "
                b"chunked\r\nX-Extra: 1\r\n\r\n5\r\n{\"key\r\n10;ext=1\r\n\":\"k\",\"value\":"
                b"7}\r\n0\r\nTrailer: x\r\n\r\n")
        p = self.peer(lambda n, r: body)
        c = self.client(p.url)
        self.assertEqual(c.incr("k"), 7)
        self.assertEqual(c.get("k"), 7)
        answer = c._call("GET", "/v1/counters/k")
        self.assertEqual(answer.headers["transfer-encoding"], "chunked")
        self.assertEqual(answer.headers["x-extra"], "1")
        self.assertEqual(p.connections, 1)

    def test_connection_close_after_the_length_or_before_it(self):
        for answer in (ok(b'{"key":"k","value":3}', b"Connection: close"),
                       ok(b'{"key":"k","value":3}').replace(
                           b"\r\n\r\n", b"\r\nconnection: close\r\n\r\n")):
            p = self.peer(lambda n, r: answer)
            c = self.client(p.url)
            self.assertEqual(c.incr("k"), 3)
            self.assertEqual(c.incr("k"), 3)
            self.assertEqual(p.connections, 2)  # each answer said the server closes

    def test_large_answer(self):
        keys = ['"k%06d"' % i for i in range(40000)]
        body = ('{"keys":[%s]}' % ",".join(keys)).encode()
        p = self.peer(lambda n, r: ok(body))
        c = self.client(p.url)
        self.assertEqual(len(c.keys()), 40000)
        self.assertEqual(c.keys()[-1], "k039999")

    def test_no_answer_is_a_timeout_that_may_have_applied(self):
        p = self.peer(lambda n, r: ...)
        c = self.client(p.url, timeout=0.3)
        start = time.monotonic()
        with self.assertRaises(Timeout) as e:
            c.incr("k")
        took = time.monotonic() - start
        self.assertTrue(e.exception.maybe_applied)
        self.assertIn("within 0.3 s", str(e.exception))
        self.assertGreaterEqual(took, 0.25)
        self.assertLess(took, 5)

    def test_kept_alive_socket_closed_resends_only_what_is_safe(self):
        value = ok(b'{"key":"k","value":5}')
        p = self.peer(lambda n, r: value if n == 0 else None)  # one answer per connection
        c = self.client(p.url)
        self.assertEqual(c.incr("k"), 5)
        self.assertEqual(c.get("k"), 5)  # the closed socket is found, the GET sent afresh
        self.assertEqual(p.connections, 2)
        with self.assertRaises(Timeout) as e:  # a plain POST may have applied: not resent
            c.incr("k")
        self.assertTrue(e.exception.maybe_applied)
        self.assertIn("POST /v1/counters/k/incr", str(e.exception))
        self.assertEqual(p.connections, 2)
        self.assertEqual(c.incr("k", idempotency_key="once"), 5)  # on a new socket
        self.assertEqual(c.incr("k", idempotency_key="once"), 5)  # resent: it carries a key
        self.assertEqual(p.connections, 4)

    def test_a_settlement_is_retried_and_resent_without_a_key(self):
        settled = ok(b'{"name":"t","allowed":true,"permits":3,"remaining":7,"limit":10,'
                     b'"retryAfterMillis":0,"resetAfterMillis":1,"settled":3,"reservation":"r1"}')
        unavailable = ok(b'{"error":"store_unavailable","status":503}').replace(
            b"200 OK", b"503 Service Unavailable")
        p = self.peer(lambda n, r: unavailable if len(p.requests) == 1 else settled)
        handle = self.client(p.url, retries=2, backoff=0.001).limiter(
            "t", limits.token_bucket(10, "1h")).reservation("r1")
        self.assertEqual(handle.settle(3).remaining, 7)  # the 503 retried, though keyless
        self.assertEqual(len(p.requests), 2)
        self.assertEqual(p.requests[0], p.requests[1])
        self.assertNotIn(b"Idempotency-Key", p.requests[0])
        self.assertTrue(p.requests[0].startswith(
            b"POST /v1/limiters/t/reservations/r1/settle HTTP/1.1\r\n"))
        once = self.peer(lambda n, r: settled if n == 0 else None)  # one answer per connection
        handle = self.client(once.url).limiter("t", limits.token_bucket(10, "1h")).reservation("r1")
        self.assertEqual(handle.settle(3).remaining, 7)
        self.assertEqual(handle.settle(3).remaining, 7)  # the closed socket found: sent afresh
        self.assertEqual(once.connections, 2)

    def test_not_http(self):
        p = self.peer(lambda n, r: b"SSH-2.0-OpenSSH_9.2\r\n\r\n")
        with self.assertRaisesRegex(Exception, "not an HTTP answer"):
            self.client(p.url).incr("k")

    def test_requests_are_what_the_json_path_sends(self):
        p = self.peer(lambda n, r: ok(b'{"key":"a/b","value":1}'))
        c = self.client(p.url, token="t0k")
        c.incr("a/b")
        c.incr("a/b", 5)
        c.decr("a/b", 2)
        c.incr("a/b", 0.5)
        lines = [(r.split(b"\r\n")[0], r.partition(b"\r\n\r\n")[2]) for r in p.requests]
        self.assertEqual(lines, [(b"POST /v1/counters/a%2Fb/incr HTTP/1.1", b'{"delta":1}'),
                                 (b"POST /v1/counters/a%2Fb/incr HTTP/1.1", b'{"delta":5}'),
                                 (b"POST /v1/counters/a%2Fb/decr HTTP/1.1", b'{"delta":2}'),
                                 (b"POST /v1/counters/a%2Fb/incr HTTP/1.1", b'{"delta":0.5}')])
        for r in p.requests:
            self.assertIn(b"\r\nAuthorization: Bearer t0k\r\n", r)
            self.assertIn(b"\r\nContent-Type: application/json\r\n", r)
            body = r.partition(b"\r\n\r\n")[2]
            self.assertIn(b"\r\nContent-Length: %d\r\n" % len(body), r)

    def test_kernel_timeouts_on_linux(self):
        if not _wire._KERNEL_TIMEOUTS:
            self.skipTest("settimeout elsewhere")
        p = self.peer(lambda n, r: ok(b'{"key":"k","value":1}'))
        c = self.client(p.url, timeout=2.5)
        c.incr("k")
        sock = c._wire._local.conn.sock
        self.assertIsNone(sock.gettimeout())  # no poll() before each send and receive
        raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, 16)
        import struct
        self.assertEqual(struct.unpack("@ll", raw), (2, 500000))


if __name__ == "__main__":
    unittest.main()
