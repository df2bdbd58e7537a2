"""Executing: run the handlers of claimed jobs, plain ones in threads, ``async def`` ones on an
event loop, each in its leased or transactional form.

* A leased job (``dispatch``) runs in one of the ``threads`` slot threads, or as a task of the
  event loop when its handler is a coroutine function; when it ends, its outcome goes to its
  database's completer (``Worker._handler_done`` frees the slot first).
* A transactional probe (``probe``) claims one job of a group of transactional queues in a
  transaction, runs its handler on that transaction's connection (a ``psycopg.Connection``,
  or a ``psycopg.AsyncConnection`` from the database's async pool for an ``async def``) and
  records its outcome before the commit: the handler's writes and the outcome commit together.

Everything the two forms share (the bookkeeping before and after a handler, the fail fields,
the logs) is written once; only the calls that wait differ (``await`` or not).
"""

from __future__ import annotations

import asyncio
import logging
import queue as queues_
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg_pool import AsyncConnectionPool

from .. import statements as sql
from ..logs import event
from .aio import EventLoop
from .databases import Source, is_connection_error
from .handlers import ABORTED
from .interrupt import aborted
from .limits import Limits
from .observe import JOB_LEVEL
from .state import _STOP, Probe, _dump_result, _failure, _Outcome, _Run, one_line

if TYPE_CHECKING:
    from . import Worker


@dataclass(frozen=True)
class TxGroup:
    """Transactional queues whose handlers share a form (plain or ``async def``): one probe
    claims from all of them."""

    queues: list[str]
    is_async: bool


class _Search:
    """One probe's claim, counted in ``Probe.searching`` until it ends (once)."""

    __slots__ = ("probe", "on")

    def __init__(self, probe: Probe) -> None:
        self.probe, self.on = probe, True


class Executor:
    """The handler runners of one worker (``threads`` slot threads and, when a handler is a
    coroutine function, one event loop)."""

    def __init__(self, worker: Worker, threads: int, needs_loop: bool, limits: Limits[_Run]):
        self.w = worker
        self.threads = threads
        self.limits = limits
        self.limited = bool(limits)  # tested per job: a plain attribute
        self._work: queues_.SimpleQueue[Any] = queues_.SimpleQueue()
        self._slot_threads: list[threading.Thread] = []
        self.loop: EventLoop | None = None
        if needs_loop:
            self.loop = EventLoop(f"andal-loop-{worker.name}"[:40], worker._internal_error)
        self._apools: dict[int, AsyncConnectionPool] = {}

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> None:
        for i in range(self.threads):
            t = threading.Thread(target=self._slot_loop, name=f"andal-slot-{i}", daemon=True)
            t.start()
            self._slot_threads.append(t)
        if self.loop is not None:
            self.loop.start()

    def stop(self) -> None:
        """End the slot threads once they are idle (one running a handler that outlived the
        grace period is not waited for), cancel the event loop's tasks, close its pools."""
        for _ in range(self.threads):
            self._work.put(_STOP)
        if self.loop is not None:
            for pool in self._apools.values():
                try:
                    self.loop.call(pool.close(timeout=1), timeout=3)
                except Exception:  # a pool that does not close is dropped with the loop
                    self.w._internal_error("event loop")
            self.loop.stop()

    # -- leased jobs ---------------------------------------------------------------------

    def dispatch(self, runs: list[_Run]) -> None:
        """Start ``runs`` (claimed leased jobs) where their handlers run; a run of a queue at
        its limit waits for one of the queue's jobs to end."""
        if self.limited:
            runs = [r for r in runs if self.limits.admit(r.job.queue, r)]
        aio = []
        for run in runs:
            if run.handler.is_async:
                aio.append(run)
            else:
                self._work.put(run)
        if aio:
            assert self.loop is not None
            self.loop.submit_many([self._leased_task(r) for r in aio])

    def _leased_task(self, run: _Run) -> Callable[[], Awaitable[None]]:
        return lambda: self._arun_leased(run)

    def run_here(self, run: _Run) -> None:
        """Run ``run`` in the calling thread (the completer of a one-slot worker), unless its
        handler is a coroutine function (it goes to the event loop)."""
        if run.handler.is_async or (self.limited and not self.limits.admit(run.job.queue, run)):
            if run.handler.is_async:
                self.dispatch([run])
            return
        self._run_leased(run)

    def _slot_loop(self) -> None:
        while True:
            item = self._work.get()
            if item is _STOP:
                return
            try:
                if isinstance(item, tuple):  # (source, group): a transactional probe
                    self._tx_probe(item[0], item[1])
                else:
                    self._run_leased(item)
            except Exception:  # a bug of ours must not shrink the worker by a slot
                self.w._internal_error("slot")

    def _begin(self, run: _Run) -> bool:
        """Whether ``run`` starts now: not when a stop released it or its lease is gone."""
        w = self.w
        with w.slots.lock:
            if run.state != "claimed":
                skip, finish = True, False  # released by a stop before it started
            elif run.lost:
                run.state = "done"
                skip, finish = True, True
            else:
                run.state = "running"
                skip = finish = False
        if skip:
            if finish:
                w.slots.finish(run)
            self._queue_done(run)
        return not skip

    def _ran(self, run: _Run, outcome: _Outcome, took: float) -> None:
        """A leased handler returned or raised: free its slot, hand its outcome on."""
        w = self.w
        outcome.duration_ms = round(took * 1000, 3)
        if run.job.abort_reason == ABORTED:  # whatever it did: the abort's acknowledgement
            outcome = aborted(run, outcome)
        w.observer.handler(run.job.queue, took)
        outcome.rides = w.slots.handler_done(run, outcome.ok)
        run.source.done.put(outcome)
        self._queue_done(run)

    def _queue_done(self, run: _Run) -> None:
        if self.limited:
            nxt = self.limits.done(run.job.queue)
            if nxt is not None:
                if nxt.handler.is_async and self.loop is not None:
                    self.loop.submit(lambda: self._arun_leased(nxt))
                else:
                    self._work.put(nxt)

    def _run_leased(self, run: _Run) -> None:
        if not self._begin(run):
            return
        start = time.monotonic()
        try:
            run.job.check()  # an abort requested before it started
            with self.w.observer.handling(run):
                value = run.handler.fn(run.job)
            outcome = _Outcome(run, True, 0.0, result=_dump_result(value))
        except BaseException as exc:  # a handler never takes the worker down
            outcome = _failure(run, exc)
        self._ran(run, outcome, time.monotonic() - start)

    async def _arun_leased(self, run: _Run) -> None:
        run.task = asyncio.current_task()  # before _begin: an interrupt from now on cancels it
        if not self._begin(run):
            return
        start = time.monotonic()
        try:
            run.job.check()  # an abort requested before it started
            with self.w.observer.handling(run):
                value = await run.handler.fn(run.job)
            outcome = _Outcome(run, True, 0.0, result=_dump_result(value))
        except BaseException as exc:  # a handler never takes the worker down
            outcome = _failure(run, exc)
        self._ran(run, outcome, time.monotonic() - start)

    # -- transactional jobs --------------------------------------------------------------

    def probe(self, src: Source, group: TxGroup) -> None:
        """Start a transactional probe of ``group`` on ``src`` (its slot is reserved)."""
        if group.is_async:
            assert self.loop is not None
            self.loop.submit(lambda: self._atx_probe(src, group))
        else:
            self._work.put((src, group))

    def _tx_claimed(
        self, search: _Search, src: Source, group: TxGroup, asked: list[str], rows: list[Any],
        took: float, started_ns: int,
    ) -> _Run | None:  # fmt: skip
        """After a transactional claim: the run of its job (state running), or None."""
        w = self.w
        w.observer.claim("tx", took, 1, len(rows))
        self._searched(search)
        if not rows:
            self.limits.untake(asked)
            src.probes[group.is_async].dry.empty()
            w.slots.wake_others(src)  # idle now: its share is theirs
            return None
        src.probes[group.is_async].dry.found()
        src.wake.set()  # there was work: let the claim loop start another probe
        run = w.claimer.make_run(src, rows[0])
        self.limits.untake(asked, run.job.queue)
        w.slots.count("claimed", src=src)
        w.observer.claimed(src, [run], started_ns)
        run.state = "running"
        return run

    def _searched(self, search: _Search) -> None:
        """This probe's claim is done (whatever it found): another may start."""
        if search.on:
            search.on = False
            with self.w.slots.lock:
                search.probe.searching -= 1

    def _tx_committed(self, run: _Run, result: tuple[str, dict[str, Any]]) -> None:
        name, fields = result
        self.w.slots.ended(run, name, fields.get("error"))
        if name == "completed":
            level = JOB_LEVEL
        else:
            level = logging.WARNING if name == "dead" else logging.INFO
        event(name, level, **fields)

    def _tx_error(self, src: Source, run: _Run | None, exc: psycopg.Error) -> None:
        """The transaction is rolled back: a claimed job is simply pending again."""
        w = self.w
        if run is None:
            w.observer.claim_error("tx")
        if is_connection_error(exc):
            w.trouble.db_trouble(src, "transactional run", exc)
        elif not w.trouble.refused(src, "transactional run", exc):
            w.slots.count("errors", src=src)
            event("transaction_failed", logging.ERROR, database=src.label, error=one_line(exc))
        if run is not None:
            w.slots.ended(run, "rolled_back", one_line(exc))
            event("rolled_back", logging.WARNING, worker=w.name, **run.fields())

    def _tx_end(self, search: _Search, src: Source, run: _Run | None) -> None:
        w = self.w
        self._searched(search)
        if run is not None:
            if run.span is not None:  # an error of ours: rolled back
                w.slots.end_trace(run, "rolled_back")
            self._queue_done(run)
        w.slots.give(src)

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
        self.w.observer.reported(run, "fail", started, started_ns, outcome=outcome)
        fields = run.fields(
            worker=self.w.name, duration_ms=o.duration_ms, reason=o.reason, error=o.summary()
        )
        if outcome == "dead":
            fields["reason"] = status[1]  # queue.fail_outcome's: the dead letter's reason
        return outcome, fields

    def _tx_completed(
        self, run: _Run, took: float, started: float, started_ns: int
    ) -> tuple[str, dict[str, Any]]:
        self.w.observer.handler(run.job.queue, took)
        self.w.observer.reported(run, "complete", started, started_ns)
        return "completed", run.fields(worker=self.w.name, duration_ms=round(took * 1000, 3))

    def _tx_queues(self, group: TxGroup) -> list[str]:
        return self.limits.take(group.queues) if self.limited else group.queues

    def _tx_probe(self, src: Source, group: TxGroup) -> None:
        """Claim one transactional job of ``src`` and run it in the claim's transaction."""
        w = self.w
        assert src.pool is not None
        run: _Run | None = None
        search = _Search(src.probes[group.is_async])
        try:
            asked = self._tx_queues(group)
            if w._should_stop() or not asked:
                self.limits.untake(asked)
                return
            with src.pool.connection() as conn, conn.transaction():
                started, started_ns = time.perf_counter(), w.observer.now_ns()
                rows = conn.execute(sql.CLAIM, w.claimer.params(asked, 1)).fetchall()
                took = time.perf_counter() - started
                run = self._tx_claimed(search, src, group, asked, rows, took, started_ns)
                if run is None:
                    return
                result = self._run_in_tx(conn, run)
            self._tx_committed(run, result)  # the handler's writes and the outcome together
        except psycopg.Error as exc:
            self._tx_error(src, run, exc)
            w._pause(0.1)
        finally:
            self._tx_end(search, src, run)

    def _run_in_tx(self, conn: psycopg.Connection, run: _Run) -> tuple[str, dict[str, Any]]:
        start = time.monotonic()
        try:
            with conn.transaction():  # a savepoint: a failing handler's writes roll back
                with self.w.observer.handling(run):
                    value = run.handler.fn(run.job, conn)
                result = _dump_result(value)
        except BaseException as exc:
            self.w.observer.handler(run.job.queue, time.monotonic() - start)
            if conn.broken:  # the transaction is gone with its connection
                raise psycopg.OperationalError(f"connection lost in the handler: {exc}") from exc
            o = _failure(run, exc)
            o.duration_ms = round((time.monotonic() - start) * 1000, 3)
            started, started_ns = time.perf_counter(), self.w.observer.now_ns()
            status = conn.execute(sql.FAIL, self._tx_fail_params(run, o)).fetchone()
            return self._tx_failed(run, o, status, started, started_ns)
        took = time.monotonic() - start
        started, started_ns = time.perf_counter(), self.w.observer.now_ns()
        conn.execute(sql.COMPLETE, {"job_id": run.job.id, "token": run.job.token, "result": result})
        return self._tx_completed(run, took, started, started_ns)

    async def _apool(self, src: Source) -> AsyncConnectionPool:
        """The async connection pool of ``src`` (made on the loop at first use)."""
        pool = self._apools.get(src.index)
        if pool is None:
            pool = AsyncConnectionPool(src.dsn, open=False, **self.w.startup.pool_options(src))
            self._apools[src.index] = pool
            await pool.open(wait=False)
        return pool

    async def _atx_probe(self, src: Source, group: TxGroup) -> None:
        """``_tx_probe`` for ``async def`` handlers, on the event loop."""
        w = self.w
        run: _Run | None = None
        search = _Search(src.probes[group.is_async])
        try:
            asked = self._tx_queues(group)
            if w._should_stop() or not asked:
                self.limits.untake(asked)
                return
            pool = await self._apool(src)
            async with pool.connection() as conn, conn.transaction():
                started, started_ns = time.perf_counter(), w.observer.now_ns()
                cur = await conn.execute(sql.CLAIM, w.claimer.params(asked, 1))
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
                with self.w.observer.handling(run):
                    value = await run.handler.fn(run.job, conn)
                result = _dump_result(value)
        except BaseException as exc:
            self.w.observer.handler(run.job.queue, time.monotonic() - start)
            if conn.broken:
                raise psycopg.OperationalError(f"connection lost in the handler: {exc}") from exc
            if isinstance(exc, asyncio.CancelledError):
                raise  # a stop past the grace period: the transaction rolls back
            o = _failure(run, exc)
            o.duration_ms = round((time.monotonic() - start) * 1000, 3)
            started, started_ns = time.perf_counter(), self.w.observer.now_ns()
            cur = await conn.execute(sql.FAIL, self._tx_fail_params(run, o))
            return self._tx_failed(run, o, await cur.fetchone(), started, started_ns)
        took = time.monotonic() - start
        started, started_ns = time.perf_counter(), self.w.observer.now_ns()
        params = {"job_id": run.job.id, "token": run.job.token, "result": result}
        await conn.execute(sql.COMPLETE, params)
        return self._tx_completed(run, took, started, started_ns)
