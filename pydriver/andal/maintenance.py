"""Housekeeping of one database: ``queue.maintain()`` every ``maintain_every`` seconds (take
back expired leases, prune old counters), followed, when the server runs with
``autovacuum = off``, by a ``VACUUM (ANALYZE)`` of andal's changed tables in a thread of its
own (``vacuum_tables``, also a step for a cron job of one's own; one session at a time).

The worker's claim loop calls ``Maintenance.run`` when it is due; ``stop`` cancels a vacuum at
shutdown. ``Maintenance`` reaches the rest of the worker only through the callables it is
given, and knows of its database only its ``index`` and ``label`` (``Database``).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Generic, Protocol, TypeVar

import psycopg
from psycopg import sql as psql

from . import statements as sql
from .hosts import Lane, is_connection_error
from .logs import event, one_line

#: Session-level advisory lock held while vacuuming, so one worker vacuums at a time ("ANDALVAC":
#: outside the range of andal's category gate keys).
VACUUM_LOCK_KEY = int.from_bytes(b"ANDALVAC", "big")


@dataclass
class VacuumReport:
    """What ``vacuum_tables`` did. ``reason``: vacuumed, autovacuum_on, locked (another worker
    is vacuuming), nothing_due, denied."""

    reason: str
    role: str = ""
    vacuumed: list[str] = field(default_factory=list)
    denied: list[str] = field(default_factory=list)
    dead_tuples: dict[str, int] = field(default_factory=dict)
    duration_ms: float = 0.0


def vacuum_tables(conn: psycopg.Connection, every: float) -> VacuumReport:
    """``VACUUM (ANALYZE)`` the tables of andal's schemas that changed since their last
    vacuum, when the server runs with ``autovacuum = off`` (dead tuples of ``queue.jobs`` would
    pile up otherwise); a table vacuumed less than ``every`` seconds ago (by anyone) is left
    alone. Takes the session-level advisory lock ``VACUUM_LOCK_KEY`` first, and does nothing
    when another session holds it. Tables this role may not vacuum (only their owner, the
    database owner or a superuser may) are listed in ``denied``, not raised.

    ``conn`` must be in autocommit mode (VACUUM cannot run inside a transaction)."""
    if not conn.autocommit:
        raise ValueError("vacuum_tables needs an autocommit connection")
    off, role = _one(conn.execute(sql.AUTOVACUUM_OFF_ROLE).fetchone())
    if not off:
        return VacuumReport("autovacuum_on", role)
    if not _one(conn.execute(sql.VACUUM_LOCK, {"key": VACUUM_LOCK_KEY}).fetchone())[0]:
        return VacuumReport("locked", role)
    report = VacuumReport("nothing_due", role)
    denied_now: list[str] = []

    def on_notice(diag: psycopg.errors.Diagnostic) -> None:
        if diag.sqlstate == "42501":  # "skipping ... only table or database owner can vacuum"
            denied_now.append(diag.message_primary or "")

    started = time.perf_counter()
    conn.add_notice_handler(on_notice)
    try:
        due = conn.execute(sql.VACUUM_DUE, {"every": timedelta(seconds=every)}).fetchall()
        for schema, table, dead, allowed in due:
            name = f"{schema}.{table}"
            if not allowed:
                report.denied.append(name)
                continue
            denied_now.clear()
            try:
                conn.execute(psql.SQL(sql.VACUUM).format(psql.Identifier(schema, table)))
            except psycopg.errors.InsufficientPrivilege:
                report.denied.append(name)
                continue
            if denied_now:
                report.denied.append(name)
                continue
            report.vacuumed.append(name)
            report.dead_tuples[name] = int(dead)
    finally:
        conn.remove_notice_handler(on_notice)
        if not conn.closed and not conn.broken:
            with contextlib.suppress(psycopg.Error):
                conn.execute(sql.VACUUM_UNLOCK, {"key": VACUUM_LOCK_KEY})
    report.duration_ms = round((time.perf_counter() - started) * 1000, 3)
    if report.vacuumed:
        report.reason = "vacuumed"
    elif report.denied:
        report.reason = "denied"
    return report


def _one(row: tuple[Any, ...] | None) -> tuple[Any, ...]:
    if row is None:  # a select of values always answers one row
        raise psycopg.InterfaceError("no row returned")
    return row


# -- the housekeeping of one database -------------------------------------------------------


class Database(Protocol):
    """What maintenance reads of its database (a worker's ``Source``)."""

    index: int
    label: str


D = TypeVar("D", bound=Database)


class Maintenance(Generic[D]):
    """The housekeeping of one database. ``vacuum_dsn``: where the vacuum connects (None:
    never vacuum; behind a transaction-mode pooler its session lock needs a direct DSN).
    What it tells its worker: ``trouble(src, during, exc)`` (a lost connection), ``hint(src)``
    (jobs may be pending: claim now), ``vacuumed(tables)``, ``internal_error(where)``."""

    def __init__(
        self,
        src: D,
        worker: str,
        every: float,
        vacuum_dsn: str | None,
        stopping: threading.Event,
        trouble: Callable[[D, str, BaseException], None],
        hint: Callable[[D], None],
        vacuumed: Callable[[list[str]], None],
        internal_error: Callable[[str], None],
    ) -> None:
        self.trouble, self.hint, self.vacuumed = trouble, hint, vacuumed
        self.internal_error = internal_error
        self.src = src
        self.worker = worker
        self.every = every
        self.vacuum_dsn = vacuum_dsn
        self.stopping = stopping
        self._thread: threading.Thread | None = None
        self._conn: psycopg.Connection | None = None
        self._denied = False

    def run(self, lane: Lane) -> None:
        """``queue.maintain()`` on ``lane``'s connection, then a vacuum when the server needs
        one and none is running."""
        src = self.src
        try:
            with lane.connection() as conn:
                row = conn.execute(sql.MAINTAIN).fetchone()
                if self.vacuum_dsn is not None and not self.vacuuming():
                    off = conn.execute(sql.AUTOVACUUM_OFF).fetchone()
                    if off and off[0]:
                        self._start_vacuum()
        except psycopg.Error as exc:
            if is_connection_error(exc):
                self.trouble(src, "maintain", exc)
            else:
                event(
                    "maintain_failed",
                    logging.WARNING,
                    worker=self.worker,
                    database=src.label,
                    error=one_line(exc),
                )
            return
        reaped = row[0] if row else 0
        if reaped:
            self.hint(src)  # jobs are pending again
        event(
            "maintained", logging.DEBUG, worker=self.worker, database=src.label, taken_back=reaped
        )

    def vacuuming(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _start_vacuum(self) -> None:
        name = f"andal-vacuum-{self.src.index}"
        self._thread = threading.Thread(target=self._vacuum, name=name, daemon=True)
        self._thread.start()

    def _vacuum(self) -> None:
        """On a connection of its own (VACUUM cannot run in a transaction, and the pool's
        connections stay free for claims)."""
        assert self.vacuum_dsn is not None
        try:
            with psycopg.connect(
                self.vacuum_dsn,
                autocommit=True,
                connect_timeout=5,
                application_name=f"andal {self.worker} vacuum"[:63],
            ) as conn:
                self._conn = conn
                report = vacuum_tables(conn, self.every)
        except psycopg.Error as exc:
            if not self.stopping.is_set():  # not a cancel at shutdown
                self._event("vacuum_failed", logging.WARNING, error=one_line(exc))
            return
        except Exception:
            self.internal_error("vacuum")
            return
        finally:
            self._conn = None
        self._report(report)

    def _report(self, report: VacuumReport) -> None:
        if report.denied and not self._denied:
            self._denied = True
            self._event(
                "vacuum_denied",
                logging.WARNING,
                role=report.role,
                tables=report.denied,
                hint="autovacuum is off and this role cannot vacuum andal's tables: dead"
                " tuples will pile up; turn autovacuum on, or run the workers as the owner",
            )
        if report.vacuumed:
            self.vacuumed(report.vacuumed)
            self._event(
                "vacuumed",
                logging.INFO,
                tables=report.vacuumed,
                dead_tuples=report.dead_tuples,
                duration_ms=report.duration_ms,
            )
        else:
            self._event("vacuum_skipped", logging.DEBUG, reason=report.reason)

    def _event(self, name: str, level: int, **fields: Any) -> None:
        event(name, level, worker=self.worker, database=self.src.label, **fields)

    def stop(self) -> None:
        """Cancel a running vacuum and wait for its thread (a few seconds at most)."""
        thread, conn = self._thread, self._conn
        if thread is None or not thread.is_alive():
            return
        if conn is not None:
            with contextlib.suppress(Exception):
                if hasattr(conn, "cancel_safe"):  # psycopg >= 3.2
                    conn.cancel_safe(timeout=2)
                else:
                    conn.cancel()
        thread.join(timeout=5)
