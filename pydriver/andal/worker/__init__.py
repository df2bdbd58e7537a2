"""The worker: claim jobs, run their handlers, report outcomes, keep leases alive.

``Worker`` is a facade over rooms, a module each (``claim``, ``execute``, ``complete``,
``heartbeat``, ``slots``, ...), drawn with their threads and who owns what in
docs/architecture.md ("The worker: threads, rooms, and who owns what"). What handlers see and
raise is ``andal.handlers``'s, the policies they declare ``andal.policy``'s, a database's
housekeeping ``andal.maintenance``'s, the LISTEN loop ``andal.listening``'s.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from .. import tracing as tracing_
from ..handlers import (
    F,
    Fail,
    Handler,
    HandlerFn,
    Job,
    JobInterrupted,
    Registry,
    Retry,
)
from ..hosts import (
    check_installed,
    database_label,
    database_labels,
    dsn_list,
    is_connection_error,
)
from ..listening import listen_via, report_listening
from ..logs import event, log
from ..maintenance import VACUUM_LOCK_KEY, VacuumReport, vacuum_tables
from ..metrics import WorkerMetrics
from ..observe import Observer
from ..policy import Backoff, Conflict, Periodic, Policy, PolicyError, PolicyReport, apply_policy
from ..values import Seconds, as_interval, plain_array, text_array
from .claim import Claimer
from .complete import Completer
from .databases import Source, pooler_mode
from .interrupt import Interrupter
from .options import Options, listen_dsns
from .shutdown import Shutdown
from .slots import Slots
from .startup import StartRooms, Startup
from .state import default_name
from .stopping import StopRequest
from .trouble import EXIT_CONFIG, Trouble

if TYPE_CHECKING:
    from ..cache import Cache

__all__ = [
    "EXIT_CONFIG",
    "VACUUM_LOCK_KEY",
    "Backoff",
    "Conflict",
    "Fail",
    "Handler",
    "HandlerFn",
    "Job",
    "JobInterrupted",
    "Periodic",
    "Policy",
    "PolicyError",
    "PolicyReport",
    "Registry",
    "Retry",
    "Seconds",
    "Source",
    "VacuumReport",
    "Worker",
    "apply_policy",
    "as_interval",
    "check_installed",
    "database_label",
    "database_labels",
    "dsn_list",
    "is_connection_error",
    "plain_array",
    "text_array",
    "vacuum_tables",
]


#: What the start's ``listening`` line says when a transaction-mode pooler leaves it polling.
_POLLED = (
    "new jobs are found by polling; give a direct connection string as listen_dsn (--listen-dsn)"
)


# -- the worker -----------------------------------------------------------------------------


class Worker:
    """Run handlers for jobs of the registered queues until stopped.

    ``dsn``: a libpq connection string, or a sequence of them: one pool of handler slots then
    serves several andal databases (docs/multi-db.md). Each database (a ``Source``, see
    ``sources``) has its own connection pool, claim loop, LISTEN hint, heartbeat, completer,
    ``queue.maintain()`` and vacuum; every job is heartbeated, completed, failed or released
    on the database it came from. The slots are shared fairly (``Slots.room``): a database with
    work gets an even share of them, an idle or unreachable one leaves its share to the
    others. The worker starts when at least one database answers (andal must be installed in
    each that does); the others are reconnected to in the background.

    ``concurrency`` handler slots; leased jobs are claimed ``min(room, batch)`` at a time
    (the room: with one database, the free slots); ``lease`` overrides the queue's lease
    (seconds or timedelta); ``poll`` bounds the time between claims when no NOTIFY arrives;
    ``grace`` is how long a graceful stop waits for running handlers; ``queue.maintain()``
    runs every ``maintain_every`` seconds (0: never) on each database, followed, when its
    server runs with ``autovacuum = off`` and ``vacuum`` is true, by a ``VACUUM (ANALYZE)`` of
    andal's tables that changed (one worker at a time). ``listen`` and ``heartbeat`` can be
    turned off (tests, diagnostics); the heartbeat also stops handlers at their job's deadline
    and on an abort request (``interrupt``), so without it they are not interrupted.

    Observability: ``metrics_port`` serves this worker's Prometheus metrics on
    ``metrics_addr:metrics_port``/metrics (0: a free port, see ``metrics.port``);
    ``metrics=True`` keeps them without serving (``worker.metrics.text()``). ``tracing``:
    one OpenTelemetry trace per job attempt (default: on when a tracer provider has been set
    by the time the worker starts; True: always, False: never).
    ``cache``: an ``andal.cache.Cache`` whose hit/miss counters the metrics export.
    ``apply_policy``: the handlers' declared policies and schedules are written over the
    database's at start (default: only where there are none; see ``andal.policy``).
    """

    def __init__(
        self,
        dsn: str | Sequence[str],
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
        listen_dsn: str | Sequence[str] | None = None,
        pooler: str | None = None,
        heartbeat: bool = True,
        pool_timeout: float = 5.0,
        maintain_every: float = 60.0,
        vacuum: bool = True,
        metrics_port: int | None = None,
        metrics_addr: str = "0.0.0.0",
        metrics: bool | None = None,
        tracing: bool | None = None,
        cache: Cache | None = None,
        apply_policy: bool = False,
    ) -> None:
        dsns = dsn_list(dsn)
        #: The options, as given (``Options``: refused here when they cannot work).
        self.options = o = Options(
            name=name or default_name(), concurrency=concurrency, batch=batch,
            queues=list(queues) if queues else None, lease=as_interval(lease), poll=poll,
            grace=grace, listen=listen, pooler=pooler, heartbeat=heartbeat,
            pool_timeout=pool_timeout, maintain_every=maintain_every, vacuum=vacuum,
            metrics_port=metrics_port, metrics_addr=metrics_addr, tracing=tracing,
            apply_policy=apply_policy,
        )  # fmt: skip
        #: As given: one connection string, or the sequence of them.
        self.dsn = dsn
        #: Every connection string, in order.
        self.dsns: tuple[str, ...] = tuple(dsns)
        #: One ``Source`` per database, in the order of ``dsns``.
        labels, directs = database_labels(dsns), listen_dsns(listen_dsn, len(dsns))
        self.sources: list[Source] = [
            Source(i, d, label, poll, direct)
            for i, (d, label, direct) in enumerate(zip(dsns, labels, directs, strict=True))
        ]
        self.registry = Registry.coerce(handlers)
        self.name = o.name
        #: This worker's Prometheus metrics (None when off).
        self.metrics = self._make_metrics(
            metrics if metrics is not None else metrics_port is not None, cache
        )
        #: Metrics, traces and per-job logs (traces made from the start: with
        #: ``tracing=None``, only when a tracer provider is set by then).
        self.observer = Observer(self.name, self.metrics, self.sources)

        #: Whether a stop is asked (``stop()``, a signal): every room's loops ask it.
        self._stop = StopRequest()
        self._should_stop, self._pause = self._stop.requested, self._stop.pause
        #: Slot accounting: the one owner of the state the worker's threads share.
        self.slots = Slots(concurrency, batch, self.sources, self.observer, self._should_stop)
        #: What happened, over all databases (each ``Source`` counts its own too).
        self.counts: Counter[str] = self.slots.counts
        self._stopped = threading.Event()
        self._rooms()
        self._runner: threading.Thread | None = None
        self._exit_code: int | None = None

    def _make_metrics(self, on: bool, cache: Cache | None) -> WorkerMetrics | None:
        if not on:
            return None
        return WorkerMetrics(
            self.name,
            concurrency=self.options.concurrency,
            batch=self.options.batch,
            busy=lambda: self.slots.busy,
            held=lambda: sum(len(s.active) for s in self.sources),
            cache=cache,
            version=tracing_._version(),
        )

    def _rooms(self) -> None:
        """The worker's rooms (the executor and the maintenance of each database are made
        at start, see ``Startup.prepare``)."""
        o = self.options
        #: Tells handlers to stop at their deadline or on an abort request.
        self.interrupter = Interrupter(self.slots, self.observer)
        self.trouble = Trouble(
            self.slots,
            self.observer,
            self.interrupter,
            self.name,
            self.stop,
            self._stop.hard,
        )
        self._shutdown = Shutdown(
            self.slots, self.trouble, self.sources, self.name, o.grace, o.pool_timeout,
            self._stop.event, self._stop.hard,
        )  # fmt: skip
        self.claimer = Claimer(
            self.slots, self.observer, self.trouble, self.registry, self.name, o.lease,
            o.batch, o.maintain_every, self._should_stop, self._pause, self._hint,
            self._internal_error, self._shutdown.release_all,
        )  # fmt: skip
        self._completer = Completer(
            self.slots, self.observer, self.trouble, self.claimer, self.name, o.batch,
            self._should_stop, self._internal_error, self._shutdown.in_handler,
        )  # fmt: skip
        rooms = StartRooms(
            registry=self.registry, sources=self.sources, slots=self.slots,
            observer=self.observer, trouble=self.trouble, interrupter=self.interrupter,
            claimer=self.claimer, completer=self._completer, shutdown=self._shutdown,
            should_stop=self._should_stop, pause=self._pause, hint=self._hint,
            internal_error=self._internal_error,
        )  # fmt: skip
        self.startup = Startup(o, rooms)

    # -- public API ---------------------------------------------------------------------

    def handler(
        self, queue: str, *, transactional: bool = False, limit: int | None = None,
        timeout: Seconds | None = None, max_attempts: int | None = None,
        lease: Seconds | None = None, backoff: str | Backoff | None = None,
    ) -> Callable[[F], F]:  # fmt: skip
        """Decorator: register the handler of ``queue`` (a function or an ``async def``) and
        its queue's policy on this worker's registry (the keywords: ``Registry.add``'s)."""
        return self.registry.handler(
            queue, transactional=transactional, limit=limit, timeout=timeout,
            max_attempts=max_attempts, lease=lease, backoff=backoff,
        )  # fmt: skip

    def run(self, install_signals: bool | None = None) -> int:
        """Work until ``stop()`` (or SIGTERM/SIGINT). Returns 0 after a graceful stop, 1 when
        running handlers outlived the grace period (their jobs were released)."""
        self.startup.prepare()
        return self._run(install_signals)

    def start(self) -> Worker:
        """Run in a background thread (no signal handlers); see ``stop`` and ``join``.
        Configuration and connection errors are raised here, not in the thread."""
        self.startup.prepare()
        self._runner = threading.Thread(
            target=self._run, args=(False,), name="andal-worker", daemon=True
        )
        self._runner.start()
        return self

    def _run(self, install_signals: bool | None) -> int:
        if install_signals is None:
            install_signals = threading.current_thread() is threading.main_thread()
        previous = self._stop.install() if install_signals else {}
        try:
            self.startup.start_threads()
            event(
                "worker_started",
                worker=self.name,
                queues=self.startup.leased_queues + self.startup.tx_queues,
                concurrency=self.options.concurrency,
                batch=self.options.batch,
                databases=[s.label for s in self.sources],
            )
            for src in self.sources:  # once: how it hears of new jobs
                pooler = pooler_mode(self.options.pooler, src)
                via = listen_via(self.options.listen, pooler, src.listen_dsn)
                report_listening(
                    "listening",
                    via,
                    self.options.poll,
                    pooler,
                    _POLLED,
                    worker=self.name,
                    database=src.label,
                )
            code = 1
            try:
                # The claim loops work; this thread waits for a stop. Short waits, so a
                # signal (which only sets a count) is seen promptly.
                while not self._should_stop():
                    self._stop.event.wait(0.2)
            finally:
                code = self._shutdown.run()
                code = self._exit_code = EXIT_CONFIG if self.trouble.misconfigured else code
        finally:
            self._stop.restore(previous)
            self.observer.close()
            self._stopped.set()
        event("worker_stopped", worker=self.name, exit_code=code, **self.counts)
        return code

    def stop(self) -> None:
        """Stop claiming, release unstarted jobs, let running handlers finish (``grace``)."""
        self._stop.set()
        self.slots.wake_all()

    def join(self, timeout: float | None = None) -> int | None:
        """Wait for a ``start``-ed worker to finish; returns its exit code (None: still on)."""
        if self._runner is not None:
            self._runner.join(timeout)
        return self._exit_code if self._stopped.is_set() else None

    @property
    def busy(self) -> int:
        """Jobs in hand: slots in use (claimed or running jobs, transactional probes) plus the
        jobs whose handler returned and whose outcome is not recorded yet. 0: nothing held."""
        return self.slots.busy + self.slots.reporting

    # -- setup ---------------------------------------------------------------------------

    @property
    def _tracer(self) -> tracing_.JobTracer | None:
        """The job tracer (None when not tracing)."""
        return self.observer.tracer

    def _hint(self, src: Source) -> None:
        """New work may be in ``src``: claim at once instead of waiting for the poll timer."""
        src.leased_dry.hint()
        for probe in src.probes.values():
            probe.dry.hint()
        src.wake.set()

    # -- leased runs ---------------------------------------------------------------------

    def _internal_error(self, where: str, exc: BaseException | None = None) -> None:
        self.slots.count("internal_errors")
        # exc_info is an argument of the logging call, not a field (logging refuses it there)
        info = exc if exc is not None else True
        log.error("internal_error", exc_info=info, extra={"worker": self.name, "where": where})
