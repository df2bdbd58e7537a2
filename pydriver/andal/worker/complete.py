"""Completing: record the outcomes of one database's leased jobs (``Source.done``), as the
completer's row and the job's path in docs/architecture.md draw it; the claim riding on a
batch is ``sql.COMPLETE_MANY_THEN_CLAIM`` (one round trip and one commit per batch, a single
success included: the SQL takes its one-job path). A batch refused as a whole is completed
job by job, to isolate the one refused; a lost connection is retried with backoff until the
jobs' leases are past.
"""

from __future__ import annotations

import logging
import queue as queues_
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import psycopg

from .. import statements as sql
from ..errors import is_lease_lost
from ..handlers import ABORTED
from ..hosts import ReconnectBackoff, is_connection_error
from ..logs import event, one_line
from ..values import plain_array, text_array
from .databases import Source
from .interrupt import aborted
from .state import _LINGER, _STOP, _Outcome, _Run

if TYPE_CHECKING:
    from ..observe import Observer
    from .execute import Executor, InternalError
    from .slots import Slots
    from .trouble import Trouble


class NextClaim(Protocol):
    """What the completer needs of the claim room (``claim.Claimer``) to send the next claim
    with a batch of completions, and to hand over the jobs it took."""

    leased_queues: list[str]

    def leased_params(self, n: int) -> dict[str, Any] | None: ...

    def claimed(
        self,
        src: Source,
        n: int,
        rows: list[tuple[Any, ...]],
        took: float,
        started_ns: int,
        hints: int,
        keep: list[_Run] | None = None,
    ) -> int: ...


class Completer:
    """The outcomes of one worker's jobs, database by database (``run(src)``: the loop of
    ``src``'s completer thread). ``claims``: the claim room as a ``NextClaim`` (the next claim
    rides on a batch of completions); ``in_handler``: the completer threads running a handler
    (with one slot, see ``_complete``; ``executor``, set at start, runs it), which a stop does
    not wait for."""

    def __init__(
        self,
        slots: Slots,
        observer: Observer,
        trouble: Trouble,
        claims: NextClaim,
        name: str,
        batch: int,
        should_stop: Callable[[], bool],
        internal_error: InternalError,
        in_handler: set[threading.Thread],
    ) -> None:
        self.slots, self.observer, self.trouble, self.claims = slots, observer, trouble, claims
        self.name, self.batch, self.should_stop = name, batch, should_stop
        self.internal_error, self.in_handler = internal_error, in_handler
        self.executor: Executor | None = None
        #: Per database (index): the jobs its completer claimed to run in its own thread.
        self.inline: dict[int, list[_Run]] = {}

    def run(self, src: Source) -> None:
        inline = self.inline.setdefault(src.index, [])
        while True:
            first = src.done.get()
            if first is _STOP:
                return
            batch = [first]
            stop = False
            # Take what is there; while this database's other jobs are still in their slots,
            # wait up to _LINGER for their outcomes too, so that a batch claimed together is
            # completed together (and the claim riding on it is not split in two).
            linger = 0.0
            while len(batch) < 500:
                try:
                    item = src.done.get_nowait()
                except queues_.Empty:
                    if src.busy <= 0 or self.should_stop():
                        break
                    now = time.monotonic()
                    if not linger:
                        linger = now + _LINGER
                    if now >= linger:
                        break
                    try:
                        item = src.done.get(timeout=linger - now)
                    except queues_.Empty:
                        break
                if item is _STOP:
                    stop = True
                    break
                batch.append(item)
            try:
                self._record(batch)
            except Exception:
                self.internal_error("completer")
                for o in batch:  # whatever happened, the slots are free again
                    self.slots.finish(o.run)
            while inline:  # the job its claim took, with one slot (see _complete)
                me = threading.current_thread()
                self.in_handler.add(me)
                try:
                    assert self.executor is not None
                    self.executor.run_here(inline.pop())
                except Exception:
                    self.internal_error("slot")
                finally:
                    self.in_handler.discard(me)
            if stop:
                return

    def _record(self, outcomes: list[_Outcome]) -> None:
        """Record outcomes of one database's jobs (its completer's batch)."""
        src = outcomes[0].run.source
        # The successes of the batch that kept their database's claim loop asleep (see
        # Slots.handler_done): _complete's claim takes over from them, or, when there is none, the
        # claim loop is woken below.
        ride = [sum(1 for o in outcomes if o.rides)]
        try:
            self._record_batch(outcomes, ride)
        finally:
            if ride[0]:
                self.slots.unride(src, ride[0])

    def _record_batch(self, outcomes: list[_Outcome], ride: list[int]) -> None:
        keep, dropped = self.slots.to_record(outcomes)
        for i, o in enumerate(keep):  # finishing now: no abort request reaches them any more
            if o.ok and o.run.job.abort_reason == ABORTED:  # learnt after it returned
                keep[i] = aborted(o.run, o)
        for o in dropped:
            event("outcome_discarded", logging.DEBUG, worker=self.name, **o.run.fields())
            self.slots.finish(o.run)
        oks = [o for o in keep if o.ok]
        if oks:
            self._complete(oks, ride)
        for o in keep:
            if not o.ok:
                self._fail(o)

    def _complete(self, oks: list[_Outcome], ride: list[int] | None = None) -> None:
        """``queue.complete_many`` for one database's successes. When that database has room
        (the slots these jobs left), the next claim goes in the same statement
        (``sql.COMPLETE_MANY_THEN_CLAIM``: one round trip, one commit; an error in either rolls
        both back, and the completions are then sent alone)."""
        src = oks[0].run.source
        lane = src.complete_lane
        assert lane is not None
        params = {
            "job_ids": plain_array([o.run.job.id for o in oks]),
            "tokens": plain_array([o.run.job.token for o in oks]),
            "results": text_array([o.result for o in oks]),
        }
        backoff = ReconnectBackoff()
        retried = False
        combine = bool(self.claims.leased_queues)
        n = 0
        claimed: list[tuple[Any, ...]] = []
        while True:
            started, started_ns = time.perf_counter(), self.observer.now_ns()
            try:
                with lane.connection() as conn:
                    claim = self.claims.leased_params(self.batch) if combine else None
                    n = self.slots.reserve_next(src, ride, claim is not None) if combine else 0
                    hints = src.leased_dry.hints
                    if n and claim is not None:
                        claim["batch"] = n
                        both = conn.execute(
                            sql.COMPLETE_MANY_THEN_CLAIM, {**params, **claim}
                        ).fetchall()
                        rows = [(r[1], r[15], None) for r in both if not r[0]]
                        claimed = [r[1:15] for r in both if r[0]]
                    else:
                        rows = conn.execute(sql.COMPLETE_MANY, params).fetchall()
                break
            except psycopg.Error as exc:
                if ride and ride[0]:  # no claim rides on a failed attempt
                    self.slots.reserve_next(src, ride, claim=False)
                    src.wake.set()
                if n:
                    self.slots.back(src, n)
                    self.observer.claim_error("leased")
                    n, combine = 0, False
                    if not is_connection_error(exc):
                        # The claim or the completion was refused, both rolled back: log it
                        # as the claim loop would, and send the completions alone.
                        self._claim_refused(src, exc, len(oks))
                        continue
                combine = False
                if is_connection_error(exc):
                    if self._connection_lost(src, oks, exc):
                        return
                    retried = True
                    time.sleep(backoff.next())
                    continue
                # Something in the batch was refused: complete one by one to isolate it.
                event(
                    "complete_many_failed",
                    logging.WARNING,
                    database=src.label,
                    error=one_line(exc),
                )
                for o in oks:
                    self._complete_one(o)
                return
        took = time.perf_counter() - started
        if n:  # the next jobs first: their handlers start while these are counted
            self._claimed(src, n, claimed, took, started_ns, hints)
        self._recorded(oks, rows, took, started_ns, retried)

    def _claimed(
        self, src: Source, n: int, rows: list[tuple[Any, ...]], took: float, ns: int, hints: int
    ) -> None:
        """The claim sent with the completions took ``rows``. With one slot, the completer
        runs the job it claimed itself, once its batch is recorded (``run``): the only outcome
        it can wait for is that job's, and two thread hand-offs per job are saved."""
        keep = self.inline.setdefault(src.index, []) if self.slots.concurrency == 1 else None
        self.claims.claimed(src, n, rows, took, ns, hints, keep)

    def _claim_refused(self, src: Source, exc: psycopg.Error, completions: int) -> None:
        """The claim sent with completions was refused (both rolled back): logged as the claim
        loop would; the completions are then sent alone."""
        if self.trouble.refused(src, "claim", exc):
            return
        self.slots.count("errors", src=src)
        event(
            "claim_failed",
            logging.ERROR,
            worker=self.name,
            database=src.label,
            error=one_line(exc),
            with_completions=completions,
        )

    def _connection_lost(self, src: Source, oks: list[_Outcome], exc: psycopg.Error) -> bool:
        """The connection went while completing ``oks``: their slots go to the other
        databases meanwhile. Returns True when resending is over (every lease is past)."""
        self.trouble.db_trouble(src, "complete", exc)
        self.slots.unslot([o.run for o in oks])
        if not self.trouble.give_up([o.run for o in oks]):
            return False
        for o in oks:
            self.trouble.lease_lost(o.run, "complete", outcome="unknown: connection lost")
            self.slots.finish(o.run)
        return True

    def _recorded(
        self, oks: list[_Outcome], rows: list[Any], took: float, started_ns: int, retried: bool
    ) -> None:
        """``queue.complete_many_outcomes`` answered ``rows`` (job id, completed, refused) for
        ``oks`` (``queue.complete_many_then_claim``: refused None, asked when one is refused)."""
        self.observer.reported_many([o.run for o in oks], took, started_ns)
        completed = {r[0]: r[1] for r in rows}
        refused = {r[0]: r[2] for r in rows if not r[1]}
        if None in refused.values() and not retried:
            refused = refusals([o for o in oks if o.run.job.id in refused])
        logged = self.observer.job_logs()
        done: list[_Run] = []
        for o in oks:
            run = o.run
            if completed.get(run.job.id):
                if logged:
                    self.observer.job_line("completed", run, duration_ms=o.duration_ms)
                done.append(run)
                continue
            if retried:
                self.trouble.lease_lost(
                    run, "complete", outcome="unknown: resent after a lost connection"
                )
            elif self._acknowledge(o, refused.get(run.job.id)):
                continue
            self.slots.finish(run)
        if done:
            self.slots.finish_many(done, "completed")

    def _complete_one(self, o: _Outcome) -> None:
        src = o.run.source
        assert src.complete_lane is not None
        started, started_ns = time.perf_counter(), self.observer.now_ns()
        try:
            with src.complete_lane.connection() as conn:
                conn.execute(
                    sql.COMPLETE,
                    {"job_id": o.run.job.id, "token": o.run.job.token, "result": o.result},
                )
        except psycopg.Error as exc:
            if is_lease_lost(exc):
                if self._acknowledge(o, refusals([o]).get(o.run.job.id)):
                    return
            elif is_connection_error(exc):
                self.trouble.db_trouble(src, "complete", exc)
                self.trouble.lease_lost(o.run, "complete", outcome="unknown: connection lost")
            elif self.trouble.refused(src, "complete", exc):
                self.trouble.lease_lost(
                    o.run, "complete", outcome="unknown: queue.complete refused"
                )
            else:  # the result itself was refused: fail the attempt with the reason
                o.ok, o.reason = False, "exception"
                o.error = f"result refused by queue.complete: {str(exc).strip()}"
                self._fail(o)
                return
        else:
            self.observer.reported(o.run, "complete", started, started_ns)
            self.observer.job_line("completed", o.run, duration_ms=o.duration_ms)
            self.slots.finish(o.run, "completed")
            return
        self.slots.finish(o.run)

    def _acknowledge(self, o: _Outcome, refused: str | None) -> bool:
        """A completion refused for ``refused`` (the word of ``queue.refusals``). ``aborted``:
        an abort was requested after the handler returned (the abort wins over the completion),
        acknowledged with ``queue.fail`` (the job ends cancelled at once, rather than when its
        lease runs out). Any other: the lease is lost, logged with the word. Returns whether
        the abort was acknowledged (the run is then finished)."""
        if refused == "aborted":
            self._fail(aborted(o.run, o))
            return True
        self.trouble.lease_lost(o.run, "complete", refused=refused or "unknown")
        return False

    def _fail(self, o: _Outcome) -> None:
        src = o.run.source
        lane = src.complete_lane
        assert lane is not None
        params = {
            "job_id": o.run.job.id,
            "token": o.run.job.token,
            "error": o.error or "failed",
            "retry_in": o.retry_in,
            "retryable": o.retryable,
        }
        backoff = ReconnectBackoff()
        while True:
            started, started_ns = time.perf_counter(), self.observer.now_ns()
            try:
                with lane.connection() as conn:
                    row = conn.execute(sql.FAIL, params).fetchone()
                break
            except psycopg.Error as exc:
                if is_lease_lost(exc):
                    self.trouble.lease_lost(o.run, "fail")
                    self.slots.finish(o.run)
                    return
                if is_connection_error(exc) and not self.trouble.give_up([o.run]):
                    self.trouble.db_trouble(src, "fail", exc)
                    self.slots.unslot([o.run])
                    time.sleep(backoff.next())
                    continue
                if not self.trouble.refused(src, "fail", exc):
                    event("fail_failed", logging.ERROR, error=one_line(exc), **o.run.fields())
                self.trouble.lease_lost(o.run, "fail", outcome="unknown: queue.fail not recorded")
                self.slots.finish(o.run)
                return
        status = row[0] if row else None
        error = o.summary()
        fields = o.run.fields(duration_ms=o.duration_ms, reason=o.reason, error=error)
        if status == "cancelled":  # an abort acknowledged (or one requested meanwhile)
            self.observer.reported(o.run, "fail", started, started_ns, outcome="cancelled")
            event("cancelled", worker=self.name, **{**fields, "reason": "aborted"})
            self.slots.finish(o.run, "cancelled", error)
            return
        outcome = "dead" if status == "dead" else "retried"
        self.observer.reported(o.run, "fail", started, started_ns, outcome=outcome)
        if outcome == "dead":
            fields["reason"] = row[1] if row else None  # the dead letter's (queue.fail_outcome)
            event("dead", logging.WARNING, worker=self.name, **fields)
        else:
            if o.retry_in is not None:
                fields["retry_in_s"] = o.retry_in.total_seconds()
            event("retried", worker=self.name, **fields)
        self.slots.finish(o.run, outcome, error)


def refusals(refused: list[_Outcome]) -> dict[int, str | None]:
    """Why each of ``refused``'s completions (one database's) was refused, in the word of
    ``queue.refusals``; an empty answer when the database cannot say (the leases are then
    handled as lost)."""
    lane = refused[0].run.source.complete_lane
    assert lane is not None
    params = {
        "job_ids": plain_array([o.run.job.id for o in refused]),
        "tokens": plain_array([o.run.job.token for o in refused]),
    }
    try:
        with lane.connection() as conn:
            return dict(conn.execute(sql.REFUSALS, params).fetchall())
    except psycopg.Error as exc:
        event("refusals_failed", logging.WARNING, error=one_line(exc))
        return {}
