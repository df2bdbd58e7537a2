"""The ``Cache``: a per-process local cache in front of andal's shared cache.

Reads go local → shared (``cache.get``) → a loader you pass (the primary store), and refill
both on the way back. The local copy follows the shared cache's change log (``follower``):
on NOTIFY (its own listener thread, on ``listen_dsn`` when given), on every ``poll()`` (call
it from a worker's poll loop), and after every reconnect (replay from the watermark, or flush
when the log was pruned past it or the shared cache lost its epoch).

Guarantees (see docs/cache.md):

* A local entry is dropped as soon as a change with a higher version of its key is read from
  the log, and an entry fetched while such a change was being read is never stored.
* Local entries are served only while the log has been read completely within the last
  ``max_staleness`` seconds; otherwise reads go to the shared cache. A lost listener stops
  local hits at once.
* ``min_version`` (a claimed job's ``cache_version``) forces a refetch of an older entry: a
  job never sees data older than the change it depends on.
* Read-repair (``repair``): with ``verify`` > 0 a sample of hits is compared, by checksum,
  with the loader's value; a mismatch invalidates the shared entry (every cache drops it) and
  refills it with the loader's value.
* Hits, stale hits and misses are counted per job type and per worker pool.

Every statement sent lives in ``andal.statements`` and calls a SQL function with named
arguments; no cache rule lives in Python except the bookkeeping of the local copy (``store``).
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, suppress
from typing import Any

import psycopg
from psycopg.rows import namedtuple_row
from psycopg_pool import ConnectionPool

from .. import statements as sql
from ..errors import translated
from ..hosts import is_connection_error
from ..listening import listen_target
from ..values import Seconds, seconds
from ..values import as_interval as interval
from . import repair
from .follower import Follower, report_listening
from .observe import Observed
from .store import Entry, Inflight, Store, lifetime
from .values import Loader, Lookup, in_tx, make_pool


class Cache(Observed):
    """A per-process local cache that reads through to andal's shared cache.

    ``db`` is a DSN or a ``psycopg_pool.ConnectionPool`` (its ``conninfo`` is used for the
    listener's dedicated connection). One ``Cache`` is shared by all the threads of a process.

    ``loader(key)`` returns the primary store's value for a key (any JSON value; ``None`` means
    "no such key"). It can also be passed per read.

    Behind a connection pooler, say which (``pooler="transaction"`` or ``"session"``): the
    cache's own connections then prepare no statements. In transaction mode LISTEN cannot go
    through the pooler: give a direct connection string as ``listen_dsn``, or the follower
    reads the log every ``poll_interval`` instead (``listen=False`` chooses that anywhere).
    Which of the two it does is logged once, as ``cache_listening``.
    """

    def __init__(
        self,
        db: str | ConnectionPool,
        *,
        loader: Loader | None = None,
        max_entries: int = 10_000,
        max_bytes: int = 64 * 1024 * 1024,
        ttl: Seconds | None = None,
        local_ttl: Seconds | None = None,
        pool_name: str = "default",
        refresh_queue: str | None = None,
        serve_stale: bool = False,
        follow: bool = True,
        poll_interval: Seconds = 1.0,
        max_staleness: Seconds = 5.0,
        verify: float = 0.0,
        page_size: int = 10_000,
        channel: str = sql.CACHE_CHANNEL,
        pool_size: int = 4,
        report_every: float = 10.0,
        listen_dsn: str | None = None,
        listen: bool = True,
        pooler: str | None = None,
    ) -> None:
        if not 0.0 <= verify <= 1.0:
            raise ValueError("verify is a sampling rate between 0 and 1")
        if pooler not in (None, "transaction", "session"):
            raise ValueError("pooler must be 'transaction', 'session' or None")
        self._store = Store(max_entries, max_bytes)
        self._pool, self._owns_pool, dsn = make_pool(db, pool_size, pooler)
        self._dsn = dsn
        self.loader = loader
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.ttl = interval(ttl)
        self.local_ttl = seconds(local_ttl)
        self.pool_name = pool_name
        self.refresh_queue = refresh_queue
        self.serve_stale = serve_stale
        self.poll_interval = float(seconds(poll_interval) or 1.0)
        self.max_staleness = float(seconds(max_staleness) or 0.0)
        self.verify = verify
        self.page_size = page_size
        self.channel = channel
        self.report_every = report_every
        self.pooler = pooler
        via, listen_on = listen_target(listen, pooler, listen_dsn, dsn)
        self._follower = Follower(
            self._store, self._pool, listen_on, channel=channel, page_size=page_size,
            poll_interval=self.poll_interval, max_staleness=self.max_staleness, via=via,
            report=self.report, report_every=report_every,
        )  # fmt: skip
        if follow:
            self.start()

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> None:
        """Start the background follower (LISTEN + poll backstop, or polling). Idempotent;
        says once how it follows the log (``cache_listening``)."""
        if self._follower.thread is None:
            report_listening(self._follower.via, self.poll_interval, self.pooler, self.pool_name)
        self._follower.start()

    def close(self) -> None:
        """Stop the follower, report the last read counters, close the pool it opened."""
        self._follower.close()
        with suppress(psycopg.Error):
            self.report()
        if self._owns_pool:
            self._pool.close()

    def __enter__(self) -> Cache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- reads ----------------------------------------------------------------------------

    def get(
        self,
        key: str,
        loader: Loader | None = None,
        *,
        min_version: int | None = None,
        job_type: str | None = None,
        allow_stale: bool | None = None,
        ttl: Seconds | None = None,
        default: Any = None,
        conn: psycopg.Connection | None = None,
    ) -> Any:
        """The value of ``key`` (``default`` when nobody has one). See ``lookup``."""
        found = self.lookup(
            key,
            loader,
            min_version=min_version,
            job_type=job_type,
            allow_stale=allow_stale,
            ttl=ttl,
            conn=conn,
        )
        return default if found.value is None else found.value

    def lookup(
        self,
        key: str,
        loader: Loader | None = None,
        *,
        min_version: int | None = None,
        job_type: str | None = None,
        allow_stale: bool | None = None,
        ttl: Seconds | None = None,
        conn: psycopg.Connection | None = None,
    ) -> Lookup:
        """Read ``key`` through local → shared → loader.

        ``min_version``: the version the caller needs at least (a job's ``cache_version``);
        older copies are refetched, and stale values are never served then. ``job_type``
        labels the hit/miss counters (default: "-"). ``allow_stale`` (default: the cache's
        ``serve_stale``; needs a ``refresh_queue``): serve a stale shared value flagged
        ``stale=True`` while one refresh job in ``refresh_queue`` (deduplicated by key across
        all workers) brings it up to date, instead of calling the loader.
        ``conn``: run the shared read and the refill on the caller's connection; inside an
        open transaction the local copy is bypassed (the transaction's own view, its writes
        included, is read) and nothing read there is kept locally.
        """
        loader = loader or self.loader
        label = job_type or "-"
        stale_ok = self.serve_stale if allow_stale is None else allow_stale
        if min_version is not None or self.refresh_queue is None:
            stale_ok = False  # jobs need fresh data; without a refresh job nobody refreshes
        now = time.monotonic()
        entry: Entry | None = None
        inflight: Inflight | None = None
        if in_tx(conn):
            # Inside the caller's open transaction, read what the transaction sees (its own
            # writes included): the shared cache through its connection, not the local copy.
            inflight = self._store.acquire(key)
        else:
            live = self._follower.live(now)
            entry, inflight = self._store.local(key, now, live, min_version, label)
        if entry is not None:
            if self._sampled(loader):
                assert loader is not None
                return repair.verify(
                    self, key, entry.value, entry.version, loader, label, ttl, conn
                )
            return Lookup(entry.value, entry.version, False, "local")
        assert inflight is not None  # made whenever no local entry answered
        try:
            with translated():
                return self._shared(key, loader, min_version, label, stale_ok, ttl, inflight, conn)
        finally:
            self._store.release(key, inflight)

    def _shared(
        self,
        key: str,
        loader: Loader | None,
        min_version: int | None,
        label: str,
        stale_ok: bool,
        ttl: Seconds | None,
        inflight: Inflight,
        conn: psycopg.Connection | None,
    ) -> Lookup:
        """The read after a local miss: the shared cache, then the loader."""
        row = self._fetch(key, stale_ok, conn)
        if (
            row is not None
            and row.value is not None
            and not row.stale
            and (min_version is None or row.version >= min_version)
        ):
            self._admit(key, row.value, row.version, row.checksum, row.size, row.ttl_left,
                        inflight, conn)  # fmt: skip
            self._store.count(label, "shared_hit")
            if self._sampled(loader):
                assert loader is not None
                return repair.verify(self, key, row.value, row.version, loader, label, ttl, conn)
            return Lookup(row.value, row.version, False, "shared")
        observed = row.version if row is not None else 0
        if row is not None and row.value is not None and row.stale and stale_ok:
            self._store.count(label, "stale_hit")
            return Lookup(row.value, row.version, True, "stale")
        self._store.count(label, "miss")
        if loader is None:
            return Lookup(None, observed, False, "miss")
        value = loader(key)
        if value is None:
            return Lookup(None, observed, False, "miss")
        version = self._refill(key, value, ttl, observed, inflight, conn)
        return Lookup(value, version if version is not None else observed, False, "loader")

    def _sampled(self, loader: Loader | None) -> bool:
        return bool(self.verify) and loader is not None and random.random() < self.verify

    # -- writes ---------------------------------------------------------------------------

    def put(
        self,
        key: str,
        value: Any,
        *,
        ttl: Seconds | None = None,
        if_version: int | None = None,
        conn: psycopg.Connection | None = None,
    ) -> int | None:
        """Write ``value`` to the shared cache (and the local one); returns the new version.

        With ``if_version`` nothing is written unless the key is still at that version (0: no
        entry), and ``None`` is returned. With ``conn`` the write joins the caller's
        transaction (write-through before completing a job).
        """
        inflight = self._store.acquire(key)
        try:
            return self._refill(key, value, ttl, if_version, inflight, conn, refill=False)
        finally:
            self._store.release(key, inflight)

    def invalidate(
        self, key: str, reason: str | None = None, *, conn: psycopg.Connection | None = None
    ) -> int:
        """Invalidate ``key`` in the shared cache (every local cache drops it); returns the
        new version. The local copy is dropped at once."""
        with self._conn(conn) as c:
            got = c.execute(sql.CACHE_INVALIDATE, {"key": key, "reason": reason}).fetchone()
        if got is None:  # cache.invalidate always answers one row
            raise RuntimeError("cache.invalidate returned no row")
        self._store.discard(key)
        return int(got[0])

    # -- following the log ----------------------------------------------------------------

    def poll(self, conn: psycopg.Connection | None = None) -> int:
        """Read the change log from the watermark and apply it; returns how many changes
        were applied. Call it on every poll of a worker loop (cheap when nothing changed).
        Returns 0 at once when another sweep (the listener's) is already running."""
        lock = self._follower.sweep_lock
        if not lock.acquire(timeout=self.poll_interval):
            return 0
        try:
            with self._conn(conn) as c:
                return self._follower.sweep(c)
        finally:
            lock.release()

    follow = poll

    def revalidate(self, conn: psycopg.Connection | None = None, batch: int = 1000) -> int:
        """Batched read-repair against the shared cache (``cache.validate``): drop every
        local entry whose version is no longer the shared one. Returns how many were dropped."""
        return repair.revalidate(self, conn, batch)

    def clear(self) -> None:
        """Drop every local entry."""
        self._store.clear()

    # -- refresh jobs ---------------------------------------------------------------------

    def refresh_job(self, job: Any) -> None:
        """Handler of a key refresh job (payload ``{"key": ...}``, enqueued by ``cache.get``
        with ``refresh_queue``): load the key with this cache's loader and store it, unless
        it was refreshed meanwhile. Register it as a leased handler of ``refresh_queue``."""
        repair.refresh(self, job.payload if not isinstance(job, Mapping) else job)

    # -- internals ------------------------------------------------------------------------

    @contextmanager
    def _conn(self, conn: psycopg.Connection | None) -> Iterator[psycopg.Connection]:
        """The caller's connection, or one of the pool's; a documented SQLSTATE raised in
        the block leaves as its typed exception."""
        with translated():
            if conn is not None:
                yield conn
            else:
                with self._pool.connection() as c:
                    yield c

    def _get_row(self, c: psycopg.Connection, key: str, refresh_queue: str | None) -> Any:
        with c.cursor(row_factory=namedtuple_row) as cur:
            params = {"key": key, "refresh_queue": refresh_queue}
            return cur.execute(sql.CACHE_GET, params).fetchone()

    def _fetch(self, key: str, stale_ok: bool, conn: psycopg.Connection | None) -> Any:
        """The shared entry's row (on the pool's connections: ``_read_once_more``)."""
        queue = self.refresh_queue if stale_ok else None
        if conn is not None:
            with self._conn(conn) as c:
                return self._get_row(c, key, queue)
        return _read_once_more(self._pool, lambda: self._conn(None), self._get_row, key, queue)

    def _refill(
        self,
        key: str,
        value: Any,
        ttl: Seconds | None,
        if_version: int | None,
        inflight: Inflight,
        conn: psycopg.Connection | None,
        refill: bool = True,
    ) -> int | None:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
        params = {
            "key": key,
            "value": text,
            "ttl": interval(ttl) or self.ttl,
            "if_version": if_version,
        }
        statement = sql.CACHE_PUT_REFILL if refill and conn is None else sql.CACHE_PUT
        with self._conn(conn) as c:
            row = c.execute(statement, params).fetchone()
        version, ttl_left = row if row else (None, None)
        if version is None:
            return None
        self._admit(key, value, int(version), None, len(text.encode()), ttl_left, inflight, conn)
        return int(version)

    def _admit(
        self,
        key: str,
        value: Any,
        version: int,
        checksum: str | None,
        size: int | None,
        ttl_left: float | None,
        inflight: Inflight,
        conn: psycopg.Connection | None,
    ) -> bool:
        """Store a copy fetched (or written) at ``version`` (see ``Store.admit``), unless it
        was read or written inside the caller's open transaction (it may roll back, or its
        snapshot predate changes already applied): such a copy is served once, not kept."""
        if in_tx(conn):
            return False
        life = lifetime(ttl_left, self.local_ttl)
        return self._store.admit(key, value, version, checksum, size, life, inflight)


def _read_once_more(
    pool: ConnectionPool, conn: Callable[[], AbstractContextManager[psycopg.Connection]],
    read: Callable[[psycopg.Connection, str, str | None], Any], key: str, queue: str | None,
) -> Any:  # fmt: skip
    """``read`` on a connection of ``pool``; a read that finds its connection lost (a pooled
    connection from before a failover or a server restart) is tried once more, on a new
    one, instead of failing the caller."""
    try:
        with conn() as c:
            return read(c, key, queue)
    except psycopg.OperationalError as exc:
        if not is_connection_error(exc):
            raise
    pool.check()  # the others of its time are lost too: the pool replaces them
    with conn() as c:
        return read(c, key, queue)
