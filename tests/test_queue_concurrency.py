"""The queue under real concurrency: many PostgreSQL sessions at once, each its own connection.

What a team running production workers relies on: every job is claimed exactly once however
many sessions claim, a category's limit holds while sessions claim and complete, a stale worker
is fenced off, concurrent dedup enqueues make one job, a claimer never waits on another, claim
and complete can share the handler's transaction, and NOTIFY wakes workers once per enqueue.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import psycopg
import pytest
from conftest import wait_for
from psycopg.types.json import Jsonb

LEASE_LOST = "AN001"
SENTINEL = "andal-test-sentinel"


def connect(dsn: str, autocommit: bool = True) -> psycopg.Connection:
    return psycopg.connect(dsn, autocommit=autocommit)


def run_sessions(n: int, target: Callable[[int], Any]) -> list[Any]:
    """Run target(i) for i in range(n) in n threads; re-raise the first failure."""
    with ThreadPoolExecutor(max_workers=n) as pool:
        futures = [pool.submit(target, i) for i in range(n)]
        return [f.result() for f in futures]


def sqlstate(exc: BaseException) -> str | None:
    return getattr(getattr(exc, "diag", None), "sqlstate", None)


def enqueue_bulk(conn: psycopg.Connection, queue: str, n: int, **opts: Any) -> list[int]:
    """Enqueue n jobs {"n": i} in chunks with enqueue_many; returns their ids."""
    extra = "".join(f", {k} => %({k})s" for k in opts)
    ids: list[int] = []
    for start in range(0, n, 2000):
        stop = min(n, start + 2000)
        rows = conn.execute(
            "select * from queue.enqueue_many(array(select jsonb_build_object('n', g)"
            " from generate_series(%(a)s::int, %(b)s::int) as g),"
            f" queue => %(queue)s{extra})",
            {"a": start, "b": stop - 1, "queue": queue, **opts},
        ).fetchall()
        ids.extend(r[0] for r in rows)
    return ids


# --- 8 sessions drain 20,000 jobs ------------------------------------------------------------

DRAIN_JOBS = 20_000
DRAIN_SESSIONS = 8


@pytest.mark.parametrize("batch", [1, 100])
def test_eight_sessions_claim_each_job_exactly_once(
    dsn: str, clean: None, batch: int, capsys: pytest.CaptureFixture[str]
) -> None:
    with connect(dsn) as c:
        ids = enqueue_bulk(c, "drain", DRAIN_JOBS)
        c.execute("analyze queue.jobs")
    assert len(set(ids)) == DRAIN_JOBS

    start = threading.Barrier(DRAIN_SESSIONS + 1)
    deadline = time.monotonic() + 120

    def session(i: int) -> list[tuple[int, int]]:
        claimed: list[tuple[int, int]] = []
        with connect(dsn) as c:
            start.wait()
            while time.monotonic() < deadline:
                rows = c.execute(
                    "select job_id, token, attempt from queue.claim(%s, queues => '{drain}',"
                    " batch => %s)",
                    (f"drain-{i}", batch),
                ).fetchall()
                if not rows:
                    # SKIP LOCKED: an empty claim can mean "all the rest is being claimed".
                    left = c.execute(
                        "select exists (select from queue.jobs"
                        " where queue = 'drain' and status = 'pending')"
                    ).fetchone()
                    if not left[0]:
                        return claimed
                    continue
                claimed.extend((r[0], r[2]) for r in rows)
                if batch == 1:
                    c.execute("select queue.complete(%s, %s)", (rows[0][0], rows[0][1]))
                else:
                    lost = c.execute(
                        "select count(*) filter (where not completed)"
                        " from queue.complete_many(%s, %s)",
                        ([r[0] for r in rows], [r[1] for r in rows]),
                    ).fetchone()
                    assert lost[0] == 0
        raise AssertionError(f"session {i} did not finish draining in time")

    with ThreadPoolExecutor(max_workers=DRAIN_SESSIONS) as pool:
        futures = [pool.submit(session, i) for i in range(DRAIN_SESSIONS)]
        start.wait()
        t0 = time.monotonic()
        results = [f.result() for f in futures]
        elapsed = time.monotonic() - t0

    claimed = [job for per_session in results for job, _attempt in per_session]
    duplicates = [job for job, n in Counter(claimed).items() if n > 1]
    assert duplicates == [], f"jobs claimed more than once: {duplicates[:10]}"
    assert len(claimed) == DRAIN_JOBS
    assert set(claimed) == set(ids), "some jobs were never claimed"
    assert {attempt for per_session in results for _job, attempt in per_session} == {1}
    with connect(dsn) as c:
        assert c.execute("select count(*) from queue.jobs").fetchone()[0] == 0
    per_session = sorted(len(r) for r in results)
    with capsys.disabled():
        print(
            f"\n[andal drain] {DRAIN_SESSIONS} sessions, {DRAIN_JOBS:,} jobs, batch {batch}:"
            f" {elapsed:.2f} s ({DRAIN_JOBS / elapsed:,.0f} jobs/s; claim + complete;"
            f" jobs per session {per_session[0]}..{per_session[-1]})"
        )


# --- category gating under load --------------------------------------------------------------


class RunningSampler(threading.Thread):
    """Counts running jobs per category continuously on its own session."""

    def __init__(self, dsn: str, queue: str) -> None:
        super().__init__(daemon=True)
        self.dsn = dsn
        self.queue = queue
        self.stop = threading.Event()
        self.samples = 0
        self.max_running: Counter[str] = Counter()  # status = 'running'
        self.max_live: Counter[str] = Counter()  # running with an unexpired lease
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            with connect(self.dsn) as c:
                while not self.stop.is_set():
                    rows = c.execute(
                        "select category, count(*),"
                        " count(*) filter (where lease_expires_at > clock_timestamp())"
                        " from queue.jobs where queue = %s and status = 'running'"
                        " and category is not null group by category",
                        (self.queue,),
                    ).fetchall()
                    for category, running, live in rows:
                        self.max_running[category] = max(self.max_running[category], running)
                        self.max_live[category] = max(self.max_live[category], live)
                    self.samples += 1
        except BaseException as exc:  # reported by the test
            self.error = exc

    def finish(self) -> None:
        self.stop.set()
        self.join(10)
        if self.error is not None:
            raise self.error


def queue_empty(conn: psycopg.Connection, queue: str) -> bool:
    return not conn.execute(
        "select exists (select from queue.jobs where queue = %s)", (queue,)
    ).fetchone()[0]


@pytest.mark.parametrize("limit", [1, 3])
def test_category_limit_never_exceeded_under_load(dsn: str, clean: None, limit: int) -> None:
    queue = "gate"
    with connect(dsn) as c:
        for category in ("ga", "gb"):
            c.execute("select queue.set_category_limit(%s, %s)", (category, limit))
        enqueue_bulk(c, queue, 60, category="ga", priority=5)
        enqueue_bulk(c, queue, 60, category="gb")
        enqueue_bulk(c, queue, 60)
    sampler = RunningSampler(dsn, queue)
    sampler.start()
    deadline = time.monotonic() + 60

    def worker(i: int) -> int:
        rnd = random.Random(i)
        done = 0
        with connect(dsn) as c:
            while time.monotonic() < deadline:
                rows = c.execute(
                    "select job_id, token from queue.claim(%s, queues => %s, batch => 4)",
                    (f"w{i}", [queue]),
                ).fetchall()
                if not rows:
                    if queue_empty(c, queue):
                        return done
                    time.sleep(0.002)
                    continue
                for job_id, token in rows:
                    time.sleep(rnd.uniform(0.001, 0.006))  # the handler's work
                    outcome = rnd.random()
                    if outcome < 0.1:
                        c.execute(
                            "select queue.fail(%s, %s, 'flaky', retry_in => '0')", (job_id, token)
                        )
                    elif outcome < 0.15:
                        c.execute("select queue.release(%s, %s)", (job_id, token))
                    else:
                        c.execute("select queue.complete(%s, %s)", (job_id, token))
                        done += 1
        raise AssertionError(f"worker {i} did not finish in time")

    try:
        completed = run_sessions(6, worker)
    finally:
        sampler.finish()
    assert sum(completed) + count_dead(dsn, queue) == 180
    assert sampler.samples > 20
    for category in ("ga", "gb"):
        assert sampler.max_running[category] <= limit, (
            f"{category}: {sampler.max_running[category]} running, limit {limit}"
        )
    # The load reached the limit: the assertion above was really exercised.
    assert max(sampler.max_running.values()) == limit


def count_dead(dsn: str, queue: str) -> int:
    with connect(dsn) as c:
        return c.execute(
            "select count(*) from queue.dead_letters where queue = %s", (queue,)
        ).fetchone()[0]


def test_category_limit_holds_across_lease_takeback(dsn: str, clean: None) -> None:
    """Workers that vanish leave jobs whose 1 s lease lapses; claims take them back without
    ever letting more than the limit hold a live lease, and each job completes exactly once."""
    queue, limit = "gate2", 2
    with connect(dsn) as c:
        c.execute(
            "select queue.configure_queue(%s, lease => '1 second', keep_results => true)",
            (queue,),
        )
        c.execute("select queue.set_category_limit('gc', %s)", (limit,))
        ids = enqueue_bulk(c, queue, 40, category="gc")
    abandon = set(ids[::5])  # their first run vanishes without a word
    sampler = RunningSampler(dsn, queue)
    sampler.start()
    deadline = time.monotonic() + 60

    def worker(i: int) -> list[int]:
        done: list[int] = []
        with connect(dsn) as c:
            while time.monotonic() < deadline:
                rows = c.execute(
                    "select job_id, token, attempt from queue.claim(%s, queues => %s, batch => 2)",
                    (f"w{i}", [queue]),
                ).fetchall()
                if not rows:
                    if queue_empty(c, queue):
                        return done
                    time.sleep(0.01)
                    continue
                for job_id, token, attempt in rows:
                    if job_id in abandon and attempt == 1:
                        continue
                    time.sleep(0.003)
                    c.execute(
                        "select queue.complete(%s, %s, %s)",
                        (job_id, token, Jsonb({"worker": i})),
                    )
                    done.append(job_id)
        raise AssertionError(f"worker {i} did not finish in time")

    try:
        completed = [j for per_worker in run_sessions(5, worker) for j in per_worker]
    finally:
        sampler.finish()
    assert sorted(completed) == sorted(ids), "each job completes exactly once"
    with connect(dsn) as c:
        kept = c.execute("select count(*) from queue.results").fetchone()[0]
        assert kept == len(ids)
    assert sampler.max_live["gc"] <= limit, f"{sampler.max_live['gc']} live leases, limit {limit}"
    assert sampler.max_live["gc"] == limit


def test_full_category_never_blocks_other_jobs(dsn: str, clean: None) -> None:
    queue = "mixed"
    with connect(dsn) as c:
        c.execute("select queue.set_category_limit('full', 1)")
        c.execute("select queue.set_category_limit('other', 50)")
        enqueue_bulk(c, queue, 1, category="full", priority=100)
        held = c.execute(
            "select job_id from queue.claim('holder', queues => %s, lease => '5 minutes')",
            ([queue],),
        ).fetchone()
        assert held is not None
        enqueue_bulk(c, queue, 200, category="full", priority=10)
        enqueue_bulk(c, queue, 100, category="other")
        enqueue_bulk(c, queue, 100)
    deadline = time.monotonic() + 60

    def worker(i: int) -> list[str | None]:
        seen: list[str | None] = []
        with connect(dsn) as c:
            while time.monotonic() < deadline:
                rows = c.execute(
                    "select job_id, token, category from queue.claim(%s, queues => %s,"
                    " batch => %s)",
                    (f"w{i}", [queue], 1 + i % 3),
                ).fetchall()
                for job_id, token, category in rows:
                    seen.append(category)
                    c.execute("select queue.complete(%s, %s)", (job_id, token))
                left = c.execute(
                    "select count(*) from queue.jobs where queue = %s and status = 'pending'"
                    " and category is distinct from 'full'",
                    (queue,),
                ).fetchone()[0]
                if not rows and left == 0:
                    return seen
        raise AssertionError("the other jobs were not all claimed in time")

    seen = [cat for per_worker in run_sessions(4, worker) for cat in per_worker]
    assert Counter(seen) == {"other": 100, None: 100}
    with connect(dsn) as c:
        assert c.execute(
            "select count(*) filter (where status = 'pending'),"
            " count(*) filter (where status = 'running') from queue.jobs where category = 'full'"
        ).fetchone() == (200, 1)


def test_open_claim_on_a_category_does_not_hide_other_jobs(dsn: str, clean: None) -> None:
    """Session A claims a job of category c in a transaction it keeps open: c has
    free slots, so it is not full, but A holds c's gate lock (its category row) until it
    commits. Session B's claim must not come back empty while a job of category d is ready:
    a gated category never blocks jobs of other categories. B's failed try-lock is counted."""
    with connect(dsn) as c:
        c.execute("select queue.set_category_limit('c', 5)")
        c.execute("select queue.set_category_limit('d', 5)")
        enqueue_bulk(c, "hide", 3, category="c", priority=10)
        (other,) = enqueue_bulk(c, "hide", 1, category="d")
    with connect(dsn, autocommit=False) as a, connect(dsn) as b:
        a_row = a.execute(
            "select job_id, category from queue.claim('a', queues => '{hide}')"
        ).fetchone()
        assert a_row is not None and a_row[1] == "c"
        b.execute("set statement_timeout = '5s'")
        b_pid = b.execute("select pg_backend_pid()").fetchone()[0]
        rows = b.execute(
            "select job_id, category from queue.claim('b', queues => '{hide}')"
        ).fetchall()
        failures = b.execute(
            "select coalesce(sum(failures), 0) from queue.lock_stats where backend = %s",
            (b_pid,),
        ).fetchone()[0]
        a.rollback()
    assert failures >= 1, "the failed try-lock is counted"
    assert rows == [(other, "d")], f"B got {rows}: the ready job of category d was hidden"


# --- fencing across sessions -----------------------------------------------------------------


def test_stale_worker_is_fenced_off(dsn: str, clean: None) -> None:
    with connect(dsn) as a, connect(dsn) as b:
        a.execute("select queue.configure_queue('fence', keep_results => true)")
        job = a.execute("select queue.enqueue('{}', queue => 'fence')").fetchone()[0]
        a_job, a_token, a_expires = a.execute(
            "select job_id, token, lease_expires_at"
            " from queue.claim('A', queues => '{fence}', lease => '1 second')"
        ).fetchone()
        assert a_job == job
        wait_for(
            lambda: a.execute("select now() > %s", (a_expires,)).fetchone()[0],
            timeout=10,
            what="A's lease to expire",
        )
        b_job, b_token, b_attempt = b.execute(
            "select job_id, token, attempt from queue.claim('B', queues => '{fence}')"
        ).fetchone()
        assert (b_job, b_attempt) == (job, 2)
        assert b_token != a_token

        def snapshot() -> tuple[Any, ...]:
            return b.execute(
                "select (select to_jsonb(j) from queue.jobs j where j.id = %(id)s),"
                " (select count(*) from queue.dead_letters), (select count(*) from queue.results)",
                {"id": job},
            ).fetchone()

        before = snapshot()
        stale_calls = [
            ("select queue.heartbeat(%s, %s)", (job, a_token)),
            ('select queue.complete(%s, %s, \'{"by": "A"}\')', (job, a_token)),
            ("select queue.fail(%s, %s, 'A failed')", (job, a_token)),
            ("select queue.fail(%s, %s, 'A gave up', retryable => false)", (job, a_token)),
            ("select queue.release(%s, %s)", (job, a_token)),
        ]
        for sql, args in stale_calls:
            with pytest.raises(psycopg.Error) as err:
                a.execute(sql, args)
            assert sqlstate(err.value) == LEASE_LOST, sql
            assert snapshot() == before, f"{sql} changed something"

        b.execute('select queue.complete(%s, %s, \'{"by": "B"}\')', (job, b_token))
        with pytest.raises(psycopg.Error) as err:
            a.execute("select queue.complete(%s, %s)", (job, a_token))
        assert sqlstate(err.value) == LEASE_LOST
        results = a.execute("select job_id, result from queue.results").fetchall()
        assert results == [(job, {"by": "B"})], "exactly one completion, B's"
        assert a.execute("select count(*) from queue.jobs").fetchone()[0] == 0


# --- dedup under concurrent enqueues ---------------------------------------------------------


def test_concurrent_dedup_enqueues_make_one_job(dsn: str, clean: None) -> None:
    sessions, rounds = 8, 15
    start = threading.Barrier(sessions)

    def producer(i: int) -> list[int]:
        ids = []
        with connect(dsn) as c:
            for r in range(rounds):
                start.wait()
                ids.append(
                    c.execute(
                        "select queue.enqueue(%s, queue => 'dd', dedup_key => %s)",
                        (Jsonb({"from": i}), f"key-{r}"),
                    ).fetchone()[0]
                )
        return ids

    per_session = run_sessions(sessions, producer)
    for r in range(rounds):
        assert len({ids[r] for ids in per_session}) == 1, f"round {r}: different ids"
    with connect(dsn) as c:
        rows = c.execute(
            "select dedup_key, count(*) from queue.jobs where queue = 'dd' group by dedup_key"
        ).fetchall()
    assert sorted(rows) == sorted((f"key-{r}", 1) for r in range(rounds))


def test_dedup_waiters_after_the_holder_rolls_back_make_one_job(dsn: str, clean: None) -> None:
    """Session H enqueues key k in an open transaction; six sessions enqueue k and wait on
    H's row. H rolls back: exactly one of the waiters makes the job, all get its id."""
    waiters = 6

    def producer(i: int) -> int:
        with connect(dsn) as c:
            c.execute("set application_name = 'andal-dedup-waiter'")
            return c.execute(
                "select queue.enqueue('{}', queue => 'dd2', dedup_key => 'k')"
            ).fetchone()[0]

    def blocked(monitor: psycopg.Connection) -> bool:
        # Autocommit: each poll reads a fresh pg_stat_activity snapshot.
        return monitor.execute(
            "select count(*) = %s from pg_stat_activity"
            " where application_name = 'andal-dedup-waiter' and wait_event_type = 'Lock'"
            " and datname = current_database()",
            (waiters,),
        ).fetchone()[0]

    with connect(dsn, autocommit=False) as holder, connect(dsn) as monitor:
        held_id = holder.execute(
            "select queue.enqueue('{}', queue => 'dd2', dedup_key => 'k')"
        ).fetchone()[0]
        with ThreadPoolExecutor(max_workers=waiters) as pool:
            try:
                futures = [pool.submit(producer, i) for i in range(waiters)]
                wait_for(lambda: blocked(monitor), timeout=20, what="the waiters to block")
            finally:
                holder.rollback()  # never leave the waiters hanging
            ids = [f.result() for f in futures]
        jobs = monitor.execute(
            "select id from queue.jobs where queue = 'dd2' and dedup_key = 'k'"
        ).fetchall()
    assert len(set(ids)) == 1, f"waiters got different ids: {ids}"
    assert ids[0] != held_id
    assert jobs == [(ids[0],)], "exactly one job holds the key"


# --- claimers never wait on each other -------------------------------------------------------


def test_a_claimer_never_waits_on_another(dsn: str, clean: None) -> None:
    with connect(dsn) as c:
        first, second = enqueue_bulk(c, "nowait", 2)
        enqueue_bulk(c, "nowait-c", 2, category="busy")
    with connect(dsn, autocommit=False) as a, connect(dsn) as b:
        b.execute("set statement_timeout = '2s'")
        # A's claimed row stays locked while its transaction is open.
        assert (
            a.execute("select job_id from queue.claim('a', queues => '{nowait}')").fetchone()[0]
            == first
        )
        # statement_timeout turns any wait on A into an error (57014).
        got = b.execute("select job_id from queue.claim('b', queues => '{nowait}')").fetchall()
        assert got == [(second,)], "B takes the next job instead of waiting for A's"
        assert b.execute("select * from queue.claim('b', queues => '{nowait}')").fetchall() == []
        # A also holds the gate lock of category busy: B skips it rather than wait.
        assert (
            a.execute("select count(*) from queue.claim('a', queues => '{nowait-c}')").fetchone()[0]
            == 1
        )
        assert b.execute("select * from queue.claim('b', queues => '{nowait-c}')").fetchall() == []
        a.rollback()


def test_a_claimer_holds_only_the_jobs_it_claimed(dsn: str, clean: None) -> None:
    """A worker may keep its claim's transaction open while its handler runs. Rows
    the claim looked at but did not take (another queue's best job, the best job of the other
    kind, gated or not) must not stay locked meanwhile: other claimers would skip them for the
    whole handler, though nobody runs them."""
    with connect(dsn) as c:
        (a1,) = enqueue_bulk(c, "hold-a", 1, priority=1)
        (b1,) = enqueue_bulk(c, "hold-b", 1)
        (g1,) = enqueue_bulk(c, "hold-c", 1, category="g", priority=5)
        (p1,) = enqueue_bulk(c, "hold-c", 1)
    with connect(dsn, autocommit=False) as a, connect(dsn) as b:
        b.execute("set statement_timeout = '5s'")
        took = a.execute("select job_id from queue.claim('a', queues => '{hold-a,hold-b}')")
        assert took.fetchall() == [(a1,)]
        got_b = b.execute("select job_id from queue.claim('b', queues => '{hold-b}')").fetchall()
        took = a.execute("select job_id from queue.claim('a', queues => '{hold-c}')")
        assert took.fetchall() == [(g1,)]
        got_c = b.execute("select job_id from queue.claim('b', queues => '{hold-c}')").fetchall()
        a.rollback()
    assert (got_b, got_c) == ([(b1,)], [(p1,)]), "jobs A did not claim stayed hidden"


# --- transactional use -----------------------------------------------------------------------


def test_claim_handler_and_complete_share_one_transaction(dsn: str, clean: None) -> None:
    with connect(dsn) as c:
        c.execute("create table if not exists public.handler_out (job_id bigint primary key)")
        c.execute("truncate public.handler_out")
        job = c.execute("select queue.enqueue('{}', queue => 'tx')").fetchone()[0]

    def run_handler(conn: psycopg.Connection) -> None:
        job_id, token = conn.execute(
            "select job_id, token from queue.claim('tx-worker', queues => '{tx}')"
        ).fetchone()
        conn.execute("insert into public.handler_out values (%s)", (job_id,))
        conn.execute("select queue.complete(%s, %s)", (job_id, token))

    with connect(dsn, autocommit=False) as t:
        run_handler(t)
        t.rollback()
    with connect(dsn) as c:
        assert c.execute(
            "select status, attempt, token from queue.jobs where id = %s", (job,)
        ).fetchone() == ("pending", 0, None), "rollback undoes claim and complete"
        assert c.execute("select count(*) from public.handler_out").fetchone()[0] == 0

    with connect(dsn, autocommit=False) as t:
        run_handler(t)
        t.commit()
    with connect(dsn) as c:
        assert c.execute("select count(*) from queue.jobs where id = %s", (job,)).fetchone()[0] == 0
        assert c.execute("select job_id from public.handler_out").fetchall() == [(job,)]


# --- NOTIFY ----------------------------------------------------------------------------------


def drain_notifies(
    listener: psycopg.Connection, producer: psycopg.Connection, channel: str
) -> list[str]:
    """Everything the listener got on channel before a sentinel sent now by producer."""
    producer.execute("select pg_notify(%s, %s)", (channel, SENTINEL))
    got = []
    for n in listener.notifies(timeout=10):
        if n.channel == channel and n.payload == SENTINEL:
            return got
        if n.channel == channel:
            got.append(n.payload)
    raise AssertionError(f"no sentinel on {channel} within 10 s")


def test_notify_once_per_enqueue_statement(dsn: str, clean: None) -> None:
    with connect(dsn) as listener, connect(dsn) as p:
        listener.execute("listen andal_jobs")
        p.execute("select queue.configure_queue('quiet', notify => false)")
        assert drain_notifies(listener, p, "andal_jobs") == []

        p.execute("select queue.enqueue('{}', queue => 'loud')")
        assert drain_notifies(listener, p, "andal_jobs") == ["loud"]

        p.execute("select queue.enqueue_many(array_fill('{}'::jsonb, array[50]), queue => 'bulk')")
        assert drain_notifies(listener, p, "andal_jobs") == ["bulk"], "enqueue_many: one"

        p.execute("select queue.enqueue('{}', queue => 'quiet')")
        p.execute("select queue.enqueue_many(array['{}']::jsonb[], queue => 'quiet')")
        assert drain_notifies(listener, p, "andal_jobs") == [], "notify off: none"

        p.execute("select queue.enqueue('{}', queue => 'loud', delay => '1 hour')")
        assert drain_notifies(listener, p, "andal_jobs") == [], "a delayed job: none"

        with p.transaction():
            p.execute("select queue.enqueue('{}', queue => 'a')")
            p.execute("select queue.enqueue('{}', queue => 'b')")
        assert sorted(drain_notifies(listener, p, "andal_jobs")) == ["a", "b"]

        with p.transaction():
            p.execute("select queue.enqueue('{}', queue => 'rolled')")
            raise_rollback()
        assert drain_notifies(listener, p, "andal_jobs") == [], "rolled back: none"


def raise_rollback() -> None:
    raise psycopg.Rollback()


def test_dead_letter_notifies_operations_channel(dsn: str, clean: None) -> None:
    with connect(dsn) as listener, connect(dsn) as p:
        listener.execute("listen andal_ops")
        job = p.execute("select queue.enqueue('{}', queue => 'ops', max_attempts => 1)").fetchone()[
            0
        ]
        token = p.execute("select token from queue.claim('w', queues => '{ops}')").fetchone()[0]
        assert p.execute("select queue.fail(%s, %s, 'boom')", (job, token)).fetchone()[0] == "dead"
        other = p.execute("select queue.enqueue('{}', queue => 'ops')").fetchone()[0]
        p.execute("select queue.cancel(%s)", (other,))
        got = [json.loads(x) for x in drain_notifies(listener, p, "andal_ops")]
    assert got == [
        {"event": "dead", "job_id": job, "queue": "ops", "reason": "exhausted"},
        {"event": "dead", "job_id": other, "queue": "ops", "reason": "cancelled"},
    ]
