"""Slot accounting: ``Held`` and ``Slots``, which extends it, the one owner of the state the
worker's threads share, under one lock (docs/architecture.md, "Who owns what": what they own,
the methods every room changes it through, and their rules: ``room``, the backpressure)."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from ..observe import Observer
from .databases import Source
from .state import Probe, RunState, _Outcome, _Run


class Held:
    """The runs one worker holds, their states (``RunState``) and the databases' (``up``,
    the probes searching), the worker's counts, and the one lock (and its condition, ``cv``)
    that guards them and the slots (``Slots``, which extends it)."""

    def __init__(self, sources: Sequence[Source], observer: Observer) -> None:
        self.sources = list(sources)
        self.observer = observer
        self.lock = threading.Lock()
        self.cv = threading.Condition(self.lock)
        #: What happened, over all databases (each ``Source`` counts its own too).
        self.counts: Counter[str] = Counter()
        #: Set by a stop (under the lock): a claim landing later is released at once.
        self.closed = False

    def count(self, key: str, n: int = 1, src: Source | None = None) -> None:
        with self.lock:
            self.counts[key] += n
            if src is not None:
                src.counts[key] += n

    def ended(self, run: _Run, outcome: str, error: str | None = None) -> None:
        """Count a job attempt's outcome (counts, metrics) and end its trace."""
        self.count(outcome, src=run.source)
        self.observer.outcome(run, outcome, error)

    def took(self, src: Source, runs: list[_Run]) -> bool:
        """A claim's ``runs`` are held now (``src.active``) and counted. Returns whether a
        stop closed the slots first: the runs are then released (the caller hands them back)."""
        with self.lock:
            closed = self.closed
            for run in runs:
                if closed:
                    run.move(RunState.RELEASED)
                src.active[run.job.id] = run
            if runs:
                self.counts["claimed"] += len(runs)
                src.counts["claimed"] += len(runs)
        return closed

    def start(self, run: _Run) -> bool | None:
        """``run``'s handler is about to start: True, it is running; False, its lease is gone
        (it is done: finish it); None, a stop released it before it started."""
        with self.lock:
            if run.state is not RunState.CLAIMED:
                return None
            if run.lost:
                run.move(RunState.DONE)
                return False
            run.move(RunState.RUNNING)
            return True

    def to_record(self, outcomes: list[_Outcome]) -> tuple[list[_Outcome], list[_Outcome]]:
        """A completer's batch: the outcomes to record (their runs finishing) and the ones to
        discard (lost or released: done, counted ``discarded``)."""
        keep: list[_Outcome] = []
        dropped: list[_Outcome] = []
        with self.lock:
            for o in outcomes:
                if o.run.lost or o.run.state is RunState.RELEASED:
                    o.run.move(RunState.DONE)
                    dropped.append(o)
                    self.counts["discarded"] += 1
                    o.run.source.counts["discarded"] += 1
                else:
                    o.run.move(RunState.FINISHING)
                    keep.append(o)
        return keep, dropped

    def lose(self, run: _Run) -> bool:
        """``run``'s lease is lost (its outcome will be discarded): counted once; returns
        whether this call is the first to say so."""
        with self.lock:
            if run.lost:
                return False
            run.lost = True
            self.counts["lease_lost"] += 1
            run.source.counts["lease_lost"] += 1
        return True

    def ask_stop(self, run: _Run, reason: str, loses: bool) -> tuple[bool, Any]:
        """Flag ``run``'s stop for ``reason`` (``Interrupter.stop``), once and only while its
        handler may run; ``loses``: its outcome is discarded from now on. Returns whether
        this call flagged it, and the asyncio task to cancel (None: none, or it returned)."""
        with self.lock:
            stop = run.job._stop
            if stop.reason is not None or run.lost or not run.state.holding:
                return False, None
            stop.reason = reason
            if loses:
                run.lost = True
            return True, None if run.ran else run.task

    def lose_at_deadline(self, run: _Run, reason: str) -> tuple[bool, bool]:
        """``run`` was fenced at its deadline after its handler returned: lost, its stop
        reason ``reason`` unless one was set. Returns whether it was lost already, and
        whether this call set the reason."""
        with self.lock:
            was_lost, run.lost = run.lost, True
            first = run.job._stop.reason is None
            if first:
                run.job._stop.reason = reason
        return was_lost, first

    def held(self, src: Source) -> list[_Run]:
        """``src``'s leased runs whose lease this worker still extends."""
        with self.lock:
            return [
                r
                for r in src.active.values()
                if not r.lost and not r.handler.transactional and r.state is not RunState.DONE
            ]

    def holding(self, run: _Run) -> bool:
        with self.lock:
            return run.state.holding

    def searching(self, probe: Probe, n: int) -> None:
        """A transactional probe starts claiming (``n`` = 1) or is done (-1)."""
        with self.lock:
            probe.searching += n

    def went_down(self, src: Source) -> list[_Run] | None:
        """``src`` does not answer: it is down (its share of the slots goes to the others).
        Returns its runs whose outcome waits to be sent, or None when it was down already."""
        with self.lock:
            if not src.up:
                return None
            src.up, src.down_since = False, time.monotonic()
            return [r for r in src.active.values() if r.ran]

    def came_up(self, src: Source) -> tuple[bool, float | None]:
        """``src`` answers again; returns whether it was down, and since when (monotonic)."""
        with self.lock:
            was_down, src.up = not src.up, True
            since, src.down_since = src.down_since, None
        return was_down, since

    def close(self) -> list[_Run]:
        """A stop: no claim lands from now on; returns the runs not started (released)."""
        with self.lock:
            self.closed = True
            unstarted = [
                r for s in self.sources for r in s.active.values() if r.state is RunState.CLAIMED
            ]
            for r in unstarted:
                r.move(RunState.RELEASED)
        return unstarted

    def release_late(self) -> list[_Run]:
        """The grace period is over: the runs still held and not lost are released."""
        with self.lock:
            late = [
                r for s in self.sources for r in s.active.values() if r.state.holding and not r.lost
            ]
            for r in late:
                r.move(RunState.RELEASED)
        return late


class Slots(Held):
    """The slots of one worker (see the module's docstring). ``leased``: the worker has
    leased queues; ``tx_forms``: the handler forms of its transactional queues (False:
    plain, True: ``async def``); both set by ``configure`` when the worker starts."""

    def __init__(
        self,
        concurrency: int,
        batch: int,
        sources: Sequence[Source],
        observer: Observer,
        stopping: Callable[[], bool],
    ) -> None:
        super().__init__(sources, observer)
        self.concurrency = concurrency
        self.batch = batch
        self.stopping = stopping
        self.busy = 0  # slots in use, all databases
        self.reporting = 0  # unfinished runs that gave their slot back (see handler_done)
        self.turn = 0  # rotates the remainder of an uneven split of the slots (see room)
        self.leased = False
        self.tx_forms: list[bool] = []

    def configure(self, leased: bool, tx_forms: list[bool]) -> None:
        self.leased, self.tx_forms = leased, tx_forms

    def contending(self, src: Source, now: float) -> bool:
        """Whether ``src`` competes for slots: it answers and is not idle (its last claim found
        work, or a NOTIFY or the poll timer says it may have some)."""
        return src.up and (
            (self.leased and src.leased_dry.ready(now))
            or any(src.probes[form].dry.ready(now) for form in self.tx_forms)
        )

    def room(self, src: Source) -> int:
        """How many more slots ``src`` may take now. Call with ``lock`` held.

        The fairness rule: the databases contending for slots are ``src`` and every other one
        that is reachable and not idle (``contending``). The slots not held by the others
        (idle or unreachable databases whose jobs still run) are split evenly among the
        contending ones, the remainder of an uneven split going to each in turn (the turn
        moves every time a slot is freed). ``src`` may take its share minus what it holds,
        and never more than the free slots. So an idle or unreachable database leaves its
        share to the others, and a database that has work again gets its share back as the
        others' jobs end (running jobs are never preempted). With one database: the free
        slots.

        Backpressure: a database's jobs in hand (in slots, or waiting for the completer to
        record their outcome) stay within twice ``concurrency``, so a completer that falls
        behind slows its own database's claims instead of piling up outcomes."""
        now = time.monotonic()
        contending = rank = elsewhere = 0
        for s in self.sources:
            if s is src or self.contending(s, now):
                if s is src:
                    rank = contending
                contending += 1
            else:
                elsewhere += s.busy
        base, extra = divmod(max(self.concurrency - elsewhere, 0), contending)
        share = base + (1 if (rank - self.turn) % contending < extra else 0)
        backlog = 2 * self.concurrency - src.busy - src.reporting
        return max(0, min(share - src.busy, self.concurrency - self.busy, backlog))

    def reserve(self, src: Source, most: int) -> int:
        """Take up to ``most`` slots of ``src``'s room for it; returns how many were taken."""
        with self.lock:
            n = min(self.room(src), most)
            if n > 0:
                self.busy += n
                src.busy += n
        return max(n, 0)

    def back(self, src: Source, n: int) -> None:
        """Slots taken for a claim and not used: free again, maybe for another database."""
        if n:
            with self.cv:
                self.busy -= n
                src.busy -= n
                self.cv.notify_all()
            self.wake_others(src)

    def give(self, src: Source) -> None:
        with self.cv:
            self.busy -= 1
            src.busy -= 1
            self.turn += 1
            self.cv.notify_all()
        self.wake_all()

    def handler_done(self, run: _Run, ok: bool) -> bool:
        """A leased run's handler returned: its slot is free for the next job at once. The run
        stays held (heartbeated, resent, waited for by a stop) until its outcome is recorded
        or its lease is past. A success's completion carries the next claim of its database
        (``_complete``), so that database's claim loop is not woken for it (it would claim
        the slots one by one as they free); the other databases' claim loops are, when the
        slot lets them claim (``wanted``). Returns whether the next claim rides on it."""
        src = run.source
        own = not ok or bool(self.tx_forms)  # no claim rides on the outcome: wake its loop
        with self.cv:
            run.ran = True
            if not run.slot or run.finished:
                return False
            if not own:
                src.riding += 1
            run.slot = False
            self.busy -= 1
            src.busy -= 1
            self.turn += 1
            self.reporting += 1
            src.reporting += 1
            self.cv.notify_all()
            wake = self.wanted(None if own else src)
        for s in wake:
            s.wake.set()
        return not own

    def wanted(self, but: Source | None = None) -> list[Source]:
        """Sources (other than ``but``) whose claim loop a freed slot lets claim: a futile
        wake-up costs a thread switch. Call with ``lock`` held."""
        return [s for s in self.sources if s is not but and s.up and self.room(s) > 0]

    def unslot(self, runs: list[_Run]) -> None:
        """The outcomes of ``runs`` wait on a database that does not answer: give their slots to
        the jobs of the other databases. The runs stay held (heartbeated, resent, waited for
        by a stop) until their outcome is recorded or their lease is past."""
        freed = False
        with self.cv:
            for r in runs:
                if r.slot and not r.finished:
                    r.slot = False
                    self.reporting += 1
                    r.source.reporting += 1
                    self.busy -= 1
                    r.source.busy -= 1
                    freed = True
            if freed:
                self.cv.notify_all()
        if freed:
            self.wake_all()

    def finish(self, run: _Run, outcome: str | None = None, error: str | None = None) -> None:
        """The run's outcome is recorded, dropped or released: free its slot. ``outcome``
        (when this call decides it) is counted in the metrics and ends the job's trace."""
        with self.lock:
            if run.finished:
                return
            run.finished = True
            _forget(run.source, run)
            slot, run.slot = run.slot, False
        if outcome is not None:
            self.ended(run, outcome, error)
        elif run.span is not None:  # lost or released: counted when it was noticed
            lost = "timed_out" if run.job.abort_reason == "timeout" else "lease_lost"
            self.observer.end_trace(run, lost if run.lost else "released")
        if slot:
            self.give(run.source)
        else:
            src = run.source
            with self.cv:
                self.reporting -= 1
                src.reporting -= 1
                self.cv.notify_all()
                unblocked = src.reporting == self.concurrency
            if unblocked:  # its backlog held its claims back (see room): no longer
                src.wake.set()

    def finish_many(self, runs: list[_Run], outcome: str) -> None:
        """``finish(run, outcome)`` for a batch of one database's runs: one lock, one count and
        one wake-up for the batch."""
        src = runs[0].source
        ended: list[_Run] = []
        slots = 0
        with self.cv:
            blocked = src.reporting > self.concurrency
            for run in runs:
                if run.finished:
                    continue
                run.finished = True
                _forget(src, run)
                if run.slot:
                    run.slot = False
                    slots += 1
                else:
                    self.reporting -= 1
                    src.reporting -= 1
                ended.append(run)
            if slots:
                self.busy -= slots
                src.busy -= slots
                self.turn += slots
            n = len(ended)
            if n:
                self.counts[outcome] += n
                src.counts[outcome] += n
            self.cv.notify_all()
            unblocked = blocked and src.reporting <= self.concurrency
        observer = self.observer
        for run in ended:
            observer.outcome(run, outcome)
        if slots:
            self.wake_all()
        elif unblocked:  # its backlog held its claims back (see room): no longer
            src.wake.set()

    def wake_all(self) -> None:
        for s in self.sources:
            s.wake.set()

    def wake_others(self, src: Source) -> None:
        """``src`` left slots unused: the other databases' claim loops may take them."""
        for s in self.sources:
            if s is not src:
                s.wake.set()

    def has_room(self, src: Source) -> bool:
        with self.lock:
            return self.room(src) > 0

    def reserve_next(self, src: Source, ride: list[int] | None, claim: bool = True) -> int:
        """Slots for a claim sent with the completions (see ``_complete``): ``src``'s room,
        when it is contending for slots and no stop is asked. The successes riding on this
        claim stop holding its claim loop back in the same step (no claim loop slips a
        one-slot claim in between)."""
        want = claim and src.up and not self.stopping() and src.leased_dry.ready(time.monotonic())
        with self.lock:
            if ride and ride[0]:
                src.riding -= ride[0]
                ride[0] = 0
            n = min(self.room(src), self.batch) if want else 0
            if n > 0:
                self.busy += n
                src.busy += n
        return max(n, 0)

    def unride(self, src: Source, n: int) -> None:
        """``n`` successes whose claim was to ride on their completion no longer hold
        ``src``'s claim loop back (wake it: no claim rode)."""
        with self.lock:
            src.riding -= n
        src.wake.set()

    def wait_idle(self, deadline: float, hard_stop: Callable[[], bool]) -> bool:
        """Wait until no slot is busy and no outcome is on its way, at most until ``deadline``
        (monotonic) or a hard stop; returns whether it is so."""
        with self.cv:
            while (self.busy > 0 or self.reporting > 0) and not hard_stop():
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self.cv.wait(min(left, 0.2))
            return self.busy <= 0 and self.reporting <= 0


def _forget(src: Source, run: _Run) -> None:
    """``run`` is no longer held. Only its own entry goes: a job whose lease this worker lost
    (a timeout, say) may have been claimed again by this worker while the old handler still
    ran, and the new run is the one held now. Call with the lock held."""
    if src.active.get(run.job.id) is run:
        del src.active[run.job.id]
