"""Producers: enqueue jobs, in the caller's transaction when a connection is given.

``enqueue(conn, payload, ...)`` and ``enqueue_many(conn, payloads, ...)`` run on the caller's
connection (so the job commits or rolls back with the caller's own writes). ``Client`` holds a
DSN and opens a short connection per call, or uses ``conn=`` when given one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from . import sql
from .worker import Seconds, as_interval


def _params(
    queue: str,
    category: str | None,
    priority: int,
    delay: Seconds | None,
    max_attempts: int | None,
) -> dict[str, Any]:
    return {
        "queue": queue,
        "category": category,
        "priority": priority,
        "delay": as_interval(delay or 0),
        "max_attempts": max_attempts,
    }


def enqueue(
    conn: psycopg.Connection,
    payload: Any,
    queue: str = "default",
    *,
    category: str | None = None,
    priority: int = 0,
    delay: Seconds | None = None,
    max_attempts: int | None = None,
    dedup_key: str | None = None,
    cache_key: str | None = None,
    cache_value: Any = None,
) -> int | None:
    """Enqueue one job on ``conn``; returns its id (as ``queue.enqueue`` answers it)."""
    params = _params(queue, category, priority, delay, max_attempts)
    params.update(
        payload=Jsonb(payload),
        dedup_key=dedup_key,
        cache_key=cache_key,
        cache_value=None if cache_value is None else Jsonb(cache_value),
    )
    row = conn.execute(sql.ENQUEUE, params).fetchone()
    return row[0] if row else None


def enqueue_many(
    conn: psycopg.Connection,
    payloads: Sequence[Any],
    queue: str = "default",
    *,
    category: str | None = None,
    priority: int = 0,
    delay: Seconds | None = None,
    max_attempts: int | None = None,
    dedup_keys: Sequence[str | None] | None = None,
) -> list[int | None]:
    """Enqueue many jobs in one statement on ``conn``; returns the ids in input order."""
    params = _params(queue, category, priority, delay, max_attempts)
    params.update(
        payloads=[Jsonb(p) for p in payloads],
        dedup_keys=list(dedup_keys) if dedup_keys is not None else None,
    )
    return [row[0] for row in conn.execute(sql.ENQUEUE_MANY, params).fetchall()]


class Client:
    """A producer bound to a DSN. Every method takes an optional ``conn`` to join the
    caller's transaction instead of committing on its own."""

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn

    def _connect(self) -> psycopg.Connection:
        return psycopg.connect(self.dsn, autocommit=True)

    def enqueue(
        self, payload: Any, queue: str = "default", *, conn: psycopg.Connection | None = None,
        **options: Any,
    ) -> int | None:  # fmt: skip
        if conn is not None:
            return enqueue(conn, payload, queue, **options)
        with self._connect() as own:
            return enqueue(own, payload, queue, **options)

    def enqueue_many(
        self, payloads: Sequence[Any], queue: str = "default", *,
        conn: psycopg.Connection | None = None, **options: Any,
    ) -> list[int | None]:  # fmt: skip
        if conn is not None:
            return enqueue_many(conn, payloads, queue, **options)
        with self._connect() as own:
            return enqueue_many(own, payloads, queue, **options)


def configure_queue(conn: psycopg.Connection, queue: str, **policy: Any) -> None:
    """Set a queue's policy (``queue.configure_queue``); options left out keep their value.

    Intervals (``lease``, ``backoff_base``, ``backoff_cap``) take seconds or a timedelta.
    """
    names = (
        "max_attempts", "lease", "backoff", "backoff_base", "backoff_cap", "jitter", "notify",
        "payload_limit", "keep_results", "cache_policy",
    )  # fmt: skip
    unknown = set(policy) - set(names)
    if unknown:
        raise TypeError(f"unknown queue option(s): {', '.join(sorted(unknown))}")
    params: dict[str, Any] = {name: policy.get(name) for name in names}
    for name in ("lease", "backoff_base", "backoff_cap"):
        params[name] = as_interval(params[name])
    conn.execute(sql.CONFIGURE_QUEUE, {"queue": queue, **params})


def set_category_limit(conn: psycopg.Connection, category: str, max_running: int) -> None:
    """At most ``max_running`` running jobs of ``category`` at once (0 pauses it)."""
    conn.execute(sql.SET_CATEGORY_LIMIT, {"category": category, "max_running": max_running})
