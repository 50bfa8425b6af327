"""The client against a real `tally serve`, on a file: store and on Redis: every call, its
errors, and exact totals from several OS processes on the same counter and limiter."""

import asyncio
import multiprocessing
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

import server  # noqa: E402
from tally_client import (AsyncClient, BadRequest, Client, Conflict, Counter, Denied,  # noqa: E402
                          DistributedCounter, LeaseGone, NoSuchRoute, NotFound, ReservationGone,
                          limits)

PROCESSES = 4


def _count(url, key, n):
    client = Client(url)
    for _ in range(n):
        client.incr(key)
    client.close()


def _take(url, name, n, out):
    client = Client(url)
    limiter = client.limiter(name, limits.token_bucket(100, "1h"))
    out.put(sum(1 for _ in range(n) if limiter.try_acquire()))


class Contract:
    """The cases every store runs; subclasses say which store."""

    url = ""

    def setUp(self):
        self.client = Client(self.url)
        self.prefix = "%s:%s:" % (type(self).__name__, self._testMethodName)

    def tearDown(self):
        self.client.close()

    def key(self, name):
        return self.prefix + name

    def test_concurrency_leases(self):
        exports = self.client.concurrency(self.key("exports"), 2)
        first = exports.acquire("1m", weight=2)
        self.assertEqual(first["weight"], 2)
        self.assertEqual(exports.in_use(), 2)
        with self.assertRaises(Denied):
            exports.acquire("1m", max_wait=0.05)
        renewed = exports.renew(first["id"], "1h")
        self.assertGreater(renewed["expiresInMillis"], 60000)
        self.assertTrue(exports.release(first["id"]))
        self.assertFalse(exports.release(first["id"]))  # twice: harmless
        self.assertEqual(exports.in_use(), 0)
        with self.assertRaises(LeaseGone):
            exports.renew(first["id"], "1m")
        second = exports.acquire(60)
        self.assertGreater(second["fencingToken"], first["fencingToken"])
        with self.assertRaises(BadRequest):
            exports.acquire("1m", weight=3)

    def test_counter_calls(self):
        c, k = self.client, self.key("views")
        self.assertEqual(c.incr(k), 1)
        self.assertEqual(c.incr(k, 5), 6)
        self.assertEqual(c.decr(k, 2), 4)
        self.assertEqual(c.get(k), 4)
        self.assertEqual(c.get(self.key("absent"), 0), 0)
        self.assertEqual(c.put(k, 40, ttl=3600), 40)
        self.assertAlmostEqual(c.ttl(k), 3600, delta=60)
        self.assertFalse(c.add(k, 1))
        self.assertTrue(c.add(self.key("fresh"), 7, ttl=60))
        self.assertEqual(c.pop(k), 40)
        self.assertIsNone(c.get(k))
        self.assertEqual(c.pop(k, "gone"), "gone")
        self.assertTrue(c.delete(self.key("fresh")))
        self.assertFalse(c.delete(self.key("fresh")))

    def test_keys_with_slashes_and_spaces_are_one_segment(self):
        c = self.client
        for name in ("req:path:/a", "a b", "50%", "q?x#y", "plus+sign", "ünïcode",
                     'q"value":7}', "back\\slash"):
            self.assertEqual(c.incr(self.key(name), 41), 41, name)
            self.assertEqual(c.get(self.key(name), 0), 41, name)
            self.assertEqual(c.decr(self.key(name)), 40, name)
        self.assertEqual(sorted(c.keys(self.key("req:"))), [self.key("req:path:/a")])

    def test_floats(self):
        c, k = self.client, self.key("f")
        self.assertEqual(c.incr(k, 0.5), 0.5)
        self.assertEqual(c.incr(k, 0.25), 0.75)
        self.assertEqual(c.incr(k, 1), 1.75)  # an integer delta, a floating answer
        self.assertEqual(c.decr(k, 2), -0.25)

    def test_plain_incr_and_decr_answer_what_the_server_holds(self):
        c, k = self.client, self.key("plain")
        self.assertEqual([c.incr(k) for _ in range(3)], [1, 2, 3])
        self.assertEqual(c.incr(k, 10), 13)
        self.assertEqual(c.incr(k, -20), -7)
        self.assertEqual(c.decr(k, 3), -10)
        self.assertEqual(c.incr(k, 2 ** 40), 2 ** 40 - 10)
        with self.assertRaises(ValueError):
            c.incr("")
        with self.assertRaises(Conflict):  # past 64 bits: the server's 409, typed
            c.incr(k, 2 ** 63 - 1)
        self.assertEqual(c.get(k), 2 ** 40 - 10)

    def test_missing_counter_is_a_key_error(self):
        with self.assertRaises(KeyError):
            self.client.incr(self.key("nope"), must_exist=True)
        with self.assertRaises(NotFound):
            self.client.ttl(self.key("nope"))

    def test_errors_are_typed_and_change_nothing(self):
        c, name = self.client, self.key("lim")
        c.limiter(name, limits.token_bucket(5, "1m")).try_acquire()
        with self.assertRaises(Conflict):
            c.incr(name)
        with self.assertRaises(BadRequest):
            c.incr(self.key("nan"), float("nan"))
        with self.assertRaises(BadRequest):
            c.put(self.key("badttl"), 1, ttl="4x")
        self.assertIsNone(c.get(self.key("badttl")))
        with self.assertRaises(NoSuchRoute):
            answer = c._call("GET", "/v1/nope")
            from tally_client import _codec
            raise _codec.error(answer)

    def test_idempotency_key_applies_once(self):
        c, k = self.client, self.key("paid")
        self.assertEqual(c.incr(k, 5, idempotency_key="order-1-" + self.prefix), 5)
        self.assertEqual(c.incr(k, 5, idempotency_key="order-1-" + self.prefix), 5)
        self.assertEqual(c.get(k), 5)
        with self.assertRaises(BadRequest):  # the same key on another operation: 422
            c.incr(k, 6, idempotency_key="order-1-" + self.prefix)

    def test_retrying_client_sends_keys(self):
        c = Client(self.url, retries=3)
        self.assertEqual(c.incr(self.key("r")), 1)
        self.assertEqual(c.incr(self.key("r")), 2)
        c.close()

    def test_batch_and_transaction(self):
        c = self.client
        with c.batch() as b:
            for i in range(100):
                b.incr(self.key("batch"), 2)
            b.get(self.key("batch"))
        self.assertEqual(b.results[-1], 200)
        results = c.transaction([{"op": "incr", "key": self.key("t")},
                                 {"op": "delete", "key": self.key("t")},
                                 {"op": "get", "key": self.key("t")}])
        self.assertEqual(results, [1, True, None])

    def test_limiter(self):
        lim = self.client.limiter(self.key("api"), limits.token_bucket(3, "1m"))
        self.assertEqual([lim.try_acquire() for _ in range(4)], [True, True, True, False])
        d = lim.decide()
        self.assertFalse(d.allowed)
        self.assertEqual(d.remaining, 0)
        self.assertGreater(d.retry_after, 0)
        with self.assertRaises(Denied) as denied:
            lim.acquire(max_wait=0)
        self.assertFalse(denied.exception.decision.allowed)
        self.assertEqual(lim.refund(2).remaining, 2)
        self.assertEqual(lim.peek().remaining, 2)
        self.assertEqual(lim.reset().remaining, 3)

    def test_reservation_settles_at_the_real_cost(self):
        tokens = self.client.limiter(self.key("tokens"), limits.token_bucket(10, "1h"))
        below = tokens.reserve(6, "5m")
        self.assertEqual((below.granted, below.estimate, below.remaining), (True, 6, 4))
        self.assertTrue(below.id)
        self.assertEqual(below.settle(2).remaining, 8)  # the surplus of 4 given back
        self.assertEqual(tokens.peek().remaining, 8)
        above = tokens.reserve(8, "5m")
        self.assertEqual(above.remaining, 0)
        settled = above.settle(12)  # 4 beyond the estimate: into debt, 4 tokens below empty
        self.assertEqual((settled.allowed, settled.remaining), (True, 0))
        self.assertAlmostEqual(settled.reset_after, 14 * 360, delta=5)  # 6 minutes a token
        later = tokens.decide()
        self.assertFalse(later.allowed)
        self.assertAlmostEqual(later.retry_after, 5 * 360, delta=5)  # the debt, then one token

    def test_reservation_closes_once(self):
        tokens = self.client.limiter(self.key("tokens"), limits.token_bucket(10, "1h"))
        r = tokens.reserve(5, "5m")
        self.assertEqual(r.settle(3).remaining, 7)
        tokens.decide(2)  # another caller moves the limiter on
        self.assertEqual(r.settle(3).remaining, 7)  # a retry: the first answer, applied once
        self.assertEqual(tokens.peek().remaining, 5)
        with self.assertRaises(ReservationGone) as gone:
            r.settle(4)
        self.assertEqual((gone.exception.status, gone.exception.code), (410, "reservation_gone"))
        with self.assertRaises(ReservationGone):
            r.cancel()
        self.assertEqual(tokens.peek().remaining, 5)  # nothing changed

    def test_reservation_cancelled_and_settled_by_id_elsewhere(self):
        tokens = self.client.limiter(self.key("tokens"), limits.token_bucket(10, "1h"))
        r = tokens.reserve(4, "5m")
        self.assertEqual(r.cancel().remaining, 10)
        with self.assertRaises(ReservationGone):
            tokens.reservation(r.id).settle(4)
        r = tokens.reserve(4, "5m")
        with Client(self.url, retries=2) as other:  # a process that has only the id
            there = other.limiter(self.key("tokens"), limits.token_bucket(10, "1h"))
            handle = there.reservation(r.id)
            self.assertEqual(handle.settle(1).remaining, 9)
        self.assertEqual(tokens.peek().remaining, 9)

    def test_reservation_not_settled_in_its_ttl_is_settled_at_its_estimate(self):
        tokens = self.client.limiter(self.key("tokens"), limits.token_bucket(10, "1h"))
        r = tokens.reserve(3, 0.2)
        time.sleep(0.5)  # the server's clock: nothing to inject over HTTP
        with self.assertRaises(ReservationGone):
            r.settle(1)
        self.assertEqual(tokens.peek().remaining, 7)  # the estimate stays taken

    def test_refused_reservation_holds_nothing(self):
        tokens = self.client.limiter(self.key("tokens"), limits.token_bucket(10, "1h"))
        tokens.decide(8)
        r = tokens.reserve(5, "5m")
        self.assertEqual((r.granted, r.id, r.remaining), (False, None, 2))
        self.assertGreater(r.retry_after, 0)
        with self.assertRaisesRegex(RuntimeError, "refused"):
            r.settle(1)
        self.assertEqual(tokens.peek().remaining, 2)

    def test_reserve_retried_with_its_id_takes_once(self):
        tokens = self.client.limiter(self.key("tokens"), limits.token_bucket(10, "1h"))
        rid = "req-" + self._testMethodName + "-" + type(self).__name__
        first = tokens.reserve(4, "5m", id=rid)
        retry = tokens.reserve(4, "5m", id=rid)
        self.assertEqual((first.id, retry.id), (rid, rid))
        self.assertEqual((first.remaining, retry.remaining), (6, 6))
        self.assertEqual(tokens.peek().remaining, 6)
        with Client(self.url, retries=2) as retrying:  # its own key for each reserve: the id
            there = retrying.limiter(self.key("tokens"), limits.token_bucket(10, "1h"))
            drawn = there.reserve(1, 60)
        self.assertEqual(len(drawn.id), 36)
        self.assertEqual(retry.settle(2).remaining, 7)

    def test_processes_share_counter_and_limiter_exactly(self):
        ctx = multiprocessing.get_context("spawn")
        key = self.key("shared")
        procs = [ctx.Process(target=_count, args=(self.url, key, 250)) for _ in range(PROCESSES)]
        for p in procs:
            p.start()
        for p in procs:
            p.join()
        self.assertEqual(self.client.get(key), PROCESSES * 250)
        out = ctx.Queue()
        procs = [ctx.Process(target=_take, args=(self.url, self.key("bucket"), 60, out))
                 for _ in range(PROCESSES)]
        for p in procs:
            p.start()
        granted = sum(out.get() for _ in procs)
        for p in procs:
            p.join()
        self.assertEqual(granted, 100)  # 240 tries on a bucket of 100, not refilled in an hour

    def test_asyncio_client(self):
        async def run():
            async with AsyncClient(self.url) as a:
                await asyncio.gather(*(a.incr(self.key("async")) for _ in range(200)))
                granted = await asyncio.gather(*(a.try_acquire(
                    self.key("alim"), limits.token_bucket(10, "1h")) for _ in range(30)))
                return await a.get(self.key("async")), sum(granted)
        self.assertEqual(asyncio.run(run()), (200, 10))

    def test_asyncio_concurrency_leases(self):
        async def run():
            async with AsyncClient(self.url, retries=2) as a:
                jobs = a.concurrency(self.key("ajobs"), 3)
                leases = await asyncio.gather(*(jobs.acquire("1m", max_wait=0) for _ in range(3)))
                with self.assertRaises(Denied):
                    await jobs.acquire("1m", max_wait=0.05)
                held = await jobs.in_use()
                renewed = await jobs.renew(leases[0]["id"], "1h")
                released = [await jobs.release(lease["id"]) for lease in leases]
                again = await jobs.release(leases[0]["id"])
                with self.assertRaises(LeaseGone):
                    await jobs.renew(leases[0]["id"], "1m")
                return (held, renewed["expiresInMillis"] > 60000, released, again,
                        len({lease["fencingToken"] for lease in leases}), await jobs.in_use())
        self.assertEqual(asyncio.run(run()), (3, True, [True, True, True], False, 3, 0))

    def test_asyncio_reservations(self):
        async def run():
            async with AsyncClient(self.url) as a:
                name, limit = self.key("atokens"), limits.token_bucket(10, "1h")
                reservations = await asyncio.gather(*(a.reserve(name, limit, estimate=3, ttl="5m")
                                                      for _ in range(4)))
                granted = [r for r in reservations if r.granted]
                first = await granted[0].settle(1)
                by_id = await a.reservation(name, granted[1].id, limit).cancel()
                with self.assertRaises(ReservationGone):
                    await a.reservation(name, granted[1].id, limit).settle(2)
                return (len(granted), first.remaining, by_id.remaining,
                        (await a.decide(name, limit)).remaining)
        self.assertEqual(asyncio.run(run()), (3, 3, 6, 5))

    def test_facades(self):
        cache = Counter(self.client)
        for _ in range(3):
            cache.incr(self.key("views:episode:512"))
        pending = {k: cache.pop(k, 0) for k in cache.iterkeys(prefix=self.key("views:"))}
        self.assertEqual(pending, {self.key("views:episode:512"): 3})
        self.assertFalse(self.key("views:episode:512") in cache)
        with self.assertRaises(KeyError):
            cache.incr(self.key("x"), default=None)
        counter = DistributedCounter(self.client, prefix=self.prefix)
        counter.put("mykey", 0)
        self.assertEqual(counter.increment("mykey", 10), 10)
        self.assertEqual(counter.increment("mykey", 5), 15)
        self.assertEqual(counter.decrement("mykey", 14), 1)
        self.assertEqual(counter.increment("someotherkey", 0, 10), 10)
        self.assertEqual(counter.increment("yetanotherkey", 1, 10), 11)


def _suite_for(name):
    class OnStore(Contract, unittest.TestCase):
        @classmethod
        def setUpClass(cls):
            cls.tally = server.Tally(_STARTED[name][0])
            cls.url = cls.tally.url

        @classmethod
        def tearDownClass(cls):
            cls.tally.stop()
    OnStore.__name__ = OnStore.__qualname__ = "On" + name.capitalize()
    return OnStore


# The stores start in setUpModule, not on import: the processes the multi-process cases spawn
# import this module too, and each would start (and never stop) a redis-server of its own.
_STARTED = {}
for _name in server.store_names():
    globals()["On" + _name.capitalize()] = _suite_for(_name)


def setUpModule():
    for name in server.store_names():
        _STARTED[name] = server.start_store(name)


def tearDownModule():
    for _, cleanup in _STARTED.values():
        if cleanup is not None:
            cleanup.stop()


if __name__ == "__main__":
    unittest.main()
