"""Trouble: what the worker does when a statement fails.

* A lost connection or an unreachable server (``db_trouble``): the database is down until its
  claim loop reaches it again; meanwhile its share of the slots goes to the other databases.
* A configuration problem (``refused``: ``databases.CONFIG_HINTS``): logged as one, with
  what to do; ``REFUSALS`` in a row stop the worker with ``EXIT_CONFIG``.
* A lost lease (``lease_lost``): the job's outcome will be discarded.
"""

from __future__ import annotations

import contextlib
import logging
import time
from typing import TYPE_CHECKING, Any

from psycopg_pool import PoolTimeout

from ..logs import event
from .databases import Source, config_hint
from .state import _Run, one_line

if TYPE_CHECKING:
    from . import Worker

#: The exit code of a worker stopped by a configuration problem.
EXIT_CONFIG = 6
#: Configuration errors in a row that stop a worker.
REFUSALS = 3


class Trouble:
    """The failure handling of one worker."""

    def __init__(self, worker: Worker) -> None:
        self.w = worker
        self.refusals = 0  # configuration errors in a row (see refused)
        self.misconfigured = False

    def refused(self, src: Source, during: str, exc: BaseException) -> bool:
        """Whether ``exc`` is a configuration problem (``config_hint``): then it is logged as
        one (``configuration_error``, with what to do), and after ``REFUSALS`` of them in a
        row the worker stops with exit code ``EXIT_CONFIG``: a worker set up wrong does not
        flap between up and down as if the database were away."""
        hint = config_hint(exc)
        if hint is None:
            return False
        with self.w.slots.lock:
            self.refusals += 1
            stop = self.refusals >= REFUSALS and not self.misconfigured
            if stop:
                self.misconfigured = True
        self.w.slots.count("config_errors", src=src)
        event(
            "configuration_error",
            logging.ERROR,
            worker=self.w.name,
            database=src.label,
            during=during,
            sqlstate=getattr(exc, "sqlstate", None),
            error=one_line(exc),
            hint=hint,
        )
        if stop:
            event("worker_misconfigured", logging.ERROR, worker=self.w.name, exit_code=EXIT_CONFIG)
            self.w.stop()
        return True

    def db_trouble(self, src: Source, what: str, exc: BaseException) -> None:
        """A lost connection or an unreachable server: ``src`` is down until its claim loop
        reaches it again; meanwhile its share of the slots goes to the other databases."""
        self.w.slots.count("db_errors", src=src)
        self.w.observer.db_error(what)
        event(
            "db_error",
            logging.WARNING,
            worker=self.w.name,
            database=src.label,
            during=what,
            error=one_line(exc),
        )
        with self.w.slots.lock:
            went_down, src.up = src.up, False
            if went_down:
                src.down_since = time.monotonic()
            waiting = [r for r in src.active.values() if r.ran]
        if went_down:
            event("database_down", logging.WARNING, worker=self.w.name, database=src.label)
            # Outcomes waiting to be sent there hold no slot; its share goes to the others.
            self.w.slots.unslot(waiting)
            self.w.slots.wake_others(src)
        if src.pool is not None and not isinstance(exc, PoolTimeout):
            with contextlib.suppress(Exception):  # a closing pool has nothing to check
                src.pool.check()

    def lease_lost(self, run: _Run, detected_by: str, **extra: Any) -> None:
        if self.w.interrupter.timed_out(run):  # fenced at its deadline: logged as a timeout
            return
        with self.w.slots.lock:
            if run.lost:
                return
            run.lost = True
            self.w.counts["lease_lost"] += 1
            run.source.counts["lease_lost"] += 1
        self.w.observer.lease_lost(run.job.queue, detected_by)
        event(
            "lease_lost",
            # an aborted job not acknowledged in its lease is fenced: expected, not a fault
            logging.INFO if run.job.abort_requested else logging.WARNING,
            worker=self.w.name,
            **run.fields(
                detected_by=detected_by,
                duration_ms=round((time.monotonic() - run.claimed_at) * 1000, 3),
                **extra,
            ),
        )

    def give_up(self, runs: list[_Run]) -> bool:
        """Stop resending an outcome once every lease is past or a hard stop is asked."""
        return self.w._signals > 1 or time.monotonic() > max(r.deadline for r in runs)
