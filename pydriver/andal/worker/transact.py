"""Transactional jobs: a probe claims one job of a group of transactional queues in a
transaction, runs its handler on that transaction's connection (a ``psycopg.Connection``, or a
``psycopg.AsyncConnection`` from the database's async pool for an ``async def``) and records
its outcome before the commit: the handler's writes and the outcome commit together.

``Transactions`` is driven by the executor (``run`` in a slot thread, ``arun`` on the event
loop); it needs the claim room only for a claim's parameters and its run (``Claims``), and the
trouble room only for a failed statement (``Troubles``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import psycopg
from psycopg_pool import AsyncConnectionPool

from .. import statements as sql
from ..hosts import is_connection_error
from ..logs import event, one_line
from ..observe import JOB_LEVEL
from .databases import Source
from .limits import Limits
from .state import Probe, RunState, _dump_result, _failure, _Outcome, _Run

if TYPE_CHECKING:
    from ..aio import EventLoop
    from ..observe import Observer
    from .slots import Slots


@dataclass(frozen=True)
class TxGroup:
    """Transactional queues whose handlers share a form (plain or ``async def``): one probe
    claims from all of them."""

    queues: list[str]
    is_async: bool


class Claims(Protocol):
    """What a probe needs of the claim room."""

    def params(self, queues: list[str], batch: int) -> dict[str, Any]: ...

    def make_run(
        self, src: Source, row: tuple[Any, ...], now: float | None = None, logged: bool = True
    ) -> _Run: ...


class Troubles(Protocol):
    """What a probe needs of the trouble room."""

    def db_trouble(self, src: Source, what: str, exc: BaseException) -> None: ...

    def refused(self, src: Source, during: str, exc: BaseException) -> bool: ...


class _Search:
    """One probe's claim, counted in ``Probe.searching`` until it ends (once)."""

    __slots__ = ("probe", "on")

    def __init__(self, probe: Probe) -> None:
        self.probe, self.on = probe, True


class Transactions:
    """The transactional probes of one worker. ``queue_done(run)``: a run ended (its queue's
    limit may start a waiting one); ``pool_options(src)``: the options of ``src``'s async
    pool (made at first use)."""

    def __init__(
        self,
        slots: Slots,
        observer: Observer,
        claims: Claims,
        trouble: Troubles,
        name: str,
        limits: Limits[_Run],
        queue_done: Callable[[_Run], None],
        should_stop: Callable[[], bool],
        pause: Callable[[float], None],
        pool_options: Callable[[Source], dict[str, Any]],
    ) -> None:
        self.slots, self.observer, self.claims, self.trouble = slots, observer, claims, trouble
        self.name, self.limits, self.queue_done = name, limits, queue_done
        self.limited = bool(limits)  # tested per job: a plain attribute
        self.should_stop, self.pause, self.pool_options = should_stop, pause, pool_options
        self._apools: dict[int, AsyncConnectionPool] = {}

    def close(self, loop: EventLoop, internal_error: Callable[[str], None]) -> None:
        """Close the async pools (on ``loop``, before it stops)."""
        for pool in self._apools.values():
            try:
                loop.call(pool.close(timeout=1), timeout=3)
            except Exception:  # a pool that does not close is dropped with the loop
                internal_error("event loop")

    def _tx_claimed(
        self, search: _Search, src: Source, group: TxGroup, asked: list[str], rows: list[Any],
        took: float, started_ns: int,
    ) -> _Run | None:  # fmt: skip
        """After a transactional claim: the run of its job (state running), or None."""
        self.observer.claim("tx", took, 1, len(rows))
        self._searched(search)
        if not rows:
            self.limits.untake(asked)
            src.probes[group.is_async].dry.empty()
            self.slots.wake_others(src)  # idle now: its share is theirs
            return None
        src.probes[group.is_async].dry.found()
        src.wake.set()  # there was work: let the claim loop start another probe
        run = self.claims.make_run(src, rows[0])
        self.limits.untake(asked, run.job.queue)
        self.slots.count("claimed", src=src)
        self.observer.claimed(src, [run], started_ns)
        run.move(RunState.RUNNING)  # not shared yet: no lock
        return run

    def _searched(self, search: _Search) -> None:
        """This probe's claim is done (whatever it found): another may start."""
        if search.on:
            search.on = False
            self.slots.searching(search.probe, -1)

    def _tx_committed(self, run: _Run, result: tuple[str, dict[str, Any]]) -> None:
        name, fields = result
        self.slots.ended(run, name, fields.get("error"))
        if name == "completed":
            level = JOB_LEVEL
        else:
            level = logging.WARNING if name == "dead" else logging.INFO
        event(name, level, **fields)

    def _tx_error(self, src: Source, run: _Run | None, exc: psycopg.Error) -> None:
        """The transaction is rolled back: a claimed job is simply pending again."""
        if run is None:
            self.observer.claim_error("tx")
        if is_connection_error(exc):
            self.trouble.db_trouble(src, "transactional run", exc)
        elif not self.trouble.refused(src, "transactional run", exc):
            self.slots.count("errors", src=src)
            event("transaction_failed", logging.ERROR, database=src.label, error=one_line(exc))
        if run is not None:
            self.slots.ended(run, "rolled_back", one_line(exc))
            event("rolled_back", logging.WARNING, worker=self.name, **run.fields())

    def _tx_end(self, search: _Search, src: Source, run: _Run | None) -> None:
        self._searched(search)
        if run is not None:
            if run.span is not None:  # an error of ours: rolled back
                self.observer.end_trace(run, "rolled_back")
            self.queue_done(run)
        self.slots.give(src)

    def _tx_fail_params(self, run: _Run, o: _Outcome) -> dict[str, Any]:
        return {
            "job_id": run.job.id,
            "token": run.job.token,
            "error": o.error,
            "retry_in": o.retry_in,
            "retryable": o.retryable,
        }

    def _tx_failed(
        self, run: _Run, o: _Outcome, status: Any, started: float, started_ns: int
    ) -> tuple[str, dict[str, Any]]:
        outcome = "dead" if status and status[0] == "dead" else "retried"
        self.observer.reported(run, "fail", started, started_ns, outcome=outcome)
        fields = run.fields(
            worker=self.name, duration_ms=o.duration_ms, reason=o.reason, error=o.summary()
        )
        if outcome == "dead":
            fields["reason"] = status[1]  # queue.fail_outcome's: the dead letter's reason
        return outcome, fields

    def _tx_completed(
        self, run: _Run, took: float, started: float, started_ns: int
    ) -> tuple[str, dict[str, Any]]:
        self.observer.handler(run.job.queue, took)
        self.observer.reported(run, "complete", started, started_ns)
        return "completed", run.fields(worker=self.name, duration_ms=round(took * 1000, 3))

    def _tx_queues(self, group: TxGroup) -> list[str]:
        return self.limits.take(group.queues) if self.limited else group.queues

    def run(self, src: Source, group: TxGroup) -> None:
        """Claim one transactional job of ``src`` and run it in the claim's transaction."""
        assert src.pool is not None
        run: _Run | None = None
        search = _Search(src.probes[group.is_async])
        try:
            asked = self._tx_queues(group)
            if self.should_stop() or not asked:
                self.limits.untake(asked)
                return
            with src.pool.connection() as conn, conn.transaction():
                started, started_ns = time.perf_counter(), self.observer.now_ns()
                rows = conn.execute(sql.CLAIM, self.claims.params(asked, 1)).fetchall()
                took = time.perf_counter() - started
                run = self._tx_claimed(search, src, group, asked, rows, took, started_ns)
                if run is None:
                    return
                result = self._run_in_tx(conn, run)
            self._tx_committed(run, result)  # the handler's writes and the outcome together
        except psycopg.Error as exc:
            self._tx_error(src, run, exc)
            self.pause(0.1)
        finally:
            self._tx_end(search, src, run)

    def _run_in_tx(self, conn: psycopg.Connection, run: _Run) -> tuple[str, dict[str, Any]]:
        start = time.monotonic()
        try:
            with conn.transaction():  # a savepoint: a failing handler's writes roll back
                with self.observer.handling(run):
                    value = run.handler.fn(run.job, conn)
                result = _dump_result(value)
        except BaseException as exc:
            self.observer.handler(run.job.queue, time.monotonic() - start)
            if conn.broken:  # the transaction is gone with its connection
                raise psycopg.OperationalError(f"connection lost in the handler: {exc}") from exc
            o = _failure(run, exc)
            o.duration_ms = round((time.monotonic() - start) * 1000, 3)
            started, started_ns = time.perf_counter(), self.observer.now_ns()
            status = conn.execute(sql.FAIL, self._tx_fail_params(run, o)).fetchone()
            return self._tx_failed(run, o, status, started, started_ns)
        took = time.monotonic() - start
        started, started_ns = time.perf_counter(), self.observer.now_ns()
        conn.execute(sql.COMPLETE, {"job_id": run.job.id, "token": run.job.token, "result": result})
        return self._tx_completed(run, took, started, started_ns)

    async def _apool(self, src: Source) -> AsyncConnectionPool:
        """The async connection pool of ``src`` (made on the loop at first use)."""
        pool = self._apools.get(src.index)
        if pool is None:
            pool = AsyncConnectionPool(src.dsn, open=False, **self.pool_options(src))
            self._apools[src.index] = pool
            await pool.open(wait=False)
        return pool

    async def arun(self, src: Source, group: TxGroup) -> None:
        """``run`` for ``async def`` handlers, on the event loop."""
        run: _Run | None = None
        search = _Search(src.probes[group.is_async])
        try:
            asked = self._tx_queues(group)
            if self.should_stop() or not asked:
                self.limits.untake(asked)
                return
            pool = await self._apool(src)
            async with pool.connection() as conn, conn.transaction():
                started, started_ns = time.perf_counter(), self.observer.now_ns()
                cur = await conn.execute(sql.CLAIM, self.claims.params(asked, 1))
                rows = await cur.fetchall()
                took = time.perf_counter() - started
                run = self._tx_claimed(search, src, group, asked, rows, took, started_ns)
                if run is None:
                    return
                result = await self._arun_in_tx(conn, run)
            self._tx_committed(run, result)
        except psycopg.Error as exc:
            self._tx_error(src, run, exc)
            await asyncio.sleep(0.1)
        finally:
            self._tx_end(search, src, run)

    async def _arun_in_tx(
        self, conn: psycopg.AsyncConnection, run: _Run
    ) -> tuple[str, dict[str, Any]]:
        start = time.monotonic()
        try:
            async with conn.transaction():  # a savepoint: a failing handler's writes roll back
                with self.observer.handling(run):
                    value = await run.handler.fn(run.job, conn)
                result = _dump_result(value)
        except BaseException as exc:
            self.observer.handler(run.job.queue, time.monotonic() - start)
            if conn.broken:
                raise psycopg.OperationalError(f"connection lost in the handler: {exc}") from exc
            if isinstance(exc, asyncio.CancelledError):
                raise  # a stop past the grace period: the transaction rolls back
            o = _failure(run, exc)
            o.duration_ms = round((time.monotonic() - start) * 1000, 3)
            started, started_ns = time.perf_counter(), self.observer.now_ns()
            cur = await conn.execute(sql.FAIL, self._tx_fail_params(run, o))
            return self._tx_failed(run, o, await cur.fetchone(), started, started_ns)
        took = time.monotonic() - start
        started, started_ns = time.perf_counter(), self.observer.now_ns()
        params = {"job_id": run.job.id, "token": run.job.token, "result": result}
        await conn.execute(sql.COMPLETE, params)
        return self._tx_completed(run, took, started, started_ns)
