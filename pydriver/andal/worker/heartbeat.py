"""Heartbeats: keep the leases of one database's held jobs alive.

Every held leased job is extended about every third of its lease (``queue.heartbeat_many``,
one statement for all that are due); the database's answer gives each its new lease length,
so the schedule follows the database's clock, not ours. A job the database no longer
extends has lost its lease (``Host.lost``): its outcome will be discarded.

``Heartbeat`` reaches the rest of the worker only through ``Host`` (a test drives it with a
stand-in).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, Protocol

import psycopg

from .. import statements as sql
from ..logs import event
from .databases import Source, is_connection_error
from .state import _Run, one_line, plain_array


class Host(Protocol):
    """What the heartbeat needs from its worker."""

    def held(self, src: Source) -> list[_Run]:
        """The leased runs of ``src`` to keep alive (not lost, not done)."""

    def holding(self, run: _Run) -> bool:
        """Whether ``run`` is still claimed or running (its lease is then its fate)."""

    def lost(self, run: _Run, detected_by: str) -> None: ...

    def trouble(self, src: Source, during: str, exc: BaseException) -> None:
        """A lost connection or an unreachable server."""

    def beaten(self, src: Source, took: float) -> None:
        """One heartbeat statement done (counted)."""


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
    expiry: dict[int, tuple[datetime | None, datetime]] = {row[0]: (row[1], row[2]) for row in rows}
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
        r.next_beat = sent + lease_len / 3
        ok.append(r)
    return ok, missing


class Heartbeat:
    """The heartbeat loop of one database (``run``, until ``stop`` is set)."""

    def __init__(
        self, host: Host, src: Source, lease: timedelta | None, stop: threading.Event
    ) -> None:
        self.host = host
        self.src = src
        self.lease = lease
        self.stop = stop

    def run(self, on_error: Any) -> None:
        while not self.stop.is_set():
            try:
                self.once()
            except Exception:
                on_error("heartbeat")
                self.stop.wait(0.2)

    def once(self) -> None:
        """Beat what is due, then wait until the next beat (at most 0.25 s)."""
        held = self.host.held(self.src)
        now = time.monotonic()
        todo = due(held, now)
        if todo:
            self.beat(todo)
        nxt = min((r.next_beat for r in self.host.held(self.src)), default=None)
        wait = 0.25 if nxt is None else min(max(nxt - time.monotonic(), 0.01), 0.25)
        self.stop.wait(wait)

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
                self.host.trouble(src, "heartbeat", exc)
            else:
                event("heartbeat_failed", logging.ERROR, database=src.label, error=one_line(exc))
            for r in runs:  # try again soon, not in a tight loop
                r.next_beat = time.monotonic() + min(0.2, r.lease_len / 12)
            return
        self.host.beaten(src, time.perf_counter() - started)
        _, missing = extended(runs, rows, sent)
        for r in missing:
            # A finishing run's fate is told by its complete/fail, not by this beat.
            if self.host.holding(r):
                self.host.lost(r, "heartbeat")
