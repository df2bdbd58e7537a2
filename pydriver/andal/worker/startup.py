"""Starting: check the databases, make the pools and the rooms, start the threads."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from psycopg_pool import ConnectionPool

from .. import tracing as tracing_
from ..logs import event
from .databases import Source, check_installed, is_connection_error
from .execute import Executor
from .heartbeat import Heartbeat
from .limits import Limits
from .listen import VIA_POLLING, Listener, abort_target, listen_via, lost_event
from .maintenance import Maintenance
from .registration import Registration
from .state import _Lane, _Run, one_line, text_array
from .transact import Transactions, TxGroup

if TYPE_CHECKING:
    from . import Worker


class Startup:
    """The start of one worker (``prepare`` in the caller's thread, then ``start_threads``)."""

    def __init__(self, worker: Worker) -> None:
        self.w = worker

    def prepare(self) -> None:
        if self.w._prepared:
            raise RuntimeError("a Worker runs once; make a new one")
        if not self.w.registry:
            raise ValueError("no handler registered")
        wanted = self.w.only_queues or self.w.registry.queues()
        missing = [q for q in wanted if q not in self.w.registry]
        if missing:
            raise ValueError(f"no handler for queue(s): {', '.join(missing)}")
        handlers = [self.w.registry[q] for q in wanted]
        self.w._leased_queues = [h.queue for h in handlers if not h.transactional]
        self.w._leased_array = text_array(self.w._leased_queues)
        self.w._tx_queues = [h.queue for h in handlers if h.transactional]
        for is_async in (False, True):
            group = [h.queue for h in handlers if h.transactional and h.is_async == is_async]
            if group:
                self.w._tx_groups.append(TxGroup(group, is_async))
        self.w._queue_set = set(wanted)
        self.w.slots.configure(bool(self.w._leased_queues), [g.is_async for g in self.w._tx_groups])
        self.check_sources()
        self.w._prepared = True
        sync_tx = any(h.transactional and not h.is_async for h in handlers)
        for src in self.w.sources:
            src.pool = ConnectionPool(
                src.dsn,
                min_size=2,
                max_size=3 + (self.w.concurrency if sync_tx else 0),
                open=False,
                **self.pool_options(src),
            )
            src.claim_lane = _Lane(src.pool)
            src.complete_lane = _Lane(src.pool)
        self.w._maintenance = {
            src.index: Maintenance(
                self.w._host,
                src,
                self.w.name,
                self.w.maintain_every,
                self.vacuum_dsn(src) if self.w.vacuum else None,
                self.w._helpers_stop,
            )
            for src in self.w.sources
        }
        self.w._registrations = {
            src.index: Registration(
                self.w.name, src.label, wanted, self.w.concurrency, tracing_._version()
            )
            for src in self.w.sources
        }
        limits = Limits[_Run]({h.queue: h.limit for h in handlers if h.limit is not None})
        threads = self.w.concurrency if any(not h.is_async for h in handlers) else 0
        needs_loop = any(h.is_async for h in handlers)
        self.w._executor = self.executor(threads, needs_loop, limits)
        self.hand_over(self.w._executor)
        tracing = self.w.tracing if self.w.tracing is not None else tracing_.configured()
        self.w.observer.start_tracing(bool(tracing))
        self.w.observer.serve(self.w.metrics_port, self.w.metrics_addr)

    def executor(self, threads: int, needs_loop: bool, limits: Limits[_Run]) -> Executor:
        """The executor, with the transactional probes when a queue is transactional."""
        w = self.w
        executor = Executor(
            w.slots, w.observer, w.name, w._internal_error, threads, needs_loop, limits
        )
        if w._tx_groups:
            executor.transactions = Transactions(
                w.slots, w.observer, w.claimer, w.trouble, w.name, limits,
                executor.queue_done, w._should_stop, w._pause, self.pool_options,
            )  # fmt: skip
        return executor

    def hand_over(self, executor: Executor) -> None:
        """What the start made, to the rooms that use it."""
        w = self.w
        w._completer.executor = executor
        w._shutdown.setup(executor, w._maintenance, w._registrations)
        w.claimer.setup(w._leased_queues, w._tx_groups, executor, w._registrations, w._maintenance)

    def pool_options(self, src: Source) -> dict[str, Any]:
        """The options of ``src``'s connection pools (the threads' and the event loop's).
        Behind a pooler, no server-side prepared statements: the server connection that
        prepared one may not be the one the next statement lands on."""
        kwargs: dict[str, Any] = {
            "autocommit": True,
            "application_name": f"andal {self.w.name}"[:63],
            "connect_timeout": 5,
        }
        if self.w.pooler is not None:
            kwargs["prepare_threshold"] = None
        return {
            "kwargs": kwargs,
            "timeout": self.w.pool_timeout,
            "reconnect_timeout": 24 * 3600,
            "name": f"andal-{self.w.name}-{src.index}",
        }

    def check_sources(self) -> None:
        """Check every database at once. Raise when none answers, or when one answers without
        andal installed (or refuses us: a bad DSN is not an outage); start with the others
        when some do not answer (they are reconnected to in the background)."""
        errors: dict[int, BaseException] = {}

        def check(src: Source) -> None:
            try:
                check_installed(src.dsn)
            except BaseException as exc:  # raised below, in the caller's thread
                errors[src.index] = exc

        threads = [threading.Thread(target=check, args=(s,), daemon=True) for s in self.w.sources]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for src in self.w.sources:
            exc = errors.get(src.index)
            if exc is not None and not is_connection_error(exc):
                raise exc
        if len(errors) == len(self.w.sources):
            raise errors[self.w.sources[0].index]
        for src in self.w.sources:
            exc = errors.get(src.index)
            if exc is not None:
                src.up, src.down_since = False, time.monotonic()
                event(
                    "database_down",
                    logging.WARNING,
                    worker=self.w.name,
                    database=src.label,
                    error=one_line(exc),
                )

    def start_threads(self) -> None:
        def spawn(target: Callable[..., None], name: str, *args: Any) -> threading.Thread:
            t = threading.Thread(target=target, args=args, name=name, daemon=True)
            t.start()
            return t

        def keeping(lane: _Lane | None, loop: Callable[[Source], None]) -> Callable[[Source], None]:
            """``loop``, then its pooled connection (kept between its statements) back."""

            def run(src: Source) -> None:
                try:
                    loop(src)
                finally:
                    assert lane is not None
                    lane.release()

            return run

        for src in self.w.sources:
            assert src.pool is not None
            src.pool.open(wait=False)
        assert self.w._executor is not None
        self.w._executor.start()
        for src in self.w.sources:
            i = src.index
            self.w._threads.append(
                spawn(
                    keeping(src.complete_lane, self.w._completer.run), f"andal-completer-{i}", src
                )
            )
            beats = None
            if self.w.heartbeat:
                beats = Heartbeat(self.w._host, src, self.w.lease, self.w._helpers_stop)
                self.w._threads.append(
                    spawn(beats.run, f"andal-heartbeat-{i}", self.w._internal_error)
                )
            via = listen_via(self.w.listen, self.w.pooler, src.listen_dsn)
            if via != VIA_POLLING:
                listener = self.listener(src, beats)
                self.w._threads.append(spawn(listener.run, f"andal-listener-{i}"))
        for src in self.w.sources:
            self.w._claimers.append(
                spawn(keeping(src.claim_lane, self.w.claimer.run), f"andal-claim-{src.index}", src)
            )

    def listener(self, src: Source, beats: Heartbeat | None = None) -> Listener:
        dsn = src.listen_dsn or src.dsn

        def hint(payload: str) -> None:
            if not payload or payload in self.w._queue_set:
                self.w._hint(src)

        def abort(payload: str) -> None:
            ours, job_id = abort_target(payload, self.w.name)
            if ours and beats is not None:
                beats.poke(job_id)

        def lost(error: str) -> None:
            self.w.slots.count("listener_lost", src=src)
            report_lost(error)

        report_lost = lost_event(self.w.name, src.label)
        name = f"andal {self.w.name} listen"
        on_abort = abort if beats is not None else None
        return Listener(
            dsn, name, hint, lost, self.w._helpers_stop, self.w._internal_error, on_abort
        )

    def vacuum_dsn(self, src: Source) -> str | None:
        """Where the vacuum connects: its advisory lock is a session's, which a transaction-
        mode pooler does not keep; so the listen DSN there, and no vacuum without one."""
        if src.listen_dsn is not None:
            return src.listen_dsn
        return None if self.w.pooler == "transaction" else src.dsn
