"""The cache's small values: loaders, what a read found, and its own pool (durations are
``andal.values``'s)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import psycopg
from psycopg_pool import ConnectionPool

Loader = Callable[[str], Any]

TX_IDLE = psycopg.pq.TransactionStatus.IDLE


class Lookup(NamedTuple):
    """What a read found. ``source``: local, shared, stale, loader or miss."""

    value: Any
    version: int
    stale: bool
    source: str


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
