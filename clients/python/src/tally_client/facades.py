"""Shapes of the libraries people move from, over one Client: code written against them keeps
its calls, and its counts become exact across every process and host."""

from typing import Any, Iterator, List, Optional

from . import _codec as c
from .client import Client


class Counter:
    """python-diskcache's counting calls: ``incr``, ``decr``, ``get``, ``pop``, ``add(expire=)``,
    ``set``, ``delete``, ``iterkeys(prefix=)`` and ``transact()``. Values are integers or floats;
    ``expire`` is seconds, as diskcache has it."""

    def __init__(self, client: Client):
        self.client = client

    def incr(self, key: str, delta: c.Number = 1, default: Optional[c.Number] = 0) -> c.Number:
        """diskcache raises KeyError when ``default`` is None and the key is absent; so does this."""
        if default is None:
            return self.client.incr(key, delta, must_exist=True)
        return self.client.incr(key, delta, default)

    def decr(self, key: str, delta: c.Number = 1, default: Optional[c.Number] = 0) -> c.Number:
        if default is None:
            return self.client.decr(key, delta, must_exist=True)
        return self.client.decr(key, delta, default)

    def get(self, key: str, default: Any = None) -> Any:
        return self.client.get(key, default)

    def pop(self, key: str, default: Any = None) -> Any:
        return self.client.pop(key, default)

    def add(self, key: str, value: c.Number, expire: Optional[float] = None) -> bool:
        return self.client.add(key, value, ttl=expire)

    def set(self, key: str, value: c.Number, expire: Optional[float] = None) -> bool:
        self.client.put(key, value, ttl=expire)
        return True

    def delete(self, key: str) -> bool:
        return self.client.delete(key)

    def iterkeys(self, prefix: str = "") -> Iterator[str]:
        return iter(self.client.keys(prefix))

    def __getitem__(self, key: str) -> Any:
        marker = object()
        v = self.client.get(key, marker)
        if v is marker:
            raise KeyError(key)
        return v

    def __contains__(self, key: str) -> bool:
        return self.client.get(key) is not None

    def transact(self) -> "Transact":
        """Writes queued in the block and applied together when it ends; unlike diskcache's, a
        read inside the block cannot see them (use ``results`` after it)."""
        return Transact(self.client)


class Transact:
    def __init__(self, client: Client):
        self._batch = client.batch()
        self.results: List[Any] = []

    def incr(self, key: str, delta: c.Number = 1, default: c.Number = 0) -> None:
        self._batch.incr(key, delta, default)

    def decr(self, key: str, delta: c.Number = 1, default: c.Number = 0) -> None:
        self._batch.decr(key, delta, default)

    def set(self, key: str, value: int, expire: Optional[float] = None) -> None:
        self._batch.put(key, value, expire)

    def delete(self, key: str) -> None:
        self._batch.delete(key)

    def __enter__(self) -> "Transact":
        return self

    def __exit__(self, exc_type, *rest: Any) -> None:
        if exc_type is None:
            self.results = self._batch.send()


class DistributedCounter:
    """distributed_counter's ``put``, ``get``, ``increment`` and ``decrement``: each returns the
    new value; ``increment(key, count, default)`` starts a missing key at ``default``."""

    def __init__(self, client: Client, prefix: str = ""):
        self.client = client
        self.prefix = prefix

    def put(self, key: str, value: c.Number) -> None:
        self.client.put(self.prefix + key, value)

    def get(self, key: str) -> Optional[c.Number]:
        return self.client.get(self.prefix + key)

    def increment(self, key: str, count: c.Number = 1, default: c.Number = 0) -> c.Number:
        return self.client.incr(self.prefix + key, count, default)

    def decrement(self, key: str, count: c.Number = 1, default: c.Number = 0) -> c.Number:
        return self.client.decr(self.prefix + key, count, default)


def token_bucket_limiter(client: Client, key: str, capacity: int, per_seconds: float,
                         policy: Optional[str] = None) -> "Any":
    """The WATCH/MULTI token bucket's ``token_bucket(tokens, key)`` as one atomic step:
    ``limiter.try_acquire(tokens)``."""
    from .limits import token_bucket
    return client.limiter(key, token_bucket(capacity, per_seconds, policy=policy))


