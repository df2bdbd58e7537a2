"""The bound on the shared cache's total size (cache.config.max_total_bytes) with real
concurrent sessions: writers never wait for each other's commit to count their sizes, the
count stays exact whatever writers and the evicting housekeeping interleave (no deadlock),
a full cache stores no new value (cache.put returns null), and the eviction skips entries
another open transaction holds instead of waiting for them."""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator

import psycopg
import pytest

COUNTED = "select coalesce(sum(bytes), 0)::bigint from cache.usage"
SIZES = "select coalesce(sum(size), 0)::bigint from cache.entries"


@pytest.fixture
def bounded(dsn: str, clean: None) -> Iterator[str]:
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("update cache.config set max_value_bytes = 100000, max_total_bytes = 700000")
    try:
        yield dsn
    finally:
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute(
                "update cache.config set max_total_bytes = default, max_value_bytes = default"
            )


def test_writers_do_not_wait_for_each_other(bounded: str) -> None:
    with (
        psycopg.connect(bounded) as a,
        psycopg.connect(bounded, autocommit=True) as b,
    ):
        for i in range(100):  # an open transaction holding its slots of the counter
            a.execute("select cache.put(key => %s, value => '[1, 2, 3]')", (f"a{i}",))
        b.execute("set lock_timeout = '5s'")
        for i in range(100):  # would raise 55P03 if a writer waited for another's commit
            b.execute("select cache.put(key => %s, value => '[1, 2, 3]')", (f"b{i}",))
        a.commit()
        assert a.execute(COUNTED).fetchone() == a.execute(SIZES).fetchone()
        a.commit()


def test_the_count_stays_exact_under_concurrent_writers(bounded: str) -> None:
    errors: list[BaseException] = []
    refused: list[int] = []
    done = threading.Event()

    def writer(seed: int) -> None:
        rnd = random.Random(seed)
        try:
            with psycopg.connect(bounded) as c:
                for _ in range(30):  # transactions of 5 writes, in key order (no deadlock)
                    for key in sorted(f"k{rnd.randrange(40):02d}" for _ in range(5)):
                        if rnd.random() < 0.2:
                            c.execute("select cache.invalidate(key => %s)", (key,))
                            continue
                        got = c.execute(
                            "select cache.put(key => %s, value => to_jsonb(repeat('x', %s)))",
                            (key, rnd.choice((10, 2000, 70000))),
                        ).fetchone()
                        if got == (None,):  # full: not stored
                            refused.append(1)
                    c.commit()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    def housekeeping() -> None:
        try:
            with psycopg.connect(bounded, autocommit=True) as c:
                while not done.is_set():
                    c.execute("select cache.prune()")
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(s,)) for s in range(4)]
    pruner = threading.Thread(target=housekeeping)
    pruner.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    done.set()
    pruner.join(timeout=60)
    assert not any(t.is_alive() for t in [*threads, pruner])
    assert not errors, errors
    with psycopg.connect(bounded, autocommit=True) as c:
        c.execute("select cache.prune()")
        counted, sizes = c.execute(COUNTED).fetchone()[0], c.execute(SIZES).fetchone()[0]
        assert counted == sizes
        assert counted <= 700000, "after the housekeeping the total is under the bound"
        evicted = c.execute("select count(*) from cache.entries where reason = 'evicted'")
        assert evicted.fetchone()[0] > 0 or refused, "the bound was reached"


def test_an_eviction_skips_what_another_transaction_holds(bounded: str) -> None:
    with psycopg.connect(bounded, autocommit=True) as c:
        for i in range(1, 11):  # ten values of 70 kB, k1 expiring first: over the bound
            c.execute(
                "select cache.put(key => %s, value => to_jsonb(repeat('x', 70000)),"
                " ttl => make_interval(mins => %s))",
                (f"k{i:02d}", i),
            )
        full = c.execute("select cache.put(key => 'more', value => '1')").fetchone()
        assert full == (None,), "a full cache stores no new value"
    with (
        psycopg.connect(bounded) as holder,
        psycopg.connect(bounded, autocommit=True) as pruner,
    ):
        holder.execute("select cache.invalidate(key => 'k01')")  # holds k01, keeps its value
        pruner.execute("set lock_timeout = '5s'")
        pruner.execute("select cache.prune()")  # would raise 55P03 if it waited for k01
        evicted = {
            r[0] for r in pruner.execute("select key from cache.entries where reason = 'evicted'")
        }
        assert evicted and "k01" not in evicted, evicted
        assert "k02" in evicted, "the nearest expiry after the held entry went instead"
        holder.commit()
        assert holder.execute(COUNTED).fetchone() == holder.execute(SIZES).fetchone()
        holder.commit()
        assert pruner.execute("select cache.put(key => 'more', value => '1')").fetchone()[0]
