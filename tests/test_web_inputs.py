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


#: Ids, pages and names a viewer may type: each answers 400 or 404 (or 200 where the input
#: is a fair one), never a server error.
BAD_INPUTS = [
    "/jobs/0",
    "/jobs/-1",
    "/jobs/abc",
    "/jobs/1e9",
    "/jobs/99999999999999999999",
    "/jobs/9223372036854775808",
    "/jobs/%00",
    "/jobs/%20",
    "/jobs?id=",
    "/jobs?id=99999999999999999999",
    "/jobs?id=%00",
    "/jobs?id=-3",
    "/queues/mail?before=abc",
    "/queues/mail?before=-1",
    "/queues/mail?before=99999999999999999999",
    "/queues/mail?before=%00",
    "/queues/mail?state=bogus",
    "/queues/mail?state=%00",
    "/queues/%00",
    "/queues/" + "x" * 400,
    "/queues/%ff%fe",
    "/queues/a%0Ab",
    "/fragments/queues/%00",
    "/fragments/queues/" + "x" * 400,
    "/dead?before=abc",
    "/dead?before=99999999999999999999",
    "/dead?queue=%00",
    "/dead?queue=" + "x" * 400,
    "/dead?state=bogus",
    "/dead?before=0",
    "/queues/",
    "/fragments/queues/",
    "/jobs/1/cancel",
]


@pytest.mark.parametrize("path", BAD_INPUTS)
def test_bad_ids_pages_and_names_are_400_or_404(base: str, path: str) -> None:
    status, body = get(base + path)
    assert status in (200, 303, 400, 404, 405), (path, status, body[:300])
    assert "Traceback" not in body and "Internal Server Error" not in body


def test_huge_ids_in_a_form_are_refused_cleanly(base: str) -> None:
    import re

    from test_web_security import Browser

    browser = Browser(base)
    token = browser.csrf()
    for path, form in (
        ("/jobs/99999999999999999999/cancel", {}),
        ("/dead/requeue", {"one": "99999999999999999999"}),
        ("/dead/purge", {"ids": ["99999999999999999999", "%00"]}),
    ):
        status, body = browser.post(path, {**form, "csrf": token})
        assert status in (303, 400, 404), (path, status, body[:300])
    assert re.search(r'name="csrf"', browser.get("/dead")[1])


def test_a_queue_with_a_slash_in_its_name_is_reachable(base: str, dsn: str) -> None:
    from test_web_security import Browser

    name = "team/a b?#%"
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("select queue.enqueue(payload => '{}', queue => %s)", (name,))
    quoted = urllib.parse.quote(name, safe="")
    status, html = get(base + "/queues/" + quoted)
    assert status == 200 and "team/a b?#%" in html, status
    assert get(base + "/fragments/queues/" + quoted)[0] == 200
    overview = get(base + "/")[1]
    assert '/queues/team/a%20b%3F%23%25"' in overview or f"/queues/{quoted}" in overview
    browser = Browser(base)
    status, _ = browser.post(f"/queues/{quoted}/pause", {"csrf": browser.csrf()})
    assert status == 303
    with psycopg.connect(dsn) as c:
        paused = c.execute(
            "select paused from queue.stats() where queue = %s and category is null", (name,)
        ).fetchone()
    assert paused == (True,)


def test_an_unknown_queue_has_a_404_page_without_actions(base: str) -> None:
    status, html = get(base + "/queues/nope")
    assert status == 404 and 'id="not-found"' in html
    assert 'data-action="pause"' not in html and 'method="post"' not in html


def web_exit(dsn: str, *args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    """`andal web` that must refuse to start: its exit code and stderr."""
    import os
    import subprocess
    import sys

    environ = {k: v for k, v in os.environ.items() if not k.startswith("ANDAL_WEB_")}
    argv = [sys.executable, "-m", "andal.cli", "--dsn", dsn, "web", "--bind", "127.0.0.1:1"]
    result = subprocess.run(
        [*argv, *args], capture_output=True, text=True, timeout=60, env={**environ, **(env or {})}
    )
    return result.returncode, result.stderr


@pytest.mark.parametrize(
    ("args", "env", "says"),
    [
        ((), {"ANDAL_WEB_TOKEN": ""}, "ANDAL_WEB_TOKEN is set but empty"),
        ((), {"ANDAL_WEB_TOKEN": "  "}, "ANDAL_WEB_TOKEN is set but empty"),
        (("--auth-token", ""), {}, "--auth-token is empty"),
        ((), {"ANDAL_WEB_BASIC_AUTH": ""}, "USER:PASSWORD, both non-empty"),
        (("--basic-auth", "ops:"), {}, "USER:PASSWORD, both non-empty"),
        (("--basic-auth", ":pw"), {}, "USER:PASSWORD, both non-empty"),
    ],
)
def test_empty_credentials_are_refused_not_turned_off(
    dsn: str, args: tuple[str, ...], env: dict[str, str], says: str
) -> None:
    code, err = web_exit(dsn, *args, env=env)
    assert code == 2 and says in err, (code, err)


@pytest.mark.parametrize(
    "root",
    ["andal", "/a b", "/a;path=/", "/a/../b", "/./a", "//evil.example", "/a?x", "/a#x", "/é"],
)
def test_a_bad_root_path_is_refused(dsn: str, root: str) -> None:
    code, err = web_exit(dsn, "--root-path", root)
    assert code == 2 and "--root-path" in err, (code, err)


def test_many_registered_workers_keep_the_workers_page_one_page(base: str, dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(
            "select queue.register_worker(worker => 'fake-' || i, host => 'h', pid => 1,"
            " slots => 1, expire_after => '1 hour') from generate_series(1, 500) as i"
        )
        total = c.execute("select count(*) from queue.workers()").fetchone()[0]
    status, html = get(base + "/workers")
    assert status == 200
    assert html.count("<tr data-worker=") == 200
    assert f"Showing the 200 workers holding most jobs of {total}." in html
    assert 'data-worker="w1"' in html  # the one holding a job comes first
    status, html = get(base + "/")
    assert f'data-figure="workers">{total}<' in html


def test_bulk_actions_need_the_token_and_the_confirmation(base: str, dsn: str) -> None:
    from test_web_security import Browser

    def dead() -> int:
        with psycopg.connect(dsn) as c:
            row = c.execute("select count(*) from queue.dead_letters").fetchone()
        return int(row[0]) if row else 0

    before = dead()
    assert before > 0
    fresh = Browser(base)
    for path in ("/dead/requeue-matching", "/dead/purge-matching"):
        assert fresh.post(path, {"confirm": "yes"})[0] == 403  # no token
    browser = Browser(base)
    token = browser.csrf()
    status, _ = browser.post("/dead/purge-matching", {"csrf": token, "back": "/dead?queue="})
    assert status == 303
    assert "tick the box to confirm" in browser.get("/dead")[1]
    status, _ = browser.post(
        "/dead/purge-matching", {"csrf": token, "confirm": "yes", "reason": "lost"}
    )
    assert status == 303 and "SQLSTATE 22023" in browser.get("/dead")[1]
    assert dead() == before
