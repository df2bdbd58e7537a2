"""A worker's own Prometheus metrics: ``andal worker --metrics-port N`` serves them on /metrics.

Each ``Worker`` has its own ``CollectorRegistry`` (several workers may share a process), so the
names below never clash. What the database knows (queue depth, contention, pickup latency) is
exported by ``queue.metrics()``; these are the figures only the driver sees: round trips to the
database, handler durations, outcomes as this worker recorded them, and the hit/miss counters
of an attached ``andal.cache.Cache``; with several databases, each one's figures
(``DatabaseMetrics``). The names are listed in docs/observability.md.

On the hot path each job costs one histogram observation and one counter increment (children
per label value are cached, so no label lookup); the cache counters and gauges are read only
when /metrics is scraped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

#: Round trips to the database (claim, complete, fail, heartbeat): 0.5 ms to 10 s.
ROUND_TRIP_BUCKETS = (
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
)  # fmt: skip
#: Handler durations: 1 ms to 5 min.
HANDLER_BUCKETS = (
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
    120.0, 300.0,
)  # fmt: skip

#: Job outcomes as this worker saw them (label ``outcome`` of andal_worker_jobs_total).
OUTCOMES = (
    "completed", "retried", "dead", "cancelled", "timed_out", "lease_lost", "released",
    "rolled_back",
)  # fmt: skip


class WorkerMetrics:
    """The metrics of one worker, in a registry of their own.

    ``busy`` and ``held`` are read at scrape time (busy slots, jobs held); ``cache`` is an
    ``andal.cache.Cache`` whose ``stats()`` are exported at scrape time.
    """

    def __init__(
        self,
        worker: str,
        *,
        concurrency: int,
        batch: int,
        busy: Callable[[], float] | None = None,
        held: Callable[[], float] | None = None,
        cache: Any = None,
        version: str = "",
    ) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self._server: Any = None
        self._thread: Any = None
        self.port: int | None = None

        info = Gauge(
            "andal_worker_info",
            "This worker: its name, slots and claim batch (value 1).",
            ["worker", "concurrency", "batch", "version"],
            registry=r,
        )
        info.labels(worker, str(concurrency), str(batch), version).set(1)
        self.slots = Gauge("andal_worker_slots", "Handler slots (concurrency).", registry=r)
        self.slots.set(concurrency)
        if busy is not None:
            g = Gauge("andal_worker_busy_slots", "Slots holding or claiming a job.", registry=r)
            g.set_function(busy)
        if held is not None:
            g = Gauge("andal_worker_held_jobs", "Leased jobs held by this worker.", registry=r)
            g.set_function(held)

        self._define_job_metrics(r)
        self._define_db_metrics(r)
        if cache is not None:
            r.register(CacheCollector(cache))

        # Label children cached: the hot path does a dict lookup, not labels().
        self._handler: dict[str, Any] = {}
        self._jobs: dict[tuple[str, str], Any] = {}
        self._claimed: dict[str, Any] = {}
        self._claim: dict[str, Any] = {m: self.claim_seconds.labels(m) for m in ("leased", "tx")}
        self._claims: dict[tuple[str, str], Any] = {}
        self._report: dict[str, Any] = {}
        self._heartbeat = self.heartbeat_seconds

    def _define_job_metrics(self, r: CollectorRegistry) -> None:
        """Claims, handlers and the outcomes of job attempts."""
        self.claim_seconds = Histogram(
            "andal_worker_claim_seconds",
            "Round trip of queue.claim (candidate scan, category try-locks, lease).",
            ["mode"],
            buckets=ROUND_TRIP_BUCKETS,
            registry=r,
        )
        self.claims = Counter(
            "andal_worker_claims",
            "Claims by result: full (as many jobs as asked), partial, empty, error.",
            ["mode", "result"],
            registry=r,
        )
        self.claimed = Counter("andal_worker_claimed_jobs", "Jobs claimed.", ["queue"], registry=r)
        self.handler_seconds = Histogram(
            "andal_worker_handler_seconds",
            "Time in the handler, by queue.",
            ["queue"],
            buckets=HANDLER_BUCKETS,
            registry=r,
        )
        self.jobs = Counter(
            "andal_worker_jobs",
            "Job attempts ended by this worker, by queue and outcome.",
            ["queue", "outcome"],
            registry=r,
        )
        self.lease_losses = Counter(
            "andal_worker_lease_losses",
            "Leases found lost (expired and taken back, or taken over), by what noticed it.",
            ["queue", "detected_by"],
            registry=r,
        )

    def _define_db_metrics(self, r: CollectorRegistry) -> None:
        """Round trips of the reports and heartbeats, database errors, vacuums."""
        self.report_seconds = Histogram(
            "andal_worker_report_seconds",
            "Round trip of recording outcomes (queue.complete_many, complete, fail; cache"
            " invalidation included).",
            ["call"],
            buckets=ROUND_TRIP_BUCKETS,
            registry=r,
        )
        self.heartbeat_seconds = Histogram(
            "andal_worker_heartbeat_seconds",
            "Round trip of queue.heartbeat_many.",
            buckets=ROUND_TRIP_BUCKETS,
            registry=r,
        )
        self.db_errors = Counter(
            "andal_worker_db_errors",
            "Lost connections or unreachable server, by the step that met it.",
            ["during"],
            registry=r,
        )
        self.vacuums = Counter(
            "andal_worker_vacuums",
            "VACUUM (ANALYZE) runs of andal's tables by this worker (autovacuum off).",
            ["table"],
            registry=r,
        )

    # -- recording (hot path) -------------------------------------------------------------

    def claim(self, mode: str, seconds: float, asked: int, got: int) -> None:
        self._claim[mode].observe(seconds)
        self._claim_result(mode, "full" if got >= asked else "partial" if got else "empty")

    def claim_error(self, mode: str) -> None:
        self._claim_result(mode, "error")

    def _claim_result(self, mode: str, result: str) -> None:
        key = (mode, result)
        child = self._claims.get(key)
        if child is None:
            child = self._claims[key] = self.claims.labels(mode, result)
        child.inc()

    def jobs_claimed(self, queue: str, n: int = 1) -> None:
        child = self._claimed.get(queue)
        if child is None:
            child = self._claimed[queue] = self.claimed.labels(queue)
        child.inc(n)

    def handler(self, queue: str, seconds: float) -> None:
        child = self._handler.get(queue)
        if child is None:
            child = self._handler[queue] = self.handler_seconds.labels(queue)
        child.observe(seconds)

    def outcome(self, queue: str, outcome: str) -> None:
        key = (queue, outcome)
        child = self._jobs.get(key)
        if child is None:
            child = self._jobs[key] = self.jobs.labels(queue, outcome)
        child.inc()

    def lease_lost(self, queue: str, detected_by: str) -> None:
        self.lease_losses.labels(queue, detected_by).inc()
        self.outcome(queue, "lease_lost")

    def report(self, call: str, seconds: float) -> None:
        child = self._report.get(call)
        if child is None:
            child = self._report[call] = self.report_seconds.labels(call)
        child.observe(seconds)

    def heartbeat(self, seconds: float) -> None:
        self._heartbeat.observe(seconds)

    def db_error(self, during: str) -> None:
        self.db_errors.labels(during).inc()

    def vacuumed(self, table: str) -> None:
        self.vacuums.labels(table).inc()

    # -- exposition -----------------------------------------------------------------------

    def text(self) -> str:
        """The Prometheus exposition text of this registry (what /metrics serves)."""
        return generate_latest(self.registry).decode()

    def serve(self, port: int, addr: str = "0.0.0.0") -> int:
        """Serve /metrics on ``addr:port`` (port 0: any free port) in a daemon thread;
        returns the port. Raises ``OSError`` when the address is taken."""
        from prometheus_client import start_http_server

        self._server, self._thread = start_http_server(port, addr, registry=self.registry)
        self.port = int(self._server.server_address[1])
        return self.port

    def close(self) -> None:
        """Stop serving /metrics."""
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None


class Database(Protocol):
    """What ``DatabaseMetrics`` reads of a database a worker serves (its ``Source``)."""

    label: str
    up: bool
    busy: int

    @property
    def held(self) -> int: ...


class DatabaseMetrics:
    """Per-database figures of a worker with several databases, in the worker's registry:
    ``andal_worker_database_up``, ``andal_worker_database_busy_slots``,
    ``andal_worker_database_held_jobs`` (read at scrape time) and
    ``andal_worker_database_claimed_jobs_total``, each labelled ``database``."""

    def __init__(self, registry: CollectorRegistry, sources: Sequence[Database]) -> None:
        def gauge(name: str, doc: str) -> Any:
            return Gauge(name, doc, ["database"], registry=registry)

        up = gauge(
            "andal_worker_database_up",
            "1 while the database answers, 0 while the worker reconnects to it.",
        )
        busy = gauge(
            "andal_worker_database_busy_slots", "Slots holding or claiming a job of the database."
        )
        held = gauge(
            "andal_worker_database_held_jobs", "Leased jobs of the database held by this worker."
        )
        claimed = Counter(
            "andal_worker_database_claimed_jobs",
            "Jobs claimed from the database.",
            ["database"],
            registry=registry,
        )
        self.claimed: list[Any] = []
        for s in sources:
            up.labels(s.label).set_function(lambda s=s: 1.0 if s.up else 0.0)
            busy.labels(s.label).set_function(lambda s=s: float(s.busy))
            held.labels(s.label).set_function(lambda s=s: float(s.held))
            self.claimed.append(claimed.labels(s.label))


class CacheCollector(Collector):
    """An ``andal.cache.Cache``'s counters, read at scrape time from ``Cache.stats()``:

    * ``andal_worker_cache_reads_total{pool,job_type,outcome}``: local_hit, shared_hit,
      stale_hit, miss, refetch, repair;
    * ``andal_worker_cache_entries{pool}``, ``andal_worker_cache_bytes{pool}``: the local copy;
    * ``andal_worker_cache_live{pool}``: 1 while local entries may be served (log followed);
    * ``andal_worker_cache_events_total{pool,event}``: invalidations, flushes, evictions,
      reconnects, discarded fetches, listener errors, changes applied.
    """

    _GAUGES = ("pool", "by_job_type", "entries", "bytes", "watermark", "epoch", "listening", "live")

    def __init__(self, cache: Any) -> None:
        self.cache = cache

    def describe(self) -> Iterator[Any]:
        return iter(())  # names depend on the counters present: collected, not described

    def collect(self) -> Iterator[Any]:
        stats = self.cache.stats()
        pool = str(stats.get("pool", "default"))
        reads = CounterMetricFamily(
            "andal_worker_cache_reads",
            "Cache reads of this process by job type and outcome.",
            labels=["pool", "job_type", "outcome"],
        )
        for job_type, counts in sorted(stats.get("by_job_type", {}).items()):
            for outcome, n in sorted(counts.items()):
                reads.add_metric([pool, str(job_type), str(outcome)], n)
        yield reads
        for name, key, doc in (
            ("andal_worker_cache_entries", "entries", "Entries in the local cache."),
            ("andal_worker_cache_bytes", "bytes", "Bytes held by the local cache."),
        ):
            g = GaugeMetricFamily(name, doc, labels=["pool"])
            g.add_metric([pool], float(stats.get(key, 0) or 0))
            yield g
        live = GaugeMetricFamily(
            "andal_worker_cache_live",
            "1 while local entries may be served (the change log was read recently).",
            labels=["pool"],
        )
        live.add_metric([pool], 1.0 if stats.get("live") else 0.0)
        yield live
        events = CounterMetricFamily(
            "andal_worker_cache_events",
            "Events of the local cache (invalidations, flushes, evictions, reconnects, ...).",
            labels=["pool", "event"],
        )
        for key, value in sorted(stats.items()):
            if key not in self._GAUGES and isinstance(value, int) and not isinstance(value, bool):
                events.add_metric([pool, key], value)
        yield events
