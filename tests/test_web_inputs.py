"""`andal web` against what a viewer may type into a URL, over plain HTTP.

* A live fragment of a queue nobody knows answers 404, and however many distinct names are
  asked for, ``queue.stats()`` runs once per refresh (counted by PostgreSQL itself:
  ``track_functions`` on the dashboard's sessions), not once per name.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from conftest import wait_for
from psycopg.conninfo import make_conninfo
from webapp import andal_web, get, seed

pytest.importorskip("starlette")


@pytest.fixture(scope="module")
def ids(dsn: str) -> dict[str, Any]:
    with psycopg.connect(dsn, autocommit=True) as c:
        return seed(c)


@pytest.fixture(scope="module")
def base(dsn: str, ids: dict[str, Any]) -> Iterator[str]:
    with andal_web(dsn) as server:
        yield server.base


def stats_calls(dsn: str) -> int:
    with psycopg.connect(dsn) as c:
        row = c.execute(
            "select coalesce(sum(calls), 0) from pg_stat_user_functions"
            " where schemaname = 'queue' and funcname = 'stats'"
        ).fetchone()
    return int(row[0]) if row else 0


def dashboard_sessions(dsn: str) -> int:
    with psycopg.connect(dsn) as c:
        row = c.execute(
            "select count(*) from pg_stat_activity"
            " where datname = current_database() and application_name = 'andal-web'"
        ).fetchone()
    return int(row[0]) if row else 0


def test_unknown_queue_fragments_are_404_and_cost_one_read(dsn: str, ids: dict[str, Any]) -> None:
    tracked = make_conninfo(dsn, options="-c track_functions=all")
    before = stats_calls(dsn)
    with andal_web(tracked, "--refresh", "600") as server:
        assert get(server.base + "/fragments/queues/mail")[0] == 200
        for i in range(200):
            status, body = get(server.base + f"/fragments/queues/nope-{i}")
            assert status == 404 and "no such queue" in body
        assert get(server.base + "/queues/mail")[0] == 200
    # a session's counts reach the statistics when it ends
    wait_for(lambda: dashboard_sessions(dsn) == 0, timeout=30, what="the dashboard's sessions")
    calls = stats_calls(dsn) - before
    assert 1 <= calls <= 2, calls  # once per refresh (600 s): not once per name


def test_a_queue_page_of_an_unknown_name_is_404(base: str) -> None:
    status, _ = get(base + "/queues/" + urllib.parse.quote("no such queue", safe=""))
    assert status == 404
