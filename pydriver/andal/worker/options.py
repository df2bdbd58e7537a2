"""A worker's options: refused at once when they cannot work (``check_options``), and the
listen connection strings, one per database (``listen_dsns``)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from .. import tracing as tracing_
from ..hosts import dsn_list
from ..values import Seconds, as_interval


def listen_dsns(given: str | Sequence[str] | None, count: int) -> list[str | None]:
    """One listen DSN per database (None: none given)."""
    if given is None:
        return [None] * count
    dsns = dsn_list(given)
    if len(dsns) != count:
        raise ValueError("listen_dsn: give one connection string per database")
    return list(dsns)


def check_options(
    concurrency: int,
    batch: int,
    poll: float,
    grace: float,
    lease: Seconds | None,
    metrics_port: int | None,
    pooler: str | None,
    tracing: bool | None,
) -> None:
    """Refuse a worker's options that cannot work (``ValueError``, saying which)."""
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    if not 1 <= batch <= 1000:
        raise ValueError("batch must be between 1 and 1000")
    if poll <= 0:
        raise ValueError("poll must be positive")
    if grace < 0:
        raise ValueError("grace must not be negative")
    if lease is not None and (as_interval(lease) or timedelta(0)) <= timedelta(0):
        raise ValueError("lease must be positive")
    if metrics_port is not None and not 0 <= metrics_port <= 65535:
        raise ValueError("metrics_port must be between 0 and 65535")
    if pooler not in (None, "transaction", "session"):
        raise ValueError("pooler must be 'transaction', 'session' or None")
    if tracing and not tracing_.AVAILABLE:
        raise ValueError("tracing needs opentelemetry: pip install 'andal-pg[otel]'")
