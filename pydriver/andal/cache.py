"""The coordinated cache, Python side: a per-process local cache in front of andal's shared cache.

Reads go local → shared (``cache.get``) → a loader you pass (the primary store), and refill
both on the way back. The local cache follows the shared cache's change log
(``cache.changes_since``) from a watermark: on NOTIFY (its own listener thread), on every
``poll()`` (call it from a worker's poll loop), and after every reconnect (replay from the
watermark, or flush when the log was pruned past it or the shared cache lost its epoch).

Guarantees (see docs/cache.md):

* A local entry is dropped as soon as a change with a higher version of its key is read from
  the log, and an entry fetched while such a change was being read is never stored.
* Local entries are served only while the log has been read completely within the last
  ``max_staleness`` seconds; otherwise reads go to the shared cache. A lost listener stops
  local hits at once.
* ``min_version`` (a claimed job's ``cache_version``) forces a refetch of an older entry: a
  job never sees data older than the change it depends on.
* Read-repair: with ``verify`` > 0 a sample of hits is compared, by checksum, with the
  loader's value; a mismatch invalidates the shared entry (every cache drops it) and refills
  it with the loader's value (read-repair).
* Hits, stale hits and misses are counted per job type and per worker pool.

Every statement sent lives in this module's phrasebook below and calls a SQL function with
named arguments; no cache rule lives in Python except the bookkeeping of the local copy.
"""

from __future__ import annotations

import json
import logging
import math
import random
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, NamedTuple

import psycopg
from psycopg import sql as psql
from psycopg.rows import namedtuple_row
from psycopg_pool import ConnectionPool

from .logs import event

Seconds = float | int | timedelta
Loader = Callable[[str], Any]

TX_IDLE = psycopg.pq.TransactionStatus.IDLE

#: The queue of materialized-view refresh jobs (cache.refresh_due enqueues into it).
REFRESH_QUEUE = "andal.refresh"
#: The NOTIFY channel of cache changes (payload: the writer's transaction id, a hint only).
CHANNEL = "andal_cache"

# -- the phrasebook --------------------------------------------------------------------------

GET = (
    "select g.value, g.version, g.stale, g.checksum,"
    " extract(epoch from g.expires_at - now())::float8 as ttl_left,"
    " octet_length(g.value::text) as size"
    " from cache.get(key => %(key)s::text, refresh_queue => %(refresh_queue)s::text) as g"
)

#: put, then the entry's remaining TTL (the put may have chosen it: adaptive TTL).
PUT = (
    "with p as (select cache.put(key => %(key)s::text, value => %(value)s::jsonb,"
    " ttl => %(ttl)s::interval, if_version => %(if_version)s::bigint) as version)"
    " select p.version, (select extract(epoch from g.expires_at - now())::float8"
    " from cache.get(key => %(key)s::text) as g) as ttl_left from p"
)

#: The same for a refill after a miss, committed asynchronously (no wait for the WAL flush):
#: losing it in a crash is harmless, the crash starts a new epoch and every local cache
#: flushes. Only on the cache's own connections, never in a caller's transaction.
PUT_REFILL = (
    "with a as (select set_config('synchronous_commit', 'off', true) as setting),"
    " p as (select cache.put(key => %(key)s::text, value => %(value)s::jsonb,"
    " ttl => %(ttl)s::interval, if_version => %(if_version)s::bigint) as version from a)"
    " select p.version, (select extract(epoch from g.expires_at - now())::float8"
    " from cache.get(key => %(key)s::text) as g) as ttl_left from p"
)

INVALIDATE = "select cache.invalidate(key => %(key)s::text, reason => %(reason)s::text)"

CHANGES_SINCE = (
    "select c.seq, c.key, c.version, c.op, c.watermark, c.xid, c.snapshot::text"
    " from cache.changes_since(watermark => %(watermark)s::bigint, epoch => %(epoch)s::bigint,"
    " lim => %(lim)s::int, after_xid => %(after_xid)s::bigint,"
    " after_seq => %(after_seq)s::bigint, snapshot => %(snapshot)s::pg_snapshot) as c"
)

VALIDATE = (
    "select v.key, v.version, v.checksum, v.stale, v.repaired"
    " from cache.validate(keys => %(keys)s::text[], versions => %(versions)s::bigint[],"
    " checksums => %(checksums)s::text[], loaded => %(loaded)s::jsonb[]) as v"
)

REPORT_READS = "select cache.report_reads(pool => %(pool)s::text, counts => %(counts)s::jsonb)"

REFRESH_VIEW = (
    "select cache.refresh_view(view => r.view) as took"
    " from (select to_regclass(%(view)s::text) as view) as r where r.view is not null"
)

# -- values ---------------------------------------------------------------------------------


class Lookup(NamedTuple):
    """What a read found. ``source``: local, shared, stale, loader or miss."""

    value: Any
    version: int
    stale: bool
    source: str


@dataclass(slots=True)
class _Entry:
    value: Any
    version: int
    checksum: str | None
    size: int
    deadline: float  # time.monotonic() after which the entry is expired


class _Inflight:
    """A fetch of a key in progress: the highest change version read from the log meanwhile."""

    __slots__ = ("refs", "max_seen", "poisoned")

    def __init__(self) -> None:
        self.refs = 0
        self.max_seen = 0
        self.poisoned = False


def _seconds(value: Seconds | None) -> float | None:
    if value is None:
        return None
    if isinstance(value, timedelta):
        return value.total_seconds()
    return float(value)


def _interval(value: Seconds | None) -> timedelta | None:
    s = _seconds(value)
    return None if s is None else timedelta(seconds=s)


# -- the local cache ------------------------------------------------------------------------


class Cache:
    """A per-process local cache that reads through to andal's shared cache.

    ``db`` is a DSN or a ``psycopg_pool.ConnectionPool`` (its ``conninfo`` is used for the
    listener's dedicated connection). One ``Cache`` is shared by all the threads of a process.

    ``loader(key)`` returns the primary store's value for a key (any JSON value; ``None`` means
    "no such key"). It can also be passed per read.
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
        channel: str = CHANNEL,
        pool_size: int = 4,
        report_every: float = 10.0,
    ) -> None:
        if max_entries < 1 or max_bytes < 1:
            raise ValueError("max_entries and max_bytes must be positive")
        if not 0.0 <= verify <= 1.0:
            raise ValueError("verify is a sampling rate between 0 and 1")
        if isinstance(db, ConnectionPool):
            self._pool = db
            self._owns_pool = False
            # a pool's conninfo may be a function that makes it (psycopg_pool 3.3)
            info = db.conninfo
            self._dsn: str = info if isinstance(info, str) else info()
        else:
            self._dsn = db
            self._pool = ConnectionPool(
                db,
                min_size=1,
                max_size=max(1, pool_size),
                kwargs={"autocommit": True},
                name="andal-cache",
                open=True,
            )
            self._owns_pool = True
        self.loader = loader
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.ttl = _interval(ttl)
        self.local_ttl = _seconds(local_ttl)
        self.pool_name = pool_name
        self.refresh_queue = refresh_queue
        self.serve_stale = serve_stale
        self.poll_interval = float(_seconds(poll_interval) or 1.0)
        self.max_staleness = float(_seconds(max_staleness) or 0.0)
        self.verify = verify
        self.page_size = page_size
        self.channel = channel

        self._lock = threading.Lock()
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._bytes = 0
        self._inflight: dict[str, _Inflight] = {}
        self._sweep_lock = threading.Lock()
        self._watermark = 0
        self._snapshot: str | None = None
        self._epoch: int | None = None
        self._confirmed_at = -math.inf
        self._counts: Counter[tuple[str, str]] = Counter()
        self._reported: Counter[tuple[str, str]] = Counter()
        self.report_every = report_every
        self._next_report = time.monotonic() + report_every
        self._events: Counter[str] = Counter()
        self._stop = threading.Event()
        self._listening = False
        self._listener_pid: int | None = None
        self._thread: threading.Thread | None = None
        if follow:
            self.start()

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> None:
        """Start the background follower (LISTEN + poll backstop). Idempotent."""
        if self._thread is not None and self._thread.is_alive():
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._follow_loop, name="andal-cache", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop the follower, report the last read counters, close the pool it opened."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.poll_interval + 5)
            self._thread = None
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
        # Inside the caller's open transaction, read what the transaction sees (its own
        # writes included): the shared cache through its connection, not the local copy.
        in_tx = conn is not None and conn.info.transaction_status != TX_IDLE
        with self._lock:
            entry = None if in_tx else self._entries.get(key)
            if entry is not None:
                if entry.deadline <= now:
                    self._drop(key)
                    entry = None
                elif not self._live(now):
                    entry = None
                elif min_version is not None and entry.version < min_version:
                    self._counts[(label, "refetch")] += 1
                    entry = None
                else:
                    self._entries.move_to_end(key)
                    self._counts[(label, "local_hit")] += 1
            if entry is None:
                inflight = self._inflight.get(key)
                if inflight is None:
                    inflight = self._inflight[key] = _Inflight()
                inflight.refs += 1
        if entry is not None:
            if self.verify and loader is not None and random.random() < self.verify:
                return self._verify(key, entry.value, entry.version, loader, label, ttl, conn)
            return Lookup(entry.value, entry.version, False, "local")
        assert inflight is not None  # made above whenever no local entry answered

        try:
            row = self._fetch(key, stale_ok, conn)
            if (
                row is not None
                and row.value is not None
                and not row.stale
                and (min_version is None or row.version >= min_version)
            ):
                self._admit(
                    key,
                    row.value,
                    row.version,
                    row.checksum,
                    row.size,
                    row.ttl_left,
                    inflight,
                    conn,
                )
                self._count(label, "shared_hit")
                if self.verify and loader is not None and random.random() < self.verify:
                    return self._verify(key, row.value, row.version, loader, label, ttl, conn)
                return Lookup(row.value, row.version, False, "shared")
            observed = row.version if row is not None else 0
            if row is not None and row.value is not None and row.stale and stale_ok:
                self._count(label, "stale_hit")
                return Lookup(row.value, row.version, True, "stale")
            self._count(label, "miss")
            if loader is None:
                return Lookup(None, observed, False, "miss")
            value = loader(key)
            if value is None:
                return Lookup(None, observed, False, "miss")
            version = self._refill(key, value, ttl, observed, inflight, conn)
            return Lookup(value, version if version is not None else observed, False, "loader")
        finally:
            self._release(key, inflight)

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
        inflight = self._acquire(key)
        try:
            return self._refill(key, value, ttl, if_version, inflight, conn, refill=False)
        finally:
            self._release(key, inflight)

    def invalidate(
        self, key: str, reason: str | None = None, *, conn: psycopg.Connection | None = None
    ) -> int:
        """Invalidate ``key`` in the shared cache (every local cache drops it); returns the
        new version. The local copy is dropped at once."""
        with self._conn(conn) as c:
            got = c.execute(INVALIDATE, {"key": key, "reason": reason}).fetchone()
        if got is None:  # cache.invalidate always answers one row
            raise RuntimeError("cache.invalidate returned no row")
        version = got[0]
        with self._lock:
            self._drop(key)
        return int(version)

    # -- following the log ----------------------------------------------------------------

    def poll(self, conn: psycopg.Connection | None = None) -> int:
        """Read the change log from the watermark and apply it; returns how many changes
        were applied. Call it on every poll of a worker loop (cheap when nothing changed).
        Returns 0 at once when another sweep (the listener's) is already running."""
        if not self._sweep_lock.acquire(timeout=self.poll_interval):
            return 0
        try:
            with self._conn(conn) as c:
                return self._sweep(c)
        finally:
            self._sweep_lock.release()

    follow = poll

    def revalidate(self, conn: psycopg.Connection | None = None, batch: int = 1000) -> int:
        """Batched read-repair against the shared cache (``cache.validate``): drop every
        local entry whose version is no longer the shared one. Returns how many were dropped."""
        with self._lock:
            held = [(k, e.version) for k, e in self._entries.items()]
        dropped = 0
        with self._conn(conn) as c:
            for i in range(0, len(held), batch):
                part = held[i : i + batch]
                rows = c.execute(
                    VALIDATE,
                    {
                        "keys": [k for k, _ in part],
                        "versions": [v for _, v in part],
                        "checksums": None,
                        "loaded": None,
                    },
                ).fetchall()
                with self._lock:
                    for row in rows:
                        if row[0] in self._entries:
                            self._drop(row[0])
                            dropped += 1
        return dropped

    def clear(self) -> None:
        """Drop every local entry."""
        with self._lock:
            self._flush_locked()

    # -- observability --------------------------------------------------------------------

    @property
    def watermark(self) -> int:
        return self._watermark

    @property
    def epoch(self) -> int | None:
        return self._epoch

    @property
    def confirmed_at(self) -> float:
        """time.monotonic() at the start of the last complete read of the log."""
        return self._confirmed_at

    @property
    def listening(self) -> bool:
        return self._listening

    @property
    def listener_pid(self) -> int | None:
        """Backend pid of the listener connection (for tests and diagnostics)."""
        return self._listener_pid

    def live(self) -> bool:
        """Whether local entries may be served now (the log was read recently enough)."""
        return self._live(time.monotonic())

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def size_bytes(self) -> int:
        return self._bytes

    def stats(self) -> dict[str, Any]:
        """Counters for the observability exporter: per job type (local_hit, shared_hit,
        stale_hit, miss, refetch, repair) within this cache's worker pool, and the state of
        the follower."""
        with self._lock:
            by_type: dict[str, dict[str, int]] = {}
            for (label, outcome), n in self._counts.items():
                by_type.setdefault(label, {})[outcome] = n
            return {
                "pool": self.pool_name,
                "by_job_type": by_type,
                "entries": len(self._entries),
                "bytes": self._bytes,
                "watermark": self._watermark,
                "epoch": self._epoch,
                "listening": self._listening,
                "live": self._live(time.monotonic()),
                **dict(self._events),
            }

    def report(self, conn: psycopg.Connection | None = None) -> int:
        """Send the read counters gathered since the last report to ``cache.report_reads``
        (hit/miss per job type and worker pool, answerable in SQL by ``cache.stats()``).
        The follower calls it every ``report_every`` seconds. Returns the job types sent."""
        outcomes = ("local_hit", "shared_hit", "stale_hit", "miss")
        with self._lock:
            delta: dict[str, dict[str, int]] = {}
            for (label, outcome), n in self._counts.items():
                sent = self._reported[(label, outcome)]
                if outcome in outcomes and n > sent:
                    delta.setdefault(label, {})[outcome] = n - sent
            if not delta:
                return 0
            for label, counts in delta.items():
                for outcome, n in counts.items():
                    self._reported[(label, outcome)] += n
        try:
            with self._conn(conn) as c:
                c.execute(REPORT_READS, {"pool": self.pool_name, "counts": json.dumps(delta)})
        except BaseException:
            with self._lock:  # not sent: send it with the next report
                for label, counts in delta.items():
                    for outcome, n in counts.items():
                        self._reported[(label, outcome)] -= n
            raise
        return len(delta)

    def hit_ratio(self, job_type: str | None = None) -> float:
        """(local + shared hits) / reads, for one job type or all."""
        with self._lock:
            hits = reads = 0
            for (label, outcome), n in self._counts.items():
                if job_type is not None and label != job_type:
                    continue
                if outcome in ("local_hit", "shared_hit"):
                    hits += n
                    reads += n
                elif outcome in ("miss", "stale_hit"):
                    reads += n
            return hits / reads if reads else 0.0

    # -- refresh jobs (stampede protection) ----------------------------------------------------

    def refresh_job(self, job: Any) -> None:
        """Handler of a key refresh job (payload ``{"key": ...}``, enqueued by ``cache.get``
        with ``refresh_queue``): load the key with this cache's loader and store it, unless
        it was refreshed meanwhile. Register it as a leased handler of ``refresh_queue``."""
        payload = job.payload if not isinstance(job, Mapping) else job
        key = payload["key"]
        if self.loader is None:
            raise RuntimeError("this Cache has no loader to refresh keys with")
        with self._conn(None) as c:
            row = self._get_row(c, key, None)
        if row is not None and row.value is not None and not row.stale:
            return
        value = self.loader(key)
        if value is None:
            return
        self.put(key, value, if_version=row.version if row is not None else 0)

    # -- internals ------------------------------------------------------------------------

    @contextmanager
    def _conn(self, conn: psycopg.Connection | None) -> Iterator[psycopg.Connection]:
        if conn is not None:
            yield conn
        else:
            with self._pool.connection() as c:
                yield c

    def _count(self, label: str, outcome: str) -> None:
        with self._lock:
            self._counts[(label, outcome)] += 1

    def _live(self, now: float) -> bool:
        return now - self._confirmed_at <= self.max_staleness

    def _get_row(self, c: psycopg.Connection, key: str, refresh_queue: str | None) -> Any:
        with c.cursor(row_factory=namedtuple_row) as cur:
            return cur.execute(GET, {"key": key, "refresh_queue": refresh_queue}).fetchone()

    def _fetch(self, key: str, stale_ok: bool, conn: psycopg.Connection | None) -> Any:
        queue = self.refresh_queue if stale_ok else None
        with self._conn(conn) as c:
            return self._get_row(c, key, queue)

    def _refill(
        self,
        key: str,
        value: Any,
        ttl: Seconds | None,
        if_version: int | None,
        inflight: _Inflight,
        conn: psycopg.Connection | None,
        refill: bool = True,
    ) -> int | None:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
        params = {
            "key": key,
            "value": text,
            "ttl": _interval(ttl) or self.ttl,
            "if_version": if_version,
        }
        statement = PUT_REFILL if refill and conn is None else PUT
        with self._conn(conn) as c:
            row = c.execute(statement, params).fetchone()
        version, ttl_left = row if row else (None, None)
        if version is None:
            return None
        self._admit(key, value, int(version), None, len(text.encode()), ttl_left, inflight, conn)
        return int(version)

    def _acquire(self, key: str) -> _Inflight:
        with self._lock:
            inflight = self._inflight.get(key)
            if inflight is None:
                inflight = self._inflight[key] = _Inflight()
            inflight.refs += 1
            return inflight

    def _release(self, key: str, inflight: _Inflight) -> None:
        with self._lock:
            inflight.refs -= 1
            if inflight.refs <= 0 and self._inflight.get(key) is inflight:
                del self._inflight[key]

    def _admit(
        self,
        key: str,
        value: Any,
        version: int,
        checksum: str | None,
        size: int | None,
        ttl_left: float | None,
        inflight: _Inflight,
        conn: psycopg.Connection | None,
    ) -> bool:
        """Store a copy fetched (or written) at ``version``, unless a newer change of the key
        was read from the log while it was in flight, or it was read or written inside the
        caller's open transaction (it may roll back, or its snapshot predate changes already
        applied): such a copy is served once, not kept."""
        if conn is not None and conn.info.transaction_status != TX_IDLE:
            return False
        life = ttl_left if ttl_left is not None else math.inf
        if self.local_ttl is not None:
            life = min(life, self.local_ttl)
        if life <= 0:
            return False
        size = size if size is not None else len(json.dumps(value))
        if size > self.max_bytes:
            return False
        with self._lock:
            if inflight.poisoned or inflight.max_seen > version:
                self._events["discarded_fetches"] += 1
                return False
            old = self._entries.get(key)
            if old is not None:
                if old.version > version:
                    return False
                self._drop(key)
            self._entries[key] = _Entry(value, version, checksum, size, time.monotonic() + life)
            self._bytes += size
            while len(self._entries) > self.max_entries or self._bytes > self.max_bytes:
                _, gone = self._entries.popitem(last=False)
                self._bytes -= gone.size
                self._events["evictions"] += 1
        return True

    def _drop(self, key: str) -> None:
        """Remove a local entry (caller holds the lock)."""
        gone = self._entries.pop(key, None)
        if gone is not None:
            self._bytes -= gone.size

    def _flush_locked(self) -> None:
        self._entries.clear()
        self._bytes = 0
        for inflight in self._inflight.values():
            inflight.poisoned = True

    def _verify(
        self,
        key: str,
        value: Any,
        version: int,
        loader: Loader,
        label: str,
        ttl: Seconds | None,
        conn: psycopg.Connection | None,
    ) -> Lookup:
        """Read-repair: compare the cached value with the loader's by checksum."""
        fresh = loader(key)
        loaded = None if fresh is None else json.dumps(fresh, ensure_ascii=False)
        with self._conn(conn) as c:
            rows = c.execute(
                VALIDATE,
                {"keys": [key], "versions": [version], "checksums": None, "loaded": [loaded]},
            ).fetchall()
        if not rows:
            return Lookup(value, version, False, "local" if key in self._entries else "shared")
        with self._lock:
            self._drop(key)
        _key, current, _checksum, _stale, repaired = rows[0]
        if repaired:
            self._count(label, "repair")
            event("cache_repaired", logging.WARNING, key=key, version=version)
        if fresh is None:
            return Lookup(None, int(current), False, "miss")
        inflight = self._acquire(key)
        try:
            new = self._refill(key, fresh, ttl, int(current), inflight, conn)
        finally:
            self._release(key, inflight)
        return Lookup(fresh, new if new is not None else int(current), False, "loader")

    def _follower_sweep(self, c: psycopg.Connection) -> int:
        with self._sweep_lock:
            return self._sweep(c)

    def _sweep(self, c: psycopg.Connection) -> int:
        """Read the log from the position to its end (paging if needed) and apply it.
        The caller holds _sweep_lock."""
        if c.info.transaction_status != TX_IDLE:
            # Inside the caller's transaction the snapshot could predate changes already
            # applied, or miss the transaction's own: follow on a connection of our own.
            with self._pool.connection() as own:
                return self._sweep(own)
        started = time.monotonic()
        start = (self._watermark, self._snapshot)
        adopted: tuple[int, str | None] | None = None
        after: tuple[int | None, int | None] = (None, None)
        applied = 0
        while True:
            rows = c.execute(
                CHANGES_SINCE,
                {
                    "watermark": start[0],
                    "epoch": self._epoch,
                    "lim": self.page_size,
                    "after_xid": after[0],
                    "after_seq": after[1],
                    "snapshot": start[1],
                },
            ).fetchall()
            if rows[0][3] == "flush":
                _, _, epoch, _, watermark, _, snapshot = rows[0]
                with self._lock:
                    had = len(self._entries)
                    self._flush_locked()
                    self._epoch = int(epoch)
                    self._watermark = int(watermark)
                    self._snapshot = snapshot
                    self._confirmed_at = max(self._confirmed_at, started)
                    self._events["flushes"] += 1
                event("cache_flushed", logging.INFO, epoch=int(epoch), dropped=had)
                return 0
            with self._lock:
                for _seq, key, version, op, _wm, _xid, _snap in rows:
                    if op not in ("put", "invalidate"):
                        continue
                    applied += 1
                    entry = self._entries.get(key)
                    if entry is not None and entry.version < version:
                        self._drop(key)
                        self._events["invalidations"] += 1
                    inflight = self._inflight.get(key)
                    if inflight is not None and version > inflight.max_seen:
                        inflight.max_seen = version
            if adopted is None:
                # A later page can not vouch for rows an earlier one passed: resume from the
                # first page's end.
                adopted = (int(rows[-1][4]), rows[-1][6])
            if len(rows) < self.page_size or rows[-1][3] == "watermark":
                break
            after = (rows[-1][5], rows[-1][0])
        with self._lock:
            self._watermark, self._snapshot = adopted
            self._confirmed_at = max(self._confirmed_at, started)
            self._events["changes_applied"] += applied
        return applied

    def _follow_loop(self) -> None:
        backoff = 0.05
        first = True
        while not self._stop.is_set():
            try:
                with psycopg.connect(self._dsn, autocommit=True, connect_timeout=5) as conn:
                    self._listener_pid = conn.info.backend_pid
                    conn.execute(psql.SQL("listen {}").format(psql.Identifier(self.channel)))
                    # LISTEN first, then replay: nothing committed in between is missed.
                    self._follower_sweep(conn)
                    self._listening = True
                    if not first:
                        with self._lock:
                            self._events["reconnects"] += 1
                        event("cache_listener_reconnected", logging.INFO, pid=self._listener_pid)
                    first = False
                    backoff = 0.05
                    while not self._stop.is_set():
                        # Wait for a hint, or the poll interval (in short slices, so that
                        # close() is prompt), then drain the other hints: one sweep covers all.
                        deadline = time.monotonic() + self.poll_interval
                        while not self._stop.is_set():
                            left = deadline - time.monotonic()
                            if left <= 0 or any(
                                True for _ in conn.notifies(timeout=min(left, 0.2), stop_after=1)
                            ):
                                break
                        if self._stop.is_set():
                            break
                        for _ in conn.notifies(timeout=0.0):
                            pass
                        self._follower_sweep(conn)
                        if self.report_every > 0 and time.monotonic() >= self._next_report:
                            self._next_report = time.monotonic() + self.report_every
                            self.report(conn)
            except Exception as exc:  # noqa: BLE001 - the follower must survive anything
                self._listening = False
                with self._lock:
                    # No more local hits until the log has been replayed.
                    self._confirmed_at = -math.inf
                    self._events["listener_errors"] += 1
                event(
                    "cache_listener_lost",
                    logging.WARNING,
                    error=f"{type(exc).__name__}: {exc}"[:500],
                )
                self._stop.wait(backoff)
                backoff = min(backoff * 2, 2.0)
        self._listening = False


# -- materialized-view refresh jobs ---------------------------------------------------------


def refresh_handler(job: Any, conn: psycopg.Connection) -> None:
    """Transactional handler of the ``andal.refresh`` queue: run ``cache.refresh_view`` for
    the job's view (``REFRESH MATERIALIZED VIEW CONCURRENTLY``) in the job's transaction. A
    view dropped since the job was enqueued is skipped.

    Register it with ``registry.add(REFRESH_QUEUE, refresh_handler, transactional=True)``."""
    payload = job.payload if not isinstance(job, Mapping) else job
    conn.execute(REFRESH_VIEW, {"view": payload["view"]})


def register_refresh(registry: Any) -> None:
    """Add ``refresh_handler`` to a worker ``Registry`` for the ``andal.refresh`` queue."""
    registry.add(REFRESH_QUEUE, refresh_handler, transactional=True)
