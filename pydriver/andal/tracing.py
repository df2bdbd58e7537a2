"""OpenTelemetry tracing of jobs, optional: ``pip install 'andal-pg[otel]'``.

Each attempt of a job is one trace, named after the span at its root::

    andal.job                     (kind CONSUMER; claim start → outcome recorded)
    ├── andal.claim               queue.claim: candidate scan, category try-lock, lease
    ├── andal.handler             the handler (its own spans nest here)
    │   └── andal.cache           a cache read made by the handler (``cache_span``)
    └── andal.complete | andal.fail   recording the outcome (cache invalidation included)

Spans end, and so reach an exporter, in that order: claim, cache, handler, complete/fail,
job. Every span carries ``andal.job_id``, ``andal.queue``, ``andal.category`` (when the job has
one), ``andal.attempt`` and ``andal.worker``. One ``queue.claim`` takes a batch of jobs, and
one ``queue.complete_many`` records a batch of successes: each job's trace gets its own
``andal.claim`` / ``andal.complete`` span with the batch's start and end times and the batch
size (``andal.batch``), so every trace is whole on its own. A job enqueued inside a traced
span (``andal.enqueue`` in a request, say) carries that span's W3C trace context
(``propagation``), and its ``andal.job`` span links to the producer's span: the request and
the jobs it caused are one click apart, each attempt still its own trace.
``andal.job`` ends with ``andal.outcome`` (completed, retried, dead, cancelled (an abort
acknowledged), timed_out (stopped at its deadline), lease_lost, released, rolled_back) and an
error status for every outcome but completed and released.

Spans go to the global tracer provider (set by your code, or by ``opentelemetry-instrument``
from the ``OTEL_*`` environment). A worker traces by default when a provider has been set by
the time it starts (``configured()``); with only the API installed it holds no tracer. Without
opentelemetry importable every helper here is a no-op chosen once, at import: ``span()``
returns a shared do-nothing object.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import propagation

try:  # decided once: no opentelemetry, no cost
    from opentelemetry import context as _otel_context
    from opentelemetry import trace as _otel
    from opentelemetry.trace import SpanKind, Status, StatusCode
except ImportError:  # pragma: no cover - the otel extra is installed in the tests
    _otel = None  # type: ignore[assignment]

#: Whether opentelemetry is importable (tracing can be on).
AVAILABLE: bool = _otel is not None
TRACER_NAME = "andal"

#: The attributes every span of a job's trace carries (category: when the job has one).
JOB_ATTRIBUTES = ("andal.job_id", "andal.queue", "andal.category", "andal.attempt", "andal.worker")
#: Outcomes whose trace is not marked as an error.
OK_OUTCOMES = frozenset({"completed", "released"})


def _version() -> str:
    """The release (``andal.__version__``)."""
    from .sources import release

    return release()


class NoSpan:
    """What ``span()`` returns without opentelemetry: accepts the span calls, does nothing."""

    __slots__ = ()

    def __enter__(self) -> NoSpan:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def set_attribute(self, key: str, value: Any) -> None:
        pass

    def set_attributes(self, attributes: Mapping[str, Any]) -> None:
        pass

    def add_event(self, name: str, attributes: Mapping[str, Any] | None = None) -> None:
        pass

    def record_exception(self, exception: BaseException, *args: Any, **kwargs: Any) -> None:
        pass

    def set_status(self, *args: Any, **kwargs: Any) -> None:
        pass

    def is_recording(self) -> bool:
        return False


NO_SPAN = NoSpan()


def _clean(attributes: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if not attributes:
        return None
    return {k: v for k, v in attributes.items() if v is not None}


if _otel is not None:
    _TRACER = _otel.get_tracer(TRACER_NAME, _version())

    def span(name: str, attributes: Mapping[str, Any] | None = None) -> Any:
        """A context manager: a span ``name``, child of the current span (the handler's,
        inside a handler), made current for the block. Yields the span
        (``set_attribute(...)``). Without opentelemetry: a no-op."""
        return _TRACER.start_as_current_span(name, attributes=_clean(attributes))

else:  # pragma: no cover

    def span(name: str, attributes: Mapping[str, Any] | None = None) -> Any:
        """Without opentelemetry: a shared no-op context manager."""
        return NO_SPAN


def configured() -> bool:
    """Whether spans would be recorded: opentelemetry is importable and a tracer provider
    (an SDK's, say) has been set — not the API's default proxy, nor the no-op one."""
    if _otel is None:  # pragma: no cover
        return False
    provider = _otel.get_tracer_provider()
    return not isinstance(provider, (_otel.ProxyTracerProvider, _otel.NoOpTracerProvider))


def cache_span(key: str, job_type: str | None = None, **attributes: Any) -> Any:
    """The ``andal.cache`` span of a cache read, for a handler (or ``Cache``) to wrap its
    lookup in; inside a handler it carries the job's attributes too. Outside a recording
    span (no traced job or request around it) it is the shared no-op, so ``Cache`` can call
    it on every read. Set ``andal.cache.source`` on it from the ``Lookup``::

        with andal.tracing.cache_span(key, job.queue) as s:
            found = cache.lookup(key, job_type=job.queue, min_version=job.cache_version)
            s.set_attribute("andal.cache.source", found.source)
    """
    if _otel is None:  # pragma: no cover
        return NO_SPAN
    current = _otel.get_current_span()
    if not current.is_recording():
        return NO_SPAN  # outside a traced job (or request): a cache read costs no span
    attrs: dict[str, Any] = {}
    # Inside a handler: the job's attributes too (from the SDK span, when there is one).
    held = getattr(current, "attributes", None)
    if held:
        attrs.update({k: held[k] for k in JOB_ATTRIBUTES if k in held})
    attrs["andal.cache.key"] = key
    attrs["andal.cache.job_type"] = job_type
    attrs.update({f"andal.cache.{k}": v for k, v in attributes.items()})
    return span("andal.cache", attrs)


class JobTracer:
    """The worker's side: one trace per job attempt (see the module's docstring).

    Only made when opentelemetry is importable; the worker checks ``None`` instead of
    calling no-ops on the hot path."""

    def __init__(self, worker: str) -> None:
        if _otel is None:  # pragma: no cover
            raise RuntimeError("opentelemetry is not installed: pip install 'andal-pg[otel]'")
        self.worker = worker
        self.tracer = _otel.get_tracer(TRACER_NAME, _version())

    def attributes(self, job: Any) -> dict[str, Any]:
        out: dict[str, Any] = {
            "andal.job_id": job.id,
            "andal.queue": job.queue,
            "andal.attempt": job.attempt,
            "andal.worker": self.worker,
        }
        if job.category is not None:
            out["andal.category"] = job.category
        return out

    def claimed(
        self, jobs: list[Any], start_ns: int, end_ns: int,
        contexts: Mapping[int, Mapping[str, str]] | None = None,
    ) -> list[Any]:  # fmt: skip
        """Start each job's ``andal.job`` root at ``start_ns`` and give it an ``andal.claim``
        span over the claim's round trip; a job enqueued with a trace context (``contexts``:
        job id -> carrier) gets a link to the producer's span. Returns the root spans, in the
        order of ``jobs``."""
        roots = []
        batch = len(jobs)
        for job in jobs:
            attrs = self.attributes(job)
            root = self.tracer.start_span(
                "andal.job", kind=SpanKind.CONSUMER, attributes=attrs, start_time=start_ns,
                links=propagation.links(contexts.get(job.id)) if contexts else None,
            )  # fmt: skip
            roots.append(root)
            if not root.is_recording():
                continue  # not sampled: its children would not be either
            attrs["andal.batch"] = batch
            claim = self.tracer.start_span(
                "andal.claim",
                context=_otel.set_span_in_context(root),
                attributes=attrs,
                start_time=start_ns,
            )
            claim.end(end_time=end_ns)
        return roots

    def handler(self, job: Any, root: Any) -> _Scope:
        """A context manager: the ``andal.handler`` span, current while the handler runs; an
        exception passing through is recorded on it and marks it as an error. For a trace
        not sampled, the root is made current instead (the handler's own spans follow its
        decision) and no span is made."""
        if not root.is_recording():
            return _Scope(root, False)
        s = self.tracer.start_span(
            "andal.handler",
            context=_otel.set_span_in_context(root),
            attributes=self.attributes(job),
        )
        return _Scope(s, True)

    def reported(
        self, job: Any, root: Any, name: str, start_ns: int, end_ns: int, batch: int = 1,
        **attributes: Any,
    ) -> None:  # fmt: skip
        """An ``andal.complete`` / ``andal.fail`` span over the round trip that recorded the
        outcome (``batch`` jobs in one statement)."""
        if not root.is_recording():
            return
        attrs = self.attributes(job)
        attrs["andal.batch"] = batch
        for k, v in attributes.items():
            if v is not None:
                attrs[f"andal.{k}"] = v
        s = self.tracer.start_span(
            name, context=_otel.set_span_in_context(root), attributes=attrs, start_time=start_ns
        )
        s.end(end_time=end_ns)

    @staticmethod
    def end(root: Any, outcome: str, error: str | None = None) -> None:
        """End a job's trace with its outcome."""
        if not root.is_recording():
            root.end()
            return
        root.set_attribute("andal.outcome", outcome)
        if outcome not in OK_OUTCOMES:
            root.set_status(Status(StatusCode.ERROR, error or outcome))
        root.end()


class _Scope:
    """``span`` current for a block (``opentelemetry.trace.use_span`` without its two
    generator frames: this runs once per job); with ``own``, ended on exit, with the
    exception recorded."""

    __slots__ = ("span", "own", "token")

    def __init__(self, span: Any, own: bool) -> None:
        self.span, self.own = span, own
        self.token: Any = None

    def __enter__(self) -> Any:
        self.token = _otel_context.attach(_otel.set_span_in_context(self.span))
        return self.span

    def __exit__(self, kind: Any, exc: BaseException | None, tb: Any) -> None:
        _otel_context.detach(self.token)
        if not self.own:
            return
        if exc is not None:
            self.span.record_exception(exc)
            self.span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))
        self.span.end()


__all__ = ["AVAILABLE", "NO_SPAN", "JobTracer", "NoSpan", "cache_span", "configured", "span"]
