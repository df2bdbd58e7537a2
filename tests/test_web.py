"""`andal web` in a real browser: Debian's headless Chromium, driven by Selenium, against the
server run as a real process on a database with jobs in every state.

Each page is loaded and its figures compared with what the SQL functions return; a dead letter
is requeued and two are purged through the page; a job enqueued from SQL shows on the
overview without a reload; a payload holding a script and HTML shows as text. Screenshots of
each page go to .andal/screenshots/ (or $ANDAL_SCREENSHOTS), not committed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from conftest import wait_for
from webapp import IMG_ERROR, SCREENSHOTS, SCRIPT_PAYLOAD, andal_web, browsing, seed

from andal.web import fmt

pytest.importorskip("selenium")
pytest.importorskip("starlette")

from selenium.common.exceptions import StaleElementReferenceException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

#: Every cell of the overview's queue table, read in one script run (the table is replaced by
#: live updates, so reading cell by cell could straddle two versions).
QUEUE_CELLS = """
const out = {};
document.querySelectorAll('#queues tbody tr').forEach(tr => {
  const row = {};
  tr.querySelectorAll('[data-col]').forEach(td => { row[td.dataset.col] = td.textContent.trim(); });
  out[tr.dataset.queue] = row;
});
return out;
"""


@pytest.fixture(scope="module")
def ids(dsn: str) -> dict[str, Any]:
    with psycopg.connect(dsn, autocommit=True) as c:
        return seed(c)


@pytest.fixture(scope="module")
def base(dsn: str, ids: dict[str, Any]) -> Iterator[str]:
    with andal_web(dsn) as server:
        yield server.base


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with browsing() as driver:
        yield driver


def shot(browser: Any, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(SCREENSHOTS / f"{name}.png"))


def stats(dsn: str) -> dict[tuple[str, str | None], dict[str, Any]]:
    with psycopg.connect(dsn) as c, c.cursor(row_factory=psycopg.rows.dict_row) as cur:
        rows = cur.execute("select * from queue.stats()").fetchall()
    return {(r["queue"], r["category"]): r for r in rows}


def test_overview_shows_what_queue_stats_returns(browser: Any, base: str, dsn: str) -> None:
    browser.get(base + "/")
    shown = browser.execute_script(QUEUE_CELLS)
    expected = stats(dsn)
    assert set(shown) == {q for q, cat in expected if cat is None} == {"mail", "hooks"}
    for queue, cells in shown.items():
        row = expected[(queue, None)]
        for col in ("ready", "scheduled", "running", "dead", "completed_1h"):
            assert cells[col] == fmt.count(row[col]), (queue, col)
        assert cells["failure_rate"] == fmt.pct(row["failure_rate"])
        assert cells["pickup_p95"] == fmt.ms(row["pickup_p95_ms"])
    assert shown["mail"]["ready"] == "3" and shown["hooks"]["dead"] == "4"
    acme = browser.find_element(By.CSS_SELECTOR, '#categories tr[data-category="acme"]')
    attempts = acme.find_element(By.CSS_SELECTOR, '[data-col="lock_attempts"]').text
    assert attempts == fmt.count(expected[("hooks", "acme")]["lock_attempts"])
    with psycopg.connect(dsn) as c:
        ratio = c.execute("select value from cache.stats() where metric = 'hit_ratio'")
        ratio = ratio.fetchone()[0]
        workers = c.execute("select count(*) from queue.workers()").fetchone()[0]
    hit = browser.find_element(By.CSS_SELECTOR, '#cache [data-col="hit_ratio"]').text
    assert hit == fmt.pct(ratio) == "70.0%"
    assert browser.find_element(By.CSS_SELECTOR, '[data-figure="workers"]').text == str(workers)
    # one throughput chart per queue, drawn from queue.stats_by_minute()
    assert len(browser.find_elements(By.CSS_SELECTOR, "#queues svg.spark.ok polyline")) == 2
    # each chart writes its scale with its unit and its time range (UTC minutes)
    chart = browser.find_element(By.CSS_SELECTOR, "#queues svg.spark.ok")
    ticks = {c: chart.find_element(By.CSS_SELECTOR, f"text.{c}").text for c in ("top", "start")}
    assert ticks["top"].endswith(" jobs/min"), ticks
    assert re.fullmatch(r"\d\d:\d\d", ticks["start"]), ticks
    title = chart.find_element(By.TAG_NAME, "title").get_attribute("textContent")
    assert title.startswith("completed per minute, ") and " UTC, top of the scale " in title
    failed = browser.find_element(By.CSS_SELECTOR, "#queues svg.spark.bad text.top").text
    assert failed == "100 %"
    shot(browser, "overview")


def test_a_job_enqueued_from_sql_shows_without_a_reload(browser: Any, base: str, dsn: str) -> None:
    browser.get(base + "/")
    browser.execute_script("window.__same_page = true")
    assert not browser.find_elements(By.CSS_SELECTOR, 'tr[data-queue="live-q"]')
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("select queue.enqueue(payload => '{}', queue => 'live-q')")
    WebDriverWait(browser, 20, poll_frequency=0.1).until(
        lambda d: d.execute_script(QUEUE_CELLS).get("live-q", {}).get("ready") == "1"
    )
    assert browser.execute_script("return window.__same_page") is True  # not reloaded


def job_ids(dsn: str, **args: Any) -> list[str]:
    """Ids of queue.jobs_by(...), newest first, as the pages show them."""
    named = ", ".join(f"{k} => %({k})s" for k in args)
    with psycopg.connect(dsn) as c:
        return [str(r[0]) for r in c.execute(f"select job_id from queue.jobs_by({named})", args)]


def shown_jobs(browser: Any) -> list[str]:
    return [
        e.get_attribute("data-job")
        for e in browser.find_elements(By.CSS_SELECTOR, "#jobs tbody tr")
    ]


def test_queue_page_shows_its_figures_and_jobs_by_state(browser: Any, base: str, dsn: str) -> None:
    browser.get(base + "/queues/hooks")
    total = stats(dsn)[("hooks", None)]
    for key in ("ready", "scheduled", "running", "dead"):
        figure = browser.find_element(By.CSS_SELECTOR, f'[data-figure="{key}"]').text
        assert figure == fmt.count(total[key]), key
    acme = browser.find_element(By.CSS_SELECTOR, '#categories tr[data-category="acme"]')
    assert acme.find_element(By.CSS_SELECTOR, '[data-col="limit"]').text == "2"  # set by seed
    assert shown_jobs(browser) == job_ids(dsn, queue="hooks") != []
    shot(browser, "queue")
    browser.find_element(By.CSS_SELECTOR, '#states a[data-state="dead"]').click()
    WebDriverWait(browser, 10).until(lambda d: "state=dead" in d.current_url)
    assert shown_jobs(browser) == job_ids(dsn, queue="hooks", state="dead")
    states = {
        e.get_attribute("data-state")
        for e in browser.find_elements(By.CSS_SELECTOR, "#jobs tbody tr")
    }
    assert states == {"dead"}


def test_queue_page_figures_update_without_a_reload(browser: Any, base: str, dsn: str) -> None:
    browser.get(base + "/queues/hooks")
    browser.execute_script("window.__same_page = true")
    ready = lambda d: d.find_element(By.CSS_SELECTOR, '[data-figure="ready"]').text  # noqa: E731
    before = int(ready(browser))
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("select queue.enqueue(payload => '{}', queue => 'hooks')")
    WebDriverWait(
        browser, 20, poll_frequency=0.1, ignored_exceptions=[StaleElementReferenceException]
    ).until(lambda d: ready(d) == str(before + 1))
    assert browser.execute_script("return window.__same_page") is True


def test_queue_pages_page_by_id(browser: Any, base: str, dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(
            "select queue.enqueue_many(payloads => array_fill('{}'::jsonb, array[120]),"
            " queue => 'bulk')"
        )
    expected = job_ids(dsn, queue="bulk", lim=1000)
    browser.get(base + "/queues/bulk")
    seen = shown_jobs(browser)
    while browser.find_elements(By.CSS_SELECTOR, 'a[rel="next"]'):
        browser.find_element(By.CSS_SELECTOR, 'a[rel="next"]').click()
        seen += shown_jobs(browser)
    assert seen == expected and len(seen) == 120


def test_pause_and_resume_a_queue_through_the_page(browser: Any, base: str, dsn: str) -> None:
    browser.get(base + "/queues/mail")
    browser.find_element(By.CSS_SELECTOR, 'button[data-action="pause"]').click()
    notice = WebDriverWait(browser, 10).until(lambda d: d.find_element(By.ID, "notice"))
    assert notice.text == "paused queue mail"
    assert stats(dsn)[("mail", None)]["paused"] is True
    assert browser.find_element(By.ID, "paused").text == "paused"
    browser.get(base + "/")
    assert browser.execute_script(QUEUE_CELLS)["mail"]["paused"] == "paused"
    browser.get(base + "/queues/mail")
    browser.find_element(By.CSS_SELECTOR, 'button[data-action="resume"]').click()
    WebDriverWait(browser, 10).until(lambda d: d.find_element(By.ID, "notice"))
    assert stats(dsn)[("mail", None)]["paused"] is False


def test_workers_page_shows_queue_workers(browser: Any, base: str, dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as c:
        # w1 holds a job (seed) and registers its 4 slots; w-idle is registered, holds none;
        # w-old holds a job without registering (an older driver): no slots shown
        c.execute(
            "select queue.register_worker(worker => 'w1', host => 'box', pid => 1, slots => 4)"
        )
        c.execute(
            "select queue.register_worker(worker => 'w-idle', host => 'box', pid => 2, slots => 2)"
        )
        c.execute("select queue.enqueue(payload => '{}', queue => 'web-old')")
        c.execute("select * from queue.claim(worker => 'w-old', queues => '{web-old}')")
    browser.get(base + "/workers")
    with psycopg.connect(dsn) as c:
        expected = {w: str(n) for w, n in c.execute("select worker, running from queue.workers()")}
    rows = browser.find_elements(By.CSS_SELECTOR, "#workers tbody tr")
    shown = {
        tr.get_attribute("data-worker"): tr.find_element(
            By.CSS_SELECTOR, '[data-col="running"]'
        ).text
        for tr in rows
    }
    slots = {
        tr.get_attribute("data-worker"): tr.find_element(By.CSS_SELECTOR, '[data-col="slots"]').text
        for tr in rows
    }
    assert shown == expected and shown["w1"] == "1" and shown["w-idle"] == "0"
    assert slots["w1"] == "4" and slots["w-idle"] == "2" and slots["w-old"] == "–"
    shot(browser, "workers")


def dead_ids(dsn: str, **args: Any) -> list[str]:
    """Ids of queue.dead_letters_by(...), newest first, as the Dead letters page shows them."""
    named = ", ".join(f"{k} => %({k})s" for k in args)
    with psycopg.connect(dsn) as c:
        rows = c.execute(f"select job_id from queue.dead_letters_by({named})", args)
        return [str(r[0]) for r in rows]


def test_dead_letters_page_lists_and_filters(browser: Any, base: str, dsn: str) -> None:
    browser.get(base + "/dead")
    assert shown_jobs(browser) == dead_ids(dsn) != []
    assert IMG_ERROR in browser.find_element(By.ID, "jobs").text  # text, not markup
    reasons = {
        e.get_attribute("data-reason")
        for e in browser.find_elements(By.CSS_SELECTOR, "#jobs tbody tr")
    }
    assert reasons == {"exhausted", "non_retryable", "cancelled"}
    shot(browser, "dead-letters")
    browser.get(base + "/dead?reason=cancelled")
    assert shown_jobs(browser) == dead_ids(dsn, reason="cancelled") != []
    browser.get(base + "/dead?state=cancelled")  # the filter's earlier name
    assert shown_jobs(browser) == dead_ids(dsn, reason="cancelled")
    browser.get(base + "/dead?queue=hooks&reason=exhausted")
    assert shown_jobs(browser) == dead_ids(dsn, queue="hooks", reason="exhausted") != []


def test_job_page_shows_a_script_payload_as_text(
    browser: Any, base: str, ids: dict[str, Any]
) -> None:
    browser.get(f"{base}/jobs/{ids['script']}")
    payload = browser.find_element(By.ID, "payload").text
    assert SCRIPT_PAYLOAD["html"] in payload
    assert not browser.find_elements(By.ID, "bold")  # the <b> is not an element
    assert IMG_ERROR in browser.find_element(By.ID, "errors").text
    assert not browser.find_elements(By.CSS_SELECTOR, "main img, main script")
    assert browser.execute_script("return window.__pwned") is None
    assert browser.find_element(By.CSS_SELECTOR, '[data-field="state"]').text == "dead"
    shot(browser, "job")


def test_job_page_shows_what_queue_job_returns(
    browser: Any, base: str, dsn: str, ids: dict[str, Any]
) -> None:
    job = ids["running"]
    browser.get(f"{base}/jobs/{job}")
    with psycopg.connect(dsn) as c:
        state, worker, attempts = c.execute(
            "select state, worker, attempts from queue.job(job_id => %s)", (job,)
        ).fetchone()
    field = lambda name: browser.find_element(By.CSS_SELECTOR, f'[data-field="{name}"]').text  # noqa: E731
    assert field("state") == state == "running"
    assert field("worker").startswith(worker) and worker == "w1"
    assert field("attempts").startswith(str(attempts))
    browser.get(f"{base}/jobs/987654")
    assert "andal does not remember this job" in browser.find_element(By.TAG_NAME, "main").text


def test_cancel_a_job_through_its_page(
    browser: Any, base: str, dsn: str, ids: dict[str, Any]
) -> None:
    job = ids["scheduled"]
    browser.get(f"{base}/jobs/{job}")
    browser.find_element(By.CSS_SELECTOR, 'button[data-action="cancel"]').click()
    WebDriverWait(browser, 10).until(lambda d: d.switch_to.alert).accept()
    notice = WebDriverWait(browser, 10).until(lambda d: d.find_element(By.ID, "notice"))
    assert notice.text == f"cancelled job {job}"
    with psycopg.connect(dsn) as c:
        assert c.execute("select state from queue.job(job_id => %s)", (job,)).fetchone() == (
            "cancelled",
        )
    assert browser.find_element(By.CSS_SELECTOR, '[data-field="state"]').text == "cancelled"


def test_requeue_a_dead_letter_through_the_page(
    browser: Any, base: str, dsn: str, ids: dict[str, Any]
) -> None:
    job = ids["exhausted"]
    browser.get(base + "/dead")
    browser.find_element(
        By.CSS_SELECTOR, f'tr[data-job="{job}"] button[data-action="requeue"]'
    ).click()
    notice = WebDriverWait(browser, 10).until(lambda d: d.find_element(By.ID, "notice"))
    assert notice.text == "requeued 1 dead letter(s)"
    with psycopg.connect(dsn) as c:
        assert c.execute("select state from queue.job(job_id => %s)", (job,)).fetchone() == (
            "pending",
        )
        assert not c.execute("select from queue.dead_letters where job_id = %s", (job,)).fetchone()
    assert not browser.find_elements(By.CSS_SELECTOR, f'tr[data-job="{job}"]')


def test_purge_selected_dead_letters(
    browser: Any, base: str, dsn: str, ids: dict[str, Any]
) -> None:
    chosen = [ids["non_retryable"], ids["script"]]
    browser.get(base + "/dead")
    for job in chosen:
        browser.find_element(By.CSS_SELECTOR, f'tr[data-job="{job}"] input[name="ids"]').click()
    browser.find_element(By.CSS_SELECTOR, 'button[data-action="purge-selected"]').click()
    WebDriverWait(browser, 10).until(lambda d: d.switch_to.alert).accept()  # "Delete for good?"
    notice = WebDriverWait(browser, 10).until(lambda d: d.find_element(By.ID, "notice"))
    assert notice.text == "purged 2 dead letter(s)"
    with psycopg.connect(dsn) as c:
        left = {r[0] for r in c.execute("select job_id from queue.dead_letters")}
    assert left == {ids["cancelled"], ids["scheduled"]}  # (cancelled by a test before)
    shot(browser, "dead-letters-after-purge")


def test_queue_page_shows_its_policy_schedules_and_rate_limits(
    browser: Any, base: str, dsn: str
) -> None:
    name = "nightly <b>report</b>"  # shown as text
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(
            "select queue.configure_queue(queue => 'timed', timeout => '5 minutes',"
            " max_attempts => 7, lease => '2 minutes', backoff => 'exponential',"
            " dead_retention => '3 days')"
        )
        c.execute(
            "select queue.schedule(name => %s, queue => 'timed', cron => '30 2 * * *',"
            " timezone => 'Europe/Berlin', category => 'paced')",
            (name,),
        )
        c.execute("select queue.set_category_limit(category => 'paced', max_running => 10)")
        c.execute("select queue.set_rate_limit(category => 'paced', starts => 2, per => '1 hour')")
        c.execute(
            "select queue.enqueue_many(payloads => array_fill('{}'::jsonb, array[3]),"
            " queue => 'timed', category => 'paced')"
        )
        for _ in range(2):  # two starts, then the window is full: a refusal
            c.execute("select * from queue.claim(worker => 'w2', queues => '{timed}', batch => 5)")
    browser.get(base + "/queues/timed")
    with psycopg.connect(dsn) as c, c.cursor(row_factory=psycopg.rows.dict_row) as cur:
        policy = cur.execute(
            "select max_attempts, lease::text, timeout::text, backoff, dead_retention::text,"
            " history_retention from queue.queue_settings(queue => 'timed')"
        ).fetchone()
        schedule = cur.execute(
            "select next_at from queue.schedules() where name = %s", (name,)
        ).fetchone()
        rate = cur.execute(
            "select starts, per::text, started_in_window from queue.rate_limits()"
            " where category = 'paced'"
        ).fetchone()
    refusals = stats(dsn)[("timed", "paced")]["rate_refusals"]
    setting = lambda k: browser.find_element(By.CSS_SELECTOR, f'[data-setting="{k}"]').text  # noqa: E731
    assert setting("max_attempts") == str(policy["max_attempts"]) == "7"
    # intervals in words, as the SQL's interval says them
    assert setting("lease") == "2 min" and policy["lease"] == "00:02:00"
    assert setting("timeout") == "5 min" and policy["timeout"] == "00:05:00"
    assert setting("backoff") == policy["backoff"] == "exponential"
    assert setting("dead_retention") == "3 days" and policy["dead_retention"] == "3 days"
    assert setting("history_retention") == "no history" and policy["history_retention"] is None
    assert setting("paused") == "no"
    rows = browser.find_elements(By.CSS_SELECTOR, "#schedules tbody tr")
    assert [r.get_attribute("data-schedule") for r in rows] == [name]
    assert rows[0].find_element(By.CSS_SELECTOR, "td").text == name
    assert not browser.find_elements(By.CSS_SELECTOR, "#schedules b"), "names are escaped"
    assert rows[0].find_element(By.CSS_SELECTOR, '[data-col="when"]').text == (
        "30 2 * * * (Europe/Berlin)"
    )
    assert rows[0].find_element(By.CSS_SELECTOR, '[data-col="next"]').text == fmt.when(
        schedule["next_at"]
    )

    def limit_row(d: Any) -> dict[str, str]:  # the live figures refresh: read one row whole
        row = d.find_element(By.CSS_SELECTOR, '#rate-limits tr[data-category="paced"]')
        cols = ("starts", "per", "in-window", "refusals")
        return {k: row.find_element(By.CSS_SELECTOR, f'[data-col="{k}"]').text for k in cols}

    cell = WebDriverWait(
        browser, 20, poll_frequency=0.1, ignored_exceptions=[StaleElementReferenceException]
    ).until(limit_row)
    assert (cell["starts"], cell["in-window"]) == (
        str(rate["starts"]), str(rate["started_in_window"])) == ("2", "2")  # fmt: skip
    assert cell["per"] == "1 h" and rate["per"] == "01:00:00"
    assert cell["refusals"] == fmt.count(refusals) and refusals >= 1
    assert not browser.find_elements(By.CSS_SELECTOR, '#rate-limits tr[data-category="acme"]')
    shot(browser, "queue-policy")


def test_requeue_every_dead_letter_matching_a_filter(browser: Any, base: str, dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as c:
        bulk = [
            c.execute("select queue.enqueue(payload => '{}', queue => 'bulk-q')").fetchone()[0]
            for _ in range(3)
        ]
        other = c.execute("select queue.enqueue(payload => '{}', queue => 'other-q')").fetchone()[0]
        for job in [*bulk, other]:
            c.execute("select queue.cancel(job_id => %s)", (job,))
    browser.get(base + "/dead?queue=bulk-q&reason=cancelled")
    assert sorted(shown_jobs(browser)) == sorted(str(j) for j in bulk)
    # not confirmed: the browser does not send it (the box is required)
    browser.find_element(By.CSS_SELECTOR, 'button[data-action="requeue-matching"]').click()
    assert not browser.find_elements(By.ID, "notice")
    browser.find_element(By.CSS_SELECTOR, "#matching-form input[name=confirm]").click()
    browser.find_element(By.CSS_SELECTOR, 'button[data-action="requeue-matching"]').click()
    notice = WebDriverWait(browser, 10).until(lambda d: d.find_element(By.ID, "notice"))
    assert notice.text == "requeued 3 dead letter(s) matching the filter"
    assert browser.current_url.endswith("/dead?queue=bulk-q&reason=cancelled")  # filter kept
    assert browser.find_element(By.NAME, "queue").get_attribute("value") == "bulk-q"
    with psycopg.connect(dsn) as c:
        states = dict(
            c.execute(
                "select job_id, state from queue.jobs_by() where job_id = any(%s)",
                ([*bulk, other],),
            ).fetchall()
        )
    assert states == {**{j: "pending" for j in bulk}, other: "cancelled"}
    shot(browser, "dead-letters-requeued")


def test_job_page_shows_its_timeline(browser: Any, base: str, dsn: str) -> None:
    """A job's page reads as its life: enqueued, each failed attempt with the worker and the
    error (and the retry delay), the attempt running now, the end. Its own jobs: the seeded
    ones are requeued and purged by other tests."""
    with psycopg.connect(dsn, autocommit=True) as c:

        def attempt(job_id: int, error: str, retry: bool) -> None:
            tok = c.execute(
                "select token from queue.claim(worker => 'tl-w', queues => '{timeline}')"
            ).fetchone()[0]
            c.execute(
                "select queue.fail(job_id => %s, token => %s, error => %s,"
                " retry_in => '0 seconds', retryable => %s)",
                (job_id, tok, error, retry),
            )

        job = c.execute("select queue.enqueue(payload => '{}', queue => 'timeline')").fetchone()[0]
        attempt(job, "<b>first</b>", True)
        attempt(job, "second", False)
    browser.get(f"{base}/jobs/{job}")
    items = browser.find_elements(By.CSS_SELECTOR, "#timeline li")
    events = [li.get_attribute("data-event") for li in items]
    assert events == ["enqueued", "attempt failed", "attempt failed", "dead"], events
    assert "attempt 1" in items[1].text and " on tl-w" in items[1].text, items[1].text
    assert "<b>first</b>" in items[1].text and "retry in" in items[1].text, items[1].text
    with psycopg.connect(dsn, autocommit=True) as c:
        job = c.execute("select queue.enqueue(payload => '{}', queue => 'timeline')").fetchone()[0]
        c.execute("select * from queue.claim(worker => 'tl-w', queues => '{timeline}')")
    browser.get(f"{base}/jobs/{job}")
    events = [li.get_attribute("data-event")
              for li in browser.find_elements(By.CSS_SELECTOR, "#timeline li")]  # fmt: skip
    assert events == ["enqueued", "attempt started"], events


def test_job_page_names_the_schedule_or_cache_key_it_came_from(
    browser: Any, base: str, dsn: str
) -> None:
    """A schedule's job shows its schedule and tick, a refill its cache key, as
    queue.job_origin() returns them; a plain job shows neither row."""
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("select queue.schedule(name => 'nightly', queue => 'origin', every => '1 day')")
        c.execute("update queue.schedules set next_at = now() - interval '1 minute'"
                  " where name = 'nightly'")  # fmt: skip
        c.execute("select queue.maintain()")
        ticked = c.execute("select job_id from queue.schedule_ticks where schedule = 'nightly'")
        ticked_id = ticked.fetchone()[0]
        refill = c.execute(
            "select queue.enqueue(payload => '{}', queue => 'origin', cache_key => 'user:7')"
        ).fetchone()[0]
        plain = c.execute("select queue.enqueue(payload => '{}', queue => 'origin')").fetchone()[0]
        tick = c.execute(
            "select tick from queue.job_origin(job_id => %s)", (ticked_id,)
        ).fetchone()[0]
    field = lambda name: browser.find_element(By.CSS_SELECTOR, f'[data-field="{name}"]').text  # noqa: E731
    browser.get(f"{base}/jobs/{ticked_id}")
    assert field("schedule") == f"nightly (tick {fmt.when(tick)})"
    browser.get(f"{base}/jobs/{refill}")
    assert field("cache_key") == "user:7"
    assert not browser.find_elements(By.CSS_SELECTOR, '[data-field="schedule"]')
    browser.get(f"{base}/jobs/{plain}")
    assert field("state") == "pending"
    origin_rows = '[data-field="schedule"], [data-field="cache_key"]'
    assert not browser.find_elements(By.CSS_SELECTOR, origin_rows)


def test_overview_puts_queues_in_trouble_first(browser: Any, base: str, dsn: str) -> None:
    """A queue failing every job, with dead letters, is flagged with the reasons in words, and
    every flagged queue comes before the others."""
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("select queue.configure_queue(queue => 'zz_failing', max_attempts => 1)")
        for _ in range(3):
            job = c.execute("select queue.enqueue(payload => '{}', queue => 'zz_failing')")
            job_id = job.fetchone()[0]
            tok = c.execute(
                "select token from queue.claim(worker => 'w', queues => '{zz_failing}')"
            ).fetchone()[0]
            c.execute("select queue.fail(job_id => %s, token => %s, error => 'no')", (job_id, tok))
        c.execute("select queue.enqueue(payload => '{}', queue => 'aa_calm')")

    def rows() -> list[tuple[str, str]]:
        browser.get(base + "/")
        # read in one script: the live refresh may replace the table between two reads
        found = browser.execute_script(
            "return [...document.querySelectorAll('#queues tbody tr')].map(r =>"
            " [r.dataset.queue, r.querySelector('[data-col=\"trouble\"]').innerText.trim()])"
        )
        return [(q, why) for q, why in found]

    table: list[tuple[str, str]] = []

    def shown() -> bool:
        table[:] = rows()
        return any(q == "zz_failing" for q, _ in table)

    wait_for(shown, what="the failing queue on the overview")
    flags = dict(table)
    assert "failing 100 %" in flags["zz_failing"] and "3 dead" in flags["zz_failing"], flags
    assert flags["aa_calm"] == ""
    troubled = [bool(why) for _, why in table]
    assert troubled == sorted(troubled, reverse=True), table
    row = browser.find_element(By.CSS_SELECTOR, '#queues tr[data-queue="zz_failing"]')
    assert "trouble" in row.get_attribute("class")
