"""The cache's small values: durations, loaders, what a read found, and its own pool."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any, NamedTuple

import psycopg
from psycopg_pool import ConnectionPool

Seconds = float | int | timedelta
Loader = Callable[[str], Any]

TX_IDLE = psycopg.pq.TransactionStatus.IDLE


class Lookup(NamedTuple):
    """What a read found. ``source``: local, shared, stale, loader or miss."""

    value: Any
    version: int
    stale: bool
    source: str


def seconds(value: Seconds | None) -> float | None:
    if value is None:
        return None
    if isinstance(value, timedelta):
        return value.total_seconds()
    return float(value)


def interval(value: Seconds | None) -> timedelta | None:
    s = seconds(value)
    return None if s is None else timedelta(seconds=s)


def in_tx(conn: psycopg.Connection | None) -> bool:
    return conn is not None and conn.info.transaction_status != TX_IDLE


def make_pool(
    db: str | ConnectionPool, pool_size: int, pooler: str | None
) -> tuple[ConnectionPool, bool, str]:
    """The cache's pool (the caller's, or one of its own), whether it owns it, and the DSN."""
    if isinstance(db, ConnectionPool):
        # a pool's conninfo may be a function that makes it (psycopg_pool 3.3)
        info = db.conninfo
        return db, False, info if isinstance(info, str) else info()
    kwargs: dict[str, Any] = {"autocommit": True}
    if pooler is not None:
        kwargs["prepare_threshold"] = None  # no server-side prepared statements
    pool = ConnectionPool(
        db, min_size=1, max_size=max(1, pool_size), kwargs=kwargs, name="andal-cache", open=True
    )
    return pool, True, db
