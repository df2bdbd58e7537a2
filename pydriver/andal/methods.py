"""``Client`` and ``AsyncClient``'s day-two methods, one per SQL function (``andal.operations``).

Each method runs its call on a short connection of its own (autocommit), or on ``conn`` (the
caller's transaction). With several DSNs, ``queue`` names the database: the method's own
queue when it has one, else the ``queue=`` keyword (default: the first DSN).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, TypeVar

import psycopg

from . import operations as ops
from .jobs import Child, JobInfo, JobOrigin, Parent
from .operations import (
    CategoryLimit,
    DeadLetter,
    MinuteStats,
    QueueSettings,
    QueueStats,
    QueueStatus,
    RateLimit,
    Requeued,
    Schedule,
    WorkerInfo,
)
from .values import Seconds

T = TypeVar("T")


class Operations:
    """The methods of ``Client`` (``_Routes`` gives ``dsns`` and ``dsn_for``)."""

    dsns: tuple[str, ...]

    def dsn_for(self, queue: str) -> str:
        raise NotImplementedError

    def _run(self, made: ops.Call[T], queue: str | None, conn: psycopg.Connection[Any] | None) -> T:
        if conn is not None:
            return made.run(conn)
        dsn = self.dsns[0] if queue is None else self.dsn_for(queue)
        with psycopg.connect(dsn, autocommit=True) as own:
            return made.run(own)

    def job(
        self, job_id: int, *, queue: str | None = None, conn: psycopg.Connection[Any] | None = None
    ) -> JobInfo | None:
        """``queue.job``: the job as andal remembers it, or None."""
        return self._run(ops.job(job_id), queue, conn)

    def parents(
        self, job_id: int, *, queue: str | None = None, conn: psycopg.Connection[Any] | None = None
    ) -> list[Parent]:
        """``queue.parent_results``: the job's parents, their states and kept results."""
        return self._run(ops.parents(job_id), queue, conn)

    def children(
        self, job_id: int, *, queue: str | None = None, conn: psycopg.Connection[Any] | None = None
    ) -> list[Child]:
        """``queue.child_jobs``: the job's children, and whether each still waits for it."""
        return self._run(ops.children(job_id), queue, conn)

    def job_origin(
        self, job_id: int, *, queue: str | None = None, conn: psycopg.Connection[Any] | None = None
    ) -> JobOrigin | None:
        """``queue.job_origin``: the schedule or cache key a job came from; None if forgotten."""
        return self._run(ops.job_origin(job_id), queue, conn)

    def job_payload(
        self, job_id: int, *, queue: str | None = None, conn: psycopg.Connection[Any] | None = None
    ) -> Any:
        """``queue.job_payload``: a live or dead job's payload (``andal_admin``)."""
        return self._run(ops.job_payload(job_id), queue, conn)

    def jobs_by(
        self,
        queue: str | None = None,
        *,
        state: str | None = None,
        before: int | None = None,
        limit: int = 100,
        conn: psycopg.Connection[Any] | None = None,
    ) -> list[JobInfo]:
        """``queue.jobs_by``: a page of jobs, newest first (``before``: ids below it; ``state``: one
        state)."""
        return self._run(ops.jobs_by(queue, state, before, limit), queue, conn)

    def cancel(
        self, job_id: int, *, queue: str | None = None, conn: psycopg.Connection[Any] | None = None
    ) -> None:
        """``queue.cancel``: withdraw a pending job, or ask a running one to stop."""
        return self._run(ops.cancel(job_id), queue, conn)

    def pause(self, queue: str, *, conn: psycopg.Connection[Any] | None = None) -> None:
        """``queue.pause``: no claim takes the queue's jobs until ``resume``."""
        return self._run(ops.pause(queue), queue, conn)

    def resume(self, queue: str, *, conn: psycopg.Connection[Any] | None = None) -> None:
        """``queue.resume``: the queue's jobs are claimed again."""
        return self._run(ops.resume(queue), queue, conn)

    def queue_settings(
        self, queue: str, *, conn: psycopg.Connection[Any] | None = None
    ) -> QueueSettings:
        """``queue.queue_settings``: the queue's policy (the defaults when never configured)."""
        return self._run(ops.queue_settings(queue), queue, conn)

    def configure_queue(
        self, queue: str, *, conn: psycopg.Connection[Any] | None = None, **options: Any
    ) -> QueueSettings:
        """``queue.configure_queue``: set the options given (``ops.QUEUE_OPTIONS``; intervals in
        seconds or a timedelta, ``timeout=0`` removes the timeout); returns the queue's settings."""
        return self._run(ops.configure_queue(queue, options), queue, conn)

    def set_history(
        self, queue: str, retention: Seconds | None, *, conn: psycopg.Connection[Any] | None = None
    ) -> None:
        """``queue.set_history``: keep the queue's finished jobs for ``retention`` (None: no
        history)."""
        return self._run(ops.set_history(queue, retention), queue, conn)

    def configure_history(
        self,
        partition_width: Seconds,
        *,
        queue: str | None = None,
        conn: psycopg.Connection[Any] | None = None,
    ) -> None:
        """``queue.configure_history``: the width of the history's partitions."""
        return self._run(ops.configure_history(partition_width), queue, conn)

    def dead_letters(
        self,
        queue: str | None = None,
        *,
        reason: str | None = None,
        before: int | None = None,
        limit: int = 50,
        conn: psycopg.Connection[Any] | None = None,
    ) -> list[DeadLetter]:
        """``queue.dead_letters_by``: a page of dead letters, newest first, without payloads."""
        return self._run(ops.dead_letters(queue, reason, before, limit), queue, conn)

    def requeue_dead(
        self,
        job_id: int,
        *,
        with_children: bool = False,
        queue: str | None = None,
        conn: psycopg.Connection[Any] | None = None,
    ) -> int:
        """``queue.requeue_dead``: the dead job back in its queue, ready now; returns its id."""
        return self._run(ops.requeue_dead(job_id, with_children), queue, conn)

    def requeue_dead_matching(
        self,
        queue: str | None = None,
        *,
        reason: str | None = None,
        older_than: Seconds | None = None,
        max_rows: int = 1000,
        conn: psycopg.Connection[Any] | None = None,
    ) -> Requeued:
        """``queue.requeue_dead_matching``: requeue up to ``max_rows`` dead letters matching every
        filter given."""
        return self._run(
            ops.requeue_dead_matching(queue, reason, older_than, max_rows), queue, conn
        )

    def purge_dead(
        self,
        queue: str | None = None,
        *,
        reason: str | None = None,
        older_than: Seconds | None = None,
        max_rows: int = 1000,
        conn: psycopg.Connection[Any] | None = None,
    ) -> int:
        """``queue.purge_dead_matching``: delete up to ``max_rows`` dead letters matching every
        filter given (at least one; ``older_than=0`` alone: any); returns how many."""
        return self._run(ops.purge_dead(queue, reason, older_than, max_rows), queue, conn)

    def purge_dead_jobs(
        self,
        job_ids: Sequence[int],
        *,
        queue: str | None = None,
        conn: psycopg.Connection[Any] | None = None,
    ) -> int:
        """``queue.purge_dead_jobs``: delete these dead letters; returns how many."""
        return self._run(ops.purge_dead_jobs(job_ids), queue, conn)

    def schedule(
        self,
        name: str,
        queue: str | None = None,
        *,
        conn: psycopg.Connection[Any] | None = None,
        **options: Any,
    ) -> datetime:
        """``queue.schedule``: create or update a schedule (``cron=`` or ``every=``, ``payload``,
        ``timezone``, ``category``, ``priority``, ``max_attempts``, ``missed``, ``catch_up``,
        ``enabled``); returns its next fire time."""
        return self._run(ops.schedule(name, queue, options), queue, conn)

    def unschedule(
        self, name: str, *, queue: str | None = None, conn: psycopg.Connection[Any] | None = None
    ) -> bool:
        """``queue.unschedule``: drop a schedule; False when there was none."""
        return self._run(ops.unschedule(name), queue, conn)

    def schedules(
        self, *, queue: str | None = None, conn: psycopg.Connection[Any] | None = None
    ) -> list[Schedule]:
        """``queue.schedules``: every schedule, andal's own included."""
        return self._run(ops.schedules(), queue, conn)

    def set_rate_limit(
        self,
        category: str,
        starts: int | None,
        per: Seconds | None,
        *,
        queue: str | None = None,
        conn: psycopg.Connection[Any] | None = None,
    ) -> None:
        """``queue.set_rate_limit``: at most ``starts`` starts of the category's jobs per ``per``
        seconds (both None: no limit)."""
        return self._run(ops.set_rate_limit(category, starts, per), queue, conn)

    def rate_limits(
        self, *, queue: str | None = None, conn: psycopg.Connection[Any] | None = None
    ) -> list[RateLimit]:
        """``queue.rate_limits``: every category's limits."""
        return self._run(ops.rate_limits(), queue, conn)

    def set_category_limit(
        self,
        category: str,
        max_running: int,
        *,
        queue: str | None = None,
        conn: psycopg.Connection[Any] | None = None,
    ) -> None:
        """``queue.set_category_limit``: at most ``max_running`` running jobs of the category (0
        pauses it)."""
        return self._run(ops.set_category_limit(category, max_running), queue, conn)

    def category_limits(
        self, *, queue: str | None = None, conn: psycopg.Connection[Any] | None = None
    ) -> list[CategoryLimit]:
        """``queue.category_limits``: every known category and its limit."""
        return self._run(ops.category_limits(), queue, conn)

    def status(
        self, *, queue: str | None = None, conn: psycopg.Connection[Any] | None = None
    ) -> list[QueueStatus]:
        """``queue.status``: each queue's counts."""
        return self._run(ops.status(), queue, conn)

    def stats(
        self, *, queue: str | None = None, conn: psycopg.Connection[Any] | None = None
    ) -> list[QueueStats]:
        """``queue.stats``: each queue's (and category's) counts, rates and latencies."""
        return self._run(ops.stats(), queue, conn)

    def stats_by_minute(
        self,
        span: Seconds | None = None,
        *,
        queue: str | None = None,
        conn: psycopg.Connection[Any] | None = None,
    ) -> list[MinuteStats]:
        """``queue.stats_by_minute``: per queue and minute over ``span`` seconds (default an
        hour)."""
        return self._run(ops.stats_by_minute(span), queue, conn)

    def workers(
        self, *, queue: str | None = None, conn: psycopg.Connection[Any] | None = None
    ) -> list[WorkerInfo]:
        """``queue.workers``: the workers holding jobs or sessions."""
        return self._run(ops.workers(), queue, conn)

    def maintain(
        self, *, queue: str | None = None, conn: psycopg.Connection[Any] | None = None
    ) -> int:
        """``queue.maintain``: run the housekeeping now (a worker does it every minute)."""
        return self._run(ops.maintain(), queue, conn)

    def version(
        self, *, queue: str | None = None, conn: psycopg.Connection[Any] | None = None
    ) -> str:
        """``queue.version``: the release installed in the database."""
        return self._run(ops.version(), queue, conn)


class AsyncOperations:
    """The methods of ``AsyncClient``: ``Operations``, awaited."""

    dsns: tuple[str, ...]

    def dsn_for(self, queue: str) -> str:
        raise NotImplementedError

    async def _arun(
        self, made: ops.Call[T], queue: str | None, conn: psycopg.AsyncConnection[Any] | None
    ) -> T:
        if conn is not None:
            return await made.arun(conn)
        dsn = self.dsns[0] if queue is None else self.dsn_for(queue)
        async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as own:
            return await made.arun(own)

    async def job(
        self,
        job_id: int,
        *,
        queue: str | None = None,
        conn: psycopg.AsyncConnection[Any] | None = None,
    ) -> JobInfo | None:
        """``queue.job``: the job as andal remembers it, or None."""
        return await self._arun(ops.job(job_id), queue, conn)

    async def parents(
        self,
        job_id: int,
        *,
        queue: str | None = None,
        conn: psycopg.AsyncConnection[Any] | None = None,
    ) -> list[Parent]:
        """``queue.parent_results``: the job's parents, their states and kept results."""
        return await self._arun(ops.parents(job_id), queue, conn)

    async def children(
        self,
        job_id: int,
        *,
        queue: str | None = None,
        conn: psycopg.AsyncConnection[Any] | None = None,
    ) -> list[Child]:
        """``queue.child_jobs``: the job's children, and whether each still waits for it."""
        return await self._arun(ops.children(job_id), queue, conn)

    async def job_origin(
        self,
        job_id: int,
        *,
        queue: str | None = None,
        conn: psycopg.AsyncConnection[Any] | None = None,
    ) -> JobOrigin | None:
        """``queue.job_origin``: the schedule or cache key a job came from; None if forgotten."""
        return await self._arun(ops.job_origin(job_id), queue, conn)

    async def job_payload(
        self,
        job_id: int,
        *,
        queue: str | None = None,
        conn: psycopg.AsyncConnection[Any] | None = None,
    ) -> Any:
        """``queue.job_payload``: a live or dead job's payload (``andal_admin``)."""
        return await self._arun(ops.job_payload(job_id), queue, conn)

    async def jobs_by(
        self,
        queue: str | None = None,
        *,
        state: str | None = None,
        before: int | None = None,
        limit: int = 100,
        conn: psycopg.AsyncConnection[Any] | None = None,
    ) -> list[JobInfo]:
        """``queue.jobs_by``: a page of jobs, newest first (``before``: ids below it; ``state``: one
        state)."""
        return await self._arun(ops.jobs_by(queue, state, before, limit), queue, conn)

    async def cancel(
        self,
        job_id: int,
        *,
        queue: str | None = None,
        conn: psycopg.AsyncConnection[Any] | None = None,
    ) -> None:
        """``queue.cancel``: withdraw a pending job, or ask a running one to stop."""
        return await self._arun(ops.cancel(job_id), queue, conn)

    async def pause(self, queue: str, *, conn: psycopg.AsyncConnection[Any] | None = None) -> None:
        """``queue.pause``: no claim takes the queue's jobs until ``resume``."""
        return await self._arun(ops.pause(queue), queue, conn)

    async def resume(self, queue: str, *, conn: psycopg.AsyncConnection[Any] | None = None) -> None:
        """``queue.resume``: the queue's jobs are claimed again."""
        return await self._arun(ops.resume(queue), queue, conn)

    async def queue_settings(
        self, queue: str, *, conn: psycopg.AsyncConnection[Any] | None = None
    ) -> QueueSettings:
        """``queue.queue_settings``: the queue's policy (the defaults when never configured)."""
        return await self._arun(ops.queue_settings(queue), queue, conn)

    async def configure_queue(
        self, queue: str, *, conn: psycopg.AsyncConnection[Any] | None = None, **options: Any
    ) -> QueueSettings:
        """``queue.configure_queue``: set the options given (``ops.QUEUE_OPTIONS``; intervals in
        seconds or a timedelta, ``timeout=0`` removes the timeout); returns the queue's settings."""
        return await self._arun(ops.configure_queue(queue, options), queue, conn)

    async def set_history(
        self,
        queue: str,
        retention: Seconds | None,
        *,
        conn: psycopg.AsyncConnection[Any] | None = None,
    ) -> None:
        """``queue.set_history``: keep the queue's finished jobs for ``retention`` (None: no
        history)."""
        return await self._arun(ops.set_history(queue, retention), queue, conn)

    async def configure_history(
        self,
        partition_width: Seconds,
        *,
        queue: str | None = None,
        conn: psycopg.AsyncConnection[Any] | None = None,
    ) -> None:
        """``queue.configure_history``: the width of the history's partitions."""
        return await self._arun(ops.configure_history(partition_width), queue, conn)

    async def dead_letters(
        self,
        queue: str | None = None,
        *,
        reason: str | None = None,
        before: int | None = None,
        limit: int = 50,
        conn: psycopg.AsyncConnection[Any] | None = None,
    ) -> list[DeadLetter]:
        """``queue.dead_letters_by``: a page of dead letters, newest first, without payloads."""
        return await self._arun(ops.dead_letters(queue, reason, before, limit), queue, conn)

    async def requeue_dead(
        self,
        job_id: int,
        *,
        with_children: bool = False,
        queue: str | None = None,
        conn: psycopg.AsyncConnection[Any] | None = None,
    ) -> int:
        """``queue.requeue_dead``: the dead job back in its queue, ready now; returns its id."""
        return await self._arun(ops.requeue_dead(job_id, with_children), queue, conn)

    async def requeue_dead_matching(
        self,
        queue: str | None = None,
        *,
        reason: str | None = None,
        older_than: Seconds | None = None,
        max_rows: int = 1000,
        conn: psycopg.AsyncConnection[Any] | None = None,
    ) -> Requeued:
        """``queue.requeue_dead_matching``: requeue up to ``max_rows`` dead letters matching every
        filter given."""
        return await self._arun(
            ops.requeue_dead_matching(queue, reason, older_than, max_rows), queue, conn
        )

    async def purge_dead(
        self,
        queue: str | None = None,
        *,
        reason: str | None = None,
        older_than: Seconds | None = None,
        max_rows: int = 1000,
        conn: psycopg.AsyncConnection[Any] | None = None,
    ) -> int:
        """``queue.purge_dead_matching``: delete up to ``max_rows`` dead letters matching every
        filter given (at least one; ``older_than=0`` alone: any); returns how many."""
        return await self._arun(ops.purge_dead(queue, reason, older_than, max_rows), queue, conn)

    async def purge_dead_jobs(
        self,
        job_ids: Sequence[int],
        *,
        queue: str | None = None,
        conn: psycopg.AsyncConnection[Any] | None = None,
    ) -> int:
        """``queue.purge_dead_jobs``: delete these dead letters; returns how many."""
        return await self._arun(ops.purge_dead_jobs(job_ids), queue, conn)

    async def schedule(
        self,
        name: str,
        queue: str | None = None,
        *,
        conn: psycopg.AsyncConnection[Any] | None = None,
        **options: Any,
    ) -> datetime:
        """``queue.schedule``: create or update a schedule (``cron=`` or ``every=``, ``payload``,
        ``timezone``, ``category``, ``priority``, ``max_attempts``, ``missed``, ``catch_up``,
        ``enabled``); returns its next fire time."""
        return await self._arun(ops.schedule(name, queue, options), queue, conn)

    async def unschedule(
        self,
        name: str,
        *,
        queue: str | None = None,
        conn: psycopg.AsyncConnection[Any] | None = None,
    ) -> bool:
        """``queue.unschedule``: drop a schedule; False when there was none."""
        return await self._arun(ops.unschedule(name), queue, conn)

    async def schedules(
        self, *, queue: str | None = None, conn: psycopg.AsyncConnection[Any] | None = None
    ) -> list[Schedule]:
        """``queue.schedules``: every schedule, andal's own included."""
        return await self._arun(ops.schedules(), queue, conn)

    async def set_rate_limit(
        self,
        category: str,
        starts: int | None,
        per: Seconds | None,
        *,
        queue: str | None = None,
        conn: psycopg.AsyncConnection[Any] | None = None,
    ) -> None:
        """``queue.set_rate_limit``: at most ``starts`` starts of the category's jobs per ``per``
        seconds (both None: no limit)."""
        return await self._arun(ops.set_rate_limit(category, starts, per), queue, conn)

    async def rate_limits(
        self, *, queue: str | None = None, conn: psycopg.AsyncConnection[Any] | None = None
    ) -> list[RateLimit]:
        """``queue.rate_limits``: every category's limits."""
        return await self._arun(ops.rate_limits(), queue, conn)

    async def set_category_limit(
        self,
        category: str,
        max_running: int,
        *,
        queue: str | None = None,
        conn: psycopg.AsyncConnection[Any] | None = None,
    ) -> None:
        """``queue.set_category_limit``: at most ``max_running`` running jobs of the category (0
        pauses it)."""
        return await self._arun(ops.set_category_limit(category, max_running), queue, conn)

    async def category_limits(
        self, *, queue: str | None = None, conn: psycopg.AsyncConnection[Any] | None = None
    ) -> list[CategoryLimit]:
        """``queue.category_limits``: every known category and its limit."""
        return await self._arun(ops.category_limits(), queue, conn)

    async def status(
        self, *, queue: str | None = None, conn: psycopg.AsyncConnection[Any] | None = None
    ) -> list[QueueStatus]:
        """``queue.status``: each queue's counts."""
        return await self._arun(ops.status(), queue, conn)

    async def stats(
        self, *, queue: str | None = None, conn: psycopg.AsyncConnection[Any] | None = None
    ) -> list[QueueStats]:
        """``queue.stats``: each queue's (and category's) counts, rates and latencies."""
        return await self._arun(ops.stats(), queue, conn)

    async def stats_by_minute(
        self,
        span: Seconds | None = None,
        *,
        queue: str | None = None,
        conn: psycopg.AsyncConnection[Any] | None = None,
    ) -> list[MinuteStats]:
        """``queue.stats_by_minute``: per queue and minute over ``span`` seconds (default an
        hour)."""
        return await self._arun(ops.stats_by_minute(span), queue, conn)

    async def workers(
        self, *, queue: str | None = None, conn: psycopg.AsyncConnection[Any] | None = None
    ) -> list[WorkerInfo]:
        """``queue.workers``: the workers holding jobs or sessions."""
        return await self._arun(ops.workers(), queue, conn)

    async def maintain(
        self, *, queue: str | None = None, conn: psycopg.AsyncConnection[Any] | None = None
    ) -> int:
        """``queue.maintain``: run the housekeeping now (a worker does it every minute)."""
        return await self._arun(ops.maintain(), queue, conn)

    async def version(
        self, *, queue: str | None = None, conn: psycopg.AsyncConnection[Any] | None = None
    ) -> str:
        """``queue.version``: the release installed in the database."""
        return await self._arun(ops.version(), queue, conn)
