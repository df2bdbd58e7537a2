"""The worker's rooms, each driven alone through its narrow interface (no Worker)."""

from __future__ import annotations

import threading
import time
import uuid
from datetime import datetime, timedelta, timezone

import pytest

import andal
from andal.worker import heartbeat
from andal.worker.databases import Source
from andal.worker.limits import Limits
from andal.worker.state import _failure, _Outcome, _Run


def a_run(src: Source, job_id: int, lease: float = 30.0, queue: str = "q") -> _Run:
    now = datetime.now(timezone.utc)
    job = andal.Job(job_id, queue, None, {}, 1, 5, uuid.uuid4(), now, now, None, None)
    return _Run(src, job, andal.Handler(queue, print), lease, now=100.0)


def test_heartbeat_picks_due_runs_and_applies_the_databases_lease() -> None:
    src = Source(0, "dbname=x", "x@h:1", 1.0)
    soon, later = a_run(src, 1, lease=3.0), a_run(src, 2, lease=300.0)
    # next beat at claim + lease/3: 101 for the first, 200 for the second
    assert heartbeat.due([soon, later], now=100.9) == [soon]
    db_now = datetime(2026, 1, 1, tzinfo=timezone.utc)
    rows = [(1, db_now + timedelta(seconds=60), db_now), (2, None, db_now)]
    ok, missing = heartbeat.extended([soon, later], rows, sent=500.0)
    assert ok == [soon] and missing == [later]
    assert soon.lease_len == 60.0 and soon.deadline == 560.0 and soon.next_beat == 520.0


class FakeHost:
    def __init__(self, runs: list[_Run]) -> None:
        self.runs, self.lost_runs, self.troubles = runs, [], []

    def held(self, src: Source) -> list[_Run]:
        return list(self.runs)

    def holding(self, run: _Run) -> bool:
        return True

    def lost(self, run: _Run, detected_by: str) -> None:
        self.lost_runs.append((run.job.id, detected_by))

    def trouble(self, src: Source, during: str, exc: BaseException) -> None:
        self.troubles.append(during)

    def beaten(self, src: Source, took: float) -> None: ...


def test_heartbeat_reports_a_lost_connection_and_retries_soon() -> None:
    class Pool:
        def connection(self):
            import psycopg

            raise psycopg.OperationalError("server closed the connection")

    src = Source(0, "dbname=x", "x@h:1", 1.0)
    src.pool = Pool()  # type: ignore[assignment]
    run = a_run(src, 7, lease=30.0)
    host = FakeHost([run])
    beats = heartbeat.Heartbeat(host, src, None, threading.Event())
    before = time.monotonic()
    beats.beat([run])
    assert host.troubles == ["heartbeat"] and host.lost_runs == []
    assert before < run.next_beat <= time.monotonic() + 0.2  # soon, not in a tight loop


def test_limits_admit_wait_and_hand_over() -> None:
    limits: Limits[str] = Limits({"q": 2})
    assert limits.open(["q", "free"]) == ["q", "free"]
    assert limits.admit("q", "a") and limits.admit("q", "b")
    assert not limits.admit("q", "c")  # waits
    assert limits.open(["q", "free"]) == ["free"]
    assert limits.done("q") == "c"  # takes over the ended job's place
    assert limits.running("q") == 2
    assert limits.done("q") is None and limits.running("q") == 1
    assert limits.admit("free", "x")  # unlimited
    taken = limits.take(["q", "free"])
    assert taken == ["q", "free"] and limits.running("q") == 2
    assert limits.take(["q"]) == []  # at its limit: not asked for
    limits.untake(taken, used="q")
    assert limits.running("q") == 2


def test_a_failed_jobs_reported_error_is_its_exceptions_first_line() -> None:
    src = Source(0, "dbname=x", "x@h:1", 1.0)
    run = a_run(src, 1)
    try:
        raise RuntimeError("the cause\nCONTEXT:  PL/pgSQL function f() line 3 at RAISE")
    except RuntimeError as exc:
        outcome = _failure(run, exc)
    assert outcome.summary() == "RuntimeError: the cause"
    assert "Traceback" in (outcome.error or "")  # the stored error keeps the traceback
    assert _Outcome(run, False, 0.0, error="try later").summary() == "try later"


@pytest.mark.parametrize("kind", ["retry", "fail"])
def test_retry_and_fail_report_their_message(kind: str) -> None:
    src = Source(0, "dbname=x", "x@h:1", 1.0)
    exc = andal.Retry("later") if kind == "retry" else andal.Fail("hopeless")
    assert _failure(a_run(src, 1), exc).summary() == str(exc)


def test_slots_share_fairly_and_give_back() -> None:
    from andal.worker.observe import Observer
    from andal.worker.slots import Slots

    a = Source(0, "dbname=a", "a@h:1", 1.0)
    b = Source(1, "dbname=b", "b@h:1", 1.0)
    slots = Slots(4, 100, [a, b], Observer("w", None, [a, b]), lambda: False)
    slots.configure(leased=True, tx_forms=[])
    assert slots.reserve(a, 10) == 2  # two databases with work: half each
    assert slots.reserve(b, 10) == 2
    assert slots.reserve(a, 10) == 0 and slots.busy == 4
    slots.back(b, 2)  # b claimed nothing
    b.up = False  # and is away: its share is a's
    assert slots.reserve(a, 10) == 2 and a.busy == 4
    run = a_run(a, 1)
    a.active[1] = run
    assert slots.handler_done(run, ok=True)  # the next claim rides on its completion
    assert slots.busy == 3 and slots.reporting == 1 and a.riding == 1
    slots.finish(run, "completed")
    assert slots.reporting == 0 and slots.counts["completed"] == 1 and 1 not in a.active
