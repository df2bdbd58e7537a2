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
from datetime import timedelta
from typing import TYPE_CHECKING

import psycopg

from .. import statements as sql
from ..errors import is_lease_lost
from ..logs import event
from .databases import is_connection_error
from .state import _STOP, _Run, one_line

if TYPE_CHECKING:
    from . import Worker


class Shutdown:
    """The stop of one worker (``run``: returns its exit code)."""

    def __init__(self, worker: Worker) -> None:
        self.w = worker

    def run(self) -> int:
        self.w._stopping.set()
        self.w.slots.wake_all()
        event("worker_stopping", worker=self.w.name, running=self.w.slots.busy)
        # No claim may land unnoticed: wait for the claim loops (one blocked on a database
        # that does not answer gives up at its pool timeout; a claim landing even later is
        # released by its loop, see _claim_leased).
        deadline = time.monotonic() + self.w.pool_timeout + 1
        for t in self.w._claimers:
            t.join(max(deadline - time.monotonic(), 0.01))
        with self.w.slots.lock:
            self.w.slots.closed = True
            unstarted = [
                r for s in self.w.sources for r in s.active.values() if r.state == "claimed"
            ]
            for r in unstarted:
                r.state = "released"
        self.release_all(unstarted, "not started")
        code = 0
        deadline = time.monotonic() + self.w.grace
        with self.w.slots.cv:
            while (self.w.slots.busy > 0 or self.w.slots.reporting > 0) and self.w._signals < 2:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self.w.slots.cv.wait(min(left, 0.2))
        if self.w.slots.busy > 0 or self.w.slots.reporting > 0:
            code = 1
            with self.w.slots.lock:
                late = [
                    r
                    for s in self.w.sources
                    for r in s.active.values()
                    if r.state in ("claimed", "running") and not r.lost
                ]
                for r in late:
                    r.state = "released"
            self.release_all(late, "grace period over")
        if self.w._executor is not None:
            self.w._executor.stop()
        for src in self.w.sources:
            src.done.put(_STOP)
        self.w._helpers_stop.set()
        deadline = time.monotonic() + 5
        for t in self.w._threads:
            # Slot threads are not waited for, nor a completer running a handler (with one
            # slot, see _complete): a handler that outlived the grace period may never end.
            if not t.name.startswith("andal-slot-") and t not in self.w._in_handler:
                t.join(max(deadline - time.monotonic(), 0.01))
        for src in self.w.sources:
            self.w._maintenance[src.index].stop()
        for src in self.w.sources:
            registration = self.w._registrations.get(src.index)
            if registration is not None and src.pool is not None and src.up:
                registration.unregister(src.pool)
        for src in self.w.sources:
            if src.pool is not None:
                src.pool.close(timeout=1)
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
                self.w.slots.finish(r)

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
                self.w.trouble.lease_lost(run, "release")
            else:
                reachable = not is_connection_error(exc)
                event("release_failed", logging.WARNING, error=one_line(exc), **run.fields())
        else:
            duration = round((time.monotonic() - run.claimed_at) * 1000, 3)
            event("released", worker=self.w.name, **run.fields(reason=why, duration_ms=duration))
            self.w.slots.finish(run, "released")
            return True
        self.w.slots.finish(run)
        return reachable
