"""OpenTelemetry tracing: one trace per job attempt, spans reaching an in-memory exporter in the
documented order (claim, cache, handler, complete/fail, job) with the job's attributes; and
no tracing machinery at all when opentelemetry cannot be imported."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator

import psycopg
import pytest
from conftest import wait_for
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from workers.inproc import running

import andal
from andal import tracing
from andal.cache import Cache

JOB_ATTRS = ("andal.job_id", "andal.queue", "andal.attempt", "andal.worker")


class Switch(SpanProcessor):
    """A span processor that can be turned off (a provider's processors cannot be removed)."""

    def __init__(self, inner: SpanProcessor) -> None:
        self.inner, self.on = inner, True

    def on_end(self, span: ReadableSpan) -> None:
        if self.on:
            self.inner.on_end(span)


@pytest.fixture(scope="module")
def exporter() -> Iterator[InMemorySpanExporter]:
    """An in-memory exporter on the global tracer provider (which can be set only once per
    process: later tests find it, with this module's processor switched off)."""
    memory = InMemorySpanExporter()
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        trace.set_tracer_provider(TracerProvider())
    provider = trace.get_tracer_provider()
    assert isinstance(provider, TracerProvider), "another tracer provider was set"
    switch = Switch(SimpleSpanProcessor(memory))
    provider.add_span_processor(switch)
    yield memory
    switch.on = False
    memory.shutdown()


def traces(spans: list) -> dict[int, list]:
    """Exported spans grouped by job id (their order of arrival kept)."""
    out: dict[int, list] = {}
    for s in spans:
        if s.name.startswith("andal.") and "andal.job_id" in (s.attributes or {}):
            out.setdefault(s.attributes["andal.job_id"], []).append(s)
    return out


def check_trace(spans: list, names: list[str], worker: str) -> dict[str, object]:
    """The job's spans arrived in ``names`` order, form one trace under ``andal.job`` (the
    cache span under the handler's), and carry the job's attributes."""
    assert [s.name for s in spans] == names
    by_name = {s.name: s for s in spans}
    root = by_name["andal.job"]
    assert root.parent is None and root.kind == trace.SpanKind.CONSUMER
    for s in spans:
        assert s.context.trace_id == root.context.trace_id
        for key in JOB_ATTRS:
            assert key in s.attributes, (s.name, key)
        assert s.attributes["andal.worker"] == worker
        if s is root:
            continue
        parent = by_name["andal.handler"] if s.name == "andal.cache" else root
        assert s.parent is not None and s.parent.span_id == parent.context.span_id, s.name
        assert s.start_time >= root.start_time and s.end_time <= root.end_time
    claim, handler = by_name["andal.claim"], by_name["andal.handler"]
    assert claim.end_time <= handler.start_time
    last = by_name.get("andal.complete") or by_name["andal.fail"]
    assert handler.end_time <= last.start_time
    return by_name


def test_job_traces(
    dsn: str, conn: psycopg.Connection, clean: None, exporter: InMemorySpanExporter
) -> None:
    exporter.clear()
    andal.configure_queue(conn, "traced", max_attempts=3, backoff_base=60)
    andal.configure_queue(conn, "traced_tx", max_attempts=1)
    cache = Cache(dsn, follow=False)
    cache.put("user:1", {"name": "Ada"})

    def leased(job: andal.Job) -> dict:
        with tracing.cache_span("user:1", job.queue) as s:
            found = cache.lookup("user:1", job_type=job.queue)
            s.set_attribute("andal.cache.source", found.source)
        if job.payload.get("fail"):
            raise RuntimeError("handler failed")
        return found.value

    def tx(job: andal.Job, c: psycopg.Connection) -> None:
        c.execute("select 1")

    ok = andal.enqueue(conn, {}, "traced", category="tenant-1")
    bad = andal.enqueue(conn, {"fail": True}, "traced")
    in_tx = andal.enqueue(conn, {}, "traced_tx")
    handlers = {"traced": leased, "traced_tx": andal.Handler("traced_tx", tx, transactional=True)}
    worker = andal.Worker(dsn, handlers, concurrency=2, poll=0.2, tracing=True, maintain_every=0)
    try:
        with running(worker):
            wait_for(
                lambda: sum(worker.counts[k] for k in ("completed", "retried")) == 3,
                timeout=30,
                what="three outcomes",
            )

            def ended() -> bool:
                by_job = traces(exporter.get_finished_spans())
                return all(
                    any(s.name == "andal.job" for s in by_job.get(j, ())) for j in (ok, bad, in_tx)
                )

            wait_for(ended, timeout=10, what="the three traces")
    finally:
        cache.close()
    by_job = traces(exporter.get_finished_spans())
    order = ["andal.claim", "andal.cache", "andal.handler", "andal.complete", "andal.job"]

    spans = check_trace(by_job[ok], order, worker.name)
    for s in spans.values():
        assert s.attributes["andal.job_id"] == ok
        assert s.attributes["andal.queue"] == "traced"
        assert s.attributes["andal.category"] == "tenant-1"
        assert s.attributes["andal.attempt"] == 1
    assert spans["andal.cache"].attributes["andal.cache.key"] == "user:1"
    assert spans["andal.cache"].attributes["andal.cache.source"] == "shared"
    assert spans["andal.claim"].attributes["andal.batch"] >= 1
    assert spans["andal.job"].attributes["andal.outcome"] == "completed"
    assert spans["andal.job"].status.status_code == StatusCode.UNSET

    failed = ["andal.claim", "andal.cache", "andal.handler", "andal.fail", "andal.job"]
    spans = check_trace(by_job[bad], failed, worker.name)
    assert "andal.category" not in spans["andal.job"].attributes
    assert spans["andal.handler"].status.status_code == StatusCode.ERROR
    assert any(e.name == "exception" for e in spans["andal.handler"].events)
    assert spans["andal.fail"].attributes["andal.outcome"] == "retried"
    assert spans["andal.job"].attributes["andal.outcome"] == "retried"
    assert spans["andal.job"].status.status_code == StatusCode.ERROR

    tx_order = ["andal.claim", "andal.handler", "andal.complete", "andal.job"]
    spans = check_trace(by_job[in_tx], tx_order, worker.name)
    assert spans["andal.job"].attributes["andal.queue"] == "traced_tx"
    assert spans["andal.job"].attributes["andal.outcome"] == "completed"


def test_tracing_off_and_default(
    dsn: str, conn: psycopg.Connection, clean: None, exporter: InMemorySpanExporter
) -> None:
    """tracing=False: no spans though a provider is set; tracing=None (the default): traced,
    since a provider is set by the time the worker starts."""
    exporter.clear()
    andal.enqueue(conn, {}, "untraced")
    worker = andal.Worker(dsn, {"untraced": lambda job: None}, poll=0.2, tracing=False)
    with running(worker):
        wait_for(lambda: worker.counts["completed"] == 1, timeout=20, what="the job")
        assert worker._tracer is None
    assert not [s for s in exporter.get_finished_spans() if s.name.startswith("andal.")]

    job_id = andal.enqueue(conn, {}, "untraced")
    worker = andal.Worker(dsn, {"untraced": lambda job: None}, poll=0.2)
    with running(worker):
        wait_for(lambda: worker.counts["completed"] == 1, timeout=20, what="the job")
        assert worker._tracer is not None
    wait_for(
        lambda: any(s.name == "andal.job" for s in traces(exporter.get_finished_spans())[job_id]),
        timeout=10,
        what="the default worker's trace",
    )


def test_api_without_provider(dsn: str) -> None:
    """opentelemetry importable but no tracer provider set: the default worker holds no
    tracer (no per-job cost), and ``cache_span`` is the shared no-op."""
    code = textwrap.dedent(
        f"""
        import andal
        from andal import tracing
        assert tracing.AVAILABLE and not tracing.configured()
        assert tracing.cache_span("k") is tracing.NO_SPAN
        w = andal.Worker({dsn!r}, {{"q": print}}, listen=False, maintain_every=0).start()
        try:
            assert w._tracer is None
        finally:
            w.stop()
            w.join(30)
        print("ok")
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_without_opentelemetry(dsn: str) -> None:
    """opentelemetry not importable: the no-op path is chosen at import, and asking for
    tracing is refused."""
    code = textwrap.dedent(
        f"""
        import sys
        sys.modules["opentelemetry"] = None  # import opentelemetry raises ImportError
        import andal
        from andal import tracing
        assert tracing.AVAILABLE is False
        with tracing.span("andal.cache") as s:
            s.set_attribute("k", 1)
        assert tracing.span("x") is tracing.NO_SPAN
        assert tracing.cache_span("k") is tracing.NO_SPAN
        w = andal.Worker({dsn!r}, {{"q": print}})
        assert w._tracer is None
        try:
            andal.Worker({dsn!r}, {{"q": print}}, tracing=True)
        except ValueError as exc:
            assert "opentelemetry" in str(exc)
        else:
            raise AssertionError("tracing=True accepted without opentelemetry")
        print("ok")
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_cache_span_only_inside_a_recording_span(exporter: InMemorySpanExporter) -> None:
    exporter.clear()
    assert tracing.cache_span("k") is tracing.NO_SPAN  # no span around: no cost
    # (the items of one `with` are entered left to right: the cache span sees the request's)
    with (
        tracing.span("request", {"user": None, "path": "/x"}),
        tracing.cache_span("k", "render", hit=True) as s,
    ):
        s.set_attribute("andal.cache.source", "local")
    request, cache = (
        next(s for s in exporter.get_finished_spans() if s.name == name)
        for name in ("request", "andal.cache")
    )
    assert cache.parent.span_id == request.context.span_id
    assert dict(request.attributes) == {"path": "/x"}
    assert cache.attributes["andal.cache.key"] == "k"
    assert cache.attributes["andal.cache.hit"] is True
    assert cache.attributes["andal.cache.source"] == "local"
