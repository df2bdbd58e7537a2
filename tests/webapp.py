"""Helpers of the `andal web` tests: the server as a real process, a headless Chromium, and a
database with jobs in every state."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
from conftest import wait_for

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
#: Where the browser tests leave their screenshots (not committed: .andal/ is ignored).
SCREENSHOTS = Path(
    os.environ.get("ANDAL_SCREENSHOTS")
    or Path(__file__).resolve().parent.parent / ".andal" / "screenshots"
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def get(url: str, headers: dict[str, str] | None = None) -> tuple[int, str]:
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


class Server:
    def __init__(self, proc: subprocess.Popen[str], base: str, log: Path) -> None:
        self.proc, self.base, self.log = proc, base, log

    def output(self) -> str:
        return self.log.read_text()


@contextmanager
def andal_web(dsn: str, *args: str, env: dict[str, str] | None = None) -> Iterator[Server]:
    """`andal web` on a free port, ready (its /healthz answers) before the block runs; ``env``
    adds to its environment (which has no ``ANDAL_WEB_*`` of the caller's)."""
    port = free_port()
    log = Path(tempfile.mkstemp(prefix="andal-web-", suffix=".log")[1])
    argv = [sys.executable, "-m", "andal.cli", "--dsn", dsn, "web"]
    argv += ["--bind", f"127.0.0.1:{port}", "--refresh", "0.5", *args]
    environ = {k: v for k, v in os.environ.items() if not k.startswith("ANDAL_WEB_")}
    environ.update(env or {})
    with log.open("w") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, text=True, env=environ)
    server = Server(proc, f"http://127.0.0.1:{port}", log)

    def ready() -> bool:
        if proc.poll() is not None:
            raise AssertionError(f"andal web exited {proc.returncode}: {server.output()}")
        try:
            return get(server.base + "/healthz")[0] == 200
        except OSError:
            return False

    try:
        wait_for(ready, timeout=30, interval=0.1, what="andal web to answer /healthz")
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.unlink(missing_ok=True)


@contextmanager
def browsing() -> Iterator[Any]:
    """A headless Chromium (:func:`chromium`) for a test module, quit at the end."""
    driver = chromium()
    try:
        yield driver
    finally:
        driver.quit()


def chromium() -> Any:
    """Debian's Chromium under Debian's chromedriver, headless; nothing is downloaded."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        f"--user-data-dir={tempfile.mkdtemp(prefix='andal-chromium-')}",
        "--window-size=1400,1000",
    ):
        options.add_argument(arg)
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


SCRIPT_PAYLOAD = {"html": "<script>window.__pwned = 1</script><b id='bold'>bold</b>"}
IMG_ERROR = '<img src=x onerror="window.__pwned = 2">'


def seed(conn: psycopg.Connection) -> dict[str, Any]:
    """Jobs in every state in queues `mail` and `hooks` (category `acme`); returns their ids.

    ready, scheduled, running (held by worker `w1`), retry pending, completed, and dead
    letters of each reason (exhausted, non_retryable, cancelled), one with a script payload.
    """
    one = lambda q, *a: conn.execute(q, a).fetchone()[0]  # noqa: E731
    enq = "select queue.enqueue(payload => %s::jsonb, queue => %s, category => %s,"
    enq += " delay => %s::interval, max_attempts => %s)"
    ids: dict[str, Any] = {}
    conn.execute("select queue.set_category_limit(category => 'acme', max_running => 2)")
    for _ in range(2):  # two completed
        one(enq, '{"done": true}', "mail", None, "0", 5)
        job, token = conn.execute(
            "select job_id, token from queue.claim(worker => 'w0', queues => '{mail}')"
        ).fetchone()
        conn.execute("select queue.complete(job_id => %s, token => %s)", (job, token))
    ids["ready"] = [one(enq, f'{{"n": {i}}}', "mail", None, "0", 5) for i in range(3)]
    ids["scheduled"] = one(enq, '{"later": true}', "mail", None, "1 hour", 5)
    ids["retry"] = one(enq, '{"flaky": true}', "mail", None, "0", 5)
    ids["exhausted"] = one(enq, '{"bad": 1}', "hooks", "acme", "0", 1)
    ids["non_retryable"] = one(enq, '{"bad": 2}', "hooks", None, "0", 5)
    ids["script"] = one(enq, json.dumps(SCRIPT_PAYLOAD), "hooks", None, "0", 1)
    claimed = conn.execute(
        "select job_id, token from queue.claim(worker => 'w0', queues => '{mail,hooks}',"
        " batch => 10)"
    ).fetchall()
    tokens = dict(claimed)
    for job in (ids["retry"], ids["exhausted"], ids["script"]):
        conn.execute(
            "select queue.fail(job_id => %s, token => %s, error => %s, retry_in => '1 hour')",
            (job, tokens.pop(job), IMG_ERROR),
        )
    conn.execute(
        "select queue.fail(job_id => %s, token => %s, error => 'no', retryable => false)",
        (ids["non_retryable"], tokens.pop(ids["non_retryable"])),
    )
    for job, token in tokens.items():  # the ready ones go back
        conn.execute("select queue.release(job_id => %s, token => %s)", (job, token))
    ids["cancelled"] = one(enq, '{"stop": true}', "hooks", None, "0", 5)
    conn.execute("select queue.cancel(job_id => %s)", (ids["cancelled"],))
    ids["running"] = one(enq, '{"busy": true}', "hooks", "acme", "0", 5)
    conn.execute("select * from queue.claim(worker => 'w1', queues => '{hooks}')")
    conn.execute(
        "select cache.report_reads(pool => 'p', counts => %s::jsonb)",
        ('{"mail": {"local_hit": 6, "shared_hit": 1, "miss": 3}}',),
    )
    return ids
