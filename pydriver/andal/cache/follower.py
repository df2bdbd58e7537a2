"""The follower: keeps the local store in step with the shared cache's change log.

It reads ``cache.changes_since`` from a watermark (paging through a long log) and applies
what it read to the store; a ``flush`` answer (the log was pruned past the watermark, or the
shared cache lost its epoch) drops every local copy. Local copies are served only while the
log has been read completely within ``max_staleness`` seconds (``live``).

Its background thread hears of changes in one of two ways, chosen once and reported once at
start (``cache_listening``):

* ``LISTEN`` on a session of its own, on the cache's DSN, or on ``listen_dsn`` when given
  (behind a transaction-mode pooler a LISTEN must bypass the pooler), with the poll interval
  as the backstop;
* polling every ``poll_interval`` on a pooled connection, when ``listen`` is off or the cache
  is behind a transaction-mode pooler without a ``listen_dsn``.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from typing import Any

import psycopg
from psycopg import sql as psql
from psycopg_pool import ConnectionPool

from .. import statements as sql
from ..listening import VIA_POLLING
from ..listening import report_listening as report
from ..logs import event
from .store import Store

TX_IDLE = psycopg.pq.TransactionStatus.IDLE
#: The log's own rows (the page's end, a flush) carry no change to apply.
CHANGES = ("put", "invalidate")


class Follower:
    """The watermark, the epoch and the time of the last complete read of the log, and the
    background thread that advances them."""

    def __init__(
        self,
        store: Store,
        pool: ConnectionPool,
        dsn: str,
        *,
        channel: str,
        page_size: int,
        poll_interval: float,
        max_staleness: float,
        via: str,
        report: Callable[[psycopg.Connection], Any],
        report_every: float,
    ) -> None:
        self.store = store
        self.pool = pool
        self.dsn = dsn
        self.channel = channel
        self.page_size = page_size
        self.poll_interval = poll_interval
        self.max_staleness = max_staleness
        self.via = via
        self.report = report
        self.report_every = report_every
        self.next_report = time.monotonic() + report_every
        self.sweep_lock = threading.Lock()
        self.watermark = 0
        self.snapshot: str | None = None
        self.epoch: int | None = None
        self.confirmed_at = -math.inf
        self.listening = False
        self.listener_pid: int | None = None
        self.connected = False  # a listener connection was up once (the next is a reconnect)
        self.backoff = 0.05
        self.stop = threading.Event()
        self.thread: threading.Thread | None = None

    def live(self, now: float) -> bool:
        return now - self.confirmed_at <= self.max_staleness

    # -- reading the log ------------------------------------------------------------------

    def sweep_locked(self, c: psycopg.Connection) -> int:
        with self.sweep_lock:
            return self.sweep(c)

    def sweep(self, c: psycopg.Connection) -> int:
        """Read the log from the position to its end (paging if needed) and apply it.
        The caller holds ``sweep_lock``."""
        if c.info.transaction_status != TX_IDLE:
            # Inside the caller's transaction the snapshot could predate changes already
            # applied, or miss the transaction's own: follow on a connection of our own.
            with self.pool.connection() as own:
                return self.sweep(own)
        started = time.monotonic()
        start = (self.watermark, self.snapshot)
        adopted: tuple[int, str | None] | None = None
        after: tuple[int | None, int | None] = (None, None)
        applied = 0
        while True:
            rows = c.execute(
                sql.CACHE_CHANGES_SINCE,
                {
                    "watermark": start[0],
                    "epoch": self.epoch,
                    "lim": self.page_size,
                    "after_xid": after[0],
                    "after_seq": after[1],
                    "snapshot": start[1],
                },
            ).fetchall()
            if rows[0][3] == "flush":
                self._flush(rows[0], started)
                return 0
            applied += self.store.apply((r[1], r[2]) for r in rows if r[3] in CHANGES)
            if adopted is None:
                # A later page can not vouch for rows an earlier one passed: resume from the
                # first page's end.
                adopted = (int(rows[-1][4]), rows[-1][6])
            if len(rows) < self.page_size or rows[-1][3] == "watermark":
                break
            after = (rows[-1][5], rows[-1][0])
        with self.store.lock:
            self.watermark, self.snapshot = adopted
            self.confirmed_at = max(self.confirmed_at, started)
            self.store.events["changes_applied"] += applied
        return applied

    def _flush(self, row: tuple[Any, ...], started: float) -> None:
        _, _, epoch, _, watermark, _, snapshot = row
        with self.store.lock:
            had = self.store.flush_locked()
            self.epoch = int(epoch)
            self.watermark = int(watermark)
            self.snapshot = snapshot
            self.confirmed_at = max(self.confirmed_at, started)
            self.store.events["flushes"] += 1
        event("cache_flushed", logging.INFO, epoch=int(epoch), dropped=had)

    # -- the background thread ------------------------------------------------------------

    def start(self) -> None:
        if self.thread is not None and self.thread.is_alive():
            return
        self.stop.clear()
        self.thread = threading.Thread(target=self._run, name="andal-cache", daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.stop.set()
        if self.thread is not None:
            self.thread.join(timeout=self.poll_interval + 5)
            self.thread = None

    def _run(self) -> None:
        self.backoff = 0.05
        while not self.stop.is_set():
            try:
                if self.via == VIA_POLLING:
                    self._poll_forever()
                else:
                    self._listen_forever()
            except Exception as exc:  # noqa: BLE001 - the follower must survive anything
                self.listening = False
                with self.store.lock:
                    # No more local hits until the log has been replayed.
                    self.confirmed_at = -math.inf
                    self.store.events["listener_errors"] += 1
                event(
                    "cache_listener_lost",
                    logging.WARNING,
                    error=f"{type(exc).__name__}: {exc}"[:500],
                )
                self.stop.wait(self.backoff)
                self.backoff = min(self.backoff * 2, 2.0)
        self.listening = False

    def _listen_forever(self) -> None:
        with psycopg.connect(self.dsn, autocommit=True, connect_timeout=5) as conn:
            self.listener_pid = conn.info.backend_pid
            conn.execute(psql.SQL(sql.CACHE_LISTEN).format(psql.Identifier(self.channel)))
            # LISTEN first, then replay: nothing committed in between is missed.
            self.sweep_locked(conn)
            self.listening = True
            if self.connected:
                with self.store.lock:
                    self.store.events["reconnects"] += 1
                event("cache_listener_reconnected", logging.INFO, pid=self.listener_pid)
            self.connected = True
            self.backoff = 0.05
            while not self.stop.is_set():
                self._wait_for_hint(conn)
                if self.stop.is_set():
                    break
                for _ in conn.notifies(timeout=0.0):
                    pass
                self.sweep_locked(conn)
                self._report_if_due(conn)

    def _wait_for_hint(self, conn: psycopg.Connection) -> None:
        """Wait for a hint, or the poll interval (in short slices, so that close() is
        prompt); the caller drains the other hints: one sweep covers all."""
        deadline = time.monotonic() + self.poll_interval
        while not self.stop.is_set():
            left = deadline - time.monotonic()
            if left <= 0 or any(True for _ in conn.notifies(timeout=min(left, 0.2), stop_after=1)):
                return

    def _poll_forever(self) -> None:
        """No LISTEN: read the log every poll interval on a pooled connection."""
        while not self.stop.is_set():
            with self.pool.connection() as conn:
                self.sweep_locked(conn)
                self._report_if_due(conn)
            self.backoff = 0.05
            self.stop.wait(self.poll_interval)

    def _report_if_due(self, conn: psycopg.Connection) -> None:
        if self.report_every > 0 and time.monotonic() >= self.next_report:
            self.next_report = time.monotonic() + self.report_every
            self.report(conn)


def report_listening(via: str, poll_interval: float, pooler: str | None, pool: str) -> None:
    """The one line at start that says how the cache follows the log."""
    polled = "the change log is read by polling; give a direct connection string as listen_dsn"
    report("cache_listening", via, poll_interval, pooler, polled, pool=pool)
