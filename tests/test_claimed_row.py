"""The claimed row is declared once: ``andal.statements.Claimed`` names the columns of
``CLAIM`` and of ``COMPLETE_MANY_THEN_CLAIM``'s claimed rows, and they are the attributes of
the SQL type ``queue.claimed`` (what ``queue._claim`` returns), then ``db_now``."""

from __future__ import annotations

import psycopg

import andal
from andal import statements as sql
from andal.values import plain_array, text_array


def test_claimed_names_the_statements_and_the_sql_type(
    conn: psycopg.Connection, clean: None
) -> None:
    attributes = [
        r[0]
        for r in conn.execute(
            "select a.attname from pg_attribute as a"
            " where a.attrelid = 'queue.claimed'::regclass and a.attnum > 0"
            " and not a.attisdropped order by a.attnum"
        )
    ]
    assert list(sql.Claimed._fields) == [*attributes, "db_now"]

    andal.enqueue(conn, {"n": 1}, "claimed_row")
    andal.enqueue(conn, {"n": 2}, "claimed_row")
    params = {"worker": "w", "queues": text_array(["claimed_row"]), "batch": 1, "lease": None}
    with conn.transaction():
        cur = conn.execute(sql.CLAIM, params)
        assert [d.name for d in cur.description or []] == list(sql.Claimed._fields)
        first = sql.Claimed._make(cur.fetchone() or ())
    assert first.queue == "claimed_row" and first.payload == '{"n": 1}'
    assert first.lease_expires_at > first.db_now

    done = {"job_ids": plain_array([first.job_id]), "tokens": plain_array([first.token])}
    with conn.transaction():
        cur = conn.execute(sql.COMPLETE_MANY_THEN_CLAIM, {**done, "results": None, **params})
        names = [d.name for d in cur.description or []]
        rows = cur.fetchall()
    assert names[1:15] == list(sql.Claimed._fields)
    (completion,) = [r for r in rows if not r[0]]
    (claimed,) = [sql.Claimed._make(r[1:15]) for r in rows if r[0]]
    assert completion[1] == first.job_id and completion[15] is True
    assert claimed.payload == '{"n": 2}' and claimed.attempt == 1
