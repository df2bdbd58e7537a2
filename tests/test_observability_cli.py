"""``andal status`` / ``andal top`` and ``andal worker --metrics-port``, run as real processes."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import select
import signal
import socket
import struct
import subprocess
import sys
import termios
import threading
import time
import urllib.request
from pathlib import Path

import psycopg
import pytest
from conftest import wait_for
from test_cli import andal_cmd, ok, refused
from workers.inproc import running
from workers.procs import spawn_worker, stop_worker
from workers.recording import make_tables

import andal
from andal.cache import Cache

HERE = Path(__file__).resolve().parent


@pytest.fixture
def scripted(dsn: str, conn: psycopg.Connection, clean: None):
    """Known outcomes on two queues, and one job held running by a worker of this process."""
    andal.configure_queue(conn, "mail", max_attempts=2, backoff_base=600)
    hold = threading.Event()

    def mail(job: andal.Job) -> None:
        kind = job.payload["kind"]
        if kind == "retry":
            raise andal.Retry("later")
        if kind == "fail":
            raise andal.Fail("no")

    def reports(job: andal.Job) -> None:
        hold.wait(30)

    andal.enqueue_many(conn, [{"kind": "ok"}] * 5 + [{"kind": "retry"}, {"kind": "fail"}], "mail")
    andal.enqueue(conn, {}, "reports", category="tenant-7")
    andal.enqueue(conn, {}, "reports", category="tenant-7")  # waits for the first (limit 1)
    andal.enqueue(conn, {}, "mail", delay=3600)  # scheduled
    worker = andal.Worker(dsn, {"mail": mail, "reports": reports}, poll=0.2, tracing=False)
    with running(worker):
        wait_for(
            lambda: (
                sum(worker.counts[k] for k in ("completed", "retried", "dead")) == 7
                and worker.busy == 1
            ),
            timeout=30,
            what="the scripted outcomes",
        )
        try:
            yield worker
        finally:
            hold.set()


def test_status_json_and_text(dsn: str, scripted: andal.Worker) -> None:
    out = json.loads(ok(andal_cmd("status", "--json", "--full", dsn=dsn)))
    queues = {q["queue"]: q for q in out["queues"]}
    mail, reports = queues["mail"], queues["reports"]
    # scheduled: the delayed job and the retried one (backoff 600 s)
    assert (mail["ready"], mail["scheduled"], mail["running"], mail["dead"]) == (0, 2, 0, 1)
    assert (mail["completed_1h"], mail["retried_1h"], mail["dead_1h"]) == (5, 1, 1)
    assert mail["failure_rate"] == pytest.approx(2 / 7)
    assert mail["pickup_p50_ms"] is not None and mail["completed_per_min"] > 0
    assert (reports["ready"], reports["running"]) == (1, 1)
    (cat,) = reports["categories"]
    assert (cat["category"], cat["ready"], cat["running"]) == ("tenant-7", 1, 1)
    workers = {w["worker"]: w for w in out["workers"]}
    me = workers[scripted.name]
    assert (me["running"], me["queues"]) == (1, ["reports"])
    assert me["connections"] >= 2  # the pool and the listener
    assert 0 < me["next_lease_expiry_s"] <= 60
    assert out["version"] and out["database"]

    # the short form: the list of queues, as before
    short = json.loads(ok(andal_cmd("status", "--json", dsn=dsn)))
    assert [q["queue"] for q in short] == sorted(queues)

    text = ok(andal_cmd("status", dsn=dsn))
    for word in ("queues", "categories", "workers", "done/min", "pickup p99", "contention"):
        assert word in text, word
    assert "reports / tenant-7" in text and scripted.name in text
    assert "Traceback" not in text


def test_status_cache_section(dsn: str, clean: None) -> None:
    """With cache.stats() installed: the cache's summary and the reads the drivers report."""
    with Cache(dsn, follow=False) as cache:
        cache.put("user:1", {"n": 1})
        for _ in range(3):
            cache.lookup("user:1", job_type="render")
        cache.lookup("user:404", job_type="render")
        cache.report()
    full = json.loads(ok(andal_cmd("status", "--json", "--full", dsn=dsn)))
    reads = {
        r["labels"]["result"]: r["value"]
        for r in full["cache"]
        if r["metric"] == "reads" and r["labels"].get("job_type") == "render"
    }
    assert reads["shared_hit"] == 3 and reads["miss"] == 1
    text = ok(andal_cmd("status", dsn=dsn))
    assert "cache  entries 1" in text and "stale overdue 0" in text
    row = next(line for line in text.splitlines() if "default / render" in line)
    assert row.split()[3:] == ["0", "3", "0", "1", "75.0%"]


def test_status_usage(dsn: str) -> None:
    refused(andal_cmd("status", "--interval", "0", dsn=dsn), 2, "--interval must be positive")


def read_pty(fd: int, until: float, buf: bytearray) -> None:
    while time.monotonic() < until:
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                return
            if not chunk:
                return
            buf.extend(chunk)


def test_top_refreshes_in_place_and_quits_on_ctrl_c(dsn: str, clean: None) -> None:
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 160, 0, 0))
    env = dict(os.environ, TERM="xterm-256color")
    env.pop("COLUMNS", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "andal.cli", "--dsn", dsn, "top", "--interval", "0.2"],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        start_new_session=True,  # its own terminal: Ctrl-C is SIGINT to it alone
    )
    os.close(slave)
    out = bytearray()
    try:
        deadline = time.monotonic() + 30
        while out.count(b"Ctrl-C to quit") < 3 and time.monotonic() < deadline:
            read_pty(master, time.monotonic() + 0.2, out)
        assert out.count(b"Ctrl-C to quit") >= 3, bytes(out[-2000:])
        proc.send_signal(signal.SIGINT)
        code = proc.wait(15)
        read_pty(master, time.monotonic() + 0.5, out)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    assert code == 0
    text = out.decode(errors="replace")
    assert "Traceback" not in text and "KeyboardInterrupt" not in text
    assert "\x1b[" in text  # redrawn in place with cursor movements, not appended
    assert "Ctrl-C to quit" in text


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_worker_metrics_port(dsn: str, conn: psycopg.Connection, clean: None, tmp_path) -> None:
    make_tables(conn)
    andal.enqueue_many(conn, [{}] * 3, "leased")
    port = free_port()
    log = tmp_path / "worker.log"
    proc = spawn_worker(dsn, log, "--metrics-port", str(port), "--metrics-addr", "127.0.0.1")
    try:

        def scraped() -> str | None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as r:
                    text = r.read().decode()
            except OSError:
                return None
            done = 'andal_worker_jobs_total{outcome="completed",queue="leased"} 3.0'
            return text if done in text else None

        text = wait_for(scraped, timeout=30, what="the worker's /metrics")
        assert "andal_worker_info{" in text and "andal_worker_claim_seconds_bucket" in text
    finally:
        assert stop_worker(proc) == 0

    # the port is taken: a one-line refusal, exit code 9
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # past the scrapes' TIME_WAIT
        s.bind(("127.0.0.1", port))
        s.listen()
        result = andal_cmd(
            "worker", str(HERE / "workers" / "recording.py"), "--metrics-port", str(port),
            "--metrics-addr", "127.0.0.1", dsn=dsn,
        )  # fmt: skip
    refused(result, 9, f"cannot serve metrics on 127.0.0.1:{port}")


def test_watch_json_lines(dsn: str, conn: psycopg.Connection, clean: None) -> None:
    """``status --watch --json``: one document per refresh; it stops quietly when the
    reader does (a closed pipe) and on SIGINT."""
    andal.enqueue(conn, {}, "lines")
    proc = subprocess.Popen(
        [sys.executable, "-m", "andal.cli", "--dsn", dsn, "status", "--watch", "--json",
         "--interval", "0.2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        docs = [json.loads(proc.stdout.readline()) for _ in range(3)]
        proc.send_signal(signal.SIGINT)
        assert proc.wait(15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    for doc in docs:
        assert [q["queue"] for q in doc] == ["lines"] and doc[0]["ready"] == 1
    assert "Traceback" not in proc.stderr.read()

    piped = subprocess.run(
        f"{sys.executable} -m andal.cli --dsn '{dsn}' status --watch --json --interval 0.1"
        " | head -n 2",
        shell=True,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert len(piped.stdout.splitlines()) == 2
    assert "Traceback" not in piped.stderr and "BrokenPipe" not in piped.stderr
