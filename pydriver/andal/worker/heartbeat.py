"""Heartbeats: keep the leases of one database's held jobs alive.

Every held leased job is extended about every third of its lease (``queue.heartbeat_many``,
one statement for all that are due); the database's answer gives each its new lease length,
so the schedule follows the database's clock, not ours. A job the database no longer
extends has lost its lease (``Trouble.lease_lost``): its outcome will be discarded.

The heartbeat also carries time and aborts to the handlers (``Interrupter.stop``): a run past
its attempt's deadline is stopped (see ``interrupt``), and so is one whose abort the
database reports (``abort_requested``, within one heartbeat interval of ``queue.cancel``;
sooner when the LISTEN hint pokes the beat, ``poke``). A lease capped by its deadline, or no
longer extended after an abort, is beaten at the usual interval, not faster. The held runs
are the ``Slots``' (``Slots.held``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import psycopg

from .. import statements as sql
from ..handlers import ABORTED
from ..hosts import is_connection_error
from ..logs import event, one_line
from ..values import plain_array
from .databases import Source
from .state import _Run

if TYPE_CHECKING:
    from ..observe import Observer
    from .interrupt import Interrupter
    from .slots import Slots
    from .trouble import Trouble


def due(runs: Sequence[_Run], now: float) -> list[_Run]:
    """The runs whose next beat is due (a little early: a beat must land before the lease
    ends, whatever the statement's latency)."""
    return [r for r in runs if r.next_beat - min(0.2, r.lease_len / 12) <= now]


def extended(
    runs: Sequence[_Run], rows: Sequence[tuple[Any, ...]], sent: float
) -> tuple[list[_Run], list[_Run]]:
    """Apply ``queue.heartbeat_many``'s answer (job id, new expiry, the database's now) to
    ``runs`` (beaten at ``sent``, monotonic): each extended run gets its new lease length,
    deadline and next beat. Returns (extended, not extended)."""
    expiry: dict[int, tuple[datetime | None, datetime, bool]] = {
        row[0]: (row[1], row[2], len(row) > 3 and bool(row[3])) for row in rows
    }
    ok: list[_Run] = []
    missing: list[_Run] = []
    for r in runs:
        got = expiry.get(r.job.id)
        if got is None or got[0] is None:
            missing.append(r)
            continue
        lease_len = max((got[0] - got[1]).total_seconds(), 0.001)
        r.lease_len = lease_len
        r.deadline = sent + lease_len
        if got[2] or got[0] == r.job.deadline:
            # not extended (an abort) or capped by the deadline: extending is over, the beats
            # only read an abort request now, at the usual pace and up to the lease's end
            r.next_beat = sent + min(r.beat_every, lease_len)
        else:
            r.next_beat = sent + lease_len / 3
        ok.append(r)
    return ok, missing


def aborts(rows: Sequence[tuple[Any, ...]]) -> set[int]:
    """The job ids whose abort ``queue.heartbeat_many`` reports (``abort_requested``)."""
    return {row[0] for row in rows if len(row) > 3 and row[3]}


class Heartbeat:
    """The heartbeat loop of one database (``run``, until ``stop`` is set)."""

    def __init__(
        self,
        slots: Slots,
        observer: Observer,
        trouble: Trouble,
        interrupter: Interrupter,
        src: Source,
        lease: timedelta | None,
        stop: threading.Event,
    ) -> None:
        self.slots, self.observer, self.trouble = slots, observer, trouble
        self.interrupter = interrupter
        self.src = src
        self.lease = lease
        self.stop = stop
        self.woken = threading.Event()
        self.poked: set[int] | None = set()  # None: every held run

    def poke(self, job_id: int | None) -> None:
        """Beat ``job_id`` (None: every held run) now: a hint that its abort was requested
        (the beat re-reads it; the hint itself decides nothing)."""
        if job_id is None or self.poked is None:
            self.poked = None
        else:
            self.poked.add(job_id)
        self.woken.set()

    def run(self, on_error: Any) -> None:
        while not self.stop.is_set():
            try:
                self.once()
            except Exception:
                on_error("heartbeat")
                self.stop.wait(0.2)

    def once(self) -> None:
        """Beat what is due, then wait until the next beat (at most 0.25 s)."""
        now = time.monotonic()
        held = self.interrupter.due(self.slots.held(self.src), now)
        poked, self.poked = self.poked, set()
        if poked is None:
            todo = held
        else:
            todo = [r for r in held if r.job.id in poked] if poked else []
            todo += [r for r in due(held, now) if r.job.id not in poked]
        if todo:
            self.beat(todo)
        held = self.slots.held(self.src)
        nxt = min((r.next_beat for r in held), default=None)
        ends = [r.time_up for r in held if r.time_up is not None]
        if ends:
            nxt = min(ends) if nxt is None else min(nxt, min(ends))
        wait = 0.25 if nxt is None else min(max(nxt - time.monotonic(), 0.01), 0.25)
        if self.woken.wait(wait):
            self.woken.clear()

    def beat(self, runs: list[_Run]) -> None:
        src = self.src
        assert src.pool is not None
        sent = time.monotonic()
        started = time.perf_counter()
        params = {
            "job_ids": plain_array([r.job.id for r in runs]),
            "tokens": plain_array([r.job.token for r in runs]),
            "extend": self.lease,
        }
        try:
            with src.pool.connection() as conn:
                rows = conn.execute(sql.HEARTBEAT_MANY, params).fetchall()
        except psycopg.Error as exc:
            if is_connection_error(exc):
                self.trouble.db_trouble(src, "heartbeat", exc)
            else:
                event("heartbeat_failed", logging.ERROR, database=src.label, error=one_line(exc))
            for r in runs:  # try again soon, not in a tight loop
                r.next_beat = time.monotonic() + min(0.2, r.lease_len / 12)
            return
        self.slots.count("heartbeats", src=src)
        self.observer.heartbeat(time.perf_counter() - started)
        ok, missing = extended(runs, rows, sent)
        stop = aborts(rows)
        for r in ok:
            if r.job.id in stop:
                self.interrupter.stop(r, ABORTED)
        for r in missing:
            # A finishing run's fate is told by its complete/fail, not by this beat.
            if self.slots.holding(r):
                self.trouble.lease_lost(r, "heartbeat")
