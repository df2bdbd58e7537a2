"""Executing: run the handlers of claimed jobs, plain ones in slot threads, ``async def`` ones
as tasks of an event loop: a leased job (``dispatch``; ``Slots.handler_done`` frees its slot,
then its outcome goes to its database's completer) or a transactional probe (``probe``, see
``transact``)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import queue as queues_
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Protocol

from ..aio import EventLoop
from ..handlers import ABORTED
from .databases import Source
from .interrupt import aborted
from .limits import Limits
from .state import _STOP, _dump_result, _failure, _Outcome, _Run
from .transact import Transactions, TxGroup

if TYPE_CHECKING:
    from ..observe import Observer
    from .slots import Slots


class InternalError(Protocol):
    """Log a bug of ours (``Worker._internal_error``)."""

    def __call__(self, where: str, exc: BaseException | None = None) -> None: ...


class Executor:
    """The handler runners of one worker (``threads`` slot threads and, when a handler is a
    coroutine function, one event loop). Transactional probes need ``transactions`` (set
    before ``start`` when a queue is transactional)."""

    def __init__(
        self,
        slots: Slots,
        observer: Observer,
        name: str,
        internal_error: InternalError,
        threads: int,
        needs_loop: bool,
        limits: Limits[_Run],
    ) -> None:
        self.slots, self.observer, self.internal_error = slots, observer, internal_error
        self.transactions: Transactions | None = None
        self.threads = threads
        self.limits = limits
        self.limited = bool(limits)  # tested per job: a plain attribute
        self._work: queues_.SimpleQueue[Any] = queues_.SimpleQueue()
        self._slot_threads: list[threading.Thread] = []
        self.loop: EventLoop | None = None
        if needs_loop:
            self.loop = EventLoop(f"andal-loop-{name}"[:40], internal_error)

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
            if self.transactions is not None:
                self.transactions.close(self.loop, self.internal_error)
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
            self.loop.submit_many([functools.partial(self._arun_leased, r) for r in aio])

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
                    assert self.transactions is not None
                    self.transactions.run(item[0], item[1])
                else:
                    self._run_leased(item)
            except Exception:  # a bug of ours must not shrink the worker by a slot
                self.internal_error("slot")

    def _begin(self, run: _Run) -> bool:
        """Whether ``run`` starts now: not when a stop released it or its lease is gone."""
        started = self.slots.start(run)
        if started:
            return True
        if started is False:  # its lease is gone (None: released by a stop before it started)
            self.slots.finish(run)
        self.queue_done(run)
        return False

    def _ran(self, run: _Run, outcome: _Outcome, took: float) -> None:
        """A leased handler returned or raised: free its slot, hand its outcome on."""
        outcome.duration_ms = round(took * 1000, 3)
        if run.job.abort_reason == ABORTED:  # whatever it did: the abort's acknowledgement
            outcome = aborted(run, outcome)
        self.observer.handler(run.job.queue, took)
        outcome.rides = self.slots.handler_done(run, outcome.ok)
        run.source.done.put(outcome)
        self.queue_done(run)

    def queue_done(self, run: _Run) -> None:
        """``run`` ended: a run waiting at its queue's limit takes its place."""
        if self.limited:
            nxt = self.limits.done(run.job.queue)
            if nxt is not None:
                if nxt.handler.is_async and self.loop is not None:
                    self.loop.submit(lambda: self._arun_leased(nxt))
                else:
                    self._work.put(nxt)

    def _run_leased(self, run: _Run) -> None:
        if self._begin(run):
            with self._handling(run) as ran:
                ran.append(run.handler.fn(run.job))

    async def _arun_leased(self, run: _Run) -> None:
        run.task = asyncio.current_task()  # before _begin: an interrupt from now on cancels it
        if self._begin(run):
            with self._handling(run) as ran:
                ran.append(await run.handler.fn(run.job))

    @contextlib.contextmanager
    def _handling(self, run: _Run) -> Iterator[list[Any]]:
        """Around a started leased handler, plain or awaited (it appends what it returned):
        its outcome goes on (``_ran``), whatever it raised (a handler never takes the worker
        down)."""
        start, ran = time.monotonic(), list[Any]()
        try:
            run.job.check()  # an abort requested before it started
            with self.observer.handling(run):
                yield ran
            outcome = _Outcome(run, True, 0.0, result=_dump_result(ran[0]))
        except BaseException as exc:
            outcome = _failure(run, exc)
        self._ran(run, outcome, time.monotonic() - start)

    def probe(self, src: Source, group: TxGroup) -> None:
        """Start a transactional probe of ``group`` on ``src`` (its slot is reserved)."""
        tx = self.transactions
        assert tx is not None
        if group.is_async:
            assert self.loop is not None
            self.loop.submit(lambda: tx.arun(src, group))
        else:
            self._work.put((src, group))
