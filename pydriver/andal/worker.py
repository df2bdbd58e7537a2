"""The worker: claim jobs, run their handlers in N slots, report outcomes, keep leases alive.

Threads of one ``Worker``:

* the dispatcher (the caller of ``run``): claims leased jobs in batches sized to the free
  slots, starts transactional probes, wakes on a NOTIFY hint, a freed slot or the poll timer;
* ``concurrency`` slot threads run the handlers;
* the completer sends outcomes: successes batched through ``queue.complete_many``, failures
  one by one through ``queue.fail``;
* the heartbeat extends the leases of held jobs every lease/3 (``queue.heartbeat_many``);
* the listener holds one dedicated connection on ``LISTEN andal_jobs``; it is only a hint,
  the poll timer is the backstop;
* a short-lived vacuum thread, when the server runs with ``autovacuum = off`` (see
  ``vacuum_tables``);
* with ``metrics_port``, prometheus_client's HTTP server thread serves ``/metrics``.

Observability: ``metrics`` (``andal.metrics.WorkerMetrics``, a registry per worker) and
``tracing`` (``andal.tracing``: one OpenTelemetry trace per job attempt) are both off unless
asked for or, for tracing, an OpenTelemetry tracer provider is set when the worker starts;
when off, the hot path only tests ``is None``.

Every decision (which job, how long a lease, retry or dead) is taken by the SQL functions;
this module only moves jobs between them and the handlers.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import queue as queues_
import random
import signal
import socket
import threading
import time
import traceback
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from types import FrameType
from typing import TYPE_CHECKING, Any, TypeVar

import psycopg
from psycopg import sql as psql
from psycopg_pool import ConnectionPool, PoolTimeout

from . import sql
from . import tracing as tracing_
from .errors import NotInstalled, is_lease_lost
from .logs import event, log
from .metrics import WorkerMetrics

if TYPE_CHECKING:
    from .cache import Cache

Seconds = float | int | timedelta
HandlerFn = Callable[..., Any]
F = TypeVar("F", bound=HandlerFn)

#: SQLSTATE classes of a lost or refused connection: connection exception, insufficient
#: resources (too many connections), operator intervention (terminated, shutting down),
#: system error.
_CONNECTION_CLASSES = ("08", "53", "57", "58")


def is_connection_error(exc: BaseException) -> bool:
    """Whether ``exc`` means the connection or the server is gone (retry with backoff),
    rather than the database refusing the statement."""
    if isinstance(exc, PoolTimeout):
        return True
    if not isinstance(exc, psycopg.OperationalError):
        return False
    state = exc.sqlstate
    return state is None or state[:2] in _CONNECTION_CLASSES


_ERROR_LIMIT = 4000  # characters of error text sent to queue.fail


def as_interval(value: Seconds | None) -> timedelta | None:
    """Seconds (int/float) or a timedelta, as a timedelta; None stays None."""
    if value is None or isinstance(value, timedelta):
        return value
    return timedelta(seconds=float(value))


# -- what handlers see and raise -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Job:
    """One claimed job, as ``queue.claim`` returned it."""

    id: int
    queue: str
    category: str | None
    payload: Any
    attempt: int
    max_attempts: int
    token: uuid.UUID
    lease_expires_at: datetime
    enqueued_at: datetime
    cache_key: str | None
    cache_version: int | None
    priority: int = 0


class Retry(Exception):  # noqa: N818 - the name is the API
    """Raise from a handler to fail this attempt and retry after ``delay`` (seconds/timedelta).

    Without a delay the queue's backoff policy decides. The attempt is spent: a job past its
    attempts is dead-lettered by ``queue.fail`` as usual.
    """

    def __init__(self, message: str = "retry requested", *, delay: Seconds | None = None):
        super().__init__(message)
        self.delay = as_interval(delay)


class Fail(Exception):  # noqa: N818 - the name is the API
    """Raise from a handler to fail the job for good: it is dead-lettered at once."""


# -- handler registry -----------------------------------------------------------------------


@dataclass(frozen=True)
class Handler:
    """A queue's handler: ``fn(job)`` (leased) or ``fn(job, conn)`` (transactional)."""

    queue: str
    fn: HandlerFn
    transactional: bool = False


def _undecodable(handler: Handler, error: str) -> Handler:
    """A stand-in for a job whose payload this process cannot decode: it raises ``Fail``."""

    def fail(*_args: Any) -> None:
        raise Fail(f"the payload cannot be decoded by the Python driver ({error})")

    return Handler(handler.queue, fail, handler.transactional)


class Registry:
    """Handlers by queue. Fill it with ``@registry.handler("queue")`` or from a mapping."""

    def __init__(self, handlers: Mapping[str, HandlerFn | Handler] | None = None) -> None:
        self._handlers: dict[str, Handler] = {}
        for queue, fn in (handlers or {}).items():
            if isinstance(fn, Handler):
                self.add(queue, fn.fn, transactional=fn.transactional)
            else:
                self.add(queue, fn)

    @classmethod
    def coerce(cls, handlers: Registry | Mapping[str, HandlerFn | Handler] | None) -> Registry:
        return handlers if isinstance(handlers, Registry) else cls(handlers)

    def add(self, queue: str, fn: HandlerFn, *, transactional: bool = False) -> Handler:
        if not isinstance(queue, str) or not queue:
            raise ValueError("a queue name must be a non-empty string")
        if not callable(fn):
            raise TypeError(f"the handler of queue {queue!r} is not callable")
        if queue in self._handlers:
            raise ValueError(f"queue {queue!r} already has a handler")
        handler = Handler(queue, fn, transactional)
        self._handlers[queue] = handler
        return handler

    def handler(self, queue: str, *, transactional: bool = False) -> Callable[[F], F]:
        """Decorator: register ``fn`` as the handler of ``queue``."""

        def register(fn: F) -> F:
            self.add(queue, fn, transactional=transactional)
            return fn

        return register

    def queues(self) -> list[str]:
        return list(self._handlers)

    def __getitem__(self, queue: str) -> Handler:
        return self._handlers[queue]

    def __contains__(self, queue: object) -> bool:
        return queue in self._handlers

    def __iter__(self) -> Iterator[str]:
        return iter(self._handlers)

    def __len__(self) -> int:
        return len(self._handlers)


# -- internal state -------------------------------------------------------------------------


class _Run:
    """A job held by this worker, from claim until its outcome is recorded or dropped.

    ``state``: claimed -> running -> finishing -> done; claimed/running -> released.
    ``lost`` is set once the lease is known to be gone (the outcome will be discarded).
    """

    __slots__ = (
        "job",
        "handler",
        "state",
        "lost",
        "finished",
        "claimed_at",
        "lease_len",
        "next_beat",
        "deadline",
        "span",
    )

    def __init__(self, job: Job, handler: Handler, lease_len: float) -> None:
        now = time.monotonic()
        self.job = job
        self.handler = handler
        self.state = "claimed"
        self.lost = False
        self.finished = False
        self.claimed_at = now
        self.lease_len = max(lease_len, 0.001)
        self.next_beat = now + self.lease_len / 3
        self.deadline = now + self.lease_len
        self.span: Any = None  # the job's root span, when tracing

    def fields(self, **extra: Any) -> dict[str, Any]:
        job = self.job
        out = {
            "job_id": job.id,
            "queue": job.queue,
            "category": job.category,
            "attempt": job.attempt,
        }
        out.update(extra)
        return out


@dataclass
class _Outcome:
    run: _Run
    ok: bool
    duration_ms: float
    result: str | None = None  # JSON text
    error: str | None = None
    reason: str | None = None  # exception | retry | fail
    retry_in: timedelta | None = None
    retryable: bool = True


class _Backoff:
    """Exponential backoff with jitter for reconnects: 50 ms doubling up to ``cap``."""

    def __init__(self, first: float = 0.05, cap: float = 2.0) -> None:
        self.first, self.cap, self.current = first, cap, 0.0

    def next(self) -> float:
        self.current = self.first if not self.current else min(self.current * 2, self.cap)
        return self.current * (0.5 + random.random() / 2)

    def reset(self) -> None:
        self.current = 0.0


class _Dry:
    """After an empty claim: the queues may be empty, or other claimers held the rows or the
    category locks. Claim again after a pause that doubles from 10 ms up to the poll interval
    while claims stay empty (so an idle worker polls every ``poll`` seconds); a claim that
    finds work or a NOTIFY hint ends the pause."""

    def __init__(self, poll: float) -> None:
        self.poll, self.step, self.until = poll, 0.0, 0.0

    def ready(self, now: float) -> bool:
        return now >= self.until

    def empty(self) -> None:
        self.step = min(self.step * 2 or 0.01, self.poll)
        self.until = time.monotonic() + self.step

    def found(self) -> None:
        self.step = self.until = 0.0

    def hint(self) -> None:
        self.until = 0.0


_TX_PROBE = object()  # work item: claim one transactional job in a slot
_STOP = object()


def error_text(exc: BaseException) -> str:
    """The error sent to ``queue.fail``: the exception and a short traceback."""
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__, limit=-5))
    return text if len(text) <= _ERROR_LIMIT else text[: _ERROR_LIMIT - 3] + "..."


def one_line(exc: BaseException) -> str:
    """The first line of an error's text (psycopg adds CONTEXT and HINT lines)."""
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def default_name() -> str:
    return f"{socket.gethostname()[:40]}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


# -- the worker -----------------------------------------------------------------------------


class Worker:
    """Run handlers for jobs of the registered queues until stopped.

    ``concurrency`` handler slots; leased jobs are claimed ``min(free slots, batch)`` at a
    time; ``lease`` overrides the queue's lease (seconds or timedelta); ``poll`` bounds the
    time between claims when no NOTIFY arrives; ``grace`` is how long a graceful stop waits
    for running handlers; ``queue.maintain()`` runs every ``maintain_every`` seconds (0: never),
    followed, when the server runs with ``autovacuum = off`` and ``vacuum`` is true, by a
    ``VACUUM (ANALYZE)`` of andal's tables that changed (one worker at a time).
    ``listen`` and ``heartbeat`` can be turned off (tests, diagnostics).

    Observability: ``metrics_port`` serves this worker's Prometheus metrics on
    ``metrics_addr:metrics_port``/metrics (0: a free port, see ``metrics.port``);
    ``metrics=True`` keeps them without serving (``worker.metrics.text()``). ``tracing``:
    one OpenTelemetry trace per job attempt (default: on when a tracer provider has been set
    by the time the worker starts; True: always, False: never).
    ``cache``: an ``andal.cache.Cache`` whose hit/miss counters the metrics export.
    """

    def __init__(
        self,
        dsn: str,
        handlers: Registry | Mapping[str, HandlerFn | Handler] | None = None,
        *,
        queues: Iterable[str] | None = None,
        concurrency: int = 4,
        batch: int = 100,
        lease: Seconds | None = None,
        poll: float = 1.0,
        grace: float = 30.0,
        name: str | None = None,
        listen: bool = True,
        heartbeat: bool = True,
        pool_timeout: float = 5.0,
        maintain_every: float = 60.0,
        vacuum: bool = True,
        metrics_port: int | None = None,
        metrics_addr: str = "0.0.0.0",
        metrics: bool | None = None,
        tracing: bool | None = None,
        cache: Cache | None = None,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        if not 1 <= batch <= 1000:
            raise ValueError("batch must be between 1 and 1000")
        if poll <= 0:
            raise ValueError("poll must be positive")
        if grace < 0:
            raise ValueError("grace must not be negative")
        if lease is not None and as_interval(lease) <= timedelta(0):
            raise ValueError("lease must be positive")
        if metrics_port is not None and not 0 <= metrics_port <= 65535:
            raise ValueError("metrics_port must be between 0 and 65535")
        if tracing and not tracing_.AVAILABLE:
            raise ValueError("tracing needs opentelemetry: pip install 'andal[otel]'")
        self.dsn = dsn
        self.registry = Registry.coerce(handlers)
        self.only_queues = list(queues) if queues else None
        self.concurrency = concurrency
        self.batch = batch
        self.lease = as_interval(lease)
        self.poll = poll
        self.grace = grace
        self.name = name or default_name()
        self.listen = listen
        self.heartbeat = heartbeat
        self.pool_timeout = pool_timeout
        self.maintain_every = maintain_every
        self.vacuum = vacuum
        self.metrics_port = metrics_port
        self.metrics_addr = metrics_addr
        self.cache = cache
        self.counts: Counter[str] = Counter()
        if metrics is None:
            metrics = metrics_port is not None
        #: This worker's Prometheus metrics (None when off).
        self.metrics: WorkerMetrics | None = None
        if metrics:
            self.metrics = WorkerMetrics(
                self.name,
                concurrency=concurrency,
                batch=batch,
                busy=lambda: self._busy,
                held=lambda: len(self._active),
                cache=cache,
                version=tracing_._version(),
            )
        self.tracing = tracing
        #: Made at start: with ``tracing=None``, only when a tracer provider is set by then.
        self._tracer: tracing_.JobTracer | None = None
        self._vacuum_thread: threading.Thread | None = None
        self._vacuum_conn: psycopg.Connection | None = None
        self._vacuum_denied = False

        self._lock = threading.Lock()
        self._slots_cv = threading.Condition(self._lock)
        self._busy = 0
        self._active: dict[int, _Run] = {}
        self._work: queues_.SimpleQueue[Any] = queues_.SimpleQueue()
        self._done: queues_.SimpleQueue[Any] = queues_.SimpleQueue()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._stopped = threading.Event()
        self._helpers_stop = threading.Event()
        self._signals = 0
        self._leased_dry = _Dry(poll)
        self._tx_dry = _Dry(poll)
        self._tx_searching = 0
        self._leased_queues: list[str] = []
        self._tx_queues: list[str] = []
        self._queue_set: set[str] = set()
        self._pool: ConnectionPool | None = None
        self._threads: list[threading.Thread] = []
        self._runner: threading.Thread | None = None
        self._exit_code: int | None = None

    # -- public API ---------------------------------------------------------------------

    def handler(self, queue: str, *, transactional: bool = False) -> Callable[[F], F]:
        """Decorator: register the handler of ``queue`` on this worker's registry."""
        return self.registry.handler(queue, transactional=transactional)

    def run(self, install_signals: bool | None = None) -> int:
        """Work until ``stop()`` (or SIGTERM/SIGINT). Returns 0 after a graceful stop, 1 when
        running handlers outlived the grace period (their jobs were released)."""
        self._prepare()
        return self._run(install_signals)

    def start(self) -> Worker:
        """Run in a background thread (no signal handlers); see ``stop`` and ``join``.
        Configuration and connection errors are raised here, not in the thread."""
        self._prepare()
        self._runner = threading.Thread(
            target=self._run, args=(False,), name="andal-worker", daemon=True
        )
        self._runner.start()
        return self

    def _run(self, install_signals: bool | None) -> int:
        if install_signals is None:
            install_signals = threading.current_thread() is threading.main_thread()
        previous = self._install_signals() if install_signals else {}
        try:
            self._start_threads()
            event(
                "worker_started",
                worker=self.name,
                queues=self._leased_queues + self._tx_queues,
                concurrency=self.concurrency,
                batch=self.batch,
            )
            code = 1
            try:
                self._dispatch()
            finally:
                code = self._exit_code = self._shutdown()
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
            if self.metrics is not None:
                self.metrics.close()
            self._stopped.set()
        event("worker_stopped", worker=self.name, exit_code=code, **self.counts)
        return code

    def stop(self) -> None:
        """Stop claiming, release unstarted jobs, let running handlers finish (``grace``)."""
        self._stopping.set()
        self._wake.set()

    def join(self, timeout: float | None = None) -> int | None:
        """Wait for a ``start``-ed worker to finish; returns its exit code (None: still on)."""
        if self._runner is not None:
            self._runner.join(timeout)
        return self._exit_code if self._stopped.is_set() else None

    @property
    def busy(self) -> int:
        """Slots in use (claimed or running jobs, and transactional probes)."""
        return self._busy

    # -- setup ---------------------------------------------------------------------------

    def _prepare(self) -> None:
        if self._pool is not None:
            raise RuntimeError("a Worker runs once; make a new one")
        if not self.registry:
            raise ValueError("no handler registered")
        wanted = self.only_queues or self.registry.queues()
        missing = [q for q in wanted if q not in self.registry]
        if missing:
            raise ValueError(f"no handler for queue(s): {', '.join(missing)}")
        self._leased_queues = [q for q in wanted if not self.registry[q].transactional]
        self._tx_queues = [q for q in wanted if self.registry[q].transactional]
        self._queue_set = set(wanted)
        check_installed(self.dsn)
        extra = self.concurrency if self._tx_queues else 0
        self._pool = ConnectionPool(
            self.dsn,
            min_size=2,
            max_size=3 + extra,
            kwargs={
                "autocommit": True,
                "application_name": f"andal {self.name}"[:63],
                "connect_timeout": 5,
            },
            timeout=self.pool_timeout,
            reconnect_timeout=24 * 3600,
            name=f"andal-{self.name}",
            open=False,
        )
        tracing = self.tracing if self.tracing is not None else tracing_.configured()
        self._tracer = tracing_.JobTracer(self.name) if tracing else None
        if self.metrics is not None and self.metrics_port is not None:
            port = self.metrics.serve(self.metrics_port, self.metrics_addr)
            event("metrics_serving", worker=self.name, addr=self.metrics_addr, port=port)

    def _start_threads(self) -> None:
        assert self._pool is not None
        self._pool.open(wait=False)

        def spawn(target: Callable[[], None], name: str) -> None:
            t = threading.Thread(target=target, name=name, daemon=True)
            t.start()
            self._threads.append(t)

        for i in range(self.concurrency):
            spawn(self._slot_loop, f"andal-slot-{i}")
        spawn(self._complete_loop, "andal-completer")
        if self.heartbeat:
            spawn(self._heartbeat_loop, "andal-heartbeat")
        if self.listen:
            spawn(self._listen_loop, "andal-listener")

    def _install_signals(self) -> dict[int, Any]:
        previous = {}
        for signum in (signal.SIGTERM, signal.SIGINT):
            previous[signum] = signal.signal(signum, self._on_signal)
        return previous

    def _on_signal(self, signum: int, _frame: FrameType | None) -> None:
        # Runs in the main thread between two bytecodes, maybe while that thread holds a lock
        # (an Event's, say): only plain assignments here. The dispatcher sees the count
        # within 0.2 s.
        self._signals += 1
        if self._signals > 1:
            os.write(2, b'{"event": "worker_killed", "logger": "andal", "level": "warning"}\n')
            os._exit(128 + signum)

    def _should_stop(self) -> bool:
        return self._signals > 0 or self._stopping.is_set()

    # -- slots ---------------------------------------------------------------------------

    def _free(self) -> int:
        return self.concurrency - self._busy

    def _take_slots(self, n: int) -> None:
        with self._lock:
            self._busy += n

    def _give_slot(self) -> None:
        with self._slots_cv:
            self._busy -= 1
            self._slots_cv.notify_all()
        self._wake.set()

    def _finish(self, run: _Run, outcome: str | None = None, error: str | None = None) -> None:
        """The run's outcome is recorded, dropped or released: free its slot. ``outcome``
        (when this call decides it) is counted in the metrics and ends the job's trace."""
        with self._lock:
            if run.finished:
                return
            run.finished = True
            self._active.pop(run.job.id, None)
        if outcome is not None:
            self._ended(run, outcome, error)
        elif run.span is not None:  # lost or released: counted when it was noticed
            self._end_trace(run, "lease_lost" if run.lost else "released")
        self._give_slot()

    def _count(self, key: str, n: int = 1) -> None:
        with self._lock:
            self.counts[key] += n

    def _ended(self, run: _Run, outcome: str, error: str | None = None) -> None:
        """Count a job attempt's outcome (counts, metrics) and end its trace."""
        self._count(outcome)
        if self.metrics is not None:
            self.metrics.outcome(run.job.queue, outcome)
        if run.span is not None:
            self._end_trace(run, outcome, error)

    @staticmethod
    def _end_trace(run: _Run, outcome: str, error: str | None = None) -> None:
        span, run.span = run.span, None
        if span is not None:
            tracing_.JobTracer.end(span, outcome, error)

    # -- dispatcher ----------------------------------------------------------------------

    def _dispatch(self) -> None:
        backoff = _Backoff()
        next_maintain = time.monotonic() + random.random() * min(self.maintain_every, 5.0)
        while not self._should_stop():
            self._wake.clear()
            now = time.monotonic()
            if self.maintain_every > 0 and now >= next_maintain:
                next_maintain = now + self.maintain_every
                self._maintain()
            more = False
            if self._leased_queues and self._leased_dry.ready(now) and self._free() > 0:
                n = min(self._free(), self.batch)
                got = self._claim_leased(n)
                if got is None:
                    self._pause(backoff.next())
                    continue
                backoff.reset()
                if got == 0:
                    self._leased_dry.empty()
                else:
                    self._leased_dry.found()
                more = got == n
            if (
                self._tx_queues
                and self._tx_dry.ready(now)
                and self._tx_searching == 0
                and self._free() > 0
                and not self._should_stop()
            ):
                with self._lock:
                    self._busy += 1
                    self._tx_searching += 1
                self._work.put(_TX_PROBE)
            if more and self._free() > 0:
                continue
            # Short waits so a signal (which only sets a flag) is seen promptly.
            now = time.monotonic()
            wait = min(
                [0.2] + [d.until - now for d in (self._leased_dry, self._tx_dry) if d.until > now]
            )
            self._wake.wait(max(wait, 0.001))

    def _maintain(self) -> None:
        """``queue.maintain()``: take back expired leases, prune old counters; then, when the
        server does not vacuum by itself, vacuum andal's tables in the background."""
        assert self._pool is not None
        try:
            with self._pool.connection() as conn:
                row = conn.execute(sql.MAINTAIN).fetchone()
                if self.vacuum and not self._vacuuming():
                    off = conn.execute(sql.AUTOVACUUM_OFF).fetchone()
                    if off and off[0]:
                        self._start_vacuum()
        except psycopg.Error as exc:
            if is_connection_error(exc):
                self._db_trouble("maintain", exc)
            else:
                event("maintain_failed", logging.WARNING, worker=self.name, error=one_line(exc))
            return
        reaped = row[0] if row else 0
        if reaped:
            self._hint()  # jobs are pending again
        event("maintained", logging.DEBUG, worker=self.name, taken_back=reaped)

    # -- vacuum (autovacuum off) ---------------------------------------------------------

    def _vacuuming(self) -> bool:
        return self._vacuum_thread is not None and self._vacuum_thread.is_alive()

    def _start_vacuum(self) -> None:
        self._vacuum_thread = threading.Thread(
            target=self._vacuum_run, name="andal-vacuum", daemon=True
        )
        self._vacuum_thread.start()

    def _vacuum_run(self) -> None:
        """On a connection of its own (VACUUM cannot run in a transaction, and the pool's
        connections stay free for claims): see ``vacuum_tables``."""
        try:
            with psycopg.connect(
                self.dsn,
                autocommit=True,
                connect_timeout=5,
                application_name=f"andal {self.name} vacuum"[:63],
            ) as conn:
                self._vacuum_conn = conn
                report = vacuum_tables(conn, self.maintain_every)
        except psycopg.Error as exc:
            if not self._helpers_stop.is_set():  # not a cancel at shutdown
                event("vacuum_failed", logging.WARNING, worker=self.name, error=one_line(exc))
            return
        except Exception:
            self._internal_error("vacuum")
            return
        finally:
            self._vacuum_conn = None
        if report.denied and not self._vacuum_denied:
            self._vacuum_denied = True
            event(
                "vacuum_denied",
                logging.WARNING,
                worker=self.name,
                role=report.role,
                tables=report.denied,
                hint="autovacuum is off and this role cannot vacuum andal's tables: dead"
                " tuples will pile up; turn autovacuum on, or run the workers as the owner",
            )
        if report.vacuumed:
            if self.metrics is not None:
                for table in report.vacuumed:
                    self.metrics.vacuumed(table)
            event(
                "vacuumed",
                worker=self.name,
                tables=report.vacuumed,
                dead_tuples=report.dead_tuples,
                duration_ms=report.duration_ms,
            )
        else:
            event("vacuum_skipped", logging.DEBUG, worker=self.name, reason=report.reason)

    def _stop_vacuum(self) -> None:
        thread, conn = self._vacuum_thread, self._vacuum_conn
        if thread is None or not thread.is_alive():
            return
        if conn is not None:
            with contextlib.suppress(Exception):
                if hasattr(conn, "cancel_safe"):  # psycopg >= 3.2
                    conn.cancel_safe(timeout=2)
                else:
                    conn.cancel()
        thread.join(timeout=5)

    def _pause(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while not self._should_stop():
            left = deadline - time.monotonic()
            if left <= 0:
                return
            self._stopping.wait(min(left, 0.2))

    def _hint(self) -> None:
        """New work may be there: claim at once instead of waiting for the poll timer."""
        self._leased_dry.hint()
        self._tx_dry.hint()
        self._wake.set()

    def _make_run(self, row: tuple[Any, ...]) -> _Run:
        handler = self.registry[row[1]]
        try:
            payload = json.loads(row[4])
        except (RecursionError, ValueError) as exc:
            # Valid JSON for PostgreSQL, not for this process (nested past Python's recursion
            # limit): the job fails for good through the usual path, the others run.
            payload = None
            handler = _undecodable(handler, f"{type(exc).__name__}: {exc}"[:200])
        job = Job(
            id=row[0],
            queue=row[1],
            category=row[2],
            priority=row[3],
            payload=payload,
            attempt=row[5],
            max_attempts=row[6],
            token=row[7],
            lease_expires_at=row[8],
            enqueued_at=row[9],
            cache_key=row[10],
            cache_version=row[11],
        )
        db_now: datetime = row[12]
        run = _Run(job, handler, (job.lease_expires_at - db_now).total_seconds())
        self._count("claimed")
        event(
            "claimed",
            worker=self.name,
            **run.fields(duration_ms=round((db_now - job.enqueued_at).total_seconds() * 1000, 3)),
        )
        return run

    def _claim_params(self, queues: list[str], batch: int) -> dict[str, Any]:
        return {"worker": self.name, "queues": queues, "batch": batch, "lease": self.lease}

    def _claim_leased(self, n: int) -> int | None:
        """Claim up to n leased jobs and hand them to the slots. None: the database failed."""
        assert self._pool is not None
        self._take_slots(n)
        tracer, metrics = self._tracer, self.metrics
        started = time.perf_counter()
        started_ns = time.time_ns() if tracer is not None else 0
        try:
            params = self._claim_params(self._leased_queues, n)
            with self._pool.connection() as conn:
                rows = conn.execute(sql.CLAIM, params).fetchall()
        except psycopg.Error as exc:
            self._slots_back(n)
            if metrics is not None:
                metrics.claim_error("leased")
            if is_connection_error(exc):
                self._db_trouble("claim", exc)
                return None
            self._count("errors")
            event("claim_failed", logging.ERROR, worker=self.name, error=one_line(exc))
            return None
        took = time.perf_counter() - started
        runs = [self._make_run(row) for row in rows]
        if metrics is not None:
            metrics.claim("leased", took, n, len(rows))
            if len(self._leased_queues) == 1:
                metrics.jobs_claimed(self._leased_queues[0], len(runs))
            else:
                for queue, count in Counter(r.job.queue for r in runs).items():
                    metrics.jobs_claimed(queue, count)
        if tracer is not None and runs:
            roots = tracer.claimed([r.job for r in runs], started_ns, time.time_ns())
            for run, root in zip(runs, roots, strict=True):
                run.span = root
        with self._lock:
            for run in runs:
                self._active[run.job.id] = run
        self._slots_back(n - len(runs))
        for run in runs:
            self._work.put(run)
        return len(runs)

    def _slots_back(self, n: int) -> None:
        if n:
            with self._slots_cv:
                self._busy -= n
                self._slots_cv.notify_all()

    def _db_trouble(self, what: str, exc: BaseException) -> None:
        self._count("db_errors")
        if self.metrics is not None:
            self.metrics.db_error(what)
        event("db_error", logging.WARNING, worker=self.name, during=what, error=one_line(exc))
        if self._pool is not None and not isinstance(exc, PoolTimeout):
            with contextlib.suppress(Exception):  # a closing pool has nothing to check
                self._pool.check()

    # -- leased runs ---------------------------------------------------------------------

    def _slot_loop(self) -> None:
        while True:
            item = self._work.get()
            if item is _STOP:
                return
            try:
                if item is _TX_PROBE:
                    self._tx_probe()
                else:
                    self._run_leased(item)
            except Exception:  # a bug of ours must not shrink the worker by a slot
                self._internal_error("slot")

    def _internal_error(self, where: str) -> None:
        self._count("internal_errors")
        # exc_info is an argument of the logging call, not a field (logging refuses it there)
        log.error("internal_error", exc_info=True, extra={"worker": self.name, "where": where})

    def _run_leased(self, run: _Run) -> None:
        with self._lock:
            if run.state != "claimed":
                return  # released by a stop before it started
            if run.lost:
                run.state = "done"
                skip = True
            else:
                run.state = "running"
                skip = False
        if skip:
            self._finish(run)
            return
        tracer = self._tracer
        start = time.monotonic()
        try:
            if tracer is None or run.span is None:
                value = run.handler.fn(run.job)
            else:
                with tracer.handler(run.job, run.span):
                    value = run.handler.fn(run.job)
            outcome = _Outcome(run, True, 0.0, result=_dump_result(value))
        except BaseException as exc:  # a handler never takes the worker down
            outcome = _failure(run, exc)
        took = time.monotonic() - start
        outcome.duration_ms = round(took * 1000, 3)
        if self.metrics is not None:
            self.metrics.handler(run.job.queue, took)
        self._done.put(outcome)

    def _complete_loop(self) -> None:
        while True:
            first = self._done.get()
            if first is _STOP:
                return
            batch = [first]
            stop = False
            while len(batch) < 500:
                try:
                    item = self._done.get_nowait()
                except queues_.Empty:
                    break
                if item is _STOP:
                    stop = True
                    break
                batch.append(item)
            try:
                self._record(batch)
            except Exception:
                self._internal_error("completer")
                for o in batch:  # whatever happened, the slots are free again
                    self._finish(o.run)
            if stop:
                return

    def _record(self, outcomes: list[_Outcome]) -> None:
        keep: list[_Outcome] = []
        dropped: list[_Outcome] = []
        with self._lock:
            for o in outcomes:
                if o.run.lost or o.run.state == "released":
                    o.run.state = "done"
                    dropped.append(o)
                    self.counts["discarded"] += 1
                else:
                    o.run.state = "finishing"
                    keep.append(o)
        for o in dropped:
            event("outcome_discarded", logging.DEBUG, worker=self.name, **o.run.fields())
            self._finish(o.run)
        oks = [o for o in keep if o.ok]
        if oks:
            self._complete(oks)
        for o in keep:
            if not o.ok:
                self._fail(o)

    def _complete(self, oks: list[_Outcome]) -> None:
        assert self._pool is not None
        params = {
            "job_ids": [o.run.job.id for o in oks],
            "tokens": [o.run.job.token for o in oks],
            "results": [o.result for o in oks],
        }
        backoff = _Backoff()
        retried = False
        tracer = self._tracer
        while True:
            started = time.perf_counter()
            started_ns = time.time_ns() if tracer is not None else 0
            try:
                with self._pool.connection() as conn:
                    rows = conn.execute(sql.COMPLETE_MANY, params).fetchall()
                break
            except psycopg.Error as exc:
                if is_connection_error(exc):
                    self._db_trouble("complete", exc)
                    if self._give_up([o.run for o in oks]):
                        for o in oks:
                            self._lost(o.run, "complete", outcome="unknown: connection lost")
                            self._finish(o.run)
                        return
                    retried = True
                    time.sleep(backoff.next())
                    continue
                # Something in the batch was refused: complete one by one to isolate it.
                event("complete_many_failed", logging.WARNING, error=one_line(exc))
                for o in oks:
                    self._complete_one(o)
                return
        if self.metrics is not None:
            self.metrics.report("complete_many", time.perf_counter() - started)
        ended_ns = time.time_ns() if tracer is not None else 0
        completed = dict(rows)
        for o in oks:
            run = o.run
            if tracer is not None and run.span is not None:
                tracer.reported(run.job, run.span, "andal.complete", started_ns, ended_ns, len(oks))
            if completed.get(run.job.id):
                event("completed", worker=self.name, **run.fields(duration_ms=o.duration_ms))
                self._finish(run, "completed")
                continue
            if retried:
                self._lost(run, "complete", outcome="unknown: resent after a lost connection")
            else:
                self._lost(run, "complete")
            self._finish(run)

    def _complete_one(self, o: _Outcome) -> None:
        assert self._pool is not None
        tracer = self._tracer
        started = time.perf_counter()
        started_ns = time.time_ns() if tracer is not None else 0
        try:
            with self._pool.connection() as conn:
                conn.execute(
                    sql.COMPLETE,
                    {"job_id": o.run.job.id, "token": o.run.job.token, "result": o.result},
                )
        except psycopg.Error as exc:
            if is_lease_lost(exc):
                self._lost(o.run, "complete")
            elif is_connection_error(exc):
                self._db_trouble("complete", exc)
                self._lost(o.run, "complete", outcome="unknown: connection lost")
            else:  # the result itself was refused: fail the attempt with the reason
                o.ok, o.reason = False, "exception"
                o.error = f"result refused by queue.complete: {str(exc).strip()}"
                self._fail(o)
                return
        else:
            if self.metrics is not None:
                self.metrics.report("complete", time.perf_counter() - started)
            if tracer is not None and o.run.span is not None:
                tracer.reported(o.run.job, o.run.span, "andal.complete", started_ns, time.time_ns())
            event("completed", worker=self.name, **o.run.fields(duration_ms=o.duration_ms))
            self._finish(o.run, "completed")
            return
        self._finish(o.run)

    def _fail(self, o: _Outcome) -> None:
        assert self._pool is not None
        params = {
            "job_id": o.run.job.id,
            "token": o.run.job.token,
            "error": o.error or "failed",
            "retry_in": o.retry_in,
            "retryable": o.retryable,
        }
        backoff = _Backoff()
        tracer = self._tracer
        while True:
            started = time.perf_counter()
            started_ns = time.time_ns() if tracer is not None else 0
            try:
                with self._pool.connection() as conn:
                    row = conn.execute(sql.FAIL, params).fetchone()
                break
            except psycopg.Error as exc:
                if is_lease_lost(exc):
                    self._lost(o.run, "fail")
                    self._finish(o.run)
                    return
                if is_connection_error(exc) and not self._give_up([o.run]):
                    self._db_trouble("fail", exc)
                    time.sleep(backoff.next())
                    continue
                event("fail_failed", logging.ERROR, error=one_line(exc), **o.run.fields())
                self._lost(o.run, "fail", outcome="unknown: queue.fail not recorded")
                self._finish(o.run)
                return
        if self.metrics is not None:
            self.metrics.report("fail", time.perf_counter() - started)
        status = row[0] if row else None
        first_line = (o.error or "").strip().splitlines()[-1:] or [""]
        fields = o.run.fields(duration_ms=o.duration_ms, reason=o.reason, error=first_line[0])
        outcome = "dead" if status == "dead" else "retried"
        if tracer is not None and o.run.span is not None:
            tracer.reported(
                o.run.job, o.run.span, "andal.fail", started_ns, time.time_ns(), outcome=outcome
            )
        if outcome == "dead":
            fields["reason"] = "non_retryable" if not o.retryable else "exhausted"
            event("dead", logging.WARNING, worker=self.name, **fields)
        else:
            if o.retry_in is not None:
                fields["retry_in_s"] = o.retry_in.total_seconds()
            event("retried", worker=self.name, **fields)
        self._finish(o.run, outcome, first_line[0])

    def _give_up(self, runs: list[_Run]) -> bool:
        """Stop resending an outcome once every lease is past or a hard stop is asked."""
        return self._signals > 1 or time.monotonic() > max(r.deadline for r in runs)

    def _lost(self, run: _Run, detected_by: str, **extra: Any) -> None:
        with self._lock:
            if run.lost:
                return
            run.lost = True
            self.counts["lease_lost"] += 1
        if self.metrics is not None:
            self.metrics.lease_lost(run.job.queue, detected_by)
        event(
            "lease_lost",
            logging.WARNING,
            worker=self.name,
            **run.fields(
                detected_by=detected_by,
                duration_ms=round((time.monotonic() - run.claimed_at) * 1000, 3),
                **extra,
            ),
        )

    # -- transactional runs --------------------------------------------------------------

    def _tx_probe(self) -> None:
        """Claim one transactional job and run it in the claim's transaction."""
        assert self._pool is not None
        searching = True

        def found() -> None:
            nonlocal searching
            if searching:
                searching = False
                with self._lock:
                    self._tx_searching -= 1

        run: _Run | None = None
        result: tuple[str, dict[str, Any]] | None = None
        tracer, metrics = self._tracer, self.metrics
        try:
            if self._should_stop():
                return
            with self._pool.connection() as conn, conn.transaction():
                started = time.perf_counter()
                started_ns = time.time_ns() if tracer is not None else 0
                rows = conn.execute(sql.CLAIM, self._claim_params(self._tx_queues, 1)).fetchall()
                if metrics is not None:
                    metrics.claim("tx", time.perf_counter() - started, 1, len(rows))
                found()
                if not rows:
                    self._tx_dry.empty()
                    return
                self._tx_dry.found()
                self._wake.set()  # there was work: let the dispatcher start another probe
                run = self._make_run(rows[0])
                if metrics is not None:
                    metrics.jobs_claimed(run.job.queue)
                if tracer is not None:
                    run.span = tracer.claimed([run.job], started_ns, time.time_ns())[0]
                run.state = "running"
                result = self._run_in_tx(conn, run)
            # committed: the handler's writes and the job's outcome together
            name, fields = result
            self._ended(run, name, fields.get("error"))
            event(name, logging.WARNING if name == "dead" else logging.INFO, **fields)
        except psycopg.Error as exc:
            # The transaction is rolled back: a claimed job is simply pending again.
            if metrics is not None and run is None:
                metrics.claim_error("tx")
            if is_connection_error(exc):
                self._db_trouble("transactional run", exc)
            else:
                self._count("errors")
                event("transaction_failed", logging.ERROR, error=one_line(exc))
            if run is not None:
                self._ended(run, "rolled_back", one_line(exc))
                event("rolled_back", logging.WARNING, worker=self.name, **run.fields())
            self._pause(0.1)
        finally:
            found()
            if run is not None and run.span is not None:  # an error of ours: rolled back
                self._end_trace(run, "rolled_back")
            self._give_slot()

    def _run_in_tx(self, conn: psycopg.Connection, run: _Run) -> tuple[str, dict[str, Any]]:
        tracer, metrics = self._tracer, self.metrics
        start = time.monotonic()
        try:
            with conn.transaction():  # a savepoint: a failing handler's writes roll back
                if tracer is None or run.span is None:
                    value = run.handler.fn(run.job, conn)
                else:
                    with tracer.handler(run.job, run.span):
                        value = run.handler.fn(run.job, conn)
                result = _dump_result(value)
        except BaseException as exc:
            if metrics is not None:
                metrics.handler(run.job.queue, time.monotonic() - start)
            if conn.broken:  # the transaction is gone with its connection
                raise psycopg.OperationalError(f"connection lost in the handler: {exc}") from exc
            o = _failure(run, exc)
            o.duration_ms = round((time.monotonic() - start) * 1000, 3)
            started = time.perf_counter()
            started_ns = time.time_ns() if tracer is not None else 0
            status = conn.execute(
                sql.FAIL,
                {
                    "job_id": run.job.id,
                    "token": run.job.token,
                    "error": o.error,
                    "retry_in": o.retry_in,
                    "retryable": o.retryable,
                },
            ).fetchone()
            outcome = "dead" if status and status[0] == "dead" else "retried"
            if metrics is not None:
                metrics.report("fail", time.perf_counter() - started)
            if tracer is not None and run.span is not None:
                tracer.reported(
                    run.job, run.span, "andal.fail", started_ns, time.time_ns(), outcome=outcome
                )
            first_line = (o.error or "").strip().splitlines()[-1:] or [""]
            fields = run.fields(
                worker=self.name, duration_ms=o.duration_ms, reason=o.reason, error=first_line[0]
            )
            if outcome == "dead":
                fields["reason"] = "non_retryable" if not o.retryable else "exhausted"
            return outcome, fields
        took = time.monotonic() - start
        started = time.perf_counter()
        started_ns = time.time_ns() if tracer is not None else 0
        conn.execute(sql.COMPLETE, {"job_id": run.job.id, "token": run.job.token, "result": result})
        if metrics is not None:
            metrics.handler(run.job.queue, took)
            metrics.report("complete", time.perf_counter() - started)
        if tracer is not None and run.span is not None:
            tracer.reported(run.job, run.span, "andal.complete", started_ns, time.time_ns())
        return "completed", run.fields(worker=self.name, duration_ms=round(took * 1000, 3))

    # -- heartbeat -----------------------------------------------------------------------

    def _heartbeat_loop(self) -> None:
        while not self._helpers_stop.is_set():
            try:
                self._heartbeat_once()
            except Exception:
                self._internal_error("heartbeat")
                self._helpers_stop.wait(0.2)

    def _heartbeat_once(self) -> None:
        now = time.monotonic()
        with self._lock:
            held = [
                r
                for r in self._active.values()
                if not r.lost and not r.handler.transactional and r.state != "done"
            ]
        due = [r for r in held if r.next_beat - min(0.2, r.lease_len / 12) <= now]
        if due:
            self._beat(due)
        with self._lock:
            nxt = min((r.next_beat for r in self._active.values() if not r.lost), default=None)
        wait = 0.25 if nxt is None else min(max(nxt - time.monotonic(), 0.01), 0.25)
        self._helpers_stop.wait(wait)

    def _beat(self, due: list[_Run]) -> None:
        assert self._pool is not None
        sent = time.monotonic()
        started = time.perf_counter()
        try:
            with self._pool.connection() as conn:
                rows = conn.execute(
                    sql.HEARTBEAT_MANY,
                    {
                        "job_ids": [r.job.id for r in due],
                        "tokens": [r.job.token for r in due],
                        "extend": self.lease,
                    },
                ).fetchall()
        except psycopg.Error as exc:
            if is_connection_error(exc):
                self._db_trouble("heartbeat", exc)
            else:
                event("heartbeat_failed", logging.ERROR, error=one_line(exc))
            for r in due:  # try again soon, not in a tight loop
                r.next_beat = time.monotonic() + min(0.2, r.lease_len / 12)
            return
        self._count("heartbeats")
        if self.metrics is not None:
            self.metrics.heartbeat(time.perf_counter() - started)
        expiry = {row[0]: (row[1], row[2]) for row in rows}
        for r in due:
            got = expiry.get(r.job.id)
            if got is None or got[0] is None:
                with self._lock:
                    # A finishing run's fate is told by its complete/fail, not by this beat.
                    real = r.state in ("claimed", "running")
                if real:
                    self._lost(r, "heartbeat")
                continue
            lease_len = max((got[0] - got[1]).total_seconds(), 0.001)
            r.lease_len = lease_len
            r.deadline = sent + lease_len
            r.next_beat = sent + lease_len / 3

    # -- listener ------------------------------------------------------------------------

    def _listen_loop(self) -> None:
        backoff = _Backoff(first=0.1, cap=5.0)
        while not self._helpers_stop.is_set():
            try:
                with psycopg.connect(
                    self.dsn,
                    autocommit=True,
                    connect_timeout=5,
                    application_name=f"andal {self.name} listen"[:63],
                ) as conn:
                    conn.execute(sql.LISTEN)
                    backoff.reset()
                    self._hint()  # notifications may have been missed while away
                    while not self._helpers_stop.is_set():
                        for note in conn.notifies(timeout=0.25):
                            if not note.payload or note.payload in self._queue_set:
                                self._hint()
            except psycopg.Error as exc:
                self._count("listener_lost")
                event("listener_lost", logging.WARNING, worker=self.name, error=one_line(exc))
                self._helpers_stop.wait(backoff.next())
            except Exception:
                self._internal_error("listener")
                self._helpers_stop.wait(backoff.next())

    # -- shutdown ------------------------------------------------------------------------

    def _shutdown(self) -> int:
        self._stopping.set()
        event("worker_stopping", worker=self.name, running=self._busy)
        with self._lock:
            unstarted = [r for r in self._active.values() if r.state == "claimed"]
            for r in unstarted:
                r.state = "released"
        for r in unstarted:
            self._release(r, "not started")
        code = 0
        deadline = time.monotonic() + self.grace
        with self._slots_cv:
            while self._busy > 0 and self._signals < 2:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._slots_cv.wait(min(left, 0.2))
        if self._busy > 0:
            code = 1
            with self._lock:
                late = [
                    r
                    for r in self._active.values()
                    if r.state in ("claimed", "running") and not r.lost
                ]
                for r in late:
                    r.state = "released"
            for r in late:
                self._release(r, "grace period over")
        for _ in range(self.concurrency):
            self._work.put(_STOP)
        self._done.put(_STOP)
        self._helpers_stop.set()
        for t in self._threads:
            if t.name in ("andal-completer", "andal-heartbeat", "andal-listener"):
                t.join(timeout=5)
        self._stop_vacuum()
        if self._pool is not None:
            self._pool.close(timeout=1)
        return code

    def _release(self, run: _Run, why: str) -> None:
        assert self._pool is not None
        try:
            with self._pool.connection() as conn:
                conn.execute(
                    sql.RELEASE,
                    {"job_id": run.job.id, "token": run.job.token, "delay": timedelta(0)},
                )
        except psycopg.Error as exc:
            if is_lease_lost(exc):
                self._lost(run, "release")
            else:
                event("release_failed", logging.WARNING, error=one_line(exc), **run.fields())
        else:
            duration = round((time.monotonic() - run.claimed_at) * 1000, 3)
            event("released", worker=self.name, **run.fields(reason=why, duration_ms=duration))
            self._finish(run, "released")
            return
        self._finish(run)


#: Session-level advisory lock held while vacuuming, so one worker vacuums at a time ("ANDALVAC":
#: outside the range of andal's category gate keys).
VACUUM_LOCK_KEY = int.from_bytes(b"ANDALVAC", "big")


@dataclass
class VacuumReport:
    """What ``vacuum_tables`` did. ``reason``: vacuumed, autovacuum_on, locked (another worker
    is vacuuming), nothing_due, denied."""

    reason: str
    role: str = ""
    vacuumed: list[str] = field(default_factory=list)
    denied: list[str] = field(default_factory=list)
    dead_tuples: dict[str, int] = field(default_factory=dict)
    duration_ms: float = 0.0


def vacuum_tables(conn: psycopg.Connection, every: float) -> VacuumReport:
    """``VACUUM (ANALYZE)`` the tables of andal's schemas that changed since their last
    vacuum, when the server runs with ``autovacuum = off`` (dead tuples of ``queue.jobs`` would
    pile up otherwise); a table vacuumed less than ``every`` seconds ago (by anyone) is left
    alone. Takes the session-level advisory lock ``VACUUM_LOCK_KEY`` first, and does nothing
    when another session holds it. Tables this role may not vacuum (only their owner, the
    database owner or a superuser may) are listed in ``denied``, not raised.

    ``conn`` must be in autocommit mode (VACUUM cannot run inside a transaction)."""
    if not conn.autocommit:
        raise ValueError("vacuum_tables needs an autocommit connection")
    off, role = conn.execute(sql.AUTOVACUUM_OFF_ROLE).fetchone()
    if not off:
        return VacuumReport("autovacuum_on", role)
    if not conn.execute(sql.VACUUM_LOCK, {"key": VACUUM_LOCK_KEY}).fetchone()[0]:
        return VacuumReport("locked", role)
    report = VacuumReport("nothing_due", role)
    denied_now: list[str] = []

    def on_notice(diag: psycopg.errors.Diagnostic) -> None:
        if diag.sqlstate == "42501":  # "skipping ... only table or database owner can vacuum"
            denied_now.append(diag.message_primary or "")

    started = time.perf_counter()
    conn.add_notice_handler(on_notice)
    try:
        due = conn.execute(sql.VACUUM_DUE, {"every": timedelta(seconds=every)}).fetchall()
        for schema, table, dead, allowed in due:
            name = f"{schema}.{table}"
            if not allowed:
                report.denied.append(name)
                continue
            denied_now.clear()
            try:
                conn.execute(psql.SQL(sql.VACUUM).format(psql.Identifier(schema, table)))
            except psycopg.errors.InsufficientPrivilege:
                report.denied.append(name)
                continue
            if denied_now:
                report.denied.append(name)
                continue
            report.vacuumed.append(name)
            report.dead_tuples[name] = int(dead)
    finally:
        conn.remove_notice_handler(on_notice)
        if not conn.closed and not conn.broken:
            with contextlib.suppress(psycopg.Error):
                conn.execute(sql.VACUUM_UNLOCK, {"key": VACUUM_LOCK_KEY})
    report.duration_ms = round((time.perf_counter() - started) * 1000, 3)
    if report.vacuumed:
        report.reason = "vacuumed"
    elif report.denied:
        report.reason = "denied"
    return report


def _dump_result(value: Any) -> str | None:
    return None if value is None else json.dumps(value)


def _failure(run: _Run, exc: BaseException) -> _Outcome:
    if isinstance(exc, Retry):
        return _Outcome(
            run, False, 0.0, error=str(exc) or "retry requested", reason="retry",
            retry_in=exc.delay,
        )  # fmt: skip
    if isinstance(exc, Fail):
        return _Outcome(run, False, 0.0, error=str(exc) or "failed", reason="fail", retryable=False)
    return _Outcome(run, False, 0.0, error=error_text(exc), reason="exception")


def check_installed(dsn: str, connect_timeout: int = 5) -> None:
    """Raise ``psycopg.OperationalError`` when the server does not answer, ``NotInstalled``
    when andal's schema is missing from the database."""
    with psycopg.connect(dsn, autocommit=True, connect_timeout=connect_timeout) as conn:
        row = conn.execute(sql.INSTALLED).fetchone()
    if not row or not row[0]:
        raise NotInstalled("andal is not installed in this database; run `andal install`")
