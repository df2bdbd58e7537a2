"""What a handler's outcome does to its job, for leased and transactional handlers."""

from __future__ import annotations

import logging
import threading
from datetime import timedelta

import psycopg
import pytest
from conftest import wait_for
from workers.inproc import running

import andal


def live(conn: psycopg.Connection, job_id: int) -> tuple | None:
    return conn.execute(
        "select status, attempt, available_at - now(), errors from queue.jobs where id = %s",
        (job_id,),
    ).fetchone()


def dead(conn: psycopg.Connection, job_id: int) -> tuple | None:
    return conn.execute(
        "select reason, last_error, attempt from queue.dead_letters where job_id = %s", (job_id,)
    ).fetchone()


def gone(conn: psycopg.Connection, job_id: int) -> bool:
    return live(conn, job_id) is None


# -- registry (no database) -----------------------------------------------------------------


def test_registry_from_decorator_and_mapping() -> None:
    reg = andal.Registry({"a": lambda job: None})

    @reg.handler("b", transactional=True)
    def b(job: andal.Job, conn: psycopg.Connection) -> None: ...

    assert reg.queues() == ["a", "b"]
    assert reg["b"].transactional and not reg["a"].transactional
    assert reg["b"].fn is b
    with pytest.raises(ValueError, match="already has a handler"):
        reg.add("a", print)
    with pytest.raises(TypeError):
        reg.add("c", "not callable")  # type: ignore[arg-type]
    assert andal.Registry.coerce(reg) is reg


def test_worker_decorator_and_unknown_queue(dsn: str) -> None:
    worker = andal.Worker(dsn, queues=["nope"])

    @worker.handler("yes")
    def yes(job: andal.Job) -> None: ...

    with pytest.raises(ValueError, match="no handler for queue"):
        worker.run(install_signals=False)


# -- leased outcomes ------------------------------------------------------------------------


def test_leased_outcomes(dsn: str, conn: psycopg.Connection, clean: None, caplog) -> None:
    caplog.set_level(logging.DEBUG, logger="andal")  # claimed/completed lines are debug
    andal.configure_queue(conn, "out", keep_results=True, max_attempts=3, backoff_base=30)
    seen: list[int] = []

    def handle(job: andal.Job) -> object:
        seen.append(job.id)
        kind = job.payload["kind"]
        if kind == "ok":
            return {"answer": 42, "attempt": job.attempt}
        if kind == "boom":
            raise KeyError("missing thing")
        if kind == "retry":
            raise andal.Retry("try later", delay=timedelta(seconds=120))
        if kind == "retry_secs":
            raise andal.Retry(delay=7)
        if kind == "fail":
            raise andal.Fail("hopeless")
        if kind == "unjson":
            return {1, 2}
        if kind == "nul":  # PostgreSQL text holds no NUL: the failure is still recorded
            raise andal.Fail("bad\x00byte")
        return None

    kinds = ["ok", "boom", "retry", "retry_secs", "fail", "unjson", "nul", "none"]
    job_ids = andal.enqueue_many(conn, [{"kind": k} for k in kinds], "out")
    ids = dict(zip(kinds, job_ids, strict=True))
    with running(andal.Worker(dsn, {"out": handle}, poll=0.2)) as worker:
        wait_for(
            lambda: sum(worker.counts[k] for k in ("completed", "retried", "dead")) == 8,
            timeout=20,
            what="eight outcomes",
        )
    results = dict(conn.execute("select job_id, result from queue.results").fetchall())
    assert results[ids["ok"]] == {"answer": 42, "attempt": 1}
    assert gone(conn, ids["ok"]) and gone(conn, ids["none"])
    assert results.get(ids["none"]) is None

    status, attempt, wait, errors = live(conn, ids["boom"])
    assert (status, attempt) == ("pending", 1)
    assert "KeyError: 'missing thing'" in errors[-1]["error"]
    assert "Traceback" in errors[-1]["error"]  # a short traceback comes along

    status, _, wait, errors = live(conn, ids["retry"])
    assert status == "pending" and timedelta(seconds=110) < wait <= timedelta(seconds=120)
    assert errors[-1]["error"] == "try later"
    _, _, wait, _ = live(conn, ids["retry_secs"])
    assert timedelta(seconds=5) < wait <= timedelta(seconds=7)

    reason, last_error, attempt = dead(conn, ids["fail"])
    assert (reason, last_error, attempt) == ("non_retryable", "hopeless", 1)
    _, _, _, errors = live(conn, ids["unjson"])
    assert "not JSON serializable" in errors[-1]["error"]
    assert dead(conn, ids["nul"]) == ("non_retryable", "bad\\0byte", 1)

    events = {(r.msg, r.job_id) for r in caplog.records if hasattr(r, "job_id")}
    assert ("completed", ids["ok"]) in events
    assert ("retried", ids["boom"]) in events
    assert ("dead", ids["fail"]) in events
    claimed = next(r for r in caplog.records if r.msg == "claimed")
    for field in ("job_id", "queue", "category", "attempt", "duration_ms"):
        assert hasattr(claimed, field)
    assert worker.counts["completed"] == 2 and worker.counts["dead"] == 2


def test_exhausted_attempts_dead_letter(dsn: str, conn: psycopg.Connection, clean: None) -> None:
    andal.configure_queue(conn, "flaky", max_attempts=2, backoff_base=0)
    job_id = andal.enqueue(conn, {}, "flaky")

    def handle(job: andal.Job) -> None:
        raise RuntimeError(f"attempt {job.attempt}")

    with running(andal.Worker(dsn, {"flaky": handle}, poll=0.1)) as worker:
        wait_for(lambda: dead(conn, job_id), timeout=20, what="the dead letter")
    reason, last_error, attempt = dead(conn, job_id)
    assert (reason, attempt) == ("exhausted", 2)
    assert "attempt 2" in last_error
    assert worker.counts["retried"] == 1 and worker.counts["dead"] == 1


def test_a_long_error_is_kept_to_sqls_bound_only(
    dsn: str, conn: psycopg.Connection, clean: None
) -> None:
    """The worker sends a handler's whole error; the one bound on what is kept is SQL's
    (max_error_bytes, 65,536 by default), with its cut marker: 10,000 characters all kept."""
    andal.configure_queue(conn, "wordy", max_attempts=1)
    short, long = (andal.enqueue(conn, {"n": n}, "wordy") for n in (10_000, 100_000))

    def handle(job: andal.Job) -> None:
        raise RuntimeError("x" * job.payload["n"])

    with running(andal.Worker(dsn, {"wordy": handle}, poll=0.1)):
        wait_for(lambda: dead(conn, short) and dead(conn, long), timeout=20, what="both dead")
    assert "x" * 10_000 in dead(conn, short)[1]
    kept = dead(conn, long)[1]
    assert "cut at" in kept and 60_000 < len(kept.encode()) <= 65_536 + 32, len(kept)


# -- transactional outcomes -----------------------------------------------------------------


def test_transactional_commit_and_rollback(dsn: str, conn: psycopg.Connection, clean: None) -> None:
    conn.execute("create table if not exists ledger (job_id bigint primary key, note text)")
    conn.execute("truncate ledger")
    andal.configure_queue(conn, "books", keep_results=True, max_attempts=1)

    def post(job: andal.Job, tx: psycopg.Connection) -> dict:
        assert tx.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
        tx.execute("insert into ledger values (%s, %s)", (job.id, job.payload["note"]))
        # the job is claimed in this very transaction: nobody else sees it running yet
        assert tx.execute("select status from queue.jobs where id = %s", (job.id,)).fetchone()
        if job.payload["note"] == "bad":
            raise ValueError("refused")
        return {"posted": job.id}

    ok_id, bad_id = andal.enqueue_many(conn, [{"note": "good"}, {"note": "bad"}], "books")
    reg = andal.Registry()
    reg.add("books", post, transactional=True)
    with running(andal.Worker(dsn, reg, poll=0.2)) as worker:
        wait_for(lambda: gone(conn, ok_id) and gone(conn, bad_id), timeout=20, what="both done")
    assert conn.execute("select job_id from ledger").fetchall() == [(ok_id,)]
    assert conn.execute("select result from queue.results where job_id = %s", (ok_id,)).fetchone()[
        0
    ] == {"posted": ok_id}
    reason, last_error, _ = dead(conn, bad_id)
    assert reason == "exhausted" and "refused" in last_error
    assert worker.counts["completed"] == 1 and worker.counts["dead"] == 1


def test_transactional_writes_are_invisible_until_commit(
    dsn: str, conn: psycopg.Connection, clean: None
) -> None:
    conn.execute("create table if not exists ledger (job_id bigint primary key, note text)")
    conn.execute("truncate ledger")
    inside, release = threading.Event(), threading.Event()
    reg = andal.Registry()

    @reg.handler("slow", transactional=True)
    def slow(job: andal.Job, tx: psycopg.Connection) -> None:
        tx.execute("insert into ledger values (%s, 'x')", (job.id,))
        inside.set()
        assert release.wait(20)

    job_id = andal.enqueue(conn, {}, "slow")
    with running(andal.Worker(dsn, reg, poll=0.2)):
        assert inside.wait(20)
        # neither the handler's write nor the claim is visible from outside
        assert conn.execute("select count(*) from ledger").fetchone()[0] == 0
        assert live(conn, job_id)[:2] == ("pending", 0)
        release.set()
        wait_for(lambda: gone(conn, job_id), timeout=20, what="the commit")
    assert conn.execute("select count(*) from ledger").fetchone()[0] == 1
