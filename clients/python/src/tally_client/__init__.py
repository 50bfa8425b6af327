"""Tally's Python client: exact counters and rate limits shared by every process and host,
over the HTTP API of ``tally serve``. Standard library only.

    from tally_client import Client, limits
    tally = Client("http://127.0.0.1:8080")
    tally.incr("views:episode:512")
    api = tally.limiter("api:user:42", limits.token_bucket(100, "1m"))
    if not api.try_acquire(): ...
"""

from . import limits
from ._codec import Decision
from .aio import AsyncClient, AsyncConcurrencyLimit, AsyncReservation, AsyncReservationHandle
from .client import Batch, Client, ConcurrencyLimit, Limiter, Reservation, ReservationHandle
from .errors import (BadRequest, Conflict, Denied, LeaseGone, NoSuchRoute, NotFound,
                     ReservationGone, TallyError, Timeout, Unauthorized, Unavailable, Unsupported)
from .facades import Counter, DistributedCounter, token_bucket_limiter

__all__ = ["AsyncClient", "AsyncConcurrencyLimit", "AsyncReservation", "AsyncReservationHandle", "BadRequest",
           "Batch", "Client", "ConcurrencyLimit", "Conflict", "Counter", "Decision", "Denied", "DistributedCounter",
           "LeaseGone", "Limiter", "NoSuchRoute", "NotFound", "Reservation", "ReservationGone", "ReservationHandle",
           "TallyError", "Timeout", "Unauthorized", "Unavailable", "Unsupported", "limits",
           "token_bucket_limiter"]
__version__ = "0.2.0"
