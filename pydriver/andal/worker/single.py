"""One success and the next claim in one simple-protocol query (a worker at batch 1).

``queue.complete_many_then_claim`` costs the server about twice what ``queue.complete`` and
``queue.claim`` cost for a single job (``complete_many``'s set machinery: the unnest, the lock
pass, the hash join and the histogram upsert, run for one row). A completer recording one
success sends instead both statements in one ``Query`` message: PostgreSQL runs the statements
of one simple-protocol query in one implicit transaction, so it is still one round trip and
one commit, the claim sees the completion's effects, and an error in either rolls both back,
as with the combined function. The simple protocol takes no parameters: the values go as
literals, quoted by libpq (``PQescapeLiteral``); the claim's text is rendered once per
database, queues and batch size.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import psycopg

from .. import statements as sql

if TYPE_CHECKING:
    from .state import _Outcome


def _literal(conn: psycopg.Connection[Any], text: str) -> str:
    return psycopg.pq.Escaping(conn.pgconn).escape_literal(text.encode()).decode()


def _interval(lease: timedelta | None) -> str:
    if lease is None:
        return "NULL"
    return f"'{lease.total_seconds()!r} seconds'"


class OneThenClaim:
    """The query of one success and the next claim (``rows``: run it, the claimed rows)."""

    def __init__(self) -> None:
        self._claims: dict[tuple[int, str, str, int], str] = {}

    def claim_text(self, conn: psycopg.Connection[Any], key: int, claim: dict[str, Any]) -> str:
        """``sql.CLAIM`` with ``claim``'s parameters as literals (cached)."""
        name, queues, batch = claim["worker"], claim["queues"], int(claim["batch"])
        cached = self._claims.get((key, name, queues, batch))
        if cached is None:
            if len(self._claims) > 256:  # queue limits open and close: bounded
                self._claims.clear()
            cached = sql.CLAIM % {
                "worker": _literal(conn, name),
                "queues": _literal(conn, queues),
                "batch": str(batch),
                "lease": _interval(claim["lease"]),
            }
            self._claims[(key, name, queues, batch)] = cached
        return cached

    def rows(
        self,
        conn: psycopg.Connection[Any],
        key: int,
        job_id: int,
        token: uuid.UUID,
        result: str | None,
        claim: dict[str, Any],
    ) -> list[tuple[Any, ...]]:
        """Complete ``job_id`` (``queue.complete``: AN001 when its lease is lost) and claim,
        in one query and one transaction; returns the claimed rows (``sql.CLAIM``'s)."""
        value = "NULL" if result is None else _literal(conn, result)
        if not isinstance(token, uuid.UUID):
            token = uuid.UUID(str(token))
        complete = (
            f"select queue.complete(job_id => {int(job_id)}::bigint,"
            f" token => '{token}'::uuid, result => {value}::jsonb)"
        )
        cur = conn.execute(complete + ";\n" + self.claim_text(conn, key, claim), prepare=False)
        if not cur.nextset():
            return []
        return cur.fetchall()

    def send(
        self,
        conn: psycopg.Connection[Any],
        key: int,
        oks: list[_Outcome],
        params: dict[str, Any],
        claim: dict[str, Any],
        one: bool,
    ) -> tuple[list[Any], list[tuple[Any, ...]]]:
        """The completions of ``oks`` (``params``: their arrays) and the claim, in one round
        trip and one transaction: (job id, completed) per completion, and the claimed rows
        (``sql.CLAIM``'s). ``one``: a single success, sent with ``rows``."""
        if one:
            job = oks[0].run.job
            return [(job.id, True)], self.rows(conn, key, job.id, job.token, oks[0].result, claim)
        both = conn.execute(sql.COMPLETE_MANY_THEN_CLAIM, {**params, **claim}).fetchall()
        return [(r[1], r[15]) for r in both if not r[0]], [r[1:15] for r in both if r[0]]
