"""andal.Cache, the per-process local cache: read-through, bounds, follow-the-log, min_version,
read-repair, stale serving, counters, and a listener killed during 500 invalidations."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator
from datetime import timedelta

import psycopg
import pytest
from conftest import wait_for

from andal.cache import Cache


@pytest.fixture
def db(dsn: str) -> Iterator[psycopg.Connection]:
    with psycopg.connect(dsn, autocommit=True) as c:
        yield c


def put(c: psycopg.Connection, key: str, value: str) -> int:
    return c.execute("select cache.put(key => %s, value => %s::jsonb)", (key, value)).fetchone()[0]


def shared(c: psycopg.Connection, key: str) -> tuple | None:
    return c.execute("select value, version, stale from cache.get(key => %s)", (key,)).fetchone()


def live(cache: Cache) -> None:
    wait_for(cache.live, timeout=10, what="the cache's follower to catch up")


def test_read_through_local_shared_loader(dsn: str, db: psycopg.Connection) -> None:
    """A miss loads from the primary store and fills shared and local; the next read
    is local; another process's cache finds it in the shared cache."""
    loads: list[str] = []

    def loader(key: str) -> dict:
        loads.append(key)
        return {"id": key, "n": 1}

    with Cache(dsn, loader=loader, pool_name="pool-a") as a, Cache(dsn, pool_name="pool-b") as b:
        live(a)
        live(b)
        first = a.lookup("rt:1", job_type="report")
        assert first.source == "loader" and first.value == {"id": "rt:1", "n": 1}
        assert shared(db, "rt:1")[:2] == ({"id": "rt:1", "n": 1}, first.version)
        assert a.lookup("rt:1", job_type="report").source == "local"
        other = b.lookup("rt:1", job_type="mail")
        assert other.source == "shared" and other.version == first.version
        assert b.lookup("rt:1", job_type="mail").source == "local"
        assert loads == ["rt:1"]
        assert a.stats()["pool"] == "pool-a"
        assert a.stats()["by_job_type"]["report"] == {"miss": 1, "local_hit": 1}
        assert b.stats()["by_job_type"]["mail"] == {"shared_hit": 1, "local_hit": 1}
        assert a.hit_ratio("report") == 0.5


def test_bounded_by_entries_and_bytes(dsn: str, db: psycopg.Connection) -> None:
    with Cache(dsn, max_entries=5, max_bytes=10_000) as cache:
        live(cache)
        for i in range(20):
            cache.get(f"b:{i}", loader=lambda k: {"k": k})
        assert len(cache) == 5
        assert [k for k in cache._entries] == [f"b:{i}" for i in range(15, 20)], "LRU order"
    with Cache(dsn, max_entries=1000, max_bytes=2_000) as cache:
        live(cache)
        for i in range(20):
            cache.get(f"big:{i}", loader=lambda k: "x" * 500)
        assert cache.size_bytes <= 2_000
        assert 1 <= len(cache) <= 4


def test_invalidation_reaches_every_local_cache(dsn: str, db: psycopg.Connection) -> None:
    """An invalidation committed anywhere drops the key from every local cache (NOTIFY
    wakes the followers; the next read fetches the new value)."""
    put(db, "inv:k", '"v1"')
    caches = [Cache(dsn) for _ in range(3)]
    try:
        for cache in caches:
            live(cache)
            assert cache.get("inv:k") == "v1"
            assert "inv:k" in cache._entries
        put(db, "inv:k", '"v2"')
        for cache in caches:
            wait_for(lambda c=cache: "inv:k" not in c._entries, timeout=5, what="the drop")
            assert cache.get("inv:k") == "v2"
    finally:
        for cache in caches:
            cache.close()


def test_min_version_refetches_an_older_copy(dsn: str, db: psycopg.Connection) -> None:
    """A job that needs version v is never served an older local copy, even before the
    follower has seen the change."""
    put(db, "mv:k", '"old"')
    with Cache(dsn, follow=False) as cache:
        cache.poll()
        assert cache.get("mv:k") == "old"
        v2 = put(db, "mv:k", '"new"')  # not polled: the local copy is still "old"
        assert cache.get("mv:k") == "old", "without min_version the local copy is served"
        found = cache.lookup("mv:k", min_version=v2, job_type="job")
        assert (found.value, found.source) == ("new", "shared")
        assert cache.stats()["by_job_type"]["job"]["refetch"] == 1
        assert cache.lookup("mv:k", min_version=v2).source == "local"


def test_local_hits_stop_when_the_log_is_not_followed(dsn: str, db: psycopg.Connection) -> None:
    """Without a follower nor polls, local copies are served for max_staleness only."""
    put(db, "st:k", "1")
    with Cache(dsn, follow=False, max_staleness=0.2) as cache:
        cache.poll()
        assert cache.lookup("st:k").source == "shared"
        assert cache.lookup("st:k").source == "local"
        wait_for(lambda: not cache.live(), timeout=5)
        assert cache.lookup("st:k").source == "shared"
        cache.poll()
        assert cache.lookup("st:k").source == "local"


def test_refill_never_overwrites_a_newer_write(dsn: str, db: psycopg.Connection) -> None:
    """A change that commits while a reader is loading wins: the reader's refill is refused
    by the shared cache (if_version) and its copy is not kept locally."""
    put(db, "race:k", '"v1"')
    with Cache(dsn) as cache:
        live(cache)
        db.execute("select cache.invalidate(key => 'race:k')")  # the loader will be called

        def slow_loader(key: str) -> str:
            # Meanwhile the primary store changes and the change is written through. (Count
            # the applied changes first: the follower may apply this one before put returns.)
            applied = cache.stats().get("changes_applied", 0)
            put(db, key, '"v3"')
            wait_for(lambda: cache.stats().get("changes_applied", 0) > applied, timeout=5)
            return "v2 (read before the change)"

        found = cache.lookup("race:k", loader=slow_loader)
        assert found.value == "v2 (read before the change)"
        assert shared(db, "race:k")[0] == "v3", "the newer write was kept"
        assert "race:k" not in cache._entries or cache._entries["race:k"].value == "v3"
        assert cache.get("race:k") == "v3"


def test_read_repair_on_checksum_mismatch(dsn: str, db: psycopg.Connection) -> None:
    """Read-repair: the primary store changed behind the cache's back (no invalidation). A verified
    read compares checksums with the loader, invalidates the shared entry (so every local
    cache drops it) and refills it."""
    store = {"rr:k": {"price": 10}}
    with Cache(dsn, loader=store.get, verify=1.0) as a, Cache(dsn) as b:
        live(a)
        live(b)
        assert a.get("rr:k") == {"price": 10}
        assert b.get("rr:k") == {"price": 10}
        store["rr:k"] = {"price": 12}
        found = a.lookup("rr:k", job_type="pricing")
        assert found.value == {"price": 12}
        assert a.stats()["by_job_type"]["pricing"]["repair"] == 1
        assert shared(db, "rr:k")[:1] == ({"price": 12},)
        assert (
            db.execute(
                "select count(*) from cache.log where key = 'rr:k' and reason = 'read-repair'"
            ).fetchone()[0]
            == 1
        )
        wait_for(lambda: b.get("rr:k") == {"price": 12}, timeout=5, what="b to drop its copy")
        assert a.lookup("rr:k").source in ("local", "shared")
        assert a.stats()["by_job_type"]["-"].get("repair", 0) == 0


def test_revalidate_drops_copies_that_moved(dsn: str, db: psycopg.Connection) -> None:
    """Batched read-repair against the shared cache (cache.validate)."""
    for i in range(5):
        put(db, f"rv:{i}", "1")
    with Cache(dsn, follow=False) as cache:
        cache.poll()
        for i in range(5):
            cache.get(f"rv:{i}")
        put(db, "rv:1", "2")
        put(db, "rv:3", "2")
        assert cache.revalidate() == 2
        assert sorted(cache._entries) == ["rv:0", "rv:2", "rv:4"]


def test_stale_served_flagged_while_one_refresh_runs(dsn: str, db: psycopg.Connection) -> None:
    """Stampede protection through the Python side: with serve_stale, an invalidated key is
    served stale (flagged) and one refresh job refreshes it; jobs asking a min_version are never
    served stale data."""
    put(db, "sw:k", '"v1"')
    calls: list[str] = []

    def loader(key: str) -> str:
        calls.append(key)
        return "v2"

    with Cache(dsn, loader=loader, serve_stale=True, refresh_queue="sw.refresh") as cache:
        live(cache)
        version = db.execute("select cache.invalidate(key => 'sw:k')").fetchone()[0]
        for _ in range(5):
            found = cache.lookup("sw:k")
            assert (found.value, found.stale, found.source) == ("v1", True, "stale")
        assert calls == []
        jobs = db.execute(
            "select id, payload from queue.jobs where queue = 'sw.refresh'"
        ).fetchall()
        assert [p for _, p in jobs] == [{"key": "sw:k"}]
        fresh = cache.lookup("sw:k", min_version=version)
        assert (fresh.value, fresh.stale) == ("v2", False), "a job never gets stale data"
        db.execute("select cache.invalidate(key => 'sw:k')")
        job = db.execute(
            "select job_id, token, payload"
            " from queue.claim(worker => 't', queues => '{sw.refresh}')"
        ).fetchone()

        class Job:
            payload = job[2]

        cache.refresh_job(Job())
        db.execute("select queue.complete(job_id => %s, token => %s)", (job[0], job[1]))
        assert shared(db, "sw:k")[::2] == ("v2", False)
        assert cache.lookup("sw:k").stale is False


def test_listener_killed_during_500_invalidations(dsn: str, db: psycopg.Connection) -> None:
    """The listener's backend is terminated five times while 500 changes are written; local
    copies are filled all along. After each reconnect (replay from the watermark) every read
    returns the current version: 0 stale reads."""
    keys = [f"kill:{i}" for i in range(40)]
    for key in keys:
        put(db, key, "0")
    stop = threading.Event()
    reads = [0]

    with Cache(dsn, poll_interval=1.0) as cache:
        live(cache)

        def reader() -> None:
            rng = random.Random(7)
            while not stop.is_set():
                cache.get(rng.choice(keys))
                reads[0] += 1

        threads = [threading.Thread(target=reader) for _ in range(2)]
        for t in threads:
            t.start()
        stale = 0
        kills = 0
        rng = random.Random(11)
        try:
            for _round in range(5):
                for i in range(100):
                    if i == 30:
                        pid = cache.listener_pid
                        assert db.execute("select pg_terminate_backend(%s)", (pid,)).fetchone()[0]
                        kills += 1
                    key = rng.choice(keys)
                    put(db, key, str(_round * 100 + i + 1))
                round_end = time.monotonic()
                wait_for(
                    lambda t0=round_end: cache.listening and cache.confirmed_at > t0,
                    timeout=15,
                    what="the listener to reconnect and replay",
                )
                truth = dict(
                    db.execute(
                        "select key, version from cache.entries where key = any(%s)", (keys,)
                    ).fetchall()
                )
                for key in keys:
                    if cache.lookup(key).version != truth[key]:
                        stale += 1
        finally:
            stop.set()
            for t in threads:
                t.join()
        assert kills == 5
        assert cache.stats()["reconnects"] >= 5
        assert reads[0] > 100
        assert stale == 0


def test_adaptive_ttl_follows_observed_invalidations(dsn: str, db: psycopg.Connection) -> None:
    """Adaptive TTL with the real clock: a key invalidated every ~50 ms gets the minimum TTL, a key
    never invalidated keeps the default, and a put without ttl uses what was observed.
    (Formula and bounds: pgTAP sql/tests/cache/ttl_for/.)"""
    cfg = db.execute("select min_ttl, default_ttl from cache.config").fetchone()
    put(db, "ttl:calm", "1")
    put(db, "ttl:hot", "1")
    for _ in range(6):
        t = time.monotonic()
        db.execute("select cache.invalidate(key => 'ttl:hot')")
        wait_for(lambda t=t: time.monotonic() - t >= 0.05, interval=0.01)  # space the changes
    hot = db.execute("select mean_interval, changes from cache.entries where key = 'ttl:hot'")
    mean, changes = hot.fetchone()
    assert changes == 6 and 0.04 <= mean <= 1.0
    assert db.execute("select cache.ttl_for(key => 'ttl:hot')").fetchone()[0] == cfg[0]
    assert db.execute("select cache.ttl_for(key => 'ttl:calm')").fetchone()[0] == cfg[1]
    put(db, "ttl:hot", "2")
    left = db.execute("select expires_at - now() from cache.get(key => 'ttl:hot')").fetchone()[0]
    assert cfg[0] - timedelta(seconds=0.5) < left <= cfg[0]


def test_write_in_a_rolled_back_transaction_is_not_kept(dsn: str, db: psycopg.Connection) -> None:
    """Write-through: a handler writes through inside its transaction (conn=...): the shared write
    commits or rolls back with the job; the local copy is only taken from committed data."""
    put(db, "tx:k", '"committed"')
    with Cache(dsn) as cache, psycopg.connect(dsn) as handler_conn:
        live(cache)
        assert cache.get("tx:k") == "committed"
        cache.put("tx:k", "uncommitted", conn=handler_conn)
        assert cache.get("tx:k", conn=handler_conn) == "uncommitted", "its own write"
        assert cache.get("tx:k") == "committed", "everyone else: the committed value"
        assert cache._entries["tx:k"].value == "committed"
        handler_conn.rollback()
        assert cache.get("tx:k") == "committed"
        version = cache.put("tx:k", "second", conn=handler_conn)
        handler_conn.commit()
        wait_for(lambda: cache.lookup("tx:k").version >= version, timeout=5)
        assert cache.get("tx:k") == "second"
