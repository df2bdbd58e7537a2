"""The producer's trace context, carried with the job (docs/observability.md).

* Producer side: ``carrier()`` is the current W3C trace context (``traceparent``,
  ``tracestate``: whatever the global OpenTelemetry propagator injects) when there is a valid
  current span, else None. ``andal.enqueue`` / ``Client`` / ``AsyncClient`` then send it with
  the job (``queue.enqueue(trace_context => ...)``); without a current span, or without
  opentelemetry, nothing is sent or stored (the cost is one context-variable read).
* Worker side: ``Contexts`` reads the stored contexts of a claimed batch
  (``queue.trace_contexts``), on a connection of its own per database, only while the worker
  traces; ``links`` turns one into the span link of the job's ``andal.job`` span.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import psycopg

from . import statements as sql
from .logs import event

try:  # decided once: no opentelemetry, no cost
    from opentelemetry import propagate as _propagate
    from opentelemetry import trace as _otel
except ImportError:  # pragma: no cover - the otel extra is installed in the tests
    _otel = None  # type: ignore[assignment]

Carrier = dict[str, str]


def carrier() -> Carrier | None:
    """The current span's trace context as a propagator's carrier, or None (no valid current
    span, or no opentelemetry)."""
    if _otel is None:  # pragma: no cover
        return None
    if not _otel.get_current_span().get_span_context().is_valid:
        return None
    out: Carrier = {}
    _propagate.inject(out)
    return out or None


def links(context: Mapping[str, str] | None) -> list[Any] | None:
    """The span links to the producer's span for a stored carrier (None: no link)."""
    if _otel is None or not context:  # pragma: no cover - no opentelemetry
        return None
    # a producer's carrier is untrusted: a value with control characters would reach the
    # worker's log through the propagator's warnings, so only printable ASCII is read
    carrier = {k: v for k, v in context.items() if _printable(k) and _printable(v)}
    span_context = _otel.get_current_span(_propagate.extract(carrier)).get_span_context()
    if not span_context.is_valid:
        return None
    return [_otel.Link(span_context, {"andal.link": "enqueued_by"})]


def _printable(value: object) -> bool:
    return isinstance(value, str) and value.isascii() and value.isprintable()


class Contexts:
    """Reads the producers' trace contexts of claimed jobs: one connection per database (the
    worker's pools stay the handlers'), opened on first use, closed on an error and reopened
    on the next batch. A database whose andal predates ``queue.trace_contexts`` is asked no
    more (said once); any other failure costs the links of that batch only."""

    def __init__(self, worker: str) -> None:
        self.worker = worker
        self.lock = threading.Lock()
        self.conns: dict[str, psycopg.Connection] = {}
        self.missing: set[str] = set()

    def read(self, dsn: str, job_ids: Sequence[int]) -> dict[int, Carrier]:
        """job id -> stored trace context, for the jobs that have one."""
        if not job_ids or dsn in self.missing:
            return {}
        with self.lock:
            try:
                conn = self.conns.get(dsn)
                if conn is None or conn.closed:
                    conn = psycopg.connect(
                        dsn, autocommit=True, connect_timeout=5, prepare_threshold=None
                    )
                    self.conns[dsn] = conn
                rows = conn.execute(sql.TRACE_CONTEXTS, {"job_ids": list(job_ids)}).fetchall()
            except psycopg.Error as exc:
                self._failed(dsn, exc)
                return {}
        return {int(job_id): context for job_id, context in rows if context}

    def _failed(self, dsn: str, exc: psycopg.Error) -> None:
        conn = self.conns.pop(dsn, None)
        if conn is not None:
            conn.close()
        if isinstance(exc, psycopg.errors.UndefinedFunction):
            self.missing.add(dsn)
            event(
                "trace_contexts_unavailable",
                logging.WARNING,
                worker=self.worker,
                hint="this database's andal predates queue.trace_contexts: run andal install;"
                " job spans are not linked to their producers meanwhile",
            )

    def close(self) -> None:
        with self.lock:
            for conn in self.conns.values():
                conn.close()
            self.conns.clear()


__all__ = ["Carrier", "Contexts", "carrier", "links"]
