"""Repair: comparing local copies with the shared cache, and the shared cache with the loader.

* ``verify``: read-repair of one hit, sampled (``Cache(verify=...)``): the cached value and
  the loader's are compared by checksum in ``cache.validate``; a mismatch invalidates the
  shared entry (every local cache drops it) and refills it with the loader's value.
* ``revalidate``: batched, against the shared cache only: every local copy whose version is
  no longer the shared one is dropped.
* ``refresh``: a key refresh job (``cache.get`` with a ``refresh_queue`` enqueues one for a
  stale entry) reloads the key from the loader, unless it was refreshed meanwhile.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import psycopg

from .. import statements as sql
from ..logs import event
from ..values import Seconds
from .values import Loader, Lookup

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


def refresh(cache: Cache, payload: Mapping[str, Any]) -> None:
    """Reload ``payload["key"]`` with the cache's loader and store it, unless the shared entry
    is fresh again (refreshed meanwhile) or the loader has no value."""
    key = payload["key"]
    if cache.loader is None:
        raise RuntimeError("this Cache has no loader to refresh keys with")
    with cache._conn(None) as c:
        row = cache._get_row(c, key, None)
    if row is not None and row.value is not None and not row.stale:
        return
    value = cache.loader(key)
    if value is None:
        return
    cache.put(key, value, if_version=row.version if row is not None else 0)
