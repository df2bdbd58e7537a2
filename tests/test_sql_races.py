"""Races between andal's own calls, each driven into its worst interleaving on purpose.

Real concurrent sessions (one psycopg connection each): a third transaction holds one dedup
key while the two racing calls run into it from opposite ends, and each step waits until the
server shows the session blocked on a lock (pg_stat_activity), never by sleeping. What a
client relies on: no deadlock (40P01) between two batch calls whatever their key order, the
documented SQLSTATE when requeue_dead meets a concurrent enqueue, and an isolation level
refused up front rather than a serialization failure on a race.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import psycopg
import pytest
from conftest import wait_for

KEYS = [f"k{i:02d}" for i in range(1, 10)]  # sorted; the held key is the middle one
HELD = "k05"
ROUNDS = 20


def connect(dsn: str, autocommit: bool = True) -> psycopg.Connection:
    return psycopg.connect(dsn, autocommit=autocommit)


def blocked(conn: psycopg.Connection, pid: int) -> bool:
    """The session `pid` waits on a lock another session holds."""
    return bool(conn.execute("select cardinality(pg_blocking_pids(%s)) > 0", (pid,)).fetchone()[0])


def sqlstate(exc: BaseException | None) -> str | None:
    return getattr(getattr(exc, "diag", None), "sqlstate", None)


def race_from_both_ends(
    dsn: str, queue: str, hold: str, run: Callable[[psycopg.Connection, list[str]], Any]
) -> tuple[Any, Any]:
    """Hold HELD in an open transaction (statement `hold`), start run(keys) on one session
    and run(reversed keys) on another, wait until both are blocked, then commit the holder.
    Returns both results; re-raises a failure of either call."""
    with connect(dsn) as watch, connect(dsn, autocommit=False) as holder:
        # the queue's row exists, so the calls first wait at the held key, not at its row
        watch.execute("select from queue.configure_queue(queue => %s)", (queue,))
        holder.execute(hold, {"key": HELD})
        a, b = connect(dsn), connect(dsn)
        pa, pb = a.info.backend_pid, b.info.backend_pid
        try:
            with ThreadPoolExecutor(max_workers=2) as pool:
                fa: Future[Any] = pool.submit(run, a, KEYS)
                wait_for(lambda: fa.done() or blocked(watch, pa), 60, what="first call waits")
                fb: Future[Any] = pool.submit(run, b, KEYS[::-1])
                wait_for(lambda: fb.done() or blocked(watch, pb), 60, what="second waits")
                holder.commit()
                return fa.result(timeout=120), fb.result(timeout=120)
        finally:
            a.close()
            b.close()


def test_enqueue_many_with_overlapping_keys_in_opposite_orders_never_deadlocks(
    dsn: str, clean: None
) -> None:
    def run(conn: psycopg.Connection, keys: list[str]) -> dict[str, int]:
        ids = conn.execute(
            "select * from queue.enqueue_many(payloads => %(p)s::jsonb[], queue => 'race',"
            " dedup_keys => %(k)s)",
            {"p": ["{}"] * len(keys), "k": keys},
        ).fetchall()
        return dict(zip(keys, [r[0] for r in ids], strict=True))

    hold = "select queue.enqueue(payload => '{}', queue => 'race', dedup_key => %(key)s)"
    first, second = race_from_both_ends(dsn, "race", hold, run)
    assert first == second, "both calls answer each key with the same live job"
    with connect(dsn) as c:
        live = c.execute(
            "select dedup_key, id from queue.jobs where queue = 'race' order by dedup_key"
        ).fetchall()
    assert dict(live) == first and len(live) == len(KEYS)


def test_enqueue_many_with_keys_returns_ids_in_input_order_and_claims_in_it(
    dsn: str, clean: None
) -> None:
    keys = ["z", "a", "m", "a"]
    with connect(dsn) as c:
        ids = [
            r[0]
            for r in c.execute(
                "select * from queue.enqueue_many(payloads => %s::jsonb[], queue => 'order',"
                " dedup_keys => %s)",
                (['{"n": 0}', '{"n": 1}', '{"n": 2}', '{"n": 3}'], keys),
            ).fetchall()
        ]
        assert ids[1] == ids[3] and len(set(ids)) == 3
        claimed = c.execute(
            "select job_id, payload from queue.claim(worker => 'w', queues => '{order}',"
            " batch => 10)"
        ).fetchall()
    assert [r[0] for r in claimed] == ids[:3], "claimed in input order"


def test_cache_get_many_with_refresh_of_overlapping_keys_never_deadlocks(
    dsn: str, clean: None
) -> None:
    """Two readers of overlapping, different key sets start together, round after round.
    Before, each enqueued its refresh jobs in its hash join's order (which differs between
    two sets), and pairs of calls deadlocked; now every call takes the keys sorted."""
    rnd = random.Random(15)
    universe = [f"key-{i:04d}" for i in range(400)]
    with connect(dsn) as c:
        c.execute("select from queue.configure_queue(queue => 'refresh')")
    a, b = connect(dsn), connect(dsn)
    try:
        for _round in range(ROUNDS):
            sets = [rnd.sample(universe, 300), rnd.sample(universe, 300)]
            start = threading.Barrier(2)

            def read(
                conn: psycopg.Connection, keys: list[str], start: threading.Barrier = start
            ) -> int:
                start.wait()
                return len(
                    conn.execute(
                        "select * from cache.get_many(keys => %s, refresh_queue => 'refresh')",
                        (keys,),
                    ).fetchall()
                )

            with ThreadPoolExecutor(max_workers=2) as pool:
                pairs = zip((a, b), sets, strict=True)
                results = [pool.submit(read, conn, keys) for conn, keys in pairs]
                assert [f.result(timeout=120) for f in results] == [0, 0]
            with connect(dsn) as c:
                refreshed = c.execute(
                    "select count(*), count(distinct dedup_key) from queue.jobs"
                    " where queue = 'refresh'"
                ).fetchone()
                union = len(set(sets[0]) | set(sets[1]))
                assert refreshed == (union, union), "one refresh job per key"
                c.execute("delete from queue.jobs where queue = 'refresh'")
    finally:
        a.close()
        b.close()


def test_requeue_dead_racing_an_enqueue_of_its_key_is_refused_with_55000(
    dsn: str, clean: None
) -> None:
    with connect(dsn) as c:
        dead = c.execute(
            "select queue.enqueue(payload => '{}', queue => 'rq', dedup_key => 'same')"
        ).fetchone()[0]
        c.execute("select queue.cancel(job_id => %s)", (dead,))
    with connect(dsn) as watch, connect(dsn, autocommit=False) as producer, connect(dsn) as admin:
        producer.execute(
            "select queue.enqueue(payload => '{}', queue => 'rq', dedup_key => 'same')"
        )
        with ThreadPoolExecutor(max_workers=1) as pool:
            requeue = pool.submit(admin.execute, "select queue.requeue_dead(job_id => %s)", (dead,))
            pid = admin.info.backend_pid
            wait_for(lambda: requeue.done() or blocked(watch, pid), 60, what="requeue waits")
            producer.commit()
            with pytest.raises(psycopg.Error) as err:
                requeue.result(timeout=60)
        assert sqlstate(err.value) == "55000", err.value
        assert "already holds dedup_key same" in str(err.value)
        left = admin.execute(
            "select (select count(*) from queue.dead_letters where job_id = %s),"
            " (select count(*) from queue.jobs where queue = 'rq')",
            (dead,),
        ).fetchone()
    assert left == (1, 1), "the dead letter stays, the live job is the new one"


@pytest.mark.parametrize("level", ["repeatable read", "serializable"])
def test_enqueue_with_a_dedup_key_outside_read_committed_is_refused_up_front(
    dsn: str, clean: None, level: str
) -> None:
    """Before: a snapshot taken before a concurrent enqueue of the key committed made the
    dedup enqueue fail with 40001. Now the level is refused before anything is read."""
    with connect(dsn, autocommit=False) as late, connect(dsn) as other:
        late.execute(f"set transaction isolation level {level}")
        late.execute("select 1")  # the snapshot
        other.execute("select queue.enqueue(payload => '{}', queue => 'rr', dedup_key => 'x')")
        with pytest.raises(psycopg.Error) as err:
            late.execute("select queue.enqueue(payload => '{}', queue => 'rr', dedup_key => 'x')")
        assert sqlstate(err.value) == "55000", err.value
        late.rollback()
        # without a dedup key enqueue works at this level
        late.execute(f"set transaction isolation level {level}")
        late.execute("select queue.enqueue(payload => '{}', queue => 'rr')")
        late.execute(
            "select * from queue.enqueue_many(payloads => array['{}']::jsonb[], queue => 'rr')"
        )
        late.commit()
    with connect(dsn) as c:
        assert c.execute("select count(*) from queue.jobs where queue = 'rr'").fetchone()[0] == 3
