"""Trouble: what the worker does when a statement fails.

* A lost connection or an unreachable server (``db_trouble``): the database is down until its
  claim loop reaches it again; meanwhile its share of the slots goes to the other databases.
* A configuration problem (``refused``: ``andal.hosts.CONFIG_HINTS``): logged as one, with
  what to do; ``REFUSALS`` in a row stop the worker with ``EXIT_CONFIG``, and so do
  ``REFUSALS`` symptoms of a pooler it was not told about (``POOLER_SYMPTOMS``) at any time:
  between them some statements succeed, on the server connection that has them.
* A lost lease (``lease_lost``): the job's outcome will be discarded.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from psycopg_pool import PoolTimeout

from ..hosts import POOLER_SYMPTOMS, config_hint
from ..logs import event, one_line
from .databases import Source
from .state import _Run

if TYPE_CHECKING:
    from ..observe import Observer
    from .interrupt import Interrupter
    from .slots import Slots

#: The exit code of a worker stopped by a configuration problem.
EXIT_CONFIG = 6
#: Configuration errors in a row that stop a worker.
REFUSALS = 3


class Trouble:
    """The failure handling of one worker: the shared state changes through ``slots``'
    methods, its own counters under its own lock; ``interrupter`` says whether a run was
    fenced at its deadline; ``stop`` stops the worker (too many configuration errors)."""

    def __init__(
        self,
        slots: Slots,
        observer: Observer,
        interrupter: Interrupter,
        name: str,
        stop: Callable[[], None],
        hard_stop: Callable[[], bool],
    ) -> None:
        self.slots = slots
        self.observer = observer
        self.interrupter = interrupter
        self.name = name
        self.stop = stop
        self.hard_stop = hard_stop
        self.refusals = 0  # configuration errors in a row (see refused)
        self.pooler_symptoms = 0  # ever (see refused)
        self.misconfigured = False
        self._lock = threading.Lock()  # guards the three above

    def refused(self, src: Source, during: str, exc: BaseException) -> bool:
        """Whether ``exc`` is a configuration problem (``config_hint``): then it is logged as
        one (``configuration_error``, with what to do), and after ``REFUSALS`` of them in a
        row the worker stops with exit code ``EXIT_CONFIG``: a worker set up wrong does not
        flap between up and down as if the database were away."""
        hint = config_hint(exc)
        if hint is None:
            return False
        with self._lock:
            self.refusals += 1
            self.pooler_symptoms += getattr(exc, "sqlstate", None) in POOLER_SYMPTOMS
            worst = max(self.refusals, self.pooler_symptoms)
            stop = worst >= REFUSALS and not self.misconfigured
            if stop:
                self.misconfigured = True
        self.slots.count("config_errors", src=src)
        event(
            "configuration_error",
            logging.ERROR,
            worker=self.name,
            database=src.label,
            during=during,
            sqlstate=getattr(exc, "sqlstate", None),
            error=one_line(exc),
            hint=hint,
        )
        if stop:
            event("worker_misconfigured", logging.ERROR, worker=self.name, exit_code=EXIT_CONFIG)
            self.stop()
        return True

    def db_trouble(self, src: Source, what: str, exc: BaseException) -> None:
        """A lost connection or an unreachable server: ``src`` is down until its claim loop
        reaches it again; meanwhile its share of the slots goes to the other databases."""
        self.slots.count("db_errors", src=src)
        self.observer.db_error(what)
        event(
            "db_error",
            logging.WARNING,
            worker=self.name,
            database=src.label,
            during=what,
            error=one_line(exc),
        )
        waiting = self.slots.went_down(src)
        if waiting is not None:
            event("database_down", logging.WARNING, worker=self.name, database=src.label)
            # Outcomes waiting to be sent there hold no slot; its share goes to the others.
            self.slots.unslot(waiting)
            self.slots.wake_others(src)
        if src.pool is not None and not isinstance(exc, PoolTimeout):
            with contextlib.suppress(Exception):  # a closing pool has nothing to check
                src.pool.check()

    def lease_lost(self, run: _Run, detected_by: str, **extra: Any) -> None:
        if self.interrupter.timed_out(run):  # fenced at its deadline: logged as a timeout
            return
        if not self.slots.lose(run):
            return
        self.observer.lease_lost(run.job.queue, detected_by)
        event(
            "lease_lost",
            # an aborted job not acknowledged in its lease is fenced: expected, not a fault
            logging.INFO if run.job.abort_requested else logging.WARNING,
            worker=self.name,
            **run.fields(
                detected_by=detected_by,
                duration_ms=round((time.monotonic() - run.claimed_at) * 1000, 3),
                **extra,
            ),
        )

    def give_up(self, runs: list[_Run]) -> bool:
        """Stop resending an outcome once every lease is past or a hard stop is asked."""
        return self.hard_stop() or time.monotonic() > max(r.deadline for r in runs)
