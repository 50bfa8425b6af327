"""Limits as the server reads them. Periods are seconds, timedeltas or strings ('1m', '1h')."""

from typing import Any, Dict, Optional

from ._codec import Duration, duration


def _rate(capacity: int, period: Duration, refill: Optional[int] = None) -> str:
    if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity <= 0:
        raise ValueError("a limit's size is a positive integer, not %r" % (capacity,))
    p = period if isinstance(period, str) else duration(period)
    return ("%d:%d/%s" % (capacity, refill, p)) if refill is not None else ("%d/%s" % (capacity, p))


def _with(kind: str, spec: str, policy: Optional[str]) -> Dict[str, Any]:
    limit: Dict[str, Any] = {kind: spec}
    if policy is not None:
        limit["policy"] = policy
    return limit


def token_bucket(capacity: int, period: Duration, refill: Optional[int] = None,
                 policy: Optional[str] = None) -> Dict[str, Any]:
    """``capacity`` tokens refilled at ``capacity`` per ``period`` (or ``refill`` per period)."""
    return _with("tokenBucket", _rate(capacity, period, refill), policy)


def leaky_bucket(capacity: int, period: Duration, policy: Optional[str] = None) -> Dict[str, Any]:
    """``capacity`` deep, drains fully in ``period``."""
    return _with("leakyBucket", _rate(capacity, period), policy)


def gcra(burst: int, rate: int, period: Duration, policy: Optional[str] = None) -> Dict[str, Any]:
    """redis-cell's ``CL.THROTTLE key burst rate period``."""
    return _with("gcra", _rate(burst, period, rate), policy)


def fixed_window(limit: int, window: Duration, policy: Optional[str] = None) -> Dict[str, Any]:
    return _with("fixedWindow", _rate(limit, window), policy)


def sliding_window(limit: int, window: Duration, policy: Optional[str] = None) -> Dict[str, Any]:
    return _with("slidingWindow", _rate(limit, window), policy)


def quota(allowance: int, period: str, zone: Optional[str] = None,
          policy: Optional[str] = None) -> Dict[str, Any]:
    """An allowance per calendar ``period`` ('day', 'week', 'month'...), in ``zone`` (UTC)."""
    spec = "%d/%s" % (allowance, period) + ("@" + zone if zone else "")
    return _with("quota", spec, policy)
