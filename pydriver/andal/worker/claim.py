"""Claiming: one loop per database that takes leased jobs in batches sized to the database's
room and hands them to the executor, starts transactional probes, runs maintenance when due,
and reconnects with backoff while the database does not answer.

A claim is skipped while a completion is on its way to carry it (``Source.riding``: the
completer sends the next claim with the outcomes, ``sql.COMPLETE_MANY_THEN_CLAIM``); after an
empty claim the loop waits (``_Dry``: 10 ms doubling up to ``poll``, and never past the time
``queue.next_available`` gives for the next delayed or backed-off job) unless a NOTIFY hint,
a freed slot or the poll timer wakes it.
"""

from __future__ import annotations

import json
import logging
import random
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

import psycopg

from .. import statements as sql
from ..handlers import Job, Registry, undecodable
from ..hosts import ReconnectBackoff, is_connection_error
from ..logs import event, one_line
from ..values import text_array
from .databases import Source
from .state import _Run
from .transact import Troubles, TxGroup

if TYPE_CHECKING:
    from ..maintenance import Maintenance
    from ..observe import Observer
    from ..registration import Registration
    from .execute import Executor, InternalError
    from .slots import Slots


class Refusals(Troubles, Protocol):
    """What the claim loop needs of the trouble room: ``Troubles``, and the count of
    configuration errors in a row, which a claim that works resets."""

    refusals: int


class Claimer:
    """The claim loops of one worker (``run(src)``: the loop of ``src``'s claim thread).
    ``release(runs, why)`` hands back runs a claim took after a stop; what the start decides
    (the queues, the executor, each database's registration and maintenance) comes with
    ``setup``."""

    def __init__(
        self,
        slots: Slots,
        observer: Observer,
        trouble: Refusals,
        registry: Registry,
        name: str,
        lease: Any,
        batch: int,
        maintain_every: float,
        should_stop: Callable[[], bool],
        pause: Callable[[float], None],
        hint: Callable[[Source], None],
        internal_error: InternalError,
        release: Callable[[list[_Run], str], None],
    ) -> None:
        self.slots, self.observer, self.trouble, self.registry = slots, observer, trouble, registry
        self.name, self.lease, self.batch, self.maintain_every = name, lease, batch, maintain_every
        self.should_stop, self.pause, self.hint = should_stop, pause, hint
        self.internal_error, self.release = internal_error, release
        self.setup([], [], None, {}, {})

    def setup(
        self,
        leased_queues: list[str],
        tx_groups: list[TxGroup],
        executor: Executor | None,
        registrations: Mapping[int, Registration],
        maintenance: Mapping[int, Maintenance[Source]],
    ) -> None:
        """What the start decided: the leased queues and transactional groups claimed from,
        the executor claimed jobs go to, each database's registration and maintenance."""
        self.leased_queues, self.leased_array = leased_queues, text_array(leased_queues)
        self.tx_groups, self.executor = tx_groups, executor
        self.registrations, self.maintenance = registrations, maintenance

    def run(self, src: Source) -> None:
        backoff = ReconnectBackoff()
        next_maintain = time.monotonic() + random.random() * min(self.maintain_every, 5.0)
        while not self.should_stop():
            try:
                src.wake.clear()
                if not src.up:
                    if not self.reconnect(src):
                        self.pause(backoff.next())
                        continue
                    backoff.reset()
                now = time.monotonic()
                assert src.claim_lane is not None
                self.registrations[src.index].due(src.claim_lane, now)
                if self.maintain_every > 0 and now >= next_maintain:
                    next_maintain = now + self.maintain_every
                    assert src.claim_lane is not None
                    self.maintenance[src.index].run(src.claim_lane)
                more = False
                if self.leased_queues and src.up and src.leased_dry.ready(now):
                    claimed = self.claim_leased(src)
                    if claimed is None:
                        self.pause(backoff.next())
                        continue
                    backoff.reset()
                    asked, got = claimed
                    more = bool(asked) and got == asked
                for group in self.tx_groups:
                    self.start_probe(src, group, now)
                if more and self.slots.has_room(src):
                    continue
                # Short waits so a signal (which only sets a count) is seen promptly.
                now = time.monotonic()
                dry = [src.leased_dry] + [src.probes[g.is_async].dry for g in self.tx_groups]
                wait = min([0.2] + [d.until - now for d in dry if d.until > now])
                src.wake.wait(max(wait, 0.001))
            except Exception:  # a bug of ours must not stop a database's claims for good
                self.internal_error("claim loop")
                self.pause(0.2)

    def start_probe(self, src: Source, group: TxGroup, now: float) -> None:
        """A transactional probe of ``group`` when ``src`` may have its jobs and none is
        claiming already."""
        probe = src.probes[group.is_async]
        if not (src.up and probe.dry.ready(now) and probe.searching == 0):
            return
        if self.should_stop() or not self.slots.reserve(src, 1):
            return
        self.slots.searching(probe, 1)
        assert self.executor is not None
        self.executor.probe(src, group)

    def reconnect(self, src: Source) -> bool:
        """While ``src`` is down: whether it answers again (then it is up: claimed from)."""
        assert src.pool is not None
        try:
            with src.pool.connection() as conn:
                conn.execute(sql.INSTALLED)
                # the server that answered: with a multi-host DSN, the new primary's
                host = f"{conn.info.host}:{conn.info.port}"
        except psycopg.Error as exc:
            event(
                "database_still_down",
                logging.DEBUG,
                worker=self.name,
                database=src.label,
                error=one_line(exc),
            )
            return False
        was_down, since = self.slots.came_up(src)
        if was_down:
            down_s = None if since is None else round(time.monotonic() - since, 3)
            event("database_up", worker=self.name, database=src.label, host=host, down_s=down_s)
        self.hint(src)  # notifications were missed while away
        return True

    def make_run(
        self, src: Source, row: tuple[Any, ...], now: float | None = None, logged: bool = True
    ) -> _Run:
        """A run of the claimed ``row`` (``sql.CLAIM``'s columns, ``sql.Claimed``). ``now``: the
        monotonic clock, ``logged``: whether the ``claimed`` event is logged (both taken once
        per batch by ``_claimed``)."""
        c = sql.Claimed._make(row)
        handler = self.registry[c.queue]
        try:
            payload = json.loads(c.payload)
        except (RecursionError, ValueError) as exc:
            # Valid JSON for PostgreSQL, not for this process (nested past Python's recursion
            # limit): the job fails for good through the usual path, the others run.
            payload = None
            handler = undecodable(handler, f"{type(exc).__name__}: {exc}"[:200])
        # Positional (the field order of Job), which is cheaper than keywords per job.
        job = Job(
            c.job_id, c.queue, c.category, payload, c.attempt, c.max_attempts, c.token,
            c.lease_expires_at, c.enqueued_at, c.cache_key, c.cache_version, c.priority,
            src.label, c.deadline, _dsn=src.dsn,
        )  # fmt: skip
        db_now = c.db_now
        run = _Run(src, job, handler, (c.lease_expires_at - db_now).total_seconds(), now)
        if c.deadline is not None:  # by the database's clock, as the lease
            run.time_up = run.claimed_at + (c.deadline - db_now).total_seconds()
        if logged and self.observer.job_logs():  # no formatting when not logged
            waited = round((db_now - job.enqueued_at).total_seconds() * 1000, 3)
            self.observer.job_line("claimed", run, duration_ms=waited)
        return run

    def params(self, queues: list[str], batch: int) -> dict[str, Any]:
        return {
            "worker": self.name,
            "queues": text_array(queues),
            "batch": batch,
            "lease": self.lease,
        }

    def claim_leased(self, src: Source) -> tuple[int, int] | None:
        """Claim leased jobs of ``src``, at most its room and ``batch``, and hand them to the
        slots. Returns (asked, got), (0, 0) when ``src`` has no room; None when the database
        failed."""
        assert src.claim_lane is not None
        if src.riding or not self.slots.has_room(src):  # riding: the completer claims (_complete)
            return 0, 0
        n = 0
        try:
            # A connection first, the slots next: a database that does not answer holds none.
            with src.claim_lane.connection() as conn:
                params = self.leased_params(self.batch)
                n = self.slots.reserve(src, self.batch) if params is not None else 0
                if not n or params is None:
                    return 0, 0
                params["batch"] = n
                started, started_ns = time.perf_counter(), self.observer.now_ns()
                hints = src.leased_dry.hints
                rows = conn.execute(sql.CLAIM, params).fetchall()
                next_in = None if rows else self.next_available(conn, params["queues"])
        except psycopg.Error as exc:
            self.slots.back(src, n)
            self.observer.claim_error("leased")
            if is_connection_error(exc):
                self.trouble.db_trouble(src, "claim", exc)
                return None
            if self.trouble.refused(src, "claim", exc):
                return None
            self.slots.count("errors", src=src)
            event(
                "claim_failed",
                logging.ERROR,
                worker=self.name,
                database=src.label,
                error=one_line(exc),
            )
            return None
        took = time.perf_counter() - started
        got = self.claimed(src, n, rows, took, started_ns, hints)
        if next_in is not None and next_in > 0:  # sleep no longer than until it is ready
            # (a job "ready now" that the claim missed: another claimer holds its category's
            # lock; the pause's doubling stays, so that is no busy poll)
            dry = src.leased_dry
            dry.until = min(dry.until, time.monotonic() + next_in)
        return n, got

    def next_available(self, conn: psycopg.Connection[Any], queues: str) -> float | None:
        """Seconds until the next job of ``queues`` becomes claimable (queue.next_available),
        None when nothing is scheduled or the database cannot say (an older install)."""
        try:
            with conn.transaction():
                row = conn.execute(sql.NEXT_AVAILABLE, {"queues": queues}).fetchone()
        except psycopg.Error:
            return None
        return None if row is None or row[0] is None else float(row[0])

    def leased_params(self, n: int) -> dict[str, Any] | None:
        """The parameters of a leased claim of ``n``; None when every queue is at its
        handler limit (nothing to claim)."""
        queues = self.leased_array
        if self.executor is not None and self.executor.limited:
            open_ = self.executor.limits.open(self.leased_queues)
            if not open_:
                return None
            queues = text_array(open_)
        return {"worker": self.name, "queues": queues, "batch": n, "lease": self.lease}

    def claimed(
        self,
        src: Source,
        n: int,
        rows: list[tuple[Any, ...]],
        took: float,
        started_ns: int,
        hints: int,
        keep: list[_Run] | None = None,
    ) -> int:
        """Hand the jobs of a leased claim of ``n`` (``rows``) to the slots (or to ``keep``: the
        caller runs them), give back the slots it did not fill, and note whether ``src`` had
        work. Returns how many were claimed."""
        now, logged = time.monotonic(), self.observer.job_logs()
        runs = [self.make_run(src, row, now, logged) for row in rows]
        self.observer.claim("leased", took, n, len(rows))
        self.trouble.refusals = 0
        if runs:
            self.observer.claimed(src, runs, started_ns)
        closed = self.slots.took(src, runs)
        if closed:  # the stop has already handed back the unstarted jobs: these too
            self.slots.back(src, n - len(runs))
            self.release(runs, "not started")
            return len(runs)
        if keep is not None:
            keep.extend(runs)
        elif runs:
            assert self.executor is not None
            self.executor.dispatch(runs)
        self.slots.back(src, n - len(runs))
        if not runs:
            src.leased_dry.empty(hints)
            self.slots.wake_others(src)  # idle now: its share is theirs
        else:
            src.leased_dry.found()
        return len(runs)
