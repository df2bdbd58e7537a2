"""The dashboard's connections: reads as andal_monitor, actions as andal_admin (the roles of
an install with another role prefix: ``<prefix>_monitor``, ``<prefix>_admin``).

Reads and actions each run in one short transaction that starts with ``SET LOCAL ROLE``, so
PostgreSQL enforces the grants: a read transaction can execute only what andal_monitor was
granted, whatever the login role could do otherwise. Actions (and the one read kept for
admins, a job's payload) use ``--admin-dsn`` when given, else the same login; they are
offered only when that login is a member of andal_admin.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from ..roles import DEFAULT_PREFIX
from . import queries

#: The dashboard's sessions: not 'andal <worker>', so queue.workers() does not list them.
APPLICATION_NAME = "andal-web"


class SetupError(Exception):
    """The database cannot serve the dashboard (not installed, role missing): one line."""


@dataclass
class Database:
    dsn: str
    admin_dsn: str | None = None
    #: the install's role prefix: reads as <prefix>_monitor, actions as <prefix>_admin
    #: (None: the install's own, from queue.roles(), when the login role may read it)
    role_prefix: str | None = None
    can_act: bool = False
    version: str = ""
    _pools: list[ConnectionPool] = field(default_factory=list)

    @property
    def reader_role(self) -> str:
        return f"{self.role_prefix or DEFAULT_PREFIX}_monitor"

    @property
    def admin_role(self) -> str:
        return f"{self.role_prefix or DEFAULT_PREFIX}_admin"

    def open(self) -> None:
        """Check the install and the roles, then open the pools."""
        self._check()
        self.reader = self._pool(self.dsn)
        self.admin = self._pool(self.admin_dsn) if self.admin_dsn else self.reader
        try:
            self.version = str(self.read_one(queries.VERSION) or "")
        except psycopg.errors.InsufficientPrivilege:
            self.close()
            raise SetupError(
                f"{self.reader_role} may not read this database: was andal installed here with"
                " another role prefix? Pass it with --role-prefix"
            ) from None

    def _pool(self, dsn: str) -> ConnectionPool:
        pool = ConnectionPool(
            dsn,
            min_size=1,
            max_size=4,
            kwargs={"autocommit": True, "application_name": APPLICATION_NAME},
            configure=_prime_router,
            open=True,
        )
        self._pools.append(pool)
        return pool

    def close(self) -> None:
        for pool in self._pools:
            pool.close()
        self._pools.clear()

    def _check(self) -> None:
        try:
            with psycopg.connect(self.dsn, autocommit=True, connect_timeout=5) as conn:
                if not _one(conn, queries.INSTALLED):
                    raise SetupError("andal is not installed in this database; run `andal install`")
                if self.role_prefix is None:
                    self.role_prefix = _install_prefix(conn)
                if not _one(conn, queries.MEMBER_OF, {"role": self.reader_role}):
                    raise SetupError(
                        f"the login role may not read as {self.reader_role}: run `andal install`"
                        f" (it creates the role), then `grant {self.reader_role} to <login role>`"
                    )
                self.can_act = self.admin_dsn is None and self._is_admin(conn)
            if self.admin_dsn:
                with psycopg.connect(self.admin_dsn, autocommit=True, connect_timeout=5) as conn:
                    self.can_act = self._is_admin(conn)
                    if not self.can_act:
                        raise SetupError(f"--admin-dsn: its login role is not in {self.admin_role}")
        except (psycopg.OperationalError, psycopg.ProgrammingError) as exc:
            reason = " ".join(str(exc).split())
            raise SetupError(f"cannot connect to the database: {reason}") from exc

    def _is_admin(self, conn: psycopg.Connection) -> bool:
        return bool(_one(conn, queries.MEMBER_OF, {"role": self.admin_role}))

    @contextmanager
    def _session(self, pool: ConnectionPool, role: str) -> Iterator[psycopg.Connection]:
        with pool.connection() as conn, conn.transaction():
            conn.execute(sql.SQL(queries.SET_ROLE).format(sql.Identifier(role)))
            yield conn

    def read(self, statement: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """Rows of one read statement, as andal_monitor."""
        with self._session(self.reader, self.reader_role) as conn:
            cur = conn.cursor(row_factory=dict_row)
            return cur.execute(statement, params).fetchall()

    def read_many(
        self, statements: Sequence[tuple[str, Mapping[str, Any] | None]]
    ) -> list[list[dict[str, Any]]]:
        """Rows of several read statements in one transaction (one snapshot per statement)."""
        with self._session(self.reader, self.reader_role) as conn:
            cur = conn.cursor(row_factory=dict_row)
            return [cur.execute(s, p).fetchall() for s, p in statements]

    def read_one(self, statement: str, params: Mapping[str, Any] | None = None) -> Any:
        with self._session(self.reader, self.reader_role) as conn:
            row = conn.execute(statement, params).fetchone()
            return row[0] if row else None

    def act_row(
        self, statement: str, params: Mapping[str, Any] | None = None
    ) -> tuple[Any, ...] | None:
        """As ``act``, the whole row."""
        with self._session(self.admin, self.admin_role) as conn:
            return conn.execute(statement, params).fetchone()

    def act(self, statement: str, params: Mapping[str, Any] | None = None) -> Any:
        """One action (or an admin's read), as andal_admin, in its own transaction; the first
        column of its row. Raises psycopg.Error when the database refuses (nothing is changed
        then)."""
        with self._session(self.admin, self.admin_role) as conn:
            row = conn.execute(statement, params).fetchone()
            return row[0] if row else None


def _one(conn: psycopg.Connection, statement: str, params: Mapping[str, Any] | None = None) -> Any:
    row = conn.execute(statement, params).fetchone()
    return row[0] if row else None


def _prime_router(conn: psycopg.Connection) -> None:
    """On a router database (``andal router install``): one call as the login role before
    any ``SET ROLE``. PL/Proxy picks the role a session connects to the partitions as before
    it reads the cluster's configuration (``default_user``: the session's login role), so
    its first call would go as andal_monitor, which may not log in."""
    if _one(conn, queries.ROUTER):
        conn.execute(queries.VERSION)


def _install_prefix(conn: psycopg.Connection) -> str:
    """The install's role prefix as queue.roles() names it; ``andal`` when the login role
    may not call it (then the membership check below says what to grant or pass)."""
    try:
        row = conn.execute(queries.MONITOR_ROLE).fetchone()
    except (psycopg.errors.InsufficientPrivilege, psycopg.errors.UndefinedFunction):
        return DEFAULT_PREFIX
    return str(row[0]).removesuffix("_monitor") if row else DEFAULT_PREFIX
