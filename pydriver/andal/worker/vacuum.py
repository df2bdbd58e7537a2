"""``VACUUM (ANALYZE)`` of andal's tables when the server runs with ``autovacuum = off``."""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import psycopg
from psycopg import sql as psql

from .. import statements as sql

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
