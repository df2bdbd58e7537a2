"""The worker's rooms, each driven alone through its narrow interface (no Worker)."""

from __future__ import annotations

import threading
import time
import uuid
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

import andal
from andal.listening import abort_target
from andal.worker import heartbeat
from andal.worker.databases import Source
from andal.worker.interrupt import Interrupter
from andal.worker.limits import Limits
from andal.worker.state import RunState, _failure, _Outcome, _Run


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


def test_heartbeat_reports_a_lost_connection_and_retries_soon() -> None:
    from andal.observe import Observer
    from andal.worker.slots import Slots
    from andal.worker.trouble import Trouble

    class Pool:
        def connection(self):
            import psycopg

            raise psycopg.OperationalError("server closed the connection")

    src = Source(0, "dbname=x", "x@h:1", 1.0)
    src.pool = Pool()  # type: ignore[assignment]
    run = a_run(src, 7, lease=30.0)
    observer = Observer("w", None, [src])
    slots = Slots(4, 100, [src], observer, lambda: False)
    stops = Interrupter(slots, observer)
    trouble = Trouble(slots, observer, stops, "w", lambda: None, lambda: False)
    src.active[run.job.id] = run
    beats = heartbeat.Heartbeat(slots, observer, trouble, stops, src, None, threading.Event())
    before = time.monotonic()
    beats.beat([run])
    assert slots.counts["db_errors"] == 1 and not src.up  # the database is down
    assert slots.counts["lease_lost"] == 0 and not run.lost and slots.counts["heartbeats"] == 0
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
    from andal.observe import Observer
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


def test_heartbeat_reads_aborts_and_keeps_its_pace_once_extending_is_over() -> None:
    src = Source(0, "dbname=x", "x@h:1", 1.0)
    db_now = datetime(2026, 1, 1, tzinfo=timezone.utc)
    deadline = db_now + timedelta(seconds=2)
    job = andal.Job(
        1, "q", None, {}, 1, 5, uuid.uuid4(), db_now, db_now, None, None, deadline=deadline
    )
    capped = _Run(src, job, andal.Handler("q", print), 30.0, now=100.0)  # beats every 10 s
    aborted, plain = a_run(src, 2, lease=30.0), a_run(src, 3, lease=30.0)
    rows = [
        (1, deadline, db_now, False),  # not extended past the deadline
        (2, db_now + timedelta(seconds=20), db_now, True),  # abort: no longer extended
        (3, db_now + timedelta(seconds=30), db_now, False),
    ]
    ok, missing = heartbeat.extended([capped, aborted, plain], rows, sent=500.0)
    assert ok == [capped, aborted, plain] and missing == []
    assert heartbeat.aborts(rows) == {2}
    # capped or aborted: beaten at the usual pace up to the lease's end, not ever faster
    assert capped.next_beat == 502.0 and aborted.next_beat == 510.0
    assert plain.next_beat == 510.0 and plain.deadline == 530.0


class FakeObserver:
    def __init__(self) -> None:
        self.told: list[tuple[int, str]] = []

    def interrupted(self, run: _Run, reason: str) -> None:
        self.told.append((run.job.id, reason))


def test_interrupter_flags_a_run_once_and_loses_a_timed_out_one() -> None:
    from andal.worker.slots import Slots

    src = Source(0, "dbname=x", "x@h:1", 1.0)
    observer = FakeObserver()
    slots = Slots(4, 100, [src], observer, lambda: False)  # type: ignore[arg-type]
    stops = Interrupter(slots, observer)  # type: ignore[arg-type]
    late, early, aborted = a_run(src, 1), a_run(src, 2), a_run(src, 3)
    late.time_up, early.time_up = 105.0, 500.0
    for r in (late, early, aborted):
        r.move(RunState.RUNNING)
    assert stops.due([late, early, aborted], now=106.0) == [early, aborted]
    assert late.lost and late.job.abort_reason == "timeout" and late.job.abort_requested
    with pytest.raises(andal.JobInterrupted) as stopped:
        late.job.check()
    assert stopped.value.reason == "timeout"
    assert stops.stop(aborted, "aborted") and not stops.stop(aborted, "aborted")  # once
    assert not aborted.lost, "an aborted run's outcome is still sent (the acknowledgement)"
    assert observer.told == [(1, "timeout"), (3, "aborted")]
    assert dict(slots.counts) == {"timed_out": 1}
    assert not early.job.abort_requested


def test_abort_notifications_name_the_worker_and_job() -> None:
    assert abort_target('{"job_id": 7, "worker": "w1"}', "w1") == (True, 7)
    assert abort_target('{"job_id": 7, "worker": "w2"}', "w1") == (False, None)
    assert abort_target("{}", "w1") == (True, None)  # locked down: any of its jobs
    assert abort_target("not json", "w1") == (True, None)


def test_trouble_stops_a_misconfigured_worker_and_takes_a_lost_databases_share(
    conn,
) -> None:
    import psycopg

    from andal.observe import Observer
    from andal.worker.slots import Slots
    from andal.worker.trouble import REFUSALS, Trouble

    a = Source(0, "dbname=a", "a@h:1", 1.0)
    b = Source(1, "dbname=b", "b@h:1", 1.0)
    observer = Observer("w", None, [a, b])
    slots = Slots(4, 100, [a, b], observer, lambda: False)
    slots.configure(leased=True, tx_forms=[])
    stops: list[bool] = []
    trouble = Trouble(
        slots,
        observer,
        Interrupter(slots, observer),
        "w",
        lambda: stops.append(True),
        lambda: False,
    )
    with pytest.raises(psycopg.Error) as refused:  # a real refusal from the server
        conn.execute("select andal_no_such_function()")
    for i in range(REFUSALS):
        assert trouble.refused(a, "claim", refused.value)
        assert stops == ([True] if i == REFUSALS - 1 else [])
    assert trouble.misconfigured and slots.counts["config_errors"] == REFUSALS
    assert not trouble.refused(a, "claim", RuntimeError("not a configuration problem"))
    assert slots.reserve(a, 10) == 2 and slots.reserve(b, 10) == 2
    run = a_run(b, 1)
    b.active[1] = run
    trouble.db_trouble(b, "claim", psycopg.OperationalError("server closed the connection"))
    assert not b.up and b.down_since is not None and slots.counts["db_errors"] == 1
    trouble.lease_lost(run, "heartbeat")
    trouble.lease_lost(run, "heartbeat")  # once
    assert run.lost and slots.counts["lease_lost"] == 1 and b.counts["lease_lost"] == 1
    run.deadline = time.monotonic() + 30
    assert not trouble.give_up([run])  # its lease is not past: the outcome is resent
    run.deadline = time.monotonic() - 1
    assert trouble.give_up([run])


class FakeTrouble:
    def __init__(self) -> None:
        self.refusals, self.troubles = 5, []

    def db_trouble(self, src: Source, what: str, exc: BaseException) -> None:
        self.troubles.append(what)

    def refused(self, src: Source, during: str, exc: BaseException) -> bool:
        return False


class FakeExecutor:
    limited = False

    def __init__(self) -> None:
        self.dispatched: list[_Run] = []

    def dispatch(self, runs: list[_Run]) -> None:
        self.dispatched += runs


def a_source(dsn: str, slots_for: int = 2):
    from psycopg_pool import ConnectionPool

    from andal.hosts import PoolLane
    from andal.observe import Observer
    from andal.worker.slots import Slots

    src = Source(0, dsn, "t@h:1", 1.0)
    src.pool = ConnectionPool(dsn, min_size=1, max_size=3, kwargs={"autocommit": True}, open=True)
    src.claim_lane = PoolLane(src.pool)
    observer = Observer("w-rooms", None, [src])
    return src, observer, Slots(slots_for, 100, [src], observer, lambda: False)


def test_claimer_fills_the_free_slots_and_releases_a_claim_landing_after_a_stop(dsn, clean) -> None:
    from andal.worker.claim import Claimer

    with psycopg_connect(dsn) as c:
        ids = andal.enqueue_many(c, [{"n": i} for i in range(3)], "rooms_claim")
    src, observer, slots = a_source(dsn, slots_for=2)
    slots.configure(leased=True, tx_forms=[])
    trouble, executor, released = FakeTrouble(), FakeExecutor(), []
    registry = andal.Registry({"rooms_claim": print})
    claimer = Claimer(
        slots, observer, trouble, registry, "w-rooms", None, 100, 0.0, lambda: False,
        lambda s: None, lambda s: None, lambda where, exc=None: None,
        lambda runs, why: released.extend(runs),
    )  # fmt: skip
    claimer.setup(["rooms_claim"], [], executor, {}, {})  # type: ignore[arg-type]
    try:
        assert claimer.claim_leased(src) == (2, 2)  # two free slots: two claimed
        assert [r.job.id for r in executor.dispatched] == ids[:2]
        assert slots.busy == 2 and set(src.active) == set(ids[:2])
        assert trouble.refusals == 0  # a claim that works ends a run of refusals
        assert claimer.claim_leased(src) == (0, 0)  # no room
        for run in executor.dispatched:
            slots.finish(run)
        slots.closed = True  # a stop began: what a claim takes now goes back at once
        assert claimer.claim_leased(src) == (2, 1)
        assert [r.job.id for r in released] == ids[2:] and released[0].state == "released"
        assert executor.dispatched[2:] == [] and slots.counts["claimed"] == 3
    finally:
        assert src.claim_lane is not None and src.pool is not None
        src.claim_lane.release()
        src.pool.close()


def psycopg_connect(dsn: str):
    import psycopg

    return psycopg.connect(dsn, autocommit=True)


@pytest.mark.parametrize("fails", [False, True])
def test_transactions_commit_a_handlers_writes_with_its_outcome(dsn, clean, fails) -> None:
    from andal.worker.claim import Claimer
    from andal.worker.limits import Limits
    from andal.worker.transact import Transactions, TxGroup

    with psycopg_connect(dsn) as c:
        c.execute("create table if not exists rooms_tx (job_id bigint)")
        c.execute("truncate rooms_tx")
        (job_id,) = andal.enqueue_many(c, [{}], "rooms_tx", max_attempts=1)

    def handle(job: andal.Job, conn) -> None:
        conn.execute("insert into rooms_tx values (%s)", (job.id,))
        if fails:
            raise andal.Fail("hopeless")

    src, observer, slots = a_source(dsn, slots_for=1)
    slots.configure(leased=False, tx_forms=[False])
    registry = andal.Registry()
    registry.handler("rooms_tx", transactional=True)(handle)
    trouble, done = FakeTrouble(), []
    claims = Claimer(
        slots, observer, trouble, registry, "w-rooms", None, 1, 0.0, lambda: False,
        lambda s: None, lambda s: None, lambda where, exc=None: None, lambda runs, why: None,
    )  # fmt: skip
    tx = Transactions(
        slots, observer, claims, trouble, "w-rooms", Limits({}), done.append,
        lambda: False, lambda s: None, lambda s: {},
    )  # fmt: skip
    try:
        assert slots.reserve(src, 1) == 1
        src.probes[False].searching = 1
        tx.run(src, TxGroup(["rooms_tx"], False))
        assert [r.job.id for r in done] == [job_id] and trouble.troubles == []
        assert slots.busy == 0 and src.probes[False].searching == 0
        assert slots.counts["dead" if fails else "completed"] == 1
        with psycopg_connect(dsn) as c:
            written = c.execute("select job_id from rooms_tx").fetchall()
            info = andal.jobs.job(c, job_id)
        assert written == ([] if fails else [(job_id,)])  # a failing handler's writes roll back
        # a completed job is forgotten (no results kept); a dead one waits in the dead letters
        assert (info.state if info else None) == ("dead" if fails else "completed")
    finally:
        assert src.pool is not None
        src.pool.close()


def completer_rig(dsn: str, queue: str, slots_for: int, batch: int) -> tuple[Any, ...]:
    """A claimer and a completer of one database's leased jobs of ``queue``, wired by hand
    (no Worker): (source, slots, claimer, executor, completer, the errors it reported)."""
    from andal.hosts import PoolLane
    from andal.worker.claim import Claimer
    from andal.worker.complete import Completer
    from andal.worker.trouble import Trouble

    src, observer, slots = a_source(dsn, slots_for=slots_for)
    assert src.pool is not None
    src.complete_lane = PoolLane(src.pool)
    slots.configure(leased=True, tx_forms=[])
    trouble = Trouble(
        slots, observer, Interrupter(slots, observer), "w-rooms",
        lambda: None, lambda: False,
    )  # fmt: skip
    claimer = Claimer(
        slots, observer, trouble, andal.Registry({queue: print}), "w-rooms", None, batch,
        0.0, lambda: False, lambda s: None, lambda s: None, lambda where, exc=None: None,
        lambda runs, why: None,
    )  # fmt: skip
    executor = FakeExecutor()
    claimer.setup([queue], [], executor, {}, {})  # type: ignore[arg-type]
    errors: list[str] = []
    completer = Completer(
        slots, observer, trouble, claimer, "w-rooms", batch, lambda: False,
        lambda where, exc=None: errors.append(where), set(),
    )  # fmt: skip
    return src, slots, claimer, executor, completer, errors


def test_completer_records_a_batch_of_successes_and_a_failure(dsn, clean) -> None:
    from andal.worker.state import _STOP

    with psycopg_connect(dsn) as c:
        ids = andal.enqueue_many(c, [{"n": i} for i in range(3)], "rooms_done", max_attempts=1)
    src, slots, claimer, executor, completer, errors = completer_rig(dsn, "rooms_done", 3, 100)
    try:
        assert claimer.claim_leased(src) == (3, 3)
        for run in executor.dispatched:
            run.move(RunState.RUNNING)
            ok = run.job.id != ids[2]
            outcome = (
                _Outcome(run, True, 1.0, result="{}")
                if ok
                else _failure(run, andal.Fail("hopeless"))
            )
            outcome.rides = slots.handler_done(run, outcome.ok)
            src.done.put(outcome)
        src.done.put(_STOP)
        completer.run(src)  # until the stop: records the batch, then returns
        assert errors == [] and slots.busy == 0 and slots.reporting == 0
        assert slots.counts["completed"] == 2 and slots.counts["dead"] == 1
        with psycopg_connect(dsn) as c:
            infos = [andal.jobs.job(c, i) for i in ids]
        assert [info.state if info else None for info in infos] == ["completed"] * 2 + ["dead"]
    finally:
        src.claim_lane.release()  # type: ignore[union-attr]
        src.complete_lane.release()
        src.pool.close()


def test_shutdown_hands_back_unstarted_jobs_and_closes_the_pools(dsn, clean) -> None:
    from andal.worker.claim import Claimer
    from andal.worker.shutdown import Shutdown
    from andal.worker.trouble import Trouble

    with psycopg_connect(dsn) as c:
        ids = andal.enqueue_many(c, [{}, {}], "rooms_stop")
    src, observer, slots = a_source(dsn, slots_for=2)
    slots.configure(leased=True, tx_forms=[])
    trouble = Trouble(
        slots, observer, Interrupter(slots, observer), "w-rooms",
        lambda: None, lambda: False,
    )  # fmt: skip
    stopping = threading.Event()
    shutdown = Shutdown(slots, trouble, [src], "w-rooms", 5.0, 1.0, stopping, lambda: False)
    claimer = Claimer(
        slots, observer, trouble, andal.Registry({"rooms_stop": print}), "w-rooms", None, 100,
        0.0, lambda: False, lambda s: None, lambda s: None, lambda where, exc=None: None,
        shutdown.release_all,
    )  # fmt: skip
    executor = FakeExecutor()
    claimer.setup(["rooms_stop"], [], executor, {}, {})  # type: ignore[arg-type]

    class Maintenance:
        stopped = False

        def stop(self) -> None:
            self.stopped = True

    maintenance = Maintenance()
    shutdown.setup(None, {0: maintenance}, {})  # type: ignore[dict-item]
    assert src.claim_lane is not None
    assert claimer.claim_leased(src) == (2, 2)
    src.claim_lane.release()
    assert shutdown.run() == 0  # nothing was running: a clean stop
    assert stopping.is_set() and shutdown.helpers_stop.is_set() and maintenance.stopped
    assert slots.closed and slots.busy == 0 and slots.counts["released"] == 2
    assert src.pool is not None and src.pool.closed
    with psycopg_connect(dsn) as c:
        infos = [andal.jobs.job(c, i) for i in ids]
    assert [info.state if info else None for info in infos] == ["pending", "pending"]


def test_the_heartbeat_sees_the_held_leased_runs_only() -> None:
    from andal.observe import Observer
    from andal.worker.slots import Slots
    from andal.worker.trouble import Trouble

    src = Source(0, "dbname=x", "x@h:1", 1.0)
    observer = Observer("w", None, [src])
    slots = Slots(4, 100, [src], observer, lambda: False)
    stops = Interrupter(slots, observer)
    trouble = Trouble(slots, observer, stops, "w", lambda: None, lambda: False)
    held, lost, done = a_run(src, 1), a_run(src, 2), a_run(src, 3)
    lost.lost = True
    done.move(RunState.DONE)
    src.active.update({1: held, 2: lost, 3: done})
    assert slots.held(src) == [held] and slots.holding(held) and not slots.holding(done)
    trouble.lease_lost(held, "heartbeat")
    assert held.lost and slots.held(src) == [] and slots.counts["lease_lost"] == 1


def test_a_stop_request_cuts_a_pause_short() -> None:
    from andal.worker.stopping import StopRequest

    stop = StopRequest()
    assert not stop.requested() and not stop.hard()
    threading.Timer(0.05, stop.set).start()
    before = time.monotonic()
    stop.pause(60.0)  # returns at the stop, not after a minute
    assert stop.requested() and time.monotonic() - before < 30
    stop.signals = 2
    assert stop.hard()


def test_startup_wires_the_rooms_and_their_threads_drain_a_queue(dsn, clean) -> None:
    from andal.observe import Observer
    from andal.worker.claim import Claimer
    from andal.worker.complete import Completer
    from andal.worker.options import Options
    from andal.worker.shutdown import Shutdown
    from andal.worker.slots import Slots
    from andal.worker.startup import StartRooms, Startup
    from andal.worker.trouble import Trouble

    with psycopg_connect(dsn) as c:
        ids = andal.enqueue_many(c, [{"n": i} for i in range(5)], "rooms_start")
    ran: list[int] = []
    registry = andal.Registry({"rooms_start": lambda job: ran.append(job.id)})
    src = Source(0, dsn, "t@h:1", 0.05)
    observer = Observer("w-start", None, [src])
    stopping = threading.Event()
    slots = Slots(2, 10, [src], observer, stopping.is_set)
    stops = Interrupter(slots, observer)
    trouble = Trouble(slots, observer, stops, "w-start", stopping.set, lambda: False)
    errors: list[str] = []

    def internal_error(where: str, exc: BaseException | None = None) -> None:
        errors.append(where)

    def hint(s: Source) -> None:
        s.leased_dry.hint()
        s.wake.set()

    def pause(seconds: float) -> None:
        stopping.wait(seconds)

    shutdown = Shutdown(slots, trouble, [src], "w-start", 5.0, 1.0, stopping, lambda: False)
    claimers, threads = shutdown.claimers, shutdown.threads
    claimer = Claimer(
        slots, observer, trouble, registry, "w-start", None, 10, 0.0, stopping.is_set, pause,
        hint, internal_error, shutdown.release_all,
    )  # fmt: skip
    completer = Completer(
        slots, observer, trouble, claimer, "w-start", 10, stopping.is_set, internal_error, set()
    )
    options = Options(name="w-start", concurrency=2, listen=False, maintain_every=0.0)
    rooms = StartRooms(
        registry=registry, sources=[src], slots=slots, observer=observer, trouble=trouble,
        interrupter=stops, claimer=claimer, completer=completer, shutdown=shutdown,
        should_stop=stopping.is_set, pause=pause, hint=hint, internal_error=internal_error,
    )  # fmt: skip
    startup = Startup(options, rooms)
    startup.prepare()
    assert startup.leased_queues == ["rooms_start"] and startup.tx_queues == []
    assert claimer.executor is startup.executor and completer.executor is startup.executor
    assert src.pool is not None and src.claim_lane is not None
    with pytest.raises(RuntimeError):
        startup.prepare()  # once
    startup.start_threads()
    assert [t.name for t in claimers] == ["andal-claim-0"]
    assert sorted(t.name for t in threads) == ["andal-completer-0", "andal-heartbeat-0"]
    deadline = time.monotonic() + 20
    while slots.counts["completed"] < len(ids) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert sorted(ran) == ids and slots.counts["completed"] == len(ids)
    assert shutdown.run() == 0 and errors == []
    assert src.pool.closed and not any(t.is_alive() for t in claimers)
    with psycopg_connect(dsn) as c:
        states = [getattr(andal.jobs.job(c, i), "state", None) for i in ids]
        assert states == ["completed"] * len(ids)


@pytest.mark.parametrize("stale", [False, True])
def test_completer_sends_one_success_with_the_next_claim(dsn, clean, stale) -> None:
    """One success goes with the next claim in one statement (queue.complete_many_then_claim,
    whose one-job path is queue.complete's); a stale token there is a lost lease, counted once,
    and the next job is claimed all the same."""
    from andal.worker.state import _STOP

    with psycopg_connect(dsn) as c:
        first, second = andal.enqueue_many(c, [{"n": 1}, {"n": 2}], "rooms_one")
    src, slots, claimer, executor, completer, errors = completer_rig(dsn, "rooms_one", 2, 1)
    try:
        assert claimer.claim_leased(src) == (1, 1)
        (run,) = executor.dispatched
        assert run.job.id == first
        if stale:  # another claimer's token now: this worker's lease is gone
            with psycopg_connect(dsn) as c:
                c.execute("update queue.jobs set token = gen_random_uuid() where id = %s", (first,))
        run.move(RunState.RUNNING)
        outcome = _Outcome(run, True, 1.0, result='{"quote": "it\'s \\\\ fine"}')
        outcome.rides = slots.handler_done(run, outcome.ok)
        src.done.put(outcome)
        src.done.put(_STOP)
        completer.run(src)
        assert errors == [] and [r.job.id for r in executor.dispatched] == [first, second]
        assert slots.counts["completed"] == (0 if stale else 1)
        assert slots.counts["lease_lost"] == (1 if stale else 0)
        assert slots.counts["errors"] == 0 and slots.busy == 1 and src.riding == 0
        with psycopg_connect(dsn) as c:
            left = c.execute("select id, status from queue.jobs order by id").fetchall()
        assert left == ([(first, "running")] if stale else []) + [(second, "running")]
    finally:
        src.claim_lane.release()  # type: ignore[union-attr]
        src.complete_lane.release()
        src.pool.close()
