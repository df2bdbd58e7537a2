"""What handlers see and raise, and the registry that maps queues to handlers.

A handler is a plain function or an ``async def`` coroutine function; the worker runs a plain
one in its thread pool and awaits a coroutine function on its event loop (``Handler.is_async``,
decided once when the handler is registered). Either may be transactional: it then gets the
job's connection (a ``psycopg.Connection``, or a ``psycopg.AsyncConnection`` for an ``async
def``) inside the transaction that claimed the job and commits its completion.
"""

from __future__ import annotations

import inspect
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, TypeVar

import psycopg

from .jobs import Parent
from .jobs import parents as jobs_parents
from .policy.declared import Backoff, Periodic, Policy
from .values import Seconds, as_interval

HandlerFn = Callable[..., Any]
F = TypeVar("F", bound=HandlerFn)


#: Why a handler is asked to stop (``Job.abort_reason``): ``queue.cancel`` asked for it, or the
#: attempt reached its deadline (its timeout).
ABORTED, TIMEOUT = "aborted", "timeout"


class JobInterrupted(Exception):  # noqa: N818 - the name is the API
    """Raised by ``Job.check()`` once the worker asks the handler to stop: ``reason`` is
    ``"aborted"`` (``queue.cancel`` of the running job) or ``"timeout"`` (the attempt reached
    its deadline). A handler that lets it propagate ends the attempt as the worker would
    anyway: an aborted job ends cancelled, a timed-out attempt fails with reason timeout."""

    def __init__(self, job_id: int, reason: str) -> None:
        what = "an abort was requested" if reason == ABORTED else "its timeout passed"
        super().__init__(f"job {job_id}: {what}")
        self.job_id = job_id
        self.reason = reason


#: Its public name in tracebacks and error texts (``andal.JobInterrupted``, not the module it
#: is defined in): what a reader can look up.
JobInterrupted.__module__ = "andal"


class _Stop:
    """The one mutable part of a ``Job``: why the worker asks its handler to stop (None: it
    does not). Set once, by the worker's heartbeat thread."""

    __slots__ = ("reason",)

    def __init__(self) -> None:
        self.reason: str | None = None

    def __repr__(self) -> str:
        return f"<stop {self.reason}>" if self.reason else "<running>"


@dataclass(frozen=True, slots=True)
class Job:
    """One claimed job, as ``queue.claim`` returned it.

    ``deadline``: when this attempt must end (claim time + the job's timeout), None when the
    job has no timeout. ``abort_requested`` turns true, while the handler runs, once the
    worker asks it to stop (``abort_reason``: ``"aborted"`` when ``queue.cancel`` asked for
    the running job to stop, ``"timeout"`` at the deadline); ``check()`` raises
    ``JobInterrupted`` then. An ``async def`` handler is cancelled instead (its ``await``
    raises ``asyncio.CancelledError``).
    """

    id: int
    queue: str
    category: str | None
    payload: Any
    attempt: int
    max_attempts: int
    token: uuid.UUID
    lease_expires_at: datetime
    enqueued_at: datetime
    cache_key: str | None
    cache_version: int | None
    priority: int = 0
    #: The label of the database the job came from (``Source.label``: ``dbname@host:port``).
    database: str = ""
    deadline: datetime | None = None
    _stop: _Stop = field(default_factory=_Stop, repr=False, compare=False)
    #: The DSN of the job's database, for ``parents()`` (not shown: it may hold a password).
    _dsn: str = field(default="", repr=False, compare=False)

    def parents(self, conn: psycopg.Connection | None = None) -> list[Parent]:
        """The parents of this job (``after`` at its enqueue), in id order, each with its
        state and result (``queue.parent_results``: kept for this job whatever the parent's
        queue keeps). ``conn``: a connection to the job's database (a transactional
        handler's); else a short connection of its own."""
        if conn is not None:
            return jobs_parents(conn, self.id)
        with psycopg.connect(self._dsn, autocommit=True) as own:
            return jobs_parents(own, self.id)

    @property
    def abort_requested(self) -> bool:
        """Whether the worker asks the handler to stop (abort requested, or past the
        deadline); read it as often as needed: it is one attribute."""
        return self._stop.reason is not None

    @property
    def abort_reason(self) -> str | None:
        """``"aborted"``, ``"timeout"``, or None while the handler may go on."""
        return self._stop.reason

    def check(self) -> None:
        """Raise ``JobInterrupted`` when the worker asks the handler to stop."""
        reason = self._stop.reason
        if reason is not None:
            raise JobInterrupted(self.id, reason)


class Retry(Exception):  # noqa: N818 - the name is the API
    """Raise from a handler to fail this attempt and retry after ``delay`` (seconds/timedelta).

    Without a delay the queue's backoff policy decides. The attempt is spent: a job past its
    attempts is dead-lettered by ``queue.fail`` as usual.
    """

    def __init__(self, message: str = "retry requested", *, delay: Seconds | None = None):
        super().__init__(message)
        self.delay = as_interval(delay)


class Fail(Exception):  # noqa: N818 - the name is the API
    """Raise from a handler to fail the job for good: it is dead-lettered at once."""


def is_coroutine_function(fn: Any) -> bool:
    """Whether calling ``fn`` returns a coroutine: an ``async def`` function, or an object
    whose ``__call__`` is one."""
    if inspect.iscoroutinefunction(fn):
        return True
    call = getattr(fn, "__call__", None)  # noqa: B004 - the method itself is inspected
    return call is not None and inspect.iscoroutinefunction(call)


@dataclass(frozen=True)
class Handler:
    """A queue's handler: ``fn(job)`` (leased) or ``fn(job, conn)`` (transactional).

    ``is_async``: ``fn`` is a coroutine function (awaited on the worker's event loop).
    ``limit``: at most this many of the queue's jobs run at once in one worker (None: only
    the worker's ``concurrency`` bounds them). ``policy``: the queue's policy declared with
    it (``Registry.handler(timeout=...)``; None: none, the database's stays)."""

    queue: str
    fn: HandlerFn
    transactional: bool = False
    is_async: bool = False
    limit: int | None = None
    policy: Policy | None = None


def undecodable(handler: Handler, error: str) -> Handler:
    """A stand-in for a job whose payload this process cannot decode: it raises ``Fail``, in
    the handler's own form (so it runs where the handler would)."""
    message = f"the payload cannot be decoded by the Python driver ({error})"

    def fail(*_args: Any) -> None:
        raise Fail(message)

    async def afail(*_args: Any) -> None:
        raise Fail(message)

    fn = afail if handler.is_async else fail
    return Handler(handler.queue, fn, handler.transactional, handler.is_async, handler.limit)


class Registry:
    """Handlers by queue, with their queues' policies and the schedules declared with them.
    Fill it with ``@registry.handler("queue")`` (and ``@registry.periodic(...)``) or from a
    mapping queue -> function or ``Handler``."""

    def __init__(self, handlers: Mapping[str, HandlerFn | Handler] | None = None) -> None:
        self._handlers: dict[str, Handler] = {}
        self._periodics: dict[str, Periodic] = {}
        for queue, fn in (handlers or {}).items():
            if isinstance(fn, Handler):
                policy = fn.policy.keywords() if fn.policy else {}
                self.add(queue, fn.fn, transactional=fn.transactional, limit=fn.limit, **policy)
            else:
                self.add(queue, fn)

    @classmethod
    def coerce(cls, handlers: Registry | Mapping[str, HandlerFn | Handler] | None) -> Registry:
        return handlers if isinstance(handlers, Registry) else cls(handlers)

    def add(
        self, queue: str, fn: HandlerFn, *, transactional: bool = False, limit: int | None = None,
        timeout: Seconds | None = None, max_attempts: int | None = None,
        lease: Seconds | None = None, backoff: str | Backoff | None = None,
    ) -> Handler:  # fmt: skip
        """Register ``fn`` (a function or an ``async def``) as the handler of ``queue``.
        ``limit``: at most this many of the queue's jobs at once per worker. ``timeout``,
        ``max_attempts``, ``lease`` and ``backoff`` (a kind, or an ``andal.Backoff``): the
        queue's policy, ``queue.configure_queue``'s options of those names, which a worker
        gives the queue at its start when it was never configured (``apply_policy``)."""
        if not isinstance(queue, str) or not queue:
            raise ValueError("a queue name must be a non-empty string")
        if not callable(fn):
            raise TypeError(f"the handler of queue {queue!r} is not callable")
        if queue in self._handlers:
            raise ValueError(f"queue {queue!r} already has a handler")
        if limit is not None and (not isinstance(limit, int) or limit < 1):
            raise ValueError(f"the limit of queue {queue!r} must be a positive integer")
        policy = Policy(timeout, max_attempts, lease, backoff) or None
        handler = Handler(queue, fn, transactional, is_coroutine_function(fn), limit, policy)
        self._handlers[queue] = handler
        return handler

    def handler(
        self, queue: str, *, transactional: bool = False, limit: int | None = None,
        timeout: Seconds | None = None, max_attempts: int | None = None,
        lease: Seconds | None = None, backoff: str | Backoff | None = None,
    ) -> Callable[[F], F]:  # fmt: skip
        """Decorator: register ``fn`` as the handler of ``queue`` (the keywords: ``add``'s)."""
        policy = Policy(timeout, max_attempts, lease, backoff).keywords()

        def register(fn: F) -> F:
            self.add(queue, fn, transactional=transactional, limit=limit, **policy)
            return fn

        return register

    def periodic(
        self, name: str, cron: str | None = None, *, queue: str | None = None,
        payload: Any = None, timezone: str | None = None, every: Seconds | None = None,
        missed: str | None = None, catch_up: int | None = None, category: str | None = None,
        priority: int | None = None, enabled: bool | None = None,
    ) -> Callable[[F], F]:  # fmt: skip
        """Declare the schedule ``name`` (``queue.schedule``'s options of the same names;
        left out: its default), which a worker creates at its start when it is absent. It is
        declared at once; the call returns a decorator: on a handler (stacked with
        ``@registry.handler``, in either order) and without ``queue=``, the schedule is for
        that handler's queue."""
        if name in self._periodics:
            raise ValueError(f"schedule {name!r} is already declared")
        entry = Periodic(
            name, cron, queue, payload, timezone, every, missed, catch_up, category, priority,
            enabled,
        )  # fmt: skip
        self._periodics[name] = entry

        def bind(fn: F) -> F:
            if entry.queue is None:
                self._periodics[name] = replace(entry, fn=fn)
            return fn

        return bind

    def policies(self) -> dict[str, Policy]:
        """The declared policies, by queue (the queues that have one)."""
        return {q: h.policy for q, h in self._handlers.items() if h.policy is not None}

    def periodics(self) -> list[Periodic]:
        """The declared schedules, each with its queue (a decorated handler's when none was
        given). ``ValueError`` for one that names no queue and decorates no handler."""
        return [self._queue_of(entry) for entry in self._periodics.values()]

    def _queue_of(self, entry: Periodic) -> Periodic:
        if entry.queue is not None:
            return entry
        found = [q for q, h in self._handlers.items() if entry.fn is not None and h.fn is entry.fn]
        if len(found) != 1:
            raise ValueError(
                f"schedule {entry.name!r} names no queue and decorates the handler of "
                f"{'no queue' if not found else 'several queues'}: give queue=, or decorate"
                " the handler of its one queue with it (stacked with @registry.handler)"
            )
        return replace(entry, queue=found[0])

    def queues(self) -> list[str]:
        return list(self._handlers)

    def __getitem__(self, queue: str) -> Handler:
        return self._handlers[queue]

    def __contains__(self, queue: object) -> bool:
        return queue in self._handlers

    def __iter__(self) -> Iterator[str]:
        return iter(self._handlers)

    def __len__(self) -> int:
        return len(self._handlers)
