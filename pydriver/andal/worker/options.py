"""A worker's options (``Options``: refused at once when they cannot work), and the listen
connection strings, one per database (``listen_dsns``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta

from .. import tracing as tracing_
from ..hosts import dsn_list


def listen_dsns(given: str | Sequence[str] | None, count: int) -> list[str | None]:
    """One listen DSN per database (None: none given)."""
    if given is None:
        return [None] * count
    dsns = dsn_list(given)
    if len(dsns) != count:
        raise ValueError("listen_dsn: give one connection string per database")
    return list(dsns)


@dataclass(frozen=True)
class Options:
    """The options of one worker, as ``Worker`` takes them (see it), made once; the rooms and
    the start read them from here. Those that cannot work are refused when it is made
    (``ValueError``, saying which)."""

    name: str
    concurrency: int = 4
    batch: int = 100
    queues: list[str] | None = None  # None: every registered queue
    lease: timedelta | None = None
    poll: float = 1.0
    grace: float = 30.0
    listen: bool = True
    #: "transaction" or "session": a pooler (pgbouncer) is between the worker and the
    #: databases (see docs/poolers.md); None: direct connections.
    pooler: str | None = None
    heartbeat: bool = True
    pool_timeout: float = 5.0
    maintain_every: float = 60.0
    vacuum: bool = True
    metrics_port: int | None = None
    metrics_addr: str = "0.0.0.0"
    tracing: bool | None = None
    apply_policy: bool = False

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        if not 1 <= self.batch <= 1000:
            raise ValueError("batch must be between 1 and 1000")
        if self.poll <= 0:
            raise ValueError("poll must be positive")
        if self.grace < 0:
            raise ValueError("grace must not be negative")
        if self.lease is not None and self.lease <= timedelta(0):
            raise ValueError("lease must be positive")
        if self.metrics_port is not None and not 0 <= self.metrics_port <= 65535:
            raise ValueError("metrics_port must be between 0 and 65535")
        if self.pooler not in (None, "transaction", "session"):
            raise ValueError("pooler must be 'transaction', 'session' or None")
        if self.tracing and not tracing_.AVAILABLE:
            raise ValueError("tracing needs opentelemetry: pip install 'andal-pg[otel]'")
