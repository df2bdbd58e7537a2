"""The databases a client, a worker or the cache talks to: their connection strings (``dsn_list``)
and labels (``database_label``), what a failed statement says about the connection
(``is_connection_error``, ``config_hint``), and whether andal is installed and a pooler answers
for the server (``check_installed``, ``behind_pooler``); a ``Lane`` lends a connection (a
``PoolLane`` keeps one between a thread's statements), and ``ReconnectBackoff`` spaces the
reconnects.

Shared by the client, the worker, the cache and the command line, so none of them imports
another for it.
"""

from __future__ import annotations

import contextlib
import os
import random
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import ConnectionPool, PoolTimeout

from . import statements as sql
from .errors import NotInstalled

#: SQLSTATE classes of a lost or refused connection: connection exception, insufficient
#: resources (too many connections), operator intervention (terminated, shutting down),
#: system error.
_CONNECTION_CLASSES = ("08", "53", "57", "58")


#: The SQLSTATEs only a pooler the worker was not told about causes (never an outage, never
#: seen on a direct connection): ``Trouble`` counts them even between successes.
POOLER_SYMPTOMS = frozenset({"26000", "42P05", "08P01"})
#: SQLSTATEs that mean the worker is set up wrong, not that the database is away: a prepared
#: statement missing or already there (a transaction-mode pooler in between, without
#: ``pooler="transaction"``), a missing grant, andal's schema or functions missing or older
#: than this driver. Each maps to the hint an operator can act on.
_POOLER = (
    "a transaction-mode pooler (pgbouncer) between the worker and the database?"
    " run the worker with pooler='transaction' (andal worker --pooler transaction)"
)
CONFIG_HINTS = {
    "26000": _POOLER,
    "42P05": _POOLER,
    # "bind message supplies N parameters, but prepared statement ... requires M": a
    # statement prepared on another client's server connection (class 08, not an outage)
    "08P01": _POOLER,
    "42501": "the worker's role lacks a privilege: grant it andal_worker",
    "42883": "andal is missing or older than this driver: run `andal install`",
    "42P01": "andal is missing or older than this driver: run `andal install`",
    "3F000": "andal is missing or older than this driver: run `andal install`",
}


def config_hint(exc: BaseException) -> str | None:
    """The hint for a configuration problem (see ``CONFIG_HINTS``), None for anything else."""
    if not isinstance(exc, psycopg.Error):
        return None
    return CONFIG_HINTS.get(exc.sqlstate or "")


def is_connection_error(exc: BaseException) -> bool:
    """Whether ``exc`` means the connection or the server is gone (retry with backoff),
    rather than the database refusing the statement."""
    if isinstance(exc, PoolTimeout):
        return True
    if not isinstance(exc, psycopg.OperationalError) or config_hint(exc) is not None:
        return False
    state = exc.sqlstate
    return state is None or state[:2] in _CONNECTION_CLASSES


# -- connection strings and labels ---------------------------------------------------------


def dsn_list(dsn: str | Sequence[str]) -> list[str]:
    """One DSN or several, as a list. Refuses none, a non-string, an empty or a repeated one."""
    if isinstance(dsn, str):
        dsns = [dsn]
    elif isinstance(dsn, Iterable):
        dsns = list(dsn)
    else:
        raise TypeError("dsn must be a connection string or a sequence of them")
    if not dsns:
        raise ValueError("no database: give at least one DSN")
    for one in dsns:
        if not isinstance(one, str) or not one.strip():
            raise ValueError("every DSN must be a non-empty string")
    if len(set(dsns)) != len(dsns):
        raise ValueError("the same DSN is given twice")
    return dsns


def database_label(dsn: str, index: int = 0) -> str:
    """How logs, metrics and ``andal status`` name a database: ``dbname@host:port`` from the
    connection string and the ``PG*`` environment (never a password); ``db<index>`` when the
    string cannot be parsed."""
    try:
        info = conninfo_to_dict(dsn)
    except psycopg.Error:
        return f"db{index}"
    env = os.environ
    dbname = info.get("dbname") or env.get("PGDATABASE") or info.get("user") or ""
    host = info.get("host") or info.get("hostaddr") or env.get("PGHOST") or "localhost"
    port = info.get("port") or env.get("PGPORT") or "5432"
    return f"{dbname}@{host}:{port}"


def database_labels(dsns: Sequence[str]) -> list[str]:
    """``database_label`` of each DSN, made unique (``#2``, ``#3``, ... appended to repeats:
    two roles on one database, say)."""
    labels: list[str] = []
    seen: Counter[str] = Counter()
    for i, dsn in enumerate(dsns):
        label = database_label(dsn, i)
        seen[label] += 1
        labels.append(label if seen[label] == 1 else f"{label}#{seen[label]}")
    return labels


def check_installed(dsn: str, connect_timeout: int = 5) -> bool:
    """Raise ``psycopg.OperationalError`` when the server does not answer, ``NotInstalled``
    when andal's schema is missing from the database. Returns whether a pooler answers for
    the server (``behind_pooler``)."""
    with psycopg.connect(
        dsn, autocommit=True, connect_timeout=connect_timeout, prepare_threshold=None
    ) as conn:
        row = conn.execute(sql.INSTALLED).fetchone()
        pooled = behind_pooler(conn)
        router = not (row and row[0]) and _is_router(conn)
    if router:  # its queue.idle/busy and NOTIFY are the partitions': run there
        raise NotInstalled(
            "this is an andal router database (andal router install): a worker runs on its"
            " partitions; give `andal worker` the router DSN, or andal.Worker the DSNs of"
            " andal.router.partition_dsns(dsn)"
        )
    if not row or not row[0]:
        raise NotInstalled("andal is not installed in this database; run `andal install`")
    return pooled


def _is_router(conn: psycopg.Connection[Any]) -> bool:
    """Whether ``conn``'s database is an andal router (``andal router install``)."""
    row = conn.execute("select to_regnamespace('andal_router') is not null").fetchone()
    return bool(row and row[0])


def behind_pooler(conn: psycopg.Connection[Any]) -> bool:
    """Whether a pooler (pgbouncer) stands between ``conn`` and the server: the process id
    the connection was given at its start (BackendKeyData, which a pooler makes up for its
    client) is not the server process that runs its statements."""
    row = conn.execute(sql.BACKEND_PID).fetchone()
    return row is not None and row[0] != conn.info.backend_pid


class Lane(Protocol):
    """Lends a connection for a statement or a few: a worker's lane, or a pool."""

    def connection(self) -> AbstractContextManager[psycopg.Connection[Any]]: ...


class PoolLane:
    """One pooled connection a thread keeps between its statements: the claim loop's and the
    completer's. Taking a connection from the pool and giving it back costs about as much
    client CPU as a small statement, which a worker at batch 1 paid twice per job; a lane pays
    it once. The connection goes back to the pool when it is broken or not idle after an error
    (the pool replaces or resets it), after ``_HOLD`` seconds (so the pool's health checks and
    ``max_lifetime`` still see it) and when its thread ends (``release``)."""

    _HOLD = 60.0

    __slots__ = ("pool", "conn", "since")

    def __init__(self, pool: ConnectionPool) -> None:
        self.pool = pool
        self.conn: psycopg.Connection | None = None
        self.since = 0.0

    @contextlib.contextmanager
    def connection(self) -> Iterator[psycopg.Connection]:
        conn = self.conn
        if conn is None:
            conn = self.pool.getconn()
            self.conn, self.since = conn, time.monotonic()
        try:
            yield conn
        except BaseException as exc:
            if not isinstance(exc, psycopg.Error) or not self._idle(conn):
                self.release()
            raise
        if not self._idle(conn) or time.monotonic() - self.since > self._HOLD:
            self.release()

    @staticmethod
    def _idle(conn: psycopg.Connection) -> bool:
        return not conn.broken and conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE

    def release(self) -> None:
        conn, self.conn = self.conn, None
        if conn is not None:
            with contextlib.suppress(Exception):  # a closing pool refuses it: nothing to do
                self.pool.putconn(conn)


class ReconnectBackoff:
    """Exponential backoff with jitter for reconnects: 50 ms doubling up to ``cap``."""

    def __init__(self, first: float = 0.05, cap: float = 2.0) -> None:
        self.first, self.cap, self.current = first, cap, 0.0

    def next(self) -> float:
        self.current = self.first if not self.current else min(self.current * 2, self.cap)
        return self.current * (0.5 + random.random() / 2)

    def reset(self) -> None:
        self.current = 0.0
