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


def test_the_dashboard_filters_by_the_names_queue_job_gives(dsn: str) -> None:
    """The queue page's state filter (``queue.jobs_by``'s ``state``) offers every state, in
    the vocabulary's order, by the name ``queue.job`` gives it."""
    from andal.web import pages

    with psycopg.connect(dsn, autocommit=True) as c:
        rows = c.execute("select job_state from queue.states()").fetchall()
    assert tuple(r[0] for r in rows) == pages.STATES
