"""`andal web`'s forms are bound to the dashboard that served them, in a real browser.

Two dashboards on two ports of one host share ``ANDAL_WEB_SECRET`` (one may act, one is
read-only) and, being the same site, share the browser's cookies. A page on a third port
(another site's page, as far as the dashboard knows) carries a token read from the read-only
dashboard in a form that pauses a queue on the one that may act: Chromium sends it, and the
dashboard refuses it (the token is bound to its origin, and the browser says the form came
from another origin). The dashboard's own Pause button still works. Over plain HTTP: a
foreign ``Origin`` or ``Sec-Fetch-Site`` is refused, and so is a token made for other
credentials.
"""

from __future__ import annotations

import base64
import html
import http.server
import re
import threading
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from conftest import wait_for
from webapp import andal_web, browsing, free_port, seed

pytest.importorskip("selenium")
pytest.importorskip("starlette")

from selenium.webdriver.common.by import By  # noqa: E402

SECRET = {"ANDAL_WEB_SECRET": "one secret for both dashboards"}


@pytest.fixture(scope="module")
def ids(dsn: str) -> dict[str, Any]:
    with psycopg.connect(dsn, autocommit=True) as c:
        return seed(c)


@pytest.fixture(scope="module")
def admin(dsn: str, ids: dict[str, Any]) -> Iterator[str]:
    with andal_web(dsn, env=SECRET) as server:
        yield server.base


@pytest.fixture(scope="module")
def reader(dsn: str, ids: dict[str, Any]) -> Iterator[str]:
    with andal_web(dsn, "--read-only", env=SECRET) as server:
        yield server.base


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with browsing() as driver:
        yield driver


@pytest.fixture
def attacker() -> Iterator[tuple[str, dict[str, str]]]:
    """A plain web server on another port: it serves ``page["html"]`` at ``/``."""
    page = {"html": ""}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            body = page["html"].encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", page
    finally:
        server.shutdown()
        server.server_close()


def paused(dsn: str, queue: str) -> bool:
    with psycopg.connect(dsn) as c:
        row = c.execute(
            "select paused from queue.stats() where queue = %s and category is null", (queue,)
        ).fetchone()
    return bool(row and row[0])


def token_of(browser: Any) -> str:
    return str(browser.find_element(By.CSS_SELECTOR, 'input[name="csrf"]').get_attribute("value"))


def test_a_token_planted_from_another_port_is_refused(
    browser: Any, admin: str, reader: str, attacker: tuple[str, dict[str, str]], dsn: str
) -> None:
    site, page = attacker
    browser.get(admin + "/dead")  # the operator's session on the dashboard that may act
    browser.get(reader + "/dead")  # the same browser, the read-only dashboard's token
    planted = token_of(browser)
    page["html"] = (
        f'<form method="post" action="{admin}/queues/mail/pause">'
        f'<input type="hidden" name="csrf" value="{html.escape(planted)}">'
        '<button id="go" type="submit">win a prize</button></form>'
    )
    browser.get(site + "/")
    browser.find_element(By.ID, "go").click()
    wait_for(lambda: "refused" in browser.page_source, timeout=20, what="the refusal")
    assert "not sent from a page of this dashboard" in browser.page_source
    assert not paused(dsn, "mail")
    # the dashboard's own button, in the same browser, still pauses it
    browser.get(admin + "/queues/mail")
    browser.find_element(By.CSS_SELECTOR, 'button[data-action="pause"]').click()
    wait_for(lambda: paused(dsn, "mail"), timeout=20, what="the queue to pause")
    browser.find_element(By.CSS_SELECTOR, 'button[data-action="resume"]').click()
    wait_for(lambda: not paused(dsn, "mail"), timeout=20, what="the queue to resume")


class Session:
    """A cookie and a page's token, as plain HTTP, with the headers a test chooses."""

    def __init__(self, base: str, headers: dict[str, str] | None = None) -> None:
        self.base = base
        self.headers = headers or {}
        req = urllib.request.Request(base + "/dead", headers=self.headers)
        with urllib.request.urlopen(req, timeout=10) as r:
            self.cookie = r.headers["Set-Cookie"].split(";")[0]
            found = re.search(r'name="csrf" value="([^"]+)"', r.read().decode())
        assert found
        self.token = found.group(1)

    def pause(self, token: str | None = None, **headers: str) -> int:
        data = urllib.parse.urlencode({"csrf": token or self.token}).encode()
        req = urllib.request.Request(
            self.base + "/queues/mail/pause",
            data=data,
            method="POST",
            headers={"Cookie": self.cookie, **self.headers, **headers},
        )

        class Stay(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *args: Any, **kwargs: Any) -> None:
                return None

        try:
            with urllib.request.build_opener(Stay()).open(req, timeout=10) as r:
                return int(r.status)
        except urllib.error.HTTPError as exc:
            return int(exc.code)


def test_origin_and_fetch_site_are_checked(admin: str, reader: str, dsn: str) -> None:
    own = Session(admin)
    host = urllib.parse.urlsplit(admin).netloc
    other = urllib.parse.urlsplit(reader).netloc
    assert own.pause(Origin=f"http://{other}") == 403
    assert own.pause(**{"Sec-Fetch-Site": "same-site"}) == 403
    assert own.pause(**{"Sec-Fetch-Site": "cross-site"}) == 403
    assert own.pause(Origin="null") == 403
    # a token of the read-only dashboard, with this session's cookie: made for another origin
    planted = Session(reader)
    assert planted.pause(planted.token) == 403  # the reader itself refuses (read-only)
    assert own.pause(planted.token) == 403
    assert not paused(dsn, "mail")
    assert own.pause(Origin=f"http://{host}", **{"Sec-Fetch-Site": "same-origin"}) == 303
    assert paused(dsn, "mail")
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("select queue.resume(queue => 'mail')")


def test_a_token_is_bound_to_the_credentials(dsn: str, ids: dict[str, Any]) -> None:
    with andal_web(dsn, "--basic-auth", "ops:one", "--auth-token", "two", env=SECRET) as server:
        basic = {"Authorization": "Basic " + base64.b64encode(b"ops:one").decode()}
        bearer = {"Authorization": "Bearer two"}
        first, second = Session(server.base, basic), Session(server.base, bearer)
        # the first login's cookie and token, sent with the second login's credentials
        second.cookie, second.token = first.cookie, first.token
        assert second.pause() == 403
        assert not paused(dsn, "mail")
        assert first.pause() == 303
    assert paused(dsn, "mail")
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("select queue.resume(queue => 'mail')")
