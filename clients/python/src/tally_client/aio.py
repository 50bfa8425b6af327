"""The asyncio client: the same calls as ``Client``, awaited, over a pool of keep-alive
connections (one request at a time on each, as HTTP/1.1 has it)."""

import asyncio
import random
from typing import Any, Dict, List, Optional, Sequence
from urllib.parse import quote, urlsplit

from . import _codec as c
from ._wire import Answer, encode
from .errors import Timeout, Unavailable


class AsyncClient:
    def __init__(self, url: str = "http://127.0.0.1:8080", token: Optional[str] = None,
                 timeout: float = 5.0, retries: int = 0, backoff: float = 0.05,
                 max_connections: int = 32):
        parts = urlsplit(url)
        if parts.scheme != "http":
            raise ValueError("Tally's client speaks http:// (got %r)" % url)
        self._host = parts.hostname or "127.0.0.1"
        self._port = parts.port or 80
        self._head = "Host: %s:%d\r\nUser-Agent: tally-client-python\r\n" % (self._host, self._port)
        if token:
            self._head += "Authorization: Bearer %s\r\n" % token
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self._idle: List[Any] = []
        self._slots = asyncio.Semaphore(max_connections)

    async def close(self) -> None:
        while self._idle:
            _, writer = self._idle.pop()
            writer.close()

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    async def _send(self, method: str, path: str, data: Optional[bytes],
                    key: Optional[str]) -> Answer:
        lines = "%s %s HTTP/1.1\r\n%s" % (method, path, self._head)
        if key is not None:
            lines += 'Idempotency-Key: "%s"\r\n' % key
        if data is not None:
            lines += "Content-Type: application/json\r\nContent-Length: %d\r\n" % len(data)
        request = (lines + "\r\n").encode("latin-1") + (data or b"")
        async with self._slots:
            if self._idle:
                reader, writer = self._idle.pop()
            else:
                try:
                    reader, writer = await asyncio.wait_for(
                        asyncio.open_connection(self._host, self._port), self.timeout)
                except (OSError, asyncio.TimeoutError) as e:
                    raise Unavailable("cannot connect to Tally at %s:%d: %s"
                                      % (self._host, self._port, e))
            try:
                writer.write(request)
                answer = await asyncio.wait_for(_read(reader), self.timeout)
            except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError, ValueError) as e:
                writer.close()
                raise Timeout("no whole answer from Tally to %s %s (%s); the operation may "
                              "have applied" % (method, path, e or type(e).__name__))
            if answer.headers.get("connection", "").lower() == "close":
                writer.close()
            else:
                self._idle.append((reader, writer))
            return answer

    async def _call(self, method: str, path: str, body: Optional[Dict[str, Any]] = None,
                    key: Optional[str] = None, keyed: bool = True,
                    repeatable: bool = False) -> Answer:
        """``keyed`` and ``repeatable`` as ``Client._call``'s."""
        data = None if body is None else encode(body)
        changing = method != "GET"
        if changing and key is None and self.retries > 0 and keyed and not repeatable:
            key = c.new_idempotency_key()
        attempt = 0
        while True:
            try:
                answer = await self._send(method, path, data, key)
                if answer.status in (503, 504) and attempt < self.retries and (
                        key is not None or not changing or repeatable):
                    raise c.error(answer)
                return answer
            except (Unavailable, Timeout):
                if attempt >= self.retries or (changing and key is None and not repeatable):
                    raise
            attempt += 1
            await asyncio.sleep(self.backoff * (2 ** (attempt - 1)) * (0.5 + random.random()))

    async def incr(self, key: str, delta: c.Number = 1, default: c.Number = 0,
                   must_exist: bool = False, idempotency_key: Optional[str] = None) -> c.Number:
        body: Dict[str, Any] = {"delta": delta, "default": default, "mustExist": must_exist}
        return c.value(await self._call("POST", c.key_path("/v1/counters/", key, "/incr"), body,
                                        idempotency_key), key)

    async def decr(self, key: str, delta: c.Number = 1, default: c.Number = 0,
                   must_exist: bool = False, idempotency_key: Optional[str] = None) -> c.Number:
        body: Dict[str, Any] = {"delta": delta, "default": default, "mustExist": must_exist}
        return c.value(await self._call("POST", c.key_path("/v1/counters/", key, "/decr"), body,
                                        idempotency_key), key)

    async def get(self, key: str, default: Any = None) -> Any:
        answer = await self._call("GET", c.key_path("/v1/counters/", key))
        if answer.status == 404 and answer.json().get("error") == "not_found":
            return default
        return c.value(answer, key)

    async def put(self, key: str, value: c.Number, ttl: Optional[c.Duration] = None) -> c.Number:
        body: Dict[str, Any] = {"value": value}
        if ttl is not None:
            body["ttl"] = c.duration(ttl)
        return c.value(await self._call("PUT", c.key_path("/v1/counters/", key), body), key)

    async def pop(self, key: str, default: Any = None) -> Any:
        answer = await self._call("POST", c.key_path("/v1/counters/", key, "/pop"))
        if answer.status == 404 and answer.json().get("error") == "not_found":
            return default
        return c.value(answer, key)

    async def keys(self, prefix: str = "", limit: int = 100000) -> List[str]:
        answer = await self._call("GET", "/v1/counters?prefix=%s&limit=%d"
                                  % (quote(prefix, safe=""), limit))
        if answer.status != 200:
            raise c.error(answer)
        return list(answer.json()["keys"])

    async def transaction(self, ops: Sequence[Dict[str, Any]]) -> List[Any]:
        answer = await self._call("POST", "/v1/transactions", {"ops": c.transaction_ops(ops)})
        if answer.status != 200:
            raise c.error(answer)
        return [r.get("value", r.get("deleted")) for r in answer.json()["results"]]

    async def decide(self, name: str, *limits: Dict[str, Any], permits: int = 1) -> c.Decision:
        body = c.limits_body(limits)
        body["permits"] = permits
        return c.decision(await self._call("POST", c.key_path("/v1/limiters/", name, "/try"), body))

    async def try_acquire(self, name: str, *limits: Dict[str, Any], permits: int = 1) -> bool:
        return (await self.decide(name, *limits, permits=permits)).allowed

    async def reserve(self, name: str, *limits: Dict[str, Any], estimate: int, ttl: c.Duration,
                      id: Optional[str] = None) -> "AsyncReservation":
        """Takes ``estimate`` permits now and holds them until settled, cancelled or ``ttl``
        passes, as ``Limiter.reserve``; refused, ``granted`` is False and nothing is held."""
        routes = c.ReservationRoutes(name, c.limits_body(limits))
        answer = await self._call(*routes.reserve(estimate, ttl), key=id)
        return AsyncReservation(self, routes, estimate, c.decision(answer))

    def reservation(self, name: str, reservation_id: str,
                    *limits: Dict[str, Any]) -> "AsyncReservationHandle":
        """The reservation ``reservation_id`` of limiter ``name``, to settle or cancel from
        elsewhere, as ``Limiter.reservation``."""
        return AsyncReservationHandle(self, c.ReservationRoutes(name, c.limits_body(limits)),
                                      reservation_id)

    def concurrency(self, name: str, max_permits: int) -> "AsyncConcurrencyLimit":
        """A concurrency limit of ``max_permits`` on ``name``, as ``Client.concurrency``."""
        return AsyncConcurrencyLimit(self, name, max_permits)


class AsyncConcurrencyLimit:
    """``ConcurrencyLimit``'s calls, awaited. The routes take no Idempotency-Key, so these calls
    are never retried with one (``retries`` skips them)."""

    def __init__(self, client: AsyncClient, name: str, max_permits: int):
        self._client = client
        self._routes = c.ConcurrencyRoutes(name, max_permits)
        self.name = name
        self.max_permits = max_permits

    async def _ok(self, method: str, path: str, body: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        answer = await self._client._call(method, path, body, keyed=False)
        if answer.status != 200:
            raise c.error(answer)
        return answer.json()

    async def acquire(self, ttl: c.Duration, weight: int = 1,
                      max_wait: c.Duration = 0) -> Dict[str, Any]:
        """Leases ``weight`` permits for ``ttl``, waiting on the server up to ``max_wait``; raises
        Denied if no permits came in time."""
        return await self._ok(*self._routes.acquire(ttl, weight, max_wait))

    async def renew(self, lease_id: str, ttl: c.Duration) -> Dict[str, Any]:
        """Extends the lease to ``ttl`` from now; raises LeaseGone if it was released or expired."""
        return await self._ok(*self._routes.renew(lease_id, ttl))

    async def release(self, lease_id: str) -> bool:
        """Gives the permits back: False if the lease had been released or had expired."""
        return bool((await self._ok(*self._routes.release(lease_id)))["released"])

    async def in_use(self) -> int:
        """The permits held by unexpired leases."""
        return int((await self._ok(*self._routes.in_use()))["inUse"])


class AsyncReservationHandle:
    """``ReservationHandle``'s calls, awaited; retried without an Idempotency-Key, as there."""

    def __init__(self, client: AsyncClient, routes: c.ReservationRoutes,
                 reservation_id: Optional[str]):
        self._client = client
        self._routes = routes
        self.name = routes.name
        self.id = reservation_id

    async def settle(self, actual: int) -> c.Decision:
        """Closes the reservation at its real cost, as ``ReservationHandle.settle``."""
        return c.settled(await self._client._call(*self._routes.settle(self.id, actual),
                                                  repeatable=True))

    async def cancel(self) -> c.Decision:
        """Gives the whole estimate back (``settle(0)``)."""
        return c.settled(await self._client._call(*self._routes.cancel(self.id), repeatable=True))


class AsyncReservation(c.Reserved, AsyncReservationHandle):
    """``Reservation``, with its ``settle`` and ``cancel`` awaited."""

    def __init__(self, client: AsyncClient, routes: c.ReservationRoutes, estimate: int,
                 decision: c.Decision):
        super().__init__(client, routes, decision.raw.get("reservation"))  # none when refused
        self.estimate = estimate
        self.decision = decision


async def _read(reader: asyncio.StreamReader) -> Answer:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0][9:12])
    headers = {}
    for line in lines[1:]:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    body = await reader.readexactly(length) if length else b""
    return Answer(status, headers, body)
