"""Repair: comparing local copies with the shared cache, and the shared cache with the loader.

* ``verify``: read-repair of one hit, sampled (``Cache(verify=...)``): the cached value and
  the loader's are compared by checksum in ``cache.validate``; a mismatch invalidates the
  shared entry (every local cache drops it) and refills it with the loader's value.
* ``revalidate``: batched, against the shared cache only: every local copy whose version is
  no longer the shared one is dropped.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

import psycopg

from .. import statements as sql
from ..logs import event
from .values import Loader, Lookup, Seconds

if TYPE_CHECKING:
    from .local import Cache


def verify(
    cache: Cache,
    key: str,
    value: Any,
    version: int,
    loader: Loader,
    label: str,
    ttl: Seconds | None,
    conn: psycopg.Connection | None,
) -> Lookup:
    """Read-repair of a hit (``value`` at ``version``): compare it with the loader's value by
    checksum; on a mismatch the shared entry is repaired and the loader's value returned."""
    fresh = loader(key)
    loaded = None if fresh is None else json.dumps(fresh, ensure_ascii=False)
    with cache._conn(conn) as c:
        rows = c.execute(
            sql.CACHE_VALIDATE,
            {"keys": [key], "versions": [version], "checksums": None, "loaded": [loaded]},
        ).fetchall()
    if not rows:
        source = "local" if key in cache._store.entries else "shared"
        return Lookup(value, version, False, source)
    cache._store.discard(key)
    _key, current, _checksum, _stale, repaired = rows[0]
    if repaired:
        cache._store.count(label, "repair")
        event("cache_repaired", logging.WARNING, key=key, version=version)
    if fresh is None:
        return Lookup(None, int(current), False, "miss")
    inflight = cache._store.acquire(key)
    try:
        new = cache._refill(key, fresh, ttl, int(current), inflight, conn)
    finally:
        cache._store.release(key, inflight)
    return Lookup(fresh, new if new is not None else int(current), False, "loader")


def revalidate(cache: Cache, conn: psycopg.Connection | None, batch: int) -> int:
    """Drop every local copy whose version is no longer the shared one; how many were."""
    store = cache._store
    with store.lock:
        held = [(k, e.version) for k, e in store.entries.items()]
    dropped = 0
    with cache._conn(conn) as c:
        for i in range(0, len(held), batch):
            part = held[i : i + batch]
            rows = c.execute(
                sql.CACHE_VALIDATE,
                {
                    "keys": [k for k, _ in part],
                    "versions": [v for _, v in part],
                    "checksums": None,
                    "loaded": None,
                },
            ).fetchall()
            with store.lock:
                for row in rows:
                    if store.drop(row[0]):
                        dropped += 1
    return dropped
