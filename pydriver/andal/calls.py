"""One statement on either kind of connection: ``send`` runs it at once on a
``psycopg.Connection`` and returns an awaitable on a ``psycopg.AsyncConnection``, so each
producer function is written once for both; ``first``, ``column`` and ``nothing`` shape its
rows."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import psycopg

from .errors import translated

T = TypeVar("T")
AnyConnection = psycopg.Connection[Any] | psycopg.AsyncConnection[Any]
Rows = list[tuple[Any, ...]]


def send(
    conn: AnyConnection, statement: str, params: dict[str, Any], shape: Callable[[Rows], T]
) -> T | Awaitable[T]:
    """Run ``statement`` on ``conn`` and give its rows to ``shape``: at once on a
    ``Connection``, as an awaitable on an ``AsyncConnection``."""
    if isinstance(conn, psycopg.AsyncConnection):

        async def run() -> T:
            with translated():
                cur = await conn.execute(statement, params)
                return shape(await cur.fetchall() if cur.description else [])

        return run()
    with translated():
        cur = conn.execute(statement, params)
        return shape(cur.fetchall() if cur.description else [])


def first(rows: Rows) -> Any:
    return rows[0][0] if rows else None


def column(rows: Rows) -> list[Any]:
    return [row[0] for row in rows]


def nothing(rows: Rows) -> None:
    return None
