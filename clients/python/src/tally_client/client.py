"""The synchronous client: counters, limiters, transactions."""

import random
import time
from typing import Any, Dict, Iterator, List, Optional, Sequence

from . import _codec as c
from ._wire import Answer, Wire, encode
from .errors import NotFound, TallyError, Timeout, Unavailable

_RETRYABLE = (Unavailable, Timeout)
_CACHED_KEYS = 4096
_DELTA_1 = b'11\r\n\r\n{"delta":1}'


class Client:
    """One Tally server. Thread-safe: each thread keeps its own keep-alive connection.

    ``retries`` > 0 makes every changing call carry an Idempotency-Key and retry it on a lost
    connection, a 503 or a 504, with exponential backoff and jitter: the store remembers the key,
    so a retry of an applied call applies nothing and answers what the first one answered.
    """

    def __init__(self, url: str = "http://127.0.0.1:8080", token: Optional[str] = None,
                 timeout: float = 5.0, retries: int = 0, backoff: float = 0.05):
        self._wire = Wire(url, token, timeout)
        self.retries = retries
        self.backoff = backoff
        # per key, the bytes of an incr (decr) request up to its Content-Length
        self._incr_heads: Dict[str, bytes] = {}
        self._decr_heads: Dict[str, bytes] = {}

    def close(self) -> None:
        """Closes this thread's connection (others close with their threads' sockets)."""
        self._wire.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- the one place a request is sent -------------------------------------------------------

    def _call(self, method: str, path: str, body: Optional[Dict[str, Any]] = None,
              idempotency_key: Optional[str] = None, keyed: bool = True,
              repeatable: bool = False) -> Answer:
        """``keyed`` False: the route takes no Idempotency-Key, so none is made up for retries;
        ``repeatable``: the request applies once however often it is sent (a settlement names
        its reservation and amount), so it needs no key, and is retried without one."""
        data = None if body is None else encode(body)
        changing = method != "GET"
        if changing and idempotency_key is None and self.retries > 0 and keyed and not repeatable:
            idempotency_key = c.new_idempotency_key()
        attempt = 0
        while True:
            try:
                answer = self._wire.request(method, path, data, idempotency_key, repeatable)
                if answer.status in (503, 504) and attempt < self.retries and (
                        idempotency_key is not None or not changing or repeatable):
                    raise c.error(answer)
                return answer
            except _RETRYABLE:
                if attempt >= self.retries or (changing and idempotency_key is None
                                               and not repeatable):
                    raise
            attempt += 1
            time.sleep(self.backoff * (2 ** (attempt - 1)) * (0.5 + random.random()))

    # -- counters ------------------------------------------------------------------------------

    def incr(self, key: str, delta: c.Number = 1, default: c.Number = 0,
             must_exist: bool = False, idempotency_key: Optional[str] = None) -> c.Number:
        """Adds ``delta`` (a missing counter starts at ``default``) and returns the new value."""
        if (delta.__class__ is int and key.__class__ is str and default == 0 and not must_exist
                and idempotency_key is None and not self.retries):
            return self._plain_step(key, delta, self._incr_heads, "/incr")
        return self._step(key, "/incr", delta, default, must_exist, idempotency_key)

    def decr(self, key: str, delta: c.Number = 1, default: c.Number = 0,
             must_exist: bool = False, idempotency_key: Optional[str] = None) -> c.Number:
        """Subtracts ``delta`` (a missing counter starts at ``default``, not negated)."""
        if (delta.__class__ is int and key.__class__ is str and default == 0 and not must_exist
                and idempotency_key is None and not self.retries):
            return self._plain_step(key, delta, self._decr_heads, "/decr")
        return self._step(key, "/decr", delta, default, must_exist, idempotency_key)

    def _plain_step(self, key: str, delta: int, heads: Dict[str, bytes], action: str) -> c.Number:
        """The common call, ``incr(key)`` with an integer delta and nothing else: the request
        is the key's cached head and a body formatted without the json module, the value read
        from the answer without it. What it sends and what it raises are ``_step``'s."""
        head = heads.get(key)
        if head is None:
            if len(heads) >= _CACHED_KEYS:
                heads.clear()  # keys that come and go (per user, per minute) must not pile up
            head = heads[key] = self._wire.json_prefix("POST", c.key_path("/v1/counters/", key,
                                                                          action))
        if delta == 1:
            data = head + _DELTA_1
        else:
            body = b'{"delta":%d}' % delta
            data = head + b"%d\r\n\r\n" % len(body) + body
        status, body, head = self._wire.exchange(data, False)
        if status == 200:
            i = body.rfind(b'"value":')  # {"key":"...","value":N}; a quote in the key is \"
            if i > 0:
                try:
                    return int(body[i + 8:-1])
                except ValueError:
                    pass  # a floating counter, or a server that added a member after value
        return c.value(Answer(status, None, body, head), key)

    def _step(self, key, action, delta, default, must_exist, idempotency_key):
        body: Dict[str, Any] = {"delta": delta}
        if default != 0:
            body["default"] = default
        if must_exist:
            body["mustExist"] = True
        return c.value(self._call("POST", c.key_path("/v1/counters/", key, action), body,
                                  idempotency_key), key)

    def get(self, key: str, default: Any = None) -> Any:
        """The counter's value, or ``default`` if there is none."""
        answer = self._call("GET", c.key_path("/v1/counters/", key))
        if answer.status == 404 and answer.json().get("error") == "not_found":
            return default
        return c.value(answer, key)

    def put(self, key: str, value: c.Number, ttl: Optional[c.Duration] = None,
            idempotency_key: Optional[str] = None) -> c.Number:
        body: Dict[str, Any] = {"value": value}
        if ttl is not None:
            body["ttl"] = c.duration(ttl)
        return c.value(self._call("PUT", c.key_path("/v1/counters/", key), body,
                                  idempotency_key), key)

    def add(self, key: str, value: c.Number, ttl: Optional[c.Duration] = None,
            idempotency_key: Optional[str] = None) -> bool:
        """Sets the counter only if it is absent; True if it was set."""
        body: Dict[str, Any] = {"value": value}
        if ttl is not None:
            body["ttl"] = c.duration(ttl)
        answer = self._call("POST", c.key_path("/v1/counters/", key, "/add"), body,
                            idempotency_key)
        if answer.status != 200:
            raise c.error(answer)
        return bool(answer.json()["added"])

    def pop(self, key: str, default: Any = None, idempotency_key: Optional[str] = None) -> Any:
        """Reads and deletes the counter atomically; ``default`` if there was none."""
        answer = self._call("POST", c.key_path("/v1/counters/", key, "/pop"), None,
                            idempotency_key)
        if answer.status == 404 and answer.json().get("error") == "not_found":
            return default
        return c.value(answer, key)

    def delete(self, key: str, idempotency_key: Optional[str] = None) -> bool:
        answer = self._call("DELETE", c.key_path("/v1/counters/", key), None, idempotency_key)
        if answer.status == 404 and answer.json().get("error") == "not_found":
            return False
        if answer.status != 200:
            raise c.error(answer)
        return True

    def touch(self, key: str, ttl: Optional[c.Duration]) -> None:
        """Sets the counter's time to live (None: never expires). KeyError if it is absent."""
        answer = self._call("POST", c.key_path("/v1/counters/", key, "/touch"),
                            {"ttl": c.duration(ttl)})
        if answer.status != 200:
            raise c.error(answer)

    def ttl(self, key: str) -> Optional[float]:
        """Seconds left to live, or None if it never expires. KeyError if it is absent."""
        answer = self._call("GET", c.key_path("/v1/counters/", key, "/ttl"))
        if answer.status != 200:
            raise c.error(answer)
        millis = answer.json().get("ttlMillis")
        return None if millis is None else millis / 1000.0

    def keys(self, prefix: str = "", limit: int = 100000) -> List[str]:
        """The counters' keys that start with ``prefix``, sorted (at most ``limit``)."""
        from urllib.parse import quote
        answer = self._call("GET", "/v1/counters?prefix=%s&limit=%d" % (quote(prefix, safe=""),
                                                                         limit))
        if answer.status != 200:
            raise c.error(answer)
        return list(answer.json()["keys"])

    # -- transactions and batches --------------------------------------------------------------

    def transaction(self, ops: Sequence[Dict[str, Any]],
                    idempotency_key: Optional[str] = None) -> List[Any]:
        """Applies every op or none, in one request; returns each op's value (None for a get of
        an absent counter). Ops: ``{'op': 'incr'|'decr'|'put'|'delete'|'get', 'key': ..}``."""
        answer = self._call("POST", "/v1/transactions", {"ops": c.transaction_ops(ops)},
                            idempotency_key)
        if answer.status != 200:
            raise c.error(answer)
        return [r.get("value", r.get("deleted")) for r in answer.json()["results"]]

    def batch(self) -> "Batch":
        """Collects operations and sends them in one request (applied together)."""
        return Batch(self)

    # -- limiters ------------------------------------------------------------------------------

    def limiter(self, name: str, *limits: Dict[str, Any]) -> "Limiter":
        """A rate limiter ``name`` with ``limits`` (see ``tally_client.limits``)."""
        return Limiter(self, name, limits)

    def concurrency(self, name: str, max_permits: int) -> "ConcurrencyLimit":
        """At most ``max_permits`` permits held at once on ``name``, by leases that expire."""
        return ConcurrencyLimit(self, name, max_permits)

    def health(self) -> Dict[str, Any]:
        answer = self._call("GET", "/healthz")
        if answer.status != 200:
            raise c.error(answer)
        return answer.json()


class Batch:
    """Operations sent in one request when the ``with`` block ends (or on ``send()``); their
    values are in ``results`` afterwards. They apply together or not at all."""

    def __init__(self, client: Client):
        self._client = client
        self._ops: List[Dict[str, Any]] = []
        self.results: List[Any] = []

    def incr(self, key: str, delta: c.Number = 1, default: c.Number = 0) -> "Batch":
        self._ops.append({"op": "incr", "key": key, "delta": delta, "default": default})
        return self

    def decr(self, key: str, delta: c.Number = 1, default: c.Number = 0) -> "Batch":
        self._ops.append({"op": "decr", "key": key, "delta": delta, "default": default})
        return self

    def put(self, key: str, value: int, ttl: Optional[c.Duration] = None) -> "Batch":
        op: Dict[str, Any] = {"op": "put", "key": key, "value": value}
        if ttl is not None:
            op["ttl"] = ttl
        self._ops.append(op)
        return self

    def get(self, key: str) -> "Batch":
        self._ops.append({"op": "get", "key": key})
        return self

    def delete(self, key: str) -> "Batch":
        self._ops.append({"op": "delete", "key": key})
        return self

    def send(self) -> List[Any]:
        ops, self._ops = self._ops, []
        self.results = self._client.transaction(ops) if ops else []
        return self.results

    def __enter__(self) -> "Batch":
        return self

    def __exit__(self, exc_type, *rest: Any) -> None:
        if exc_type is None:
            self.send()


class Limiter:
    """One rate limiter. Every call is one atomic step on the store."""

    def __init__(self, client: Client, name: str, limits: Sequence[Dict[str, Any]]):
        self._client = client
        self.name = name
        self._limits = c.limits_body(limits)
        self._reservations = c.ReservationRoutes(name, self._limits)

    def _post(self, action: str, extra: Optional[Dict[str, Any]] = None) -> Answer:
        body = dict(self._limits)
        if extra:
            body.update(extra)
        return self._client._call("POST", c.key_path("/v1/limiters/", self.name, action), body)

    def decide(self, permits: int = 1) -> c.Decision:
        """Takes ``permits`` if they are there now; the decision either way (no exception)."""
        return c.decision(self._post("/try", {"permits": permits}))

    def try_acquire(self, permits: int = 1) -> bool:
        return self.decide(permits).allowed

    def acquire(self, permits: int = 1, max_wait: c.Duration = 0) -> c.Decision:
        """Takes ``permits``, waiting on the server up to ``max_wait``; raises Denied if they
        cannot be had in time."""
        answer = self._post("/acquire", {"permits": permits, "maxWait": c.duration(max_wait)})
        if answer.status != 200:
            raise c.error(answer)
        return c.Decision(answer.json())

    def peek(self) -> c.Decision:
        """What is available, taking nothing."""
        return c.decision(self._post("/peek"))

    def refund(self, permits: int) -> c.Decision:
        return c.decision(self._post("/refund", {"permits": permits}))

    def reset(self) -> c.Decision:
        return c.decision(self._post("/reset"))

    def reconfigure(self) -> c.Decision:
        """Stores this handle's limits for every process, keeping what was consumed."""
        return c.decision(self._post("/reconfigure"))

    def reserve(self, estimate: int, ttl: c.Duration, id: Optional[str] = None) -> "Reservation":
        """Takes ``estimate`` permits now, for work whose real cost is known only when it ends,
        and holds them until ``settle(actual)`` or ``cancel()``, or until ``ttl`` passes: then
        the reservation is settled at its estimate by itself. Refused (``granted`` False), it
        takes and holds nothing, and its decision says when to retry. ``id`` (1 to 120 letters,
        digits and ``-_.:``) names the reservation, so that a reserve retried with it, from any
        process, takes once and answers the same; without one the server draws an id (a
        ``Client(retries=...)`` sends one of its own, for its retries)."""
        answer = self._client._call(*self._reservations.reserve(estimate, ttl), idempotency_key=id)
        return Reservation(self._client, self._reservations, estimate, c.decision(answer))

    def reservation(self, reservation_id: str) -> "ReservationHandle":
        """The reservation ``reservation_id`` of this limiter, to settle or cancel from another
        thread, process or host. Reads nothing: one closed already is refused when settled."""
        return ReservationHandle(self._client, self._reservations, reservation_id)


class ReservationHandle:
    """A reservation named by its ``id``: settles or cancels it. It is closed once, by its
    settlement, its cancellation or its expiry; closing it again raises ReservationGone and
    changes nothing, except the very same settlement repeated (a retry of one whose answer was
    lost), which answers what the first one did. So these calls are retried by a
    ``Client(retries=...)`` without an Idempotency-Key."""

    def __init__(self, client: Client, routes: c.ReservationRoutes, reservation_id: Optional[str]):
        self._client = client
        self._routes = routes
        self.name = routes.name
        self.id = reservation_id

    def settle(self, actual: int) -> c.Decision:
        """Closes the reservation at its real cost: gives back what the estimate took beyond
        ``actual``, or takes what it cost beyond the estimate, into the limiter's debt if need
        be (later requests wait it out). The limiter's state afterwards."""
        return c.settled(self._client._call(*self._routes.settle(self.id, actual), repeatable=True))

    def cancel(self) -> c.Decision:
        """Gives the whole estimate back (``settle(0)``), for work that was not done."""
        return c.settled(self._client._call(*self._routes.cancel(self.id), repeatable=True))


class Reservation(c.Reserved, ReservationHandle):
    """Permits reserved by ``Limiter.reserve``: ``granted``, ``id`` (None when refused),
    ``estimate``, the ``decision`` on the estimate and its fields (``remaining``,
    ``retry_after``...), and ``settle``/``cancel``."""

    def __init__(self, client: Client, routes: c.ReservationRoutes, estimate: int,
                 decision: c.Decision):
        super().__init__(client, routes, decision.raw.get("reservation"))  # none when refused
        self.estimate = estimate
        self.decision = decision


class ConcurrencyLimit:
    """A concurrency limit: leases of permits, each renewed or released by its ``id``. The routes
    take no Idempotency-Key, so these calls are never retried with one (``retries`` skips them)."""

    def __init__(self, client: Client, name: str, max_permits: int):
        self._client = client
        self._routes = c.ConcurrencyRoutes(name, max_permits)
        self.name = name
        self.max_permits = max_permits

    def _ok(self, method: str, path: str, body: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        answer = self._client._call(method, path, body, keyed=False)
        if answer.status != 200:
            raise c.error(answer)
        return answer.json()

    def acquire(self, ttl: c.Duration, weight: int = 1, max_wait: c.Duration = 0) -> Dict[str, Any]:
        """Leases ``weight`` permits for ``ttl``, waiting on the server up to ``max_wait``: the
        lease (``id``, ``fencingToken``, ``weight``, ``expiresAt``, ``expiresInMillis``); raises
        Denied if no permits came in time."""
        return self._ok(*self._routes.acquire(ttl, weight, max_wait))

    def renew(self, lease_id: str, ttl: c.Duration) -> Dict[str, Any]:
        """Extends the lease to ``ttl`` from now; raises LeaseGone if it was released or expired."""
        return self._ok(*self._routes.renew(lease_id, ttl))

    def release(self, lease_id: str) -> bool:
        """Gives the permits back: False if the lease had been released or had expired."""
        return bool(self._ok(*self._routes.release(lease_id))["released"])

    def in_use(self) -> int:
        """The permits held by unexpired leases."""
        return int(self._ok(*self._routes.in_use())["inUse"])


def iterkeys(client: Client, prefix: str = "") -> Iterator[str]:
    return iter(client.keys(prefix))
