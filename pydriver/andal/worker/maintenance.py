"""Maintenance: ``queue.maintain()`` on one database every ``maintain_every`` seconds (take back
expired leases, prune old counters), followed, when the server runs with ``autovacuum = off``,
by a ``VACUUM (ANALYZE)`` of andal's changed tables in a thread of its own (see
``vacuum.vacuum_tables``; one worker at a time).

The claim loop calls ``Maintenance.run`` when it is due; ``stop`` cancels a vacuum at
shutdown. ``Maintenance`` reaches the rest of the worker only through ``Host``.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from contextlib import AbstractContextManager
from typing import Any, Protocol

import psycopg

from .. import statements as sql
from ..hosts import is_connection_error
from ..logs import event
from .databases import Source
from .state import one_line
from .vacuum import VacuumReport, vacuum_tables


class Lane(Protocol):
    def connection(self) -> AbstractContextManager[psycopg.Connection]: ...


class Host(Protocol):
    """What maintenance needs from its worker."""

    def trouble(self, src: Source, during: str, exc: BaseException) -> None: ...

    def hint(self, src: Source) -> None:
        """Jobs may be pending: claim now."""

    def vacuumed(self, tables: list[str]) -> None: ...

    def internal_error(self, where: str) -> None: ...


class Maintenance:
    """The housekeeping of one database. ``vacuum_dsn``: where the vacuum connects (None:
    never vacuum; behind a transaction-mode pooler its session lock needs a direct DSN)."""

    def __init__(
        self,
        host: Host,
        src: Source,
        worker: str,
        every: float,
        vacuum_dsn: str | None,
        stopping: threading.Event,
    ) -> None:
        self.host = host
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
                self.host.trouble(src, "maintain", exc)
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
            self.host.hint(src)  # jobs are pending again
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
            self.host.internal_error("vacuum")
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
            self.host.vacuumed(report.vacuumed)
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
