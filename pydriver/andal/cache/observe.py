"""What a ``Cache`` tells the outside: the follower's position, the store's size, the read
counters (``stats``), and their report to ``cache.report_reads``."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import Any

import psycopg

from .. import statements as sql
from .follower import Follower
from .store import Entry, Store


class Observed:
    """The observable side of ``Cache`` (its base class)."""

    _store: Store
    _follower: Follower
    pool_name: str

    def _conn(self, conn: psycopg.Connection | None) -> AbstractContextManager[psycopg.Connection]:
        raise NotImplementedError

    @property
    def _entries(self) -> Mapping[str, Entry]:
        """The local entries, least recently used first (for tests and diagnostics)."""
        return self._store.entries

    @property
    def watermark(self) -> int:
        return self._follower.watermark

    @property
    def epoch(self) -> int | None:
        return self._follower.epoch

    @property
    def confirmed_at(self) -> float:
        """time.monotonic() at the start of the last complete read of the log."""
        return self._follower.confirmed_at

    @property
    def listening(self) -> bool:
        return self._follower.listening

    @property
    def listener_pid(self) -> int | None:
        """Backend pid of the listener connection (for tests and diagnostics)."""
        return self._follower.listener_pid

    @property
    def follows_by(self) -> str:
        """How the follower hears of changes: ``dsn``, ``listen_dsn`` or ``polling``."""
        return self._follower.via

    def live(self) -> bool:
        """Whether local entries may be served now (the log was read recently enough)."""
        return self._follower.live(time.monotonic())

    def __len__(self) -> int:
        return len(self._store.entries)

    @property
    def size_bytes(self) -> int:
        return self._store.bytes

    def stats(self) -> dict[str, Any]:
        """Counters for the observability exporter: per job type (local_hit, shared_hit,
        stale_hit, miss, refetch, repair) within this cache's worker pool, and the state of
        the follower."""
        f = self._follower
        with self._store.lock:
            return {
                "pool": self.pool_name,
                "by_job_type": self._store.by_job_type(),
                "entries": len(self._store.entries),
                "bytes": self._store.bytes,
                "watermark": f.watermark,
                "epoch": f.epoch,
                "listening": f.listening,
                "live": f.live(time.monotonic()),
                **dict(self._store.events),
            }

    def report(self, conn: psycopg.Connection | None = None) -> int:
        """Send the read counters gathered since the last report to ``cache.report_reads``
        (hit/miss per job type and worker pool, answerable in SQL by ``cache.stats()``).
        The follower calls it every ``report_every`` seconds. Returns the job types sent."""
        delta = self._store.unreported()
        if not delta:
            return 0
        try:
            with self._conn(conn) as c:
                params = {"pool": self.pool_name, "counts": json.dumps(delta)}
                c.execute(sql.CACHE_REPORT_READS, params)
        except BaseException:
            self._store.unsend(delta)
            raise
        return len(delta)

    def hit_ratio(self, job_type: str | None = None) -> float:
        """(local + shared hits) / reads, for one job type or all."""
        return self._store.hit_ratio(job_type)
