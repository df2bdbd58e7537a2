"""The ``andal`` command, run as a real process: each subcommand and its error messages."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from conftest import PGHOST, PGUSER, drop_roles_of, make_dsn, own_prefix_args, test_name, wait_for
from workers.recording import make_tables

HERE = Path(__file__).resolve().parent


def andal_cmd(
    *args: str, dsn: str | None = None, env: dict | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess:
    full_env = dict(os.environ if env is None else env)
    full_env.pop("DATABASE_URL", None) if env is None else None
    argv = [sys.executable, "-m", "andal.cli"] + (["--dsn", dsn] if dsn else []) + list(args)
    return subprocess.run(argv, capture_output=True, text=True, env=full_env, cwd=cwd, timeout=60)


def ok(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 0, result.stderr
    return result.stdout


def refused(result: subprocess.CompletedProcess, code: int, message: str) -> None:
    assert result.returncode == code, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert message in lines[0], lines[0]


@pytest.fixture
def empty_db() -> Iterator[str]:
    """A database without andal in it."""
    name = test_name("cli")
    server = make_dsn("postgres")
    with psycopg.connect(server, autocommit=True) as c:
        c.execute(f"create database {name}")
    try:
        yield make_dsn(name)
    finally:
        with psycopg.connect(server, autocommit=True) as c:
            c.execute(f"drop database if exists {name} with (force)")
        drop_roles_of(name)


# -- install --------------------------------------------------------------------------------


def test_install_then_again(empty_db: str) -> None:
    own = own_prefix_args(empty_db.rsplit("/", 1)[1])
    out = ok(andal_cmd("install", *own, dsn=empty_db))
    assert "applied migration 0001_queue.sql" in out and "installed" in out
    out = ok(andal_cmd("install", *own, dsn=empty_db))
    assert "already installed; nothing to do" in out
    with psycopg.connect(empty_db) as c:
        assert c.execute("select to_regclass('queue.jobs') is not null").fetchone()[0]


# -- errors common to every subcommand ------------------------------------------------------

NOT_INSTALLED = "andal is not installed in this database; run `andal install`"


@pytest.mark.parametrize(
    "args",
    [
        ["status"],
        ["enqueue", "q", "{}"],
        ["dead", "list"],
        ["worker", str(HERE / "workers" / "recording.py")],
    ],
)
def test_not_installed(empty_db: str, args: list[str]) -> None:
    refused(andal_cmd(*args, dsn=empty_db), 4, NOT_INSTALLED)


@pytest.mark.parametrize(
    ("dsn", "code", "message"),
    [
        (f"postgresql://{PGUSER}@{PGHOST}:1/postgres", 3, "cannot connect to the database"),
        (make_dsn("no_such_database_here"), 7, "the database refused the login"),
        ("this is not a dsn", 8, "bad DSN"),
    ],
)
def test_cannot_connect(dsn: str, code: int, message: str) -> None:
    refused(andal_cmd("status", dsn=dsn), code, message)


def test_no_dsn() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "ANDAL_DSN")}
    refused(
        andal_cmd("status", env=env), 2, "no database: pass --dsn or set ANDAL_DSN or DATABASE_URL"
    )


def test_database_url_is_the_default(dsn: str, clean: None) -> None:
    env = dict(os.environ, DATABASE_URL=dsn)
    assert json.loads(ok(andal_cmd("status", "--json", env=env))) == []


# -- enqueue and status ---------------------------------------------------------------------


def test_enqueue_and_status(dsn: str, conn: psycopg.Connection, clean: None) -> None:
    job_id = int(ok(andal_cmd("enqueue", "mail", '{"to": "a@b.c"}', dsn=dsn)).strip())
    out = ok(
        andal_cmd(
            "enqueue", "mail", '{"n": 1}', "--category", "smtp", "--priority", "5",
            "--delay", "60", "--dedup-key", "k1", "--max-attempts", "2", dsn=dsn,
        )
    )  # fmt: skip
    delayed = int(out.strip())
    again = int(ok(andal_cmd("enqueue", "mail", '{"n": 2}', "--dedup-key", "k1", dsn=dsn)))
    assert again == delayed  # the live job with that dedup key
    out = ok(andal_cmd("enqueue", "bulk", "{}", "--count", "3", dsn=dsn))
    assert out.startswith("enqueued 3 jobs on bulk")

    row = conn.execute(
        "select payload, category, priority, max_attempts, available_at > now() + interval '50 s'"
        " from queue.jobs where id = %s",
        (delayed,),
    ).fetchone()
    assert row == ({"n": 1}, "smtp", 5, 2, True)
    assert conn.execute("select payload from queue.jobs where id = %s", (job_id,)).fetchone() == (
        {"to": "a@b.c"},
    )

    status = {r["queue"]: r for r in json.loads(ok(andal_cmd("status", "--json", dsn=dsn)))}
    assert status["mail"]["ready"] == 1 and status["mail"]["scheduled"] == 1
    assert status["bulk"]["ready"] == 3
    assert status["mail"]["oldest_ready_age_s"] >= 0
    table = ok(andal_cmd("status", dsn=dsn))
    for word in ("queue", "ready", "scheduled", "running", "dead", "oldest ready", "mail", "bulk"):
        assert word in table


def test_enqueue_usage_errors(dsn: str) -> None:
    refused(andal_cmd("enqueue", "q", "{nope", dsn=dsn), 2, "PAYLOAD_JSON is not valid JSON")
    refused(andal_cmd("enqueue", "q", "{}", "--count", "0", dsn=dsn), 2, "--count")
    refused(
        andal_cmd("enqueue", "q", "{}", "--count", "2", "--dedup-key", "x", dsn=dsn),
        2,
        "--dedup-key",
    )
    # a value the database refuses: its message and SQLSTATE, no traceback
    refused(andal_cmd("enqueue", "q", "[1, 2]", dsn=dsn), 1, "SQLSTATE 22023")


# -- dead letters ---------------------------------------------------------------------------


def bury(conn: psycopg.Connection, queue: str) -> int:
    """Make a dead letter through the API: claim a job and fail it for good."""
    conn.execute("select queue.enqueue(payload => '{\"x\": 1}', queue => %s)", (queue,))
    job_id, token = conn.execute(
        "select job_id, token from queue.claim(worker => 'cli-test', queues => array[%s])",
        (queue,),
    ).fetchone()
    conn.execute(
        "select queue.fail(job_id => %s, token => %s, error => 'kaputt', retryable => false)",
        (job_id, token),
    )
    return job_id


def test_dead_list_requeue_purge(dsn: str, conn: psycopg.Connection, clean: None) -> None:
    assert "no dead letters" in ok(andal_cmd("dead", "list", dsn=dsn))
    first, second = bury(conn, "d1"), bury(conn, "d2")
    table = ok(andal_cmd("dead", "list", dsn=dsn))
    assert "kaputt" in table and "d1" in table and "d2" in table
    listed = json.loads(ok(andal_cmd("dead", "list", "--json", "--queue", "d1", dsn=dsn)))
    assert [(d["job_id"], d["reason"], d["payload"]) for d in listed] == [
        (first, "non_retryable", {"x": 1})
    ]

    assert f"requeued dead job {first}" in ok(andal_cmd("dead", "requeue", str(first), dsn=dsn))
    assert conn.execute("select status from queue.jobs where id = %s", (first,)).fetchone() == (
        "pending",
    )
    refused(andal_cmd("dead", "requeue", str(first), dsn=dsn), 1, "SQLSTATE 55000")  # live
    refused(andal_cmd("dead", "requeue", "987654321", dsn=dsn), 1, "SQLSTATE 42704")

    assert "purged 0 dead letters" in ok(
        andal_cmd("dead", "purge", "--older-than", "3600", dsn=dsn)
    )
    assert "purged 1 dead letters" in ok(andal_cmd("dead", "purge", "--older-than", "0", dsn=dsn))
    assert conn.execute("select count(*) from queue.dead_letters").fetchone()[0] == 0
    assert second


# -- worker ---------------------------------------------------------------------------------


def test_worker_module_errors(dsn: str, tmp_path: Path) -> None:
    refused(andal_cmd("worker", "no_such_module_xyz", dsn=dsn), 5, "handler module not found")
    refused(
        andal_cmd("worker", str(tmp_path / "missing.py"), dsn=dsn), 5, "handler module not found"
    )
    empty = tmp_path / "empty.py"
    empty.write_text("x = 1\n")
    refused(andal_cmd("worker", str(empty), dsn=dsn), 5, "exposes no `registry`")
    broken = tmp_path / "broken.py"
    broken.write_text("import no_such_dependency_xyz\n")
    refused(andal_cmd("worker", str(broken), dsn=dsn), 5, "cannot import handler module")
    refused(
        andal_cmd("worker", str(HERE / "workers" / "recording.py"), "--queue", "zzz", dsn=dsn),
        2,
        "no handler for queue(s): zzz",
    )
    recording = str(HERE / "workers" / "recording.py")
    refused(andal_cmd("worker", recording, "--concurrency", "0", dsn=dsn), 2, "concurrency")
    refused(andal_cmd("worker", recording, "--lease", "0", dsn=dsn), 2, "lease must be positive")


def test_worker_runs_a_module_by_import_path(
    dsn: str, conn: psycopg.Connection, clean: None
) -> None:
    make_tables(conn)
    conn.execute("select queue.enqueue(payload => '{}', queue => 'leased')")
    env = dict(os.environ, DATABASE_URL=dsn)
    proc = subprocess.Popen(
        [sys.executable, "-m", "andal.cli", "worker", "workers.recording", "--poll", "0.2"]
        + ["--log-level", "debug"],  # the per-job claimed/completed lines are debug
        cwd=HERE,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(
            lambda: conn.execute("select count(*) = 0 from queue.jobs").fetchone()[0],
            timeout=20,
            what="the job",
        )
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    events = [json.loads(line) for line in err.splitlines()]
    names = [e["event"] for e in events]
    assert names[0] == "worker_started" and names[-1] == "worker_stopped"
    assert "claimed" in names and "completed" in names
    done = next(e for e in events if e["event"] == "completed")
    assert {"job_id", "queue", "category", "attempt", "duration_ms"} <= done.keys()
    assert done["logger"] == "andal"
