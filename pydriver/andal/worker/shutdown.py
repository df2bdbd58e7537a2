"""Stopping: a graceful stop of one worker.

No claim may land unnoticed: the claim loops are waited for first; then the jobs not started
are handed back (``queue.release``, each database in a thread of its own so one that does not
answer delays only its own), the running handlers get ``grace`` seconds, and what is still
running after that is released too (exit code 1). Then the helpers stop: the executor (its
slot threads and event loop), the completers, heartbeats, listeners, vacuums and pools.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING

import psycopg

from .. import statements as sql
from ..errors import is_lease_lost
from ..hosts import is_connection_error
from ..logs import event, one_line
from .state import _STOP, _Run

if TYPE_CHECKING:
    from ..maintenance import Maintenance
    from ..registration import Registration
    from .databases import Source
    from .execute import Executor
    from .slots import Slots
    from .trouble import Trouble


class Shutdown:
    """The stop of one worker (``run``: returns its exit code). ``stopping``: set by a stop
    (the claim loops end). Its own: ``helpers_stop`` ends the helper threads; ``claimers``,
    ``threads``: the claim loops' threads and the others, to wait for (the start fills them
    in); ``in_handler``: completer threads running a handler, not waited for (the completer
    fills it in). What the start makes (the executor, each database's maintenance and
    registration) comes with ``setup``."""

    def __init__(
        self,
        slots: Slots,
        trouble: Trouble,
        sources: Sequence[Source],
        name: str,
        grace: float,
        pool_timeout: float,
        stopping: threading.Event,
        hard_stop: Callable[[], bool],
    ) -> None:
        self.slots, self.trouble, self.sources, self.name = slots, trouble, sources, name
        self.grace, self.pool_timeout, self.hard_stop = grace, pool_timeout, hard_stop
        self.stopping, self.helpers_stop = stopping, threading.Event()
        self.in_handler: set[threading.Thread] = set()
        self.claimers: list[threading.Thread] = []
        self.threads: list[threading.Thread] = []
        self.setup(None, {}, {})

    def setup(
        self,
        executor: Executor | None,
        maintenance: Mapping[int, Maintenance[Source]],
        registrations: Mapping[int, Registration],
    ) -> None:
        self.executor, self.maintenance, self.registrations = executor, maintenance, registrations

    def run(self) -> int:
        self.stopping.set()
        self.slots.wake_all()
        event("worker_stopping", worker=self.name, running=self.slots.busy)
        # No claim may land unnoticed: wait for the claim loops (one blocked on a database
        # that does not answer gives up at its pool timeout; a claim landing even later is
        # released by its loop, see Claimer.claimed).
        deadline = time.monotonic() + self.pool_timeout + 1
        for t in self.claimers:
            t.join(max(deadline - time.monotonic(), 0.01))
        self.release_all(self.slots.close(), "not started")
        code = 0
        if not self.slots.wait_idle(time.monotonic() + self.grace, self.hard_stop):
            code = 1
            self.release_all(self.slots.release_late(), "grace period over")
        if self.executor is not None:
            self.executor.stop()
        for src in self.sources:
            src.done.put(_STOP)
        self.helpers_stop.set()
        deadline = time.monotonic() + 5
        for t in self.threads:
            # Slot threads are not waited for, nor a completer running a handler (with one
            # slot, see _complete): a handler that outlived the grace period may never end.
            if not t.name.startswith("andal-slot-") and t not in self.in_handler:
                t.join(max(deadline - time.monotonic(), 0.01))
        for src in self.sources:
            self.maintenance[src.index].stop()
        for src in self.sources:
            registration = self.registrations.get(src.index)
            if registration is not None and src.pool is not None and src.up:
                registration.unregister(src.pool)
        for src in self.sources:
            src.close()
        return code

    def release_all(self, runs: list[_Run], why: str) -> None:
        """Hand ``runs`` back to their databases, each database in a thread of its own (one
        that does not answer delays only its own); after a connection error, a database's
        other runs are not tried (their leases expire)."""
        by_source: dict[int, list[_Run]] = {}
        for r in runs:
            by_source.setdefault(r.source.index, []).append(r)

        def release(mine: list[_Run]) -> None:
            reachable = True
            for r in mine:
                if reachable:
                    reachable = self.release(r, why)
                    continue
                event(
                    "release_failed",
                    logging.WARNING,
                    error="the database did not answer",
                    **r.fields(),
                )
                self.slots.finish(r)

        groups = list(by_source.values())
        if len(groups) == 1:
            release(groups[0])
            return
        threads = [threading.Thread(target=release, args=(g,), daemon=True) for g in groups]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    def release(self, run: _Run, why: str) -> bool:
        """Release one run on its database; False when the database could not be reached."""
        src = run.source
        assert src.pool is not None
        reachable = True
        try:
            with src.pool.connection() as conn:
                conn.execute(
                    sql.RELEASE,
                    {"job_id": run.job.id, "token": run.job.token, "delay": timedelta(0)},
                )
        except psycopg.Error as exc:
            if is_lease_lost(exc):
                self.trouble.lease_lost(run, "release")
            else:
                reachable = not is_connection_error(exc)
                event("release_failed", logging.WARNING, error=one_line(exc), **run.fields())
        else:
            duration = round((time.monotonic() - run.claimed_at) * 1000, 3)
            event("released", worker=self.name, **run.fields(reason=why, duration_ms=duration))
            self.slots.finish(run, "released")
            return True
        self.slots.finish(run)
        return reachable
