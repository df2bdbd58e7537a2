"""The producer's trace context travels with the job: a job enqueued inside a traced span
stores that span's W3C context, and the worker's ``andal.job`` span links to it; a job
enqueued outside any span stores nothing, and a worker that does not trace never reads it."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator

import psycopg
import pytest
from conftest import wait_for
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from workers.inproc import running

import andal


class Switch(SpanProcessor):
    """A span processor that can be turned off (a provider's processors cannot be removed)."""

    def __init__(self, inner: SpanProcessor) -> None:
        self.inner, self.on = inner, True

    def on_end(self, span: ReadableSpan) -> None:
        if self.on:
            self.inner.on_end(span)


@pytest.fixture(scope="module")
def exporter() -> Iterator[InMemorySpanExporter]:
    memory = InMemorySpanExporter()
    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        trace.set_tracer_provider(TracerProvider())
    provider = trace.get_tracer_provider()
    assert isinstance(provider, TracerProvider), "another tracer provider was set"
    switch = Switch(SimpleSpanProcessor(memory))
    provider.add_span_processor(switch)
    yield memory
    switch.on = False
    memory.shutdown()


def stored(conn: psycopg.Connection, job_id: int | None) -> object:
    row = conn.execute("select trace_context from queue.jobs where id = %s", (job_id,)).fetchone()
    assert row is not None, f"job {job_id} is not live"
    return row[0]


def job_spans(exporter: InMemorySpanExporter) -> dict[int, ReadableSpan]:
    return {
        s.attributes["andal.job_id"]: s
        for s in exporter.get_finished_spans()
        if s.name == "andal.job" and s.attributes
    }


def test_job_span_links_to_the_producer_span(
    dsn: str, conn: psycopg.Connection, clean: None, exporter: InMemorySpanExporter
) -> None:
    exporter.clear()
    tracer = trace.get_tracer("test.producer")

    async def async_enqueue() -> int | None:
        return await andal.AsyncClient(dsn).enqueue({"n": 3}, "tc")

    with tracer.start_as_current_span("request") as request:
        in_tx = andal.enqueue(conn, {"n": 1}, "tc_tx")
        by_client = andal.Client(dsn).enqueue({"n": 2}, "tc")
        by_async = asyncio.run(async_enqueue())
    producer = request.get_span_context()
    ids = [in_tx, by_client, by_async]
    want = f"00-{producer.trace_id:032x}-{producer.span_id:016x}-{int(producer.trace_flags):02x}"
    for job_id in ids:
        assert stored(conn, job_id) == {"traceparent": want}

    handlers = {
        "tc": lambda job: None,
        "tc_tx": andal.Handler("tc_tx", lambda job, c: None, transactional=True),
    }
    worker = andal.Worker(dsn, handlers, concurrency=2, poll=0.2, tracing=True, maintain_every=0)
    with running(worker):
        wait_for(lambda: set(ids) <= set(job_spans(exporter)), timeout=30, what="three job spans")
    spans = job_spans(exporter)
    for job_id in ids:
        span = spans[job_id]
        assert span.context.trace_id != producer.trace_id, "each attempt is its own trace"
        assert [(link.context.trace_id, link.context.span_id) for link in span.links] == [
            (producer.trace_id, producer.span_id)
        ], job_id
        assert span.links[0].attributes == {"andal.link": "enqueued_by"}


def test_untraced_enqueue_stores_nothing(
    dsn: str, conn: psycopg.Connection, clean: None, exporter: InMemorySpanExporter
) -> None:
    exporter.clear()
    job_id = andal.enqueue(conn, {}, "tc_plain")
    assert stored(conn, job_id) is None
    got = conn.execute("select * from queue.trace_contexts(array[%s]::bigint[])", (job_id,))
    assert got.fetchall() == []
    worker = andal.Worker(
        dsn, {"tc_plain": lambda job: None}, poll=0.2, tracing=True, maintain_every=0
    )
    with running(worker):
        wait_for(lambda: job_id in job_spans(exporter), timeout=30, what="the job span")
    assert list(job_spans(exporter)[job_id].links) == []


def test_a_worker_that_does_not_trace_reads_no_context(
    dsn: str, conn: psycopg.Connection, clean: None, exporter: InMemorySpanExporter
) -> None:
    with trace.get_tracer("test.producer").start_as_current_span("request"):
        job_id = andal.enqueue(conn, {}, "tc_off")
    assert stored(conn, job_id) is not None
    worker = andal.Worker(dsn, {"tc_off": lambda job: None}, poll=0.2, tracing=False)
    with running(worker):
        wait_for(lambda: worker.counts["completed"] == 1, timeout=30, what="the job")
    assert worker.observer.contexts is None and worker.observer.tracer is None


@pytest.mark.parametrize(
    "context",
    ['"00-x"', "[1]", '{"traceparent": 1}', '{"traceparent": "%s"}' % ("x" * 5000)],
)
def test_a_bad_trace_context_is_refused_and_writes_nothing(
    conn: psycopg.Connection, clean: None, context: str
) -> None:
    with pytest.raises(psycopg.errors.InvalidParameterValue):
        conn.execute(
            "select queue.enqueue(payload => '{}'::jsonb, trace_context => %s::jsonb,"
            " queue => 'tc_bad')",
            (context,),
        )
    assert conn.execute("select count(*) from queue.jobs").fetchone() == (0,)


def test_trace_contexts_refuses_bad_input(conn: psycopg.Connection) -> None:
    with pytest.raises(psycopg.errors.NullValueNotAllowed):
        conn.execute("select * from queue.trace_contexts(null)")
    with pytest.raises(psycopg.errors.InvalidParameterValue):
        conn.execute("select * from queue.trace_contexts(array[[1, 2]]::bigint[])")
    with pytest.raises(psycopg.errors.InvalidParameterValue):
        conn.execute(
            "select * from queue.trace_contexts(array(select generate_series(1, 1001))::bigint[])"
        )


def test_a_hostile_tracestate_never_reaches_the_log(caplog: pytest.LogCaptureFixture) -> None:
    """A producer's carrier is untrusted: a tracestate with control characters (a new log line,
    a terminal escape) is dropped before the propagator reads it, so it is never logged; the
    traceparent still links."""
    parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    hostile = "a=1\nFAKE LOG LINE\x1b[2J,b=\x07"
    caplog.set_level(logging.DEBUG)
    got = andal.propagation.links({"traceparent": parent, "tracestate": hostile})
    assert got is not None and got[0].context.span_id == 0xB7AD6B7169203331
    assert not any("FAKE LOG LINE" in r.getMessage() for r in caplog.records)
    assert andal.propagation.links({"traceparent": parent + "\n"}) is None
