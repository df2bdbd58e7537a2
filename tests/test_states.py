"""One vocabulary of job states: Python's ``andal.jobs.STATES`` (and the names ``queue.job``
gives, ``andal.jobs.JOB_STATE``) are ``queue.states()``, read from the database."""

from __future__ import annotations

import psycopg

from andal import jobs


def test_python_states_are_the_sql_vocabulary(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as c:
        rows = c.execute("select state, job_state, live from queue.states()").fetchall()
    assert tuple(r[0] for r in rows) == jobs.STATES
    assert {r[0]: r[1] for r in rows if r[0] != r[1]} == jobs.JOB_STATE
    assert {r[1] for r in rows if not r[2]} == jobs.FINAL
