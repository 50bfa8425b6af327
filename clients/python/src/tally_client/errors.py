"""Every failure of a call is one of these; each carries the server's problem body when there is one."""

from typing import Any, Dict, Optional


class TallyError(Exception):
    """A call failed. ``status`` is the HTTP status (0 when no answer came), ``code`` the
    server's ``error`` member (``bad_request``, ``conflict``...), ``problem`` the whole body."""

    def __init__(self, message: str, status: int = 0, code: str = "",
                 problem: Optional[Dict[str, Any]] = None):
        super().__init__(message)
        self.status = status
        self.code = code
        self.problem = problem or {}

    @property
    def maybe_applied(self) -> bool:
        """Whether the operation may have taken effect although no answer said so."""
        return False


class BadRequest(TallyError, ValueError):
    """The request was refused before anything changed: bad JSON, bad duration, key too long,
    an Idempotency-Key reused for another operation (422), a body too large (413)."""


class Unauthorized(TallyError, PermissionError):
    """Missing or wrong bearer token (401), or refused as a browser request (403)."""


class NotFound(TallyError, KeyError):
    """No such counter. A ``KeyError``, so ``except KeyError`` reads as it does on a dict."""

    def __str__(self) -> str:  # KeyError quotes its argument; keep the message readable
        return Exception.__str__(self)


class NoSuchRoute(TallyError):
    """The server has no such route: a client newer than the server, or a wrong base URL."""


class Conflict(TallyError):
    """Overflow past 64 bits, an integer operation on a floating counter, or a name that holds
    the other kind (a limiter's state used as a counter)."""


class Unsupported(TallyError):
    """The store cannot do this (501), e.g. rate limiters on a store without them."""


class Denied(TallyError):
    """A limiter refused. ``decision`` says how many remain and when to retry."""

    def __init__(self, message: str, decision: "Any", problem: Optional[Dict[str, Any]] = None):
        super().__init__(message, 429, "denied", problem)
        self.decision = decision


class LeaseGone(TallyError):
    """A concurrency limit's lease was released or has expired (410): it cannot be renewed, and
    its permits may be another holder's already. Stop the work, or acquire a new lease."""


class ReservationGone(TallyError):
    """A reservation was settled (at another amount), cancelled, or had expired and so was settled
    at its estimate (410): nothing was changed. The same settlement repeated is not refused (it
    answers what the first one answered): reserve again for new work."""


class Unavailable(TallyError):
    """The store could not be reached, or the server is stopping (503): nothing was applied."""


class Timeout(TallyError):
    """No answer in time: the store timed out (504) or the connection was lost mid-call. The
    operation may have applied; retry it with the same idempotency key to be exact."""

    @property
    def maybe_applied(self) -> bool:
        return True


_BY_STATUS = {400: BadRequest, 401: Unauthorized, 403: Unauthorized, 404: NotFound,
              409: Conflict, 410: LeaseGone, 413: BadRequest, 414: BadRequest, 415: BadRequest,
              422: BadRequest, 431: BadRequest, 501: Unsupported, 503: Unavailable,
              504: Timeout, 408: Timeout}
# where one status has several meanings, the server's error code says which
_BY_CODE = {"reservation_gone": ReservationGone}


def from_problem(status: int, problem: Dict[str, Any]) -> TallyError:
    """The exception for a problem answer (RFC 9457) the server sent."""
    code = str(problem.get("error", ""))
    detail = str(problem.get("detail") or problem.get("message") or problem.get("title")
                 or "HTTP %d" % status)
    if status == 404 and code != "not_found":
        return NoSuchRoute(detail, status, code, problem)
    if status == 404 and detail.startswith(("no route", "no limiter action")):
        return NoSuchRoute(detail, status, code, problem)
    cls = _BY_CODE.get(code) or _BY_STATUS.get(status, TallyError)
    return cls(detail, status, code, problem)
