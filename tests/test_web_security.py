"""`andal web`'s guards, over plain HTTP against the server run as a real process.

* A POST without the CSRF token (or with a wrong one) is refused and changes nothing.
* An action on a dashboard whose login may only read (a member of andal_monitor) is refused
  and changes nothing; the database refuses it too (that login cannot take andal_admin).
* Optional bearer-token and basic auth; --root-path prefixes every link; the server refuses
  to start on a database without andal or a login that may not read as andal_monitor.
* Payloads are escaped in the HTML itself.
"""

from __future__ import annotations

import base64
import http.cookiejar
import re
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from conftest import ROLES, TEST_PREFIX, make_dsn, test_name
from psycopg.conninfo import make_conninfo
from webapp import SCRIPT_PAYLOAD, andal_web, get, seed

pytest.importorskip("starlette")

from andal.install import install  # noqa: E402
from andal.web import queries  # noqa: E402
from andal.web.db import Database  # noqa: E402

SUFFIX = uuid.uuid4().hex[:8]
READER_LOGIN = f"{TEST_PREFIX}_t_webreader_{SUFFIX}"
ADMIN_ONLY_LOGIN = f"{TEST_PREFIX}_t_webadmin_{SUFFIX}"


class Browser:
    """urllib with a cookie jar: what a browser sends, minus the script."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(self.jar), NoRedirect()
        )

    def get(self, path: str) -> tuple[int, str]:
        return self._open(urllib.request.Request(self.base + path))

    def post(self, path: str, form: dict[str, Any]) -> tuple[int, str]:
        data = urllib.parse.urlencode(form, doseq=True).encode()
        return self._open(urllib.request.Request(self.base + path, data=data, method="POST"))

    def _open(self, req: urllib.request.Request) -> tuple[int, str]:
        try:
            with self.opener.open(req, timeout=10) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()

    def csrf(self) -> str:
        status, html = self.get("/dead")
        assert status == 200
        match = re.search(r'name="csrf" value="([^"]+)"', html)
        assert match, html
        return match.group(1)


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


@pytest.fixture(scope="module")
def ids(dsn: str) -> dict[str, Any]:
    with psycopg.connect(dsn, autocommit=True) as c:
        return seed(c)


@pytest.fixture(scope="module")
def logins(dsn: str) -> Iterator[dict[str, str]]:
    """A login that may only read, and one that is an admin but not a reader."""
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(f'create role "{READER_LOGIN}" login')
        c.execute(f'grant {ROLES["monitor"]} to "{READER_LOGIN}"')
        c.execute(f'create role "{ADMIN_ONLY_LOGIN}" login')
        c.execute(f'grant {ROLES["admin"]} to "{ADMIN_ONLY_LOGIN}"')
    try:
        yield {
            "reader": make_conninfo(dsn, user=READER_LOGIN),
            "admin_only": make_conninfo(dsn, user=ADMIN_ONLY_LOGIN),
        }
    finally:
        with psycopg.connect(dsn, autocommit=True) as c:
            for name in (READER_LOGIN, ADMIN_ONLY_LOGIN):
                c.execute(f'drop role if exists "{name}"')


@pytest.fixture(scope="module")
def admin_web(dsn: str, ids: dict[str, Any]) -> Iterator[str]:
    with andal_web(dsn) as server:
        yield server.base


def dead_state(dsn: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(dsn) as c:
        return c.execute("select job_id, reason from queue.dead_letters order by job_id").fetchall()


def test_a_post_without_the_csrf_token_is_refused(
    admin_web: str, dsn: str, ids: dict[str, Any]
) -> None:
    before = dead_state(dsn)
    job = ids["exhausted"]
    fresh = Browser(admin_web)  # no cookie, no field: what another site's form would send
    assert fresh.post("/dead/requeue", {"one": job})[0] == 403
    browser = Browser(admin_web)
    token = browser.csrf()
    assert browser.post("/dead/requeue", {"one": job})[0] == 403  # cookie, no field
    assert browser.post("/dead/requeue", {"one": job, "csrf": token + "x"})[0] == 403
    assert browser.post("/dead/purge", {"ids": [job], "csrf": "forged"})[0] == 403
    other = Browser(admin_web)
    other.csrf()  # its own cookie; the token of another session does not match it
    assert other.post("/dead/purge", {"ids": [job], "csrf": token})[0] == 403
    assert dead_state(dsn) == before
    # the control: the same POST with the token is done
    status, _ = browser.post("/dead/requeue", {"one": job, "csrf": token})
    assert status == 303
    assert job not in {j for j, _ in dead_state(dsn)}
    # again: the database refuses (the job is live now) and the page says so, with the code
    assert browser.post("/dead/requeue", {"one": job, "csrf": token})[0] == 303
    status, html = browser.get("/dead")
    assert f"requeued 0 dead letter(s); refused: job {job}: job {job} is live, not dead" in html
    assert "SQLSTATE 55000" in html
    assert "SQLSTATE 55000" not in browser.get("/dead")[1]  # a notice shows once


def test_read_only_flag_offers_no_action(dsn: str, ids: dict[str, Any]) -> None:
    before = dead_state(dsn)
    with andal_web(dsn, "--read-only") as server:
        browser = Browser(server.base)
        status, html = browser.get("/dead")
        assert status == 200 and 'data-action="purge"' not in html
        status, body = browser.post("/dead/purge", {"ids": [ids["script"]], "csrf": browser.csrf()})
        assert status == 403 and "read-only" in body
    assert dead_state(dsn) == before


def test_an_install_with_its_own_roles() -> None:
    prefix = f"{TEST_PREFIX}_w{uuid.uuid4().hex[:6]}"
    name = test_name("t_web")
    server_dsn = make_dsn("postgres")
    with psycopg.connect(server_dsn, autocommit=True) as c:
        c.execute(f"create database {name}")
    try:
        install(make_dsn(name), role_prefix=prefix)
        with andal_web(make_dsn(name), "--role-prefix", prefix) as server:
            assert f"actions enabled ({prefix}_admin)" in server.output()
            assert get(server.base + "/")[0] == 200
        # without --role-prefix it takes the install's own, as queue.roles() names them
        with andal_web(make_dsn(name)) as server:
            assert f"actions enabled ({prefix}_admin)" in server.output()
    finally:
        with psycopg.connect(server_dsn, autocommit=True) as c:
            c.execute(f"drop database if exists {name} with (force)")
            for kind in ("producer", "worker", "admin", "monitor"):
                c.execute(f'drop role if exists "{prefix}_{kind}"')


def test_role_prefix(dsn: str) -> None:
    """An install with another role prefix: the dashboard takes that install's roles."""
    web = [sys.executable, "-m", "andal.cli", "--dsn", dsn, "web", "--role-prefix"]
    result = subprocess.run([*web, "nosuch"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 4 and "may not read as nosuch_monitor" in result.stderr
    result = subprocess.run([*web, "Bad-Prefix"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "--role-prefix" in result.stderr


def test_one_database_only(dsn: str) -> None:
    argv = [sys.executable, "-m", "andal.cli", "--dsn", dsn, "--dsn", dsn + "?x=1", "web"]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "one --dsn" in result.stderr


def test_an_unreachable_database_exits_3() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "andal.cli", "--dsn", "postgresql://postgres@127.0.0.1:1/x", "web"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 3 and "cannot connect to the database" in result.stderr


def test_an_action_by_a_read_only_role_is_refused(
    dsn: str, ids: dict[str, Any], logins: dict[str, str]
) -> None:
    before = dead_state(dsn)
    job = ids["non_retryable"]
    with andal_web(logins["reader"]) as server:
        assert "(read-only)" in server.output()
        browser = Browser(server.base)
        status, html = browser.get("/dead")
        assert status == 200 and f'data-job="{job}"' in html
        assert 'data-action="requeue"' not in html  # no button offered
        token = browser.csrf()
        for path, form in (("/dead/requeue", {"one": job}), ("/dead/purge", {"ids": [job]})):
            status, body = browser.post(path, {**form, "csrf": token})
            assert status == 403 and "read-only" in body
        status, html = browser.get(f"/jobs/{ids['script']}")  # payloads are for admins
        assert status == 200 and "__pwned = 1" not in html
        assert "payloads are for andal_admin" in html  # the page's fixed text
    assert dead_state(dsn) == before


def test_admin_dsn_acts_for_a_dashboard_that_reads_as_monitor(
    dsn: str, ids: dict[str, Any], logins: dict[str, str]
) -> None:
    job = ids["non_retryable"]
    with andal_web(logins["reader"], "--admin-dsn", dsn) as server:
        assert "actions enabled" in server.output()
        browser = Browser(server.base)
        assert browser.post("/dead/requeue", {"one": job, "csrf": browser.csrf()})[0] == 303
    assert job not in {j for j, _ in dead_state(dsn)}
    refused = subprocess.run(
        [sys.executable, "-m", "andal.cli", "--dsn", dsn, "web", "--admin-dsn", logins["reader"]],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 4 and f"not in {ROLES['admin']}" in refused.stderr


def test_the_database_refuses_an_action_of_a_read_only_login(
    dsn: str, ids: dict[str, Any], logins: dict[str, str]
) -> None:
    """Even past the dashboard's own check, the reader login cannot take andal_admin."""
    before = dead_state(dsn)
    db = Database(logins["reader"])
    db.open()
    try:
        assert not db.can_act
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            db.act(queries.REQUEUE_DEAD, {"job_id": ids["non_retryable"]})
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            db.read(queries.PURGE_DEAD_JOBS, {"job_ids": [ids["non_retryable"]]})
    finally:
        db.close()
    assert dead_state(dsn) == before


def test_reads_run_as_andal_monitor_whatever_the_login(dsn: str, ids: dict[str, Any]) -> None:
    """A superuser login still reads as andal_monitor: a write in a read transaction fails."""
    db = Database(dsn)
    db.open()
    try:
        assert db.can_act and db.read_one("select current_user") == ROLES["monitor"]
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            db.read(queries.PURGE_DEAD_JOBS, {"job_ids": [ids["script"]]})
    finally:
        db.close()
    assert ids["script"] in {j for j, _ in dead_state(dsn)}


def test_a_login_that_may_not_read_as_andal_monitor_is_refused_at_start(
    dsn: str, logins: dict[str, str]
) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "andal.cli", "--dsn", logins["admin_only"], "web"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 4, result.stderr
    assert f"grant {ROLES['monitor']} to" in result.stderr and "Traceback" not in result.stderr


def test_a_database_without_andal_is_refused_at_start() -> None:
    name = test_name("t_web")
    server = make_dsn("postgres")
    with psycopg.connect(server, autocommit=True) as c:
        c.execute(f"create database {name}")
    try:
        result = subprocess.run(
            [sys.executable, "-m", "andal.cli", "--dsn", make_dsn(name), "web"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        with psycopg.connect(server, autocommit=True) as c:
            c.execute(f"drop database if exists {name} with (force)")
    assert result.returncode == 4
    assert "andal is not installed" in result.stderr


def test_payloads_are_escaped_in_the_html(admin_web: str, ids: dict[str, Any]) -> None:
    status, html = get(f"{admin_web}/jobs/{ids['script']}")
    assert status == 200
    assert "<script>window.__pwned" not in html and "<b id=" not in html
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in html
    assert SCRIPT_PAYLOAD["html"] not in html


def test_pages_forbid_framing_and_foreign_scripts(admin_web: str) -> None:
    with urllib.request.urlopen(admin_web + "/dead", timeout=10) as r:
        csp = r.headers["Content-Security-Policy"]
        assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
        assert r.headers["X-Frame-Options"] == "DENY"
        assert r.headers["X-Content-Type-Options"] == "nosniff"


def test_cookies_are_secure_behind_an_https_proxy(admin_web: str) -> None:
    def cookie(headers: dict[str, str]) -> str:
        req = urllib.request.Request(admin_web + "/dead", headers=headers)
        with urllib.request.urlopen(req, timeout=10) as r:
            assert r.headers["Cache-Control"] == "no-store"
            return str(r.headers["Set-Cookie"])

    plain = cookie({})
    assert "HttpOnly" in plain and "SameSite=strict" in plain and "Secure" not in plain
    assert "Secure" in cookie({"X-Forwarded-Proto": "https"})


def test_token_and_basic_auth(dsn: str, ids: dict[str, Any]) -> None:
    with andal_web(dsn, "--auth-token", "s3cret", "--basic-auth", "ops:pa:ss") as server:
        assert get(server.base + "/")[0] == 401
        assert get(server.base + "/", {"Authorization": "Bearer wrong"})[0] == 401
        assert get(server.base + "/", {"Authorization": "Bearer s3cret"})[0] == 200
        basic = base64.b64encode(b"ops:pa:ss").decode()
        assert get(server.base + "/dead", {"Authorization": f"Basic {basic}"})[0] == 200
        wrong = base64.b64encode(b"ops:nope").decode()
        assert get(server.base + "/dead", {"Authorization": f"Basic {wrong}"})[0] == 401
        assert get(server.base + "/fragments/overview")[0] == 401
        assert get(server.base + "/healthz")[0] == 200  # says nothing but "ok"


def test_root_path_prefixes_every_link(dsn: str, ids: dict[str, Any]) -> None:
    with andal_web(dsn, "--root-path", "/andal/") as server:
        status, html = get(server.base + "/dead")
        assert status == 200
        links = re.findall(r'\s(?:href|src|action|formaction|data-live)="([^"]+)"', html)
        assert links and all(link.startswith("/andal/") for link in links), links
        # as a browser behind a proxy that passes the prefix on (the app serves both)
        browser = Browser(server.base + "/andal")
        token = browser.csrf()
        cookie = next(c for c in browser.jar if c.name == "andal_csrf")
        assert cookie.path == "/andal"
        status, _ = browser.post("/dead/purge", {"ids": [0], "csrf": token})
        assert status == 303
        assert get(server.base + "/andal/static/andal.css")[0] == 200
