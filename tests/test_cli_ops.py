"""The ``andal`` command as an operator types it: global options before or after the command,
the database from ``$ANDAL_DSN`` or ``$DATABASE_URL``, help for every option, and one
documented exit code per cause (run as real processes)."""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from conftest import PGHOST, PGUSER, make_dsn, test_name

import andal
from andal.cli import parser

HERE = Path(__file__).resolve().parent
WORKER_MODULE = str(HERE / "workers" / "recording.py")


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "ANDAL_DSN")}
    return subprocess.run(
        [sys.executable, "-m", "andal.cli", *args],
        capture_output=True,
        text=True,
        env={**base, **(env or {})},
        timeout=60,
    )


@pytest.fixture
def dead_job(dsn: str) -> int:
    with psycopg.connect(dsn, autocommit=True) as c:
        job = c.execute("select queue.enqueue(payload => '{}', queue => 'ops')").fetchone()[0]
        c.execute("select queue.cancel(job_id => %s)", (job,))
    return int(job)


def commands(job: int) -> list[list[str]]:
    """One run of every one-shot command (each answers 0 on a database with andal)."""
    return [
        ["install"],
        ["status", "--json"],
        ["enqueue", "ops", "{}"],
        ["dead", "list", "--json"],
        ["job", str(job), "--json"],
        ["pause", "ops"],
        ["resume", "ops"],
        ["dead", "requeue", str(job)],
        ["cancel", str(job)],
        ["dead", "purge", "--older-than", "3600"],
        ["queue", "configure", "ops", "--max-attempts", "6"],
        ["queue", "show", "ops", "--json"],
        ["schedule", "add", "ops-tick", "--queue", "ops", "--every", "1h"],
        ["schedule", "list"],
        ["schedule", "remove", "ops-tick"],
        ["rate-limit", "set", "ops", "--starts", "5", "--per", "1s"],
        ["rate-limit", "list"],
        ["history", "set", "ops", "--retention", "1h"],
    ]


def test_every_command_takes_dsn_after_it(dsn: str, dead_job: int) -> None:
    for argv in commands(dead_job):
        result = run(*argv, "--dsn", dsn)
        assert result.returncode == 0, (argv, result.stderr)


@pytest.mark.parametrize("variable", ["DATABASE_URL", "ANDAL_DSN"])
def test_every_command_takes_the_database_from_the_environment(
    dsn: str, dead_job: int, variable: str
) -> None:
    for argv in commands(dead_job):
        result = run(*argv, env={variable: dsn})
        assert result.returncode == 0, (argv, variable, result.stderr)


def test_andal_dsn_wins_over_database_url_and_dsn_over_both(dsn: str) -> None:
    nowhere = f"postgresql://{PGUSER}@{PGHOST}:1/postgres"
    assert run("status", "--json", env={"ANDAL_DSN": dsn, "DATABASE_URL": nowhere}).returncode == 0
    assert run("status", "--json", env={"ANDAL_DSN": nowhere}).returncode == 3
    assert run("status", "--json", "--dsn", dsn, env={"ANDAL_DSN": nowhere}).returncode == 0


def test_dsn_before_and_after_are_the_same_list(dsn: str) -> None:
    result = run("--dsn", dsn, "status", "--dsn", dsn)
    assert result.returncode == 2 and "the same database is given twice" in result.stderr
    assert run("--dsn", dsn, "dead", "list", "--dsn", dsn + "?x=1").returncode == 2  # one db


def test_web_and_worker_take_dsn_after_them(dsn: str) -> None:
    result = run("web", "--root-path", "bad", "--dsn", dsn)
    assert result.returncode == 2 and "--root-path" in result.stderr
    result = run("worker", "/no/such/module.py", "--dsn", dsn)
    assert result.returncode == 5, result.stderr


def test_every_option_has_help() -> None:
    missing: list[str] = []

    def walk(p: argparse.ArgumentParser, path: str) -> None:
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, inner in action.choices.items():
                    walk(inner, f"{path} {name}")
            elif not action.help or action.help == argparse.SUPPRESS:
                missing.append(f"{path} {'/'.join(action.option_strings) or action.dest}")

    walk(parser(), "andal")
    assert not missing, missing


@pytest.fixture
def empty_db() -> Iterator[str]:
    name = test_name("ops")
    with psycopg.connect(make_dsn("postgres"), autocommit=True) as c:
        c.execute(f"create database {name}")
    try:
        yield make_dsn(name)
    finally:
        with psycopg.connect(make_dsn("postgres"), autocommit=True) as c:
            c.execute(f"drop database if exists {name} with (force)")


def test_each_cause_has_its_exit_code(dsn: str, empty_db: str) -> None:
    """The exit codes of docs/cli.md, one cause each."""
    unreachable = f"postgresql://{PGUSER}@{PGHOST}:1/postgres"
    no_login = f"postgresql://andal_no_such_login_{uuid.uuid4().hex[:6]}@{PGHOST}/postgres"
    cases = [
        (1, ["dead", "requeue", "999999999", "--dsn", dsn], "SQLSTATE 42704"),
        (2, ["status", "--interval", "0", "--dsn", dsn], "--interval"),
        (3, ["status", "--dsn", unreachable], "cannot connect to the database"),
        (4, ["status", "--dsn", empty_db], "andal is not installed"),
        (5, ["worker", "/no/such/module.py", "--dsn", dsn], "handler module"),
        (7, ["status", "--dsn", no_login], "the database refused the login"),
        (8, ["status", "--dsn", "this is not a dsn"], "bad DSN"),
        (8, ["status", "--dsn", "host=127.0.0.1 port=notaport"], "bad DSN"),
        (3, ["web", "--dsn", unreachable], "cannot connect to the database"),
        (7, ["web", "--dsn", no_login], "the database refused the login"),
        (8, ["web", "--dsn", "this is not a dsn"], "bad DSN"),
        (4, ["web", "--dsn", empty_db], "andal is not installed"),
    ]
    for code, argv, says in cases:
        result = run(*argv)
        assert result.returncode == code and says in result.stderr, (argv, result.stderr)
        assert "Traceback" not in result.stderr


def test_a_taken_port_is_exit_9(dsn: str) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        result = run("web", "--bind", f"127.0.0.1:{port}", "--dsn", dsn)
    assert result.returncode == 9 and f"--bind 127.0.0.1:{port}" in result.stderr, result.stderr


def test_client_on_a_database_without_andal_raises_not_installed(empty_db: str) -> None:
    client = andal.Client(empty_db)
    with pytest.raises(andal.NotInstalled, match="run `andal install`"):
        client.enqueue({}, "q")
    with pytest.raises(andal.NotInstalled):
        client.job(1)
    with pytest.raises(psycopg.errors.InvalidSchemaName):  # what it was: still caught so
        client.enqueue({}, "q")


def test_dead_purge_by_id_queue_reason_and_age(dsn: str) -> None:
    def bury(queue: str, n: int) -> list[int]:
        with psycopg.connect(dsn, autocommit=True) as c:
            ids = [
                c.execute(
                    "select queue.enqueue(payload => '{}', queue => %s)", (queue,)
                ).fetchone()[0]
                for _ in range(n)
            ]
            for job in ids:
                c.execute("select queue.cancel(job_id => %s)", (job,))
        return ids

    def dead() -> set[int]:
        with psycopg.connect(dsn) as c:
            return {r[0] for r in c.execute("select job_id from queue.dead_letters")}

    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("delete from queue.dead_letters")
    first, second = bury("purge-a", 3), bury("purge-b", 2)
    result = run("dead", "purge", "--id", str(first[0]), "--id", str(first[1]), "--dsn", dsn)
    assert result.returncode == 0 and "purged 2 dead letters" in result.stdout
    assert dead() == {first[2], *second}
    result = run("dead", "purge", "--queue", "purge-b", "--older-than", "3600", "--dsn", dsn)
    assert "purged 0 dead letters" in result.stdout  # they died just now
    result = run("dead", "purge", "--queue", "purge-b", "--reason", "cancelled", "--dsn", dsn)
    assert "purged 2 dead letters" in result.stdout and dead() == {first[2]}
    assert "purged 0" in run("dead", "purge", "--reason", "exhausted", "--dsn", dsn).stdout
    assert "purged 1" in run("dead", "purge", "--older-than", "0", "--dsn", dsn).stdout
    for argv, says in (
        ([], "say what to purge"),
        (["--id", "1", "--queue", "x"], "without the filters"),
        (["--reason", "lost"], "invalid choice"),
        (["--older-than", "-1"], "must not be negative"),
    ):
        result = run("dead", "purge", *argv, "--dsn", dsn)
        assert result.returncode == 2 and says in result.stderr, (argv, result.stderr)
