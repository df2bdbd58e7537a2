"""The banner of every page of `andal web`, in headless Chromium: it says when no live worker
takes a queue with ready jobs, when a worker stopped heartbeating (a lease it holds ran out)
and when the held-back xmin is older than --warn-xmin-age, and it goes away (live, without a
reload) once that is no longer so. Each test makes its own jobs and workers."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from conftest import wait_for
from webapp import SCREENSHOTS, andal_web, browsing

pytest.importorskip("selenium")
pytest.importorskip("starlette")

from selenium.webdriver.common.by import By  # noqa: E402

#: --warn-xmin-age of the server under test: small, yet above the few milliseconds the
#: dashboard's own reads hold a snapshot.
XMIN_AGE = 3

#: The banner's lines by kind, read in one script run (the live update replaces them).
ALERTS = """
const out = {};
document.querySelectorAll('#banner [data-alert]').forEach(p => {
  out[p.dataset.alert] = p.textContent.trim();
});
return out;
"""


@pytest.fixture(scope="module")
def base(dsn: str) -> Iterator[str]:
    with andal_web(dsn, "--warn-xmin-age", str(XMIN_AGE)) as server:
        yield server.base


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with browsing() as driver:
        yield driver


def alerts(browser: Any) -> dict[str, str]:
    return dict(browser.execute_script(ALERTS))


def test_banner_when_no_live_worker_takes_a_queue_with_ready_jobs(
    browser: Any, base: str, dsn: str
) -> None:
    hostile = "<b id='bold'>orphans</b>"
    with psycopg.connect(dsn, autocommit=True) as c:
        for q in ("orphans", hostile):
            c.execute("select queue.enqueue(payload => '{}', queue => %s)", (q,))
    browser.get(base + "/workers")  # any page: drawn with the page itself
    text = alerts(browser).get("workers", "")
    assert text.startswith("No worker is live: queues ") and "(2 ready)" in text, text
    assert hostile in text and not browser.find_elements(By.ID, "bold")  # shown as text
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(SCREENSHOTS / "banner-no-worker.png"))
    browser.get(base + "/")
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(
            "select queue.register_worker(worker => 'pool-1', host => 'h', pid => 1,"
            " queues => '{orphans}')"
        )
        wait_for(
            lambda: alerts(browser).get("workers", "").startswith("No live worker takes: queue <b"),
            what="the banner to name only the queue no live worker takes",
        )
        c.execute(
            "select queue.register_worker(worker => 'pool-2', host => 'h', pid => 2,"
            " queues => %s::text[])",
            ([hostile],),
        )
    wait_for(lambda: "workers" not in alerts(browser), what="the banner to go (live)")


def test_banner_when_a_worker_stopped_heartbeating(browser: Any, base: str, dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("select queue.enqueue(payload => '{}', queue => 'beats')")
        c.execute(
            "select * from queue.claim(worker => 'silent-w', queues => '{beats}',"
            " lease => '1 second')"
        )
        browser.get(base + "/dead")
        wait_for(
            lambda: "silent-w" in alerts(browser).get("heartbeat", ""),
            what="the banner to name the worker whose lease ran out",
        )
        text = alerts(browser)["heartbeat"]
        assert text.startswith("Stopped heartbeating: worker silent-w"), text
        # another worker takes the job back (its lease ran out): silent-w holds nothing now
        job, token = c.execute(
            "select job_id, token from queue.claim(worker => 'alive-w', queues => '{beats}')"
        ).fetchone()
        wait_for(lambda: "heartbeat" not in alerts(browser), what="the heartbeat line to go")
        c.execute("select queue.complete(job_id => %s, token => %s)", (job, token))


def test_banner_when_the_held_back_xmin_is_old(browser: Any, base: str, dsn: str) -> None:
    browser.get(base + "/")
    wait_for(lambda: "xmin" not in alerts(browser), what="no xmin line to begin with")
    with psycopg.connect(dsn) as held:
        held.execute("set transaction isolation level repeatable read")
        held.execute("select count(*) from queue.jobs")  # the snapshot is held from here
        wait_for(
            lambda: "xmin" in alerts(browser),
            timeout=XMIN_AGE + 30,
            what="the banner to say the held-back xmin is old",
        )
        text = alerts(browser)["xmin"]
        assert text.startswith("The held-back xmin is ") and "vacuum" in text, text
        held.rollback()  # the snapshot is let go
    wait_for(lambda: "xmin" not in alerts(browser), what="the xmin line to go (live)")
