"""What a worker tells the outside: its Prometheus metrics (``andal.metrics``), its
OpenTelemetry traces (``andal.tracing``) and its per-job log lines (``andal.logs``), behind one
interface (``Observer``). It reads of the worker's jobs and databases only what ``ObservedRun``
and ``ObservedSource`` name, so it imports nothing of the worker package.

The rooms of the worker call the observer unconditionally; whether metrics are kept or traces
made is decided here once, when the worker starts, and nowhere else. With neither, each call
is a method that tests two attributes and returns.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections import Counter
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from . import propagation
from . import tracing as tracing_
from .handlers import Job
from .logs import event, log
from .metrics import Database, DatabaseMetrics, WorkerMetrics

#: The level of the per-job lines (``claimed``, ``completed``): two lines per job would be most
#: of a busy worker's output; info keeps the transitions an operator acts on (retries, dead
#: letters, lost leases, releases, stops).
JOB_LEVEL = logging.DEBUG

_NO_SCOPE: AbstractContextManager[Any] = contextlib.nullcontext()


class ObservedRun(Protocol):
    """What the observer reads of a job the worker holds (its ``ObservedRun``): the job, its root
    span (when tracing; the observer sets and ends it) and its log fields."""

    job: Job
    span: Any

    def fields(self, **extra: Any) -> dict[str, Any]: ...


class ObservedSource(Database, Protocol):
    """What the observer reads of a database the worker serves (its ``Source``)."""

    index: int
    dsn: str


class Observer:
    """A worker's metrics (``metrics``: ``WorkerMetrics`` or None), traces (``tracer``: a
    ``tracing.JobTracer`` or None, set by ``start_tracing``) and per-job logs."""

    def __init__(
        self, name: str, metrics: WorkerMetrics | None, sources: Sequence[ObservedSource]
    ) -> None:
        self.name = name
        self.metrics = metrics
        self.tracer: tracing_.JobTracer | None = None
        self.contexts: propagation.Contexts | None = None  # the producers' trace contexts
        self.db_metrics: DatabaseMetrics | None = None
        if metrics is not None and len(sources) > 1:
            self.db_metrics = DatabaseMetrics(metrics.registry, sources)

    def start_tracing(self, on: bool) -> None:
        self.tracer = tracing_.JobTracer(self.name) if on else None
        self.contexts = propagation.Contexts(self.name) if on else None

    def now_ns(self) -> int:
        """The wall clock for span times (0 when not tracing: nothing reads it)."""
        return time.time_ns() if self.tracer is not None else 0

    def job_logs(self) -> bool:
        """Whether the per-job lines are logged (taken once per batch)."""
        return log.isEnabledFor(JOB_LEVEL)

    def job_line(self, name: str, run: ObservedRun, **fields: Any) -> None:
        event(name, JOB_LEVEL, worker=self.name, **run.fields(**fields))

    # -- claims --------------------------------------------------------------------------

    def claim(self, kind: str, took: float, asked: int, got: int) -> None:
        if self.metrics is not None:
            self.metrics.claim(kind, took, asked, got)

    def claim_error(self, kind: str) -> None:
        if self.metrics is not None:
            self.metrics.claim_error(kind)

    def claimed(self, src: ObservedSource, runs: Sequence[ObservedRun], started_ns: int) -> None:
        """Jobs claimed from ``src``: counted by queue, and each given its trace."""
        metrics = self.metrics
        if metrics is not None:
            queues = {r.job.queue for r in runs}
            if len(queues) == 1:
                metrics.jobs_claimed(queues.pop(), len(runs))
            else:
                for queue, count in Counter(r.job.queue for r in runs).items():
                    metrics.jobs_claimed(queue, count)
            if self.db_metrics is not None:
                self.db_metrics.claimed[src.index].inc(len(runs))
        if self.tracer is not None and runs:
            ended_ns = time.time_ns()
            assert self.contexts is not None  # made with the tracer
            contexts = self.contexts.read(src.dsn, [r.job.id for r in runs])
            roots = self.tracer.claimed([r.job for r in runs], started_ns, ended_ns, contexts)
            for run, root in zip(runs, roots, strict=True):
                root.set_attribute("andal.database", src.label)
                run.span = root

    # -- handlers ------------------------------------------------------------------------

    def handling(self, run: ObservedRun) -> AbstractContextManager[Any]:
        """Around a handler: its span is current (when tracing)."""
        if self.tracer is None or run.span is None:
            return _NO_SCOPE
        return self.tracer.handler(run.job, run.span)

    def handler(self, queue: str, took: float) -> None:
        if self.metrics is not None:
            self.metrics.handler(queue, took)

    # -- outcomes ------------------------------------------------------------------------

    def reported(
        self,
        run: ObservedRun,
        call: str,
        started: float,
        started_ns: int,
        outcome: str | None = None,
    ) -> None:
        """One outcome recorded by ``queue.<call>`` (complete or fail), sent at ``started``."""
        if self.metrics is not None:
            self.metrics.report(call, time.perf_counter() - started)
        if self.tracer is not None and run.span is not None:
            self.tracer.reported(
                run.job, run.span, f"andal.{call}", started_ns, time.time_ns(), outcome=outcome
            )

    def reported_many(self, runs: Sequence[ObservedRun], took: float, started_ns: int) -> None:
        """Successes recorded together by ``queue.complete_many``."""
        if self.metrics is not None:
            self.metrics.report("complete_many", took)
        tracer = self.tracer
        if tracer is not None:
            ended_ns = time.time_ns()
            for run in runs:
                if run.span is not None:
                    tracer.reported(
                        run.job, run.span, "andal.complete", started_ns, ended_ns, len(runs)
                    )

    def outcome(self, run: ObservedRun, outcome: str, error: str | None = None) -> None:
        """A job attempt ended with ``outcome``: counted, and its trace ended."""
        if self.metrics is not None:
            self.metrics.outcome(run.job.queue, outcome)
        if run.span is not None:
            self.end_trace(run, outcome, error)

    @staticmethod
    def end_trace(run: ObservedRun, outcome: str, error: str | None = None) -> None:
        span, run.span = run.span, None
        if span is not None:
            tracing_.JobTracer.end(span, outcome, error)

    # -- the rest ------------------------------------------------------------------------

    def lease_lost(self, queue: str, detected_by: str) -> None:
        if self.metrics is not None:
            self.metrics.lease_lost(queue, detected_by)

    def interrupted(self, run: ObservedRun, reason: str) -> None:
        """The worker asked ``run``'s handler to stop: its deadline passed (``timeout``: the
        attempt is over, counted as the outcome ``timed_out``) or an abort was requested
        (``aborted``: counted when the job ends ``cancelled``). Logged once, at info."""
        if reason == "timeout":
            if self.metrics is not None:
                self.metrics.outcome(run.job.queue, "timed_out")
            event("timed_out", logging.INFO, worker=self.name, **run.fields())
        else:
            event("abort_requested", logging.INFO, worker=self.name, **run.fields())

    def heartbeat(self, took: float) -> None:
        if self.metrics is not None:
            self.metrics.heartbeat(took)

    def db_error(self, during: str) -> None:
        if self.metrics is not None:
            self.metrics.db_error(during)

    def vacuumed(self, tables: list[str]) -> None:
        if self.metrics is not None:
            for table in tables:
                self.metrics.vacuumed(table)

    def serve(self, port: int | None, addr: str) -> None:
        if self.metrics is not None and port is not None:
            got = self.metrics.serve(port, addr)
            event("metrics_serving", worker=self.name, addr=addr, port=got)

    def close(self) -> None:
        if self.metrics is not None:
            self.metrics.close()
        if self.contexts is not None:
            self.contexts.close()
