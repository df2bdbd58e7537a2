"""The worker behind a real pgbouncer (Debian package ``pgbouncer``), in transaction and session
mode: started on a free port in front of the test server for this module, stopped after it."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
import pytest
from conftest import PGHOST, PGPORT, PGUSER, make_dsn, wait_for
from workers.inproc import running

import andal

PGBOUNCER = shutil.which("pgbouncer") or "/usr/sbin/pgbouncer"
pytestmark = pytest.mark.skipif(
    not os.path.exists(PGBOUNCER), reason="pgbouncer is not installed (Debian: pgbouncer)"
)

#: Events the worker logs when a statement or a connection fails.
DB_ERRORS = {
    "db_error",
    "database_down",
    "claim_failed",
    "complete_many_failed",
    "fail_failed",
    "heartbeat_failed",
    "transaction_failed",
    "maintain_failed",
    "release_failed",
    "configuration_error",
    "internal_error",
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def pgbouncer(mode: str, extra: str = "") -> Iterator[int]:
    """A pgbouncer in ``mode`` in front of the test server; yields its port. Its files are
    in a directory of their own that the postgres user can read and write (pgbouncer refuses
    to run as root: as root, it is run as postgres)."""
    tmp = Path(tempfile.mkdtemp(prefix="andal_pgbouncer_"))
    try:
        with _pgbouncer(tmp, mode, extra) as port:
            yield port
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@contextmanager
def _pgbouncer(tmp: Path, mode: str, extra: str) -> Iterator[int]:
    port = free_port()
    tmp.chmod(0o777)
    users = tmp / "users.txt"
    users.write_text(f'"{PGUSER}" ""\n')
    ini = tmp / "pgbouncer.ini"
    ini.write_text(
        f"[databases]\n* = host={PGHOST} port={PGPORT}\n"
        "[pgbouncer]\n"
        f"listen_addr = 127.0.0.1\nlisten_port = {port}\nunix_socket_dir =\n"
        f"auth_type = trust\nauth_file = {users}\npool_mode = {mode}\n"
        f"logfile = {tmp / 'pgbouncer.log'}\npidfile = {tmp / 'pgbouncer.pid'}\n"
        "max_client_conn = 400\ndefault_pool_size = 20\nlog_connections = 0\n"
        "log_disconnections = 0\n" + extra
    )
    for f in (users, ini):
        f.chmod(0o644)
    cmd = [PGBOUNCER, str(ini)]
    if os.geteuid() == 0:
        cmd[1:1] = ["-u", "postgres"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:

        def answers() -> bool:
            if proc.poll() is not None:
                raise AssertionError(f"pgbouncer exited: {proc.stderr.read().decode()}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                return True
            except OSError:
                return False

        wait_for(answers, timeout=15, what="pgbouncer")
        yield port
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def through(dsn: str, port: int) -> str:
    """``dsn`` with pgbouncer's port instead of the server's."""
    return dsn.replace(f":{PGPORT}/", f":{port}/")


@pytest.fixture(scope="module")
def tx_port() -> Iterator[int]:
    with pgbouncer("transaction") as port:
        yield port


@pytest.fixture(scope="module")
def session_port() -> Iterator[int]:
    with pgbouncer("session") as port:
        yield port


class Events(logging.Handler):
    """The andal logger's records, kept."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def named(self, *names: str) -> list[logging.LogRecord]:
        return [r for r in self.records if r.msg in names]


@pytest.fixture
def events() -> Iterator[Events]:
    logger = logging.getLogger("andal")
    handler = Events()
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def remaining(conn: psycopg.Connection) -> int:
    return conn.execute("select count(*) from queue.jobs").fetchone()[0]


def registry(seen: dict[str, int]) -> andal.Registry:
    lock = threading.Lock()
    reg = andal.Registry()

    def count(kind: str) -> None:
        with lock:
            seen[kind] = seen.get(kind, 0) + 1

    @reg.handler("pgb_sync")
    def plain(job: andal.Job) -> dict:
        count("sync")
        return {"ok": True}

    @reg.handler("pgb_async")
    async def coro(job: andal.Job) -> dict:
        await asyncio.sleep(0)
        count("async")
        return {"ok": True}

    @reg.handler("pgb_tx", transactional=True)
    def tx(job: andal.Job, conn: psycopg.Connection) -> None:
        conn.execute("select 1")
        count("tx")

    @reg.handler("pgb_atx", transactional=True)
    async def atx(job: andal.Job, aconn: psycopg.AsyncConnection) -> None:
        await aconn.execute("select 1")
        count("atx")

    return reg


def test_transaction_mode_10000_sync_and_async_jobs_without_a_database_error(
    dsn: str, conn, clean, tx_port: int, events: Events
) -> None:
    n, n_tx = 10_000, 200
    andal.enqueue_many(conn, [{} for _ in range(n)], "pgb_sync")
    andal.enqueue_many(conn, [{} for _ in range(n)], "pgb_async")
    andal.enqueue_many(conn, [{} for _ in range(n_tx)], "pgb_tx")
    andal.enqueue_many(conn, [{} for _ in range(n_tx)], "pgb_atx")
    seen: dict[str, int] = {}
    pooled = through(dsn, tx_port)
    worker = andal.Worker(
        pooled, registry(seen), concurrency=8, poll=0.2, pooler="transaction", metrics=False
    )
    with running(worker):
        wait_for(lambda: remaining(conn) == 0, timeout=280, what="20,400 jobs through pgbouncer")
    assert seen == {"sync": n, "async": n, "tx": n_tx, "atx": n_tx}
    assert worker.counts["completed"] == 2 * n + 2 * n_tx
    assert worker.join(0) == 0
    errors = [(r.msg, getattr(r, "error", "")) for r in events.named(*DB_ERRORS)]
    assert errors == []
    # Reported once at start: no LISTEN through a transaction pooler, the worker polls.
    (listening,) = events.named("listening")
    assert listening.via == "polling" and listening.levelno == logging.WARNING


def test_listen_dsn_brings_notifications_past_the_pooler(
    dsn: str, conn, clean, tx_port: int, events: Events
) -> None:
    done = threading.Event()
    reg = andal.Registry()

    @reg.handler("pgb_hint")
    def handler(job: andal.Job) -> None:
        done.set()

    poll = 60.0  # a job found before this is found through its NOTIFY
    worker = andal.Worker(
        through(dsn, tx_port), reg, poll=poll, pooler="transaction", listen_dsn=dsn, metrics=False
    )
    with running(worker):
        wait_for(lambda: events.named("listening"), what="the start")
        wait_for(lambda: worker.counts["listener_lost"] == 0 and _listens(conn), what="LISTEN")
        time.sleep(0.3)  # the first (empty) claims are behind us: the loop waits for a hint
        started = time.monotonic()
        andal.enqueue(conn, {}, "pgb_hint")
        assert done.wait(poll / 2), "no notification: the job waited for the poll timer"
        assert time.monotonic() - started < poll / 2
    (listening,) = events.named("listening")
    assert listening.via == "listen_dsn"
    assert events.named(*DB_ERRORS) == []


def _listens(conn: psycopg.Connection) -> bool:
    return bool(
        conn.execute(
            "select count(*) from pg_stat_activity where application_name like 'andal % listen'"
            " and datname = current_database()"
        ).fetchone()[0]
    )


def test_session_mode_works_with_listen(
    dsn: str, conn, clean, session_port: int, events: Events
) -> None:
    n = 2_000
    andal.enqueue_many(conn, [{} for _ in range(n)], "pgb_sync")
    andal.enqueue_many(conn, [{} for _ in range(n)], "pgb_async")
    seen: dict[str, int] = {}
    worker = andal.Worker(
        through(dsn, session_port), registry(seen), concurrency=4, poll=0.2, pooler="session",
        metrics=False,
    )  # fmt: skip
    with running(worker):
        wait_for(lambda: remaining(conn) == 0, timeout=200, what="4,000 jobs")
    assert seen == {"sync": n, "async": n}
    (listening,) = events.named("listening")
    assert listening.via == "dsn"
    assert events.named(*DB_ERRORS) == []


def test_a_pooler_the_worker_was_not_told_about_is_detected_and_2000_jobs_drain(
    dsn: str, conn, clean, events: Events
) -> None:
    """Without ``pooler=``, behind pgbouncer in transaction mode (round robin: each statement
    may land on another server connection), the worker sees at start that a pooler answers
    for the database (its backend pid is not the server's), says so once, runs as with
    ``pooler="transaction"`` and drains every job with no database error."""
    andal.enqueue_many(conn, [{} for _ in range(1_000)], "pgb_sync")
    andal.enqueue_many(conn, [{} for _ in range(1_000)], "pgb_async")
    seen: dict[str, int] = {}
    with pgbouncer("transaction", "server_round_robin = 1\n") as port:
        worker = andal.Worker(
            through(dsn, port), registry(seen), concurrency=8, batch=5, poll=0.05, metrics=False
        )
        with running(worker):
            wait_for(lambda: remaining(conn) == 0, timeout=120, what="2,000 jobs drained")
    assert seen == {"sync": 1_000, "async": 1_000}
    assert [(r.msg, getattr(r, "error", "")) for r in events.named(*DB_ERRORS)] == []
    (detected,) = events.named("pooler_detected")
    assert detected.runs_as == "transaction" and "--pooler" in detected.hint
    (listening,) = events.named("listening")
    assert listening.via == "polling"


def test_a_direct_connection_is_not_taken_for_a_pooler(dsn: str, events: Events) -> None:
    assert andal.hosts.check_installed(dsn) is False
    worker = andal.Worker(dsn, registry({}), concurrency=1, metrics=False)
    with running(worker):
        wait_for(lambda: events.named("listening"), what="the worker's start")
    assert events.named("pooler_detected") == []


def test_what_only_a_pooler_causes_is_a_configuration_error_not_an_outage(tx_port: int) -> None:
    """Server-side prepared statements through a transaction pooler fail with 26000, 42P05
    or 08P01 ("bind message supplies N parameters"): each is a configuration problem with
    the pooler hint (the worker stops with exit code 6), never a lost connection."""
    from andal.hosts import config_hint

    pooled = through(make_dsn("postgres"), tx_port)
    conns = [psycopg.connect(pooled, autocommit=True, prepare_threshold=0) for _ in range(4)]
    seen: dict[str, BaseException] = {}
    try:
        for i in range(200):
            c = conns[i % 4]
            try:
                c.execute(["select %s::int", "select %s::int, %s::int"][i % 2 if i % 8 else 0],
                          [1] if i % 2 == 0 or not i % 8 else [1, 2])  # fmt: skip
            except psycopg.Error as exc:
                seen.setdefault(exc.sqlstate or "?", exc)
                if c.broken:
                    conns[i % 4] = psycopg.connect(pooled, autocommit=True, prepare_threshold=0)
    finally:
        for c in conns:
            c.close()
    assert seen, "prepared statements through a transaction pooler failed at no point"
    for state, exc in seen.items():
        assert state in andal.hosts.POOLER_SYMPTOMS, (state, exc)
        assert not andal.hosts.is_connection_error(exc), exc
        assert "pooler" in (config_hint(exc) or ""), exc


def test_cli_worker_behind_the_pooler(dsn: str, conn, clean, tx_port: int) -> None:
    """``andal worker --pooler transaction --listen-dsn``: through the pooler, LISTEN past it,
    a graceful stop is exit code 0."""
    from workers.recording import make_tables

    make_tables(conn)
    job_id = andal.enqueue(conn, {}, "leased")
    here = Path(__file__).resolve().parent
    cmd = [sys.executable, "-m", "andal.cli", "--dsn", through(dsn, tx_port), "worker"]
    cmd += ["workers.recording", "--queue", "leased", "--pooler", "transaction"]
    cmd += ["--listen-dsn", dsn, "--poll", "0.2"]
    env = dict(os.environ, DATABASE_URL=dsn)  # the handler's own connection: direct
    proc = subprocess.Popen(cmd, cwd=here, env=env, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(
            lambda: conn.execute(
                "select count(*) from runs where job_id = %s", (job_id,)
            ).fetchone()[0],
            what="the job, run through the pooler",
        )
        wait_for(lambda: remaining(conn) == 0, what="its completion")
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    events = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    (listening,) = [e for e in events if e["event"] == "listening"]
    assert listening["via"] == "listen_dsn"
    assert not [e for e in events if e["event"] in DB_ERRORS]
