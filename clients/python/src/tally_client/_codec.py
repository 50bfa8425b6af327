"""What the client and the asyncio client share: paths, bodies, and turning answers into values."""

import datetime
import uuid
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union
from urllib.parse import quote

from .errors import Denied, TallyError, from_problem

Number = Union[int, float]
Duration = Union[int, float, datetime.timedelta, str]


def key_path(prefix: str, key: str, action: str = "") -> str:
    """A key is one path segment: every '/', '%', '?', '#', space and non-ASCII byte encoded."""
    if not isinstance(key, str) or not key:
        raise ValueError("a key is a non-empty string, not %r" % (key,))
    return prefix + quote(key, safe="") + action


def duration(d: Optional[Duration]) -> Optional[str]:
    """Seconds (int or float), a timedelta, or the server's own form ('500ms', '30s', '40d')."""
    if d is None or isinstance(d, str):
        return d
    if isinstance(d, datetime.timedelta):
        d = d.total_seconds()
    if isinstance(d, bool) or not isinstance(d, (int, float)):
        raise ValueError("a duration is seconds, a timedelta or a string like '30s', not %r" % (d,))
    if d < 0:
        raise ValueError("a duration cannot be negative: %r" % (d,))
    millis = round(d * 1000)
    return "%dms" % millis


def new_idempotency_key() -> str:
    return str(uuid.uuid4())


class Decision:
    """A limiter's answer: whether the permits were granted, what is left, and when to retry."""

    __slots__ = ("name", "allowed", "permits", "remaining", "limit", "retry_after",
                 "reset_after", "raw")

    def __init__(self, raw: Dict[str, Any]):
        self.raw = raw
        self.name = raw.get("name")
        self.allowed = bool(raw.get("allowed"))
        self.permits = raw.get("permits")
        self.remaining = raw.get("remaining")
        self.limit = raw.get("limit")
        retry = raw.get("retryAfterMillis")
        #: seconds until the same request fits; None when it never can (more than the limit)
        self.retry_after = None if retry is None else retry / 1000.0
        self.reset_after = (raw.get("resetAfterMillis") or 0) / 1000.0

    def __bool__(self) -> bool:
        return self.allowed

    def __repr__(self) -> str:
        return ("Decision(allowed=%s, remaining=%s, limit=%s, retry_after=%s)"
                % (self.allowed, self.remaining, self.limit, self.retry_after))


def limits_body(limits: Sequence[Dict[str, Any]]) -> Dict[str, Any]:
    if not limits:
        raise ValueError("a limiter needs at least one limit, e.g. token_bucket(100, '1m')")
    return {"limit": limits[0]} if len(limits) == 1 else {"limits": list(limits)}


def value(answer, key: str) -> Any:
    """The value of a counter answer, or the error it carries."""
    if answer.status == 200:
        return answer.json()["value"]
    raise error(answer)


def error(answer) -> TallyError:
    try:
        problem = answer.json() or {}
    except ValueError:
        problem = {"detail": answer.body[:200].decode("utf-8", "replace")}
    if answer.status == 429:
        decision = Decision(problem)
        return Denied(str(problem.get("detail", "denied")), decision, problem)
    return from_problem(answer.status, problem)


def decision(answer) -> Decision:
    if answer.status in (200, 429):
        return Decision(answer.json())
    raise error(answer)


def transaction_ops(ops: Sequence[Dict[str, Any]]) -> List[Dict[str, Any]]:
    out = []
    for op in ops:
        if "op" not in op or "key" not in op:
            raise ValueError("a transaction op is a dict with 'op' and 'key', e.g. "
                             "{'op': 'incr', 'key': 'a', 'delta': 2}; got %r" % (op,))
        op = dict(op)
        if "ttl" in op:
            op["ttl"] = duration(op["ttl"])
        out.append(op)
    return out


class ConcurrencyRoutes:
    """The requests of a concurrency limit's calls, as (method, path, body): one shape for the
    blocking and the asyncio client."""

    def __init__(self, name: str, max_permits: int):
        self._base = key_path("/v1/concurrency/", name)
        self._max = max_permits

    def acquire(self, ttl: Duration, weight: int, max_wait: Duration) -> Tuple[str, str, Dict[str, Any]]:
        return "POST", self._base + "/acquire", {"maxPermits": self._max, "weight": weight,
                                                 "ttl": duration(ttl), "maxWait": duration(max_wait)}

    def renew(self, lease_id: str, ttl: Duration) -> Tuple[str, str, Dict[str, Any]]:
        return "POST", self._lease(lease_id, "/renew"), {"maxPermits": self._max, "ttl": duration(ttl)}

    def release(self, lease_id: str) -> Tuple[str, str, Dict[str, Any]]:
        return "POST", self._lease(lease_id, "/release"), {"maxPermits": self._max}

    def in_use(self) -> Tuple[str, str, None]:
        return "GET", self._base + "?maxPermits=%d" % self._max, None

    def _lease(self, lease_id: str, action: str) -> str:
        return self._base + key_path("/leases/", lease_id, action)


def settled(answer) -> Decision:
    """The limiter's state after a settlement or cancellation, or the error (ReservationGone)."""
    if answer.status != 200:
        raise error(answer)
    return Decision(answer.json())


class ReservationRoutes:
    """The requests of a limiter's reservations, as (method, path, body): one shape for the
    blocking and the asyncio client. Every request carries the limiter's limits, as ``/try``'s."""

    def __init__(self, name: str, limits: Dict[str, Any]):
        self.name = name
        self._base = key_path("/v1/limiters/", name)
        self._limits = limits

    def reserve(self, estimate: int, ttl: Duration) -> Tuple[str, str, Dict[str, Any]]:
        return "POST", self._base + "/reserve", dict(self._limits, estimate=estimate,
                                                     ttl=duration(ttl))

    def settle(self, reservation_id: Optional[str], actual: int) -> Tuple[str, str, Dict[str, Any]]:
        return "POST", self._closing(reservation_id, "/settle"), dict(self._limits, actual=actual)

    def cancel(self, reservation_id: Optional[str]) -> Tuple[str, str, Dict[str, Any]]:
        return "POST", self._closing(reservation_id, "/cancel"), dict(self._limits)

    def _closing(self, reservation_id: Optional[str], action: str) -> str:
        if reservation_id is None:
            raise RuntimeError("this reservation was refused, so it holds nothing to settle or "
                               "cancel: check granted, and reserve again after retry_after")
        return self._base + key_path("/reservations/", reservation_id, action)


class Reserved:
    """What a reserve answered, the same for the blocking and the asyncio reservation: the
    limiter's decision on the estimate, and its fields."""

    id: Optional[str]
    decision: Decision
    estimate: int

    @property
    def granted(self) -> bool:
        """Whether the estimate was taken (and is held until settled); refused, nothing is held."""
        return self.decision.allowed

    @property
    def remaining(self) -> Optional[int]:
        return self.decision.remaining

    @property
    def limit(self) -> Optional[int]:
        return self.decision.limit

    @property
    def retry_after(self) -> Optional[float]:
        return self.decision.retry_after

    @property
    def reset_after(self) -> float:
        return self.decision.reset_after

    def __repr__(self) -> str:
        return ("%s(id=%r, estimate=%s, granted=%s, remaining=%s)"
                % (type(self).__name__, self.id, self.estimate, self.granted,
                   self.remaining))
