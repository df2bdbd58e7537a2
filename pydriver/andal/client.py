"""Producers: enqueue jobs, in the caller's transaction when a connection is given.

``enqueue(conn, payload, ...)`` and ``enqueue_many(conn, payloads, ...)`` run on the caller's
connection (so the job commits or rolls back with the caller's own writes). ``Client`` holds a
DSN and opens a short connection per call, or uses ``conn=`` when given one.

Each function also takes a ``psycopg.AsyncConnection``: it then returns an awaitable
(``await andal.enqueue(aconn, ...)``), with the same statement and the same semantics.
``AsyncClient`` is ``Client`` for asyncio code: the same routing, every method awaited.

A ``Client`` may hold several DSNs (several andal databases, docs/multi-db.md): each job then
goes to the database of its queue, ``Client.dsn_for(queue)``: the one ``routes`` names for the
queue, otherwise ``dsns[route(queue, len(dsns))]``, where ``route`` is the CRC-32 of the queue
name modulo the number of databases.
"""

from __future__ import annotations

import zlib
from collections.abc import Awaitable, Mapping, Sequence
from typing import Any, overload

import psycopg
from psycopg.types.json import Jsonb

from . import calls, jobs, propagation
from . import operations as ops
from . import statements as sql
from .calls import AnyConnection
from .hosts import dsn_list
from .methods import AsyncOperations, Operations
from .values import Seconds, as_interval


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


def _check_after(after: Any, dedup: Any) -> None:
    """``after`` is a sequence of ids, not given with a dedup key (the SQL forms with
    ``after`` take none)."""
    if isinstance(after, (str, bytes)) or not isinstance(after, Sequence):
        raise TypeError("after: give a sequence of job ids")
    if dedup is not None:
        raise ValueError("after cannot be combined with a dedup key")


@overload
def enqueue(
    conn: psycopg.AsyncConnection[Any],
    payload: Any,
    queue: str = ...,
    *,
    category: str | None = ...,
    priority: int = ...,
    delay: Seconds | None = ...,
    max_attempts: int | None = ...,
    dedup_key: str | None = ...,
    cache_key: str | None = ...,
    cache_value: Any = ...,
    after: Sequence[int] | None = ...,
    on_parent_failure: str | None = ...,
    timeout: Seconds | None = ...,
) -> Awaitable[int | None]: ...
@overload
def enqueue(
    conn: psycopg.Connection[Any],
    payload: Any,
    queue: str = ...,
    *,
    category: str | None = ...,
    priority: int = ...,
    delay: Seconds | None = ...,
    max_attempts: int | None = ...,
    dedup_key: str | None = ...,
    cache_key: str | None = ...,
    cache_value: Any = ...,
    after: Sequence[int] | None = ...,
    on_parent_failure: str | None = ...,
    timeout: Seconds | None = ...,
) -> int | None: ...
def enqueue(
    conn: AnyConnection,
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
    after: Sequence[int] | None = None,
    on_parent_failure: str | None = None,
    timeout: Seconds | None = None,
) -> int | None | Awaitable[int | None]:
    """Enqueue one job on ``conn``; returns its id (as ``queue.enqueue`` answers it). On an
    ``AsyncConnection``, returns an awaitable of it. Inside a valid OpenTelemetry span the
    job carries the span's trace context (the worker links the job's span to it).

    ``after``: the ids of parent jobs (of this database): the job waits until every one of
    them has ended, then runs (docs/workflows.md); ``on_parent_failure``: ``"cancel"`` (the
    default) or ``"run"``, what a parent ending dead or cancelled does to it. Not with
    ``dedup_key``. ``timeout``: seconds (or a timedelta) each attempt may run before the
    worker stops it (default: the queue's, ``configure_queue(timeout=)``)."""
    params = _params(queue, category, priority, delay, max_attempts)
    params.update(
        payload=Jsonb(payload),
        dedup_key=dedup_key,
        cache_key=cache_key,
        cache_value=None if cache_value is None else Jsonb(cache_value),
        timeout=as_interval(timeout),
    )
    context = propagation.carrier()  # None unless a span is current (tracing on)
    if after is not None:
        _check_after(after, dedup_key)
        params.update(
            after=list(after),
            on_parent_failure=on_parent_failure,
            trace_context=None if context is None else Jsonb(context),
        )
        return calls.send(conn, sql.ENQUEUE_AFTER, params, calls.first)
    if context is None and timeout is None:
        return calls.send(conn, sql.ENQUEUE, params, calls.first)
    # the traced form also takes a timeout (its trace context may be null)
    params["trace_context"] = None if context is None else Jsonb(context)
    return calls.send(conn, sql.ENQUEUE_TRACED, params, calls.first)


@overload
def enqueue_many(
    conn: psycopg.AsyncConnection[Any],
    payloads: Sequence[Any],
    queue: str = ...,
    *,
    category: str | None = ...,
    priority: int = ...,
    delay: Seconds | None = ...,
    max_attempts: int | None = ...,
    dedup_keys: Sequence[str | None] | None = ...,
    after: Sequence[int] | None = ...,
    on_parent_failure: str | None = ...,
    timeout: Seconds | None = ...,
) -> Awaitable[list[int | None]]: ...
@overload
def enqueue_many(
    conn: psycopg.Connection[Any],
    payloads: Sequence[Any],
    queue: str = ...,
    *,
    category: str | None = ...,
    priority: int = ...,
    delay: Seconds | None = ...,
    max_attempts: int | None = ...,
    dedup_keys: Sequence[str | None] | None = ...,
    after: Sequence[int] | None = ...,
    on_parent_failure: str | None = ...,
    timeout: Seconds | None = ...,
) -> list[int | None]: ...
def enqueue_many(
    conn: AnyConnection,
    payloads: Sequence[Any],
    queue: str = "default",
    *,
    category: str | None = None,
    priority: int = 0,
    delay: Seconds | None = None,
    max_attempts: int | None = None,
    dedup_keys: Sequence[str | None] | None = None,
    after: Sequence[int] | None = None,
    on_parent_failure: str | None = None,
    timeout: Seconds | None = None,
) -> list[int | None] | Awaitable[list[int | None]]:
    """Enqueue many jobs in one statement on ``conn``; returns the ids in input order (an
    awaitable of them on an ``AsyncConnection``). ``after``, ``on_parent_failure`` and
    ``timeout``: as for ``enqueue``, for every job of the call (a fan-out); ``after`` not
    with ``dedup_keys``."""
    params = _params(queue, category, priority, delay, max_attempts)
    params.update(
        payloads=[Jsonb(p) for p in payloads],
        dedup_keys=list(dedup_keys) if dedup_keys is not None else None,
        timeout=as_interval(timeout),
    )
    if after is not None:
        _check_after(after, dedup_keys)
        params.update(after=list(after), on_parent_failure=on_parent_failure)
        return calls.send(conn, sql.ENQUEUE_MANY_AFTER, params, calls.column)
    if timeout is not None:
        return calls.send(conn, sql.ENQUEUE_MANY_TIMEOUT, params, calls.column)
    return calls.send(conn, sql.ENQUEUE_MANY, params, calls.column)


class _Routes:
    """Which database each queue's jobs go to (see ``Client``); shared by both clients."""

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

    def _plan(
        self, payloads: Sequence[Any], queues: Sequence[str], one_conn: bool,
        options: dict[str, Any],
    ) -> tuple[dict[int, dict[str, list[int]]], Sequence[str | None] | None]:  # fmt: skip
        """Jobs of several queues, grouped: database index -> queue -> positions in the
        input, in input order (everything on database 0 when the caller gave ``conn``); and
        the ``dedup_keys`` taken out of ``options``."""
        if len(queues) != len(payloads):
            raise ValueError("queue: give one queue name per payload")
        dedup_keys = options.pop("dedup_keys", None)
        if dedup_keys is not None and len(dedup_keys) != len(payloads):
            raise ValueError("dedup_keys: give one key (or None) per payload")
        plan: dict[int, dict[str, list[int]]] = {}
        for i, q in enumerate(queues):
            where = 0 if one_conn else self.index_for(q)
            plan.setdefault(where, {}).setdefault(q, []).append(i)
        return plan, dedup_keys


def _group(
    payloads: Sequence[Any], positions: list[int], dedup_keys: Sequence[str | None] | None
) -> tuple[list[Any], list[str | None] | None]:
    keys = None if dedup_keys is None else [dedup_keys[i] for i in positions]
    return [payloads[i] for i in positions], keys


class Client(_Routes, Operations):
    """A producer bound to one DSN or several. Every method takes an optional ``conn`` to
    join the caller's transaction instead of committing on its own.

    With several DSNs each job goes to the database of its queue (``dsn_for``): the DSN
    ``routes`` gives for the queue (a DSN of the list, or its index), otherwise
    ``dsns[route(queue, len(dsns))]``. With ``conn=`` the job goes on that connection: the
    caller chose the database (``dsn_for`` tells which one the queue belongs to). Job ids
    are per database: the same id may exist in two of them.
    """

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
        plan, dedup_keys = self._plan(payloads, list(queue), conn is not None, options)
        ids: list[int | None] = [None] * len(payloads)

        def send(c: psycopg.Connection, groups: dict[str, list[int]]) -> None:
            with c.transaction():
                for q, positions in groups.items():
                    batch, keys = _group(payloads, positions, dedup_keys)
                    got = enqueue_many(c, batch, q, dedup_keys=keys, **options)
                    for i, job_id in zip(positions, got, strict=True):
                        ids[i] = job_id

        for where, groups in plan.items():
            if conn is not None:
                send(conn, groups)
                continue
            with self._connect(self.dsns[where]) as own:
                send(own, groups)
        return ids

    def wait(
        self, job_id: int, timeout: float, *, queue: str | None = None, poll: float = 1.0
    ) -> jobs.JobInfo | None:
        """Wait up to ``timeout`` seconds for the job to finish: its final state and result
        (see ``andal.jobs.wait``; TimeoutError when it is still live then)."""
        dsn = self.dsns[0] if queue is None else self.dsn_for(queue)
        return jobs.wait(dsn, job_id, timeout, poll=poll)


class AsyncClient(_Routes, AsyncOperations):
    """``Client`` for asyncio code: the same routing and semantics, on
    ``psycopg.AsyncConnection`` (``conn=`` joins the caller's transaction)."""

    async def _connect(self, dsn: str) -> psycopg.AsyncConnection:
        return await psycopg.AsyncConnection.connect(dsn, autocommit=True)

    async def enqueue(
        self, payload: Any, queue: str = "default", *,
        conn: psycopg.AsyncConnection | None = None, **options: Any,
    ) -> int | None:  # fmt: skip
        """Enqueue one job on the database of ``queue`` (or on ``conn``); returns its id."""
        if conn is not None:
            return await enqueue(conn, payload, queue, **options)
        async with await self._connect(self.dsn_for(queue)) as own:
            return await enqueue(own, payload, queue, **options)

    async def enqueue_many(
        self, payloads: Sequence[Any], queue: str | Sequence[str] = "default", *,
        conn: psycopg.AsyncConnection | None = None, **options: Any,
    ) -> list[int | None]:  # fmt: skip
        """Enqueue many jobs; returns their ids in input order (see ``Client.enqueue_many``)."""
        if isinstance(queue, str):
            if conn is not None:
                return await enqueue_many(conn, payloads, queue, **options)
            async with await self._connect(self.dsn_for(queue)) as own:
                return await enqueue_many(own, payloads, queue, **options)
        plan, dedup_keys = self._plan(payloads, list(queue), conn is not None, options)
        ids: list[int | None] = [None] * len(payloads)

        async def send(c: psycopg.AsyncConnection, groups: dict[str, list[int]]) -> None:
            async with c.transaction():
                for q, positions in groups.items():
                    batch, keys = _group(payloads, positions, dedup_keys)
                    got = await enqueue_many(c, batch, q, dedup_keys=keys, **options)
                    for i, job_id in zip(positions, got, strict=True):
                        ids[i] = job_id

        for where, groups in plan.items():
            if conn is not None:
                await send(conn, groups)
                continue
            async with await self._connect(self.dsns[where]) as own:
                await send(own, groups)
        return ids

    async def wait(
        self, job_id: int, timeout: float, *, queue: str | None = None, poll: float = 1.0
    ) -> jobs.JobInfo | None:
        """``Client.wait``, awaited (``andal.jobs.await_job``)."""
        dsn = self.dsns[0] if queue is None else self.dsn_for(queue)
        return await jobs.await_job(dsn, job_id, timeout, poll=poll)


def configure_queue(conn: AnyConnection, queue: str, **policy: Any) -> None | Awaitable[None]:
    """Set a queue's policy (``queue.configure_queue``); options left out keep their value.

    The options: ``andal.operations.QUEUE_OPTIONS`` (``timeout``, ``max_attempts``, ``lease``,
    ``backoff``, ..., ``results_retention``, ``dead_retention``); intervals take seconds or a
    timedelta, ``timeout=0`` removes the queue's timeout. On an ``AsyncConnection``, returns
    an awaitable. ``Client.configure_queue`` also returns the queue's settings.
    """
    made = ops.configure_queue(queue, policy)
    return calls.send(conn, made.statement, made.params, calls.nothing)


def set_category_limit(
    conn: AnyConnection, category: str, max_running: int
) -> None | Awaitable[None]:
    """At most ``max_running`` running jobs of ``category`` at once (0 pauses it); on an
    ``AsyncConnection``, returns an awaitable."""
    params = {"category": category, "max_running": max_running}
    return calls.send(conn, sql.SET_CATEGORY_LIMIT, params, calls.nothing)
