"""Producers: enqueue jobs, in the caller's transaction when a connection is given.

``enqueue(conn, payload, ...)`` and ``enqueue_many(conn, payloads, ...)`` run on the caller's
connection (so the job commits or rolls back with the caller's own writes). ``Client`` holds a
DSN and opens a short connection per call, or uses ``conn=`` when given one.

A ``Client`` may hold several DSNs (several andal databases, docs/multi-db.md): each job then
goes to the database of its queue, ``Client.dsn_for(queue)``: the one ``routes`` names for the
queue, otherwise ``dsns[route(queue, len(dsns))]``, where ``route`` is the CRC-32 of the queue
name modulo the number of databases.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from . import jobs, sql
from .worker import Seconds, as_interval, dsn_list


def route(queue: str, count: int) -> int:
    """The index of ``queue``'s database among ``count`` databases: the CRC-32 (IEEE 802.3,
    as ``zlib.crc32``, ``crc32`` of PHP, Go's ``hash/crc32.ChecksumIEEE``, ...) of the queue
    name's UTF-8 bytes, modulo ``count``. The same in every process, machine and Python
    version (unlike ``hash``); changing ``count`` moves most queues to another database."""
    if not isinstance(queue, str):
        raise TypeError("a queue name is a string")
    if count < 1:
        raise ValueError("count must be at least 1")
    return zlib.crc32(queue.encode("utf-8")) % count


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
    """A producer bound to one DSN or several. Every method takes an optional ``conn`` to
    join the caller's transaction instead of committing on its own.

    With several DSNs each job goes to the database of its queue (``dsn_for``): the DSN
    ``routes`` gives for the queue (a DSN of the list, or its index), otherwise
    ``dsns[route(queue, len(dsns))]``. With ``conn=`` the job goes on that connection: the
    caller chose the database (``dsn_for`` tells which one the queue belongs to). Job ids
    are per database: the same id may exist in two of them.
    """

    def __init__(
        self, dsn: str | Sequence[str], *, routes: Mapping[str, str | int] | None = None
    ) -> None:
        dsns = dsn_list(dsn)
        #: As given: one connection string, or the sequence of them.
        self.dsn = dsn
        #: Every connection string, in order.
        self.dsns: tuple[str, ...] = tuple(dsns)
        #: Explicit routes, queue -> index in ``dsns``; they win over the hash.
        self.routes: dict[str, int] = {}
        for queue, target in (routes or {}).items():
            if isinstance(target, int) and not isinstance(target, bool):
                if not 0 <= target < len(dsns):
                    raise ValueError(f"routes[{queue!r}]: no DSN at index {target}")
                self.routes[queue] = target
            elif isinstance(target, str) and target in dsns:
                self.routes[queue] = dsns.index(target)
            else:
                raise ValueError(f"routes[{queue!r}] is not one of the client's DSNs")

    def index_for(self, queue: str) -> int:
        """The position in ``dsns`` of the database ``queue``'s jobs go to."""
        found = self.routes.get(queue)
        return route(queue, len(self.dsns)) if found is None else found

    def dsn_for(self, queue: str) -> str:
        """The DSN of the database ``queue``'s jobs go to."""
        return self.dsns[self.index_for(queue)]

    def _connect(self, dsn: str | None = None) -> psycopg.Connection:
        return psycopg.connect(dsn or self.dsns[0], autocommit=True)

    def enqueue(
        self, payload: Any, queue: str = "default", *, conn: psycopg.Connection | None = None,
        **options: Any,
    ) -> int | None:  # fmt: skip
        """Enqueue one job on the database of ``queue`` (or on ``conn``); returns its id."""
        if conn is not None:
            return enqueue(conn, payload, queue, **options)
        with self._connect(self.dsn_for(queue)) as own:
            return enqueue(own, payload, queue, **options)

    def enqueue_many(
        self, payloads: Sequence[Any], queue: str | Sequence[str] = "default", *,
        conn: psycopg.Connection | None = None, **options: Any,
    ) -> list[int | None]:  # fmt: skip
        """Enqueue many jobs; returns their ids in input order.

        ``queue``: one queue for every job, or a sequence giving each job's queue (as long
        as ``payloads``). The jobs are grouped by database, then by queue: one statement per
        queue, one transaction per database (atomic within a database, not across them: when
        a database fails, the groups already sent to others stay committed). ``dedup_keys``
        (in ``options``) follow their payloads."""
        if isinstance(queue, str):
            if conn is not None:
                return enqueue_many(conn, payloads, queue, **options)
            with self._connect(self.dsn_for(queue)) as own:
                return enqueue_many(own, payloads, queue, **options)
        queues = list(queue)
        if len(queues) != len(payloads):
            raise ValueError("queue: give one queue name per payload")
        dedup_keys = options.pop("dedup_keys", None)
        if dedup_keys is not None and len(dedup_keys) != len(payloads):
            raise ValueError("dedup_keys: give one key (or None) per payload")
        # database index -> queue -> positions in the input, in input order
        plan: dict[int, dict[str, list[int]]] = {}
        for i, q in enumerate(queues):
            where = 0 if conn is not None else self.index_for(q)
            plan.setdefault(where, {}).setdefault(q, []).append(i)
        ids: list[int | None] = [None] * len(payloads)

        def send(c: psycopg.Connection, groups: dict[str, list[int]]) -> None:
            with c.transaction():
                for q, positions in groups.items():
                    keys = None if dedup_keys is None else [dedup_keys[i] for i in positions]
                    got = enqueue_many(
                        c, [payloads[i] for i in positions], q, dedup_keys=keys, **options
                    )
                    for i, job_id in zip(positions, got, strict=True):
                        ids[i] = job_id

        for where, groups in plan.items():
            if conn is not None:
                send(conn, groups)
                continue
            with self._connect(self.dsns[where]) as own:
                send(own, groups)
        return ids

    def job(self, job_id: int, *, queue: str | None = None) -> jobs.JobInfo | None:
        """``queue.job``: the job as andal remembers it, or None (see ``andal.jobs.job``).
        ``queue`` names the database with several DSNs (default: the first)."""
        with self._connect(None if queue is None else self.dsn_for(queue)) as own:
            return jobs.job(own, job_id)

    def wait(
        self, job_id: int, timeout: float, *, queue: str | None = None, poll: float = 1.0
    ) -> jobs.JobInfo | None:
        """Wait up to ``timeout`` seconds for the job to finish: its final state and result
        (see ``andal.jobs.wait``; TimeoutError when it is still live then)."""
        dsn = self.dsns[0] if queue is None else self.dsn_for(queue)
        return jobs.wait(dsn, job_id, timeout, poll=poll)


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
