"""``make install`` installs only where it was pointed: $DATABASE_URL, else the PG* variables;
with neither it refuses and writes nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from conftest import PGHOST, PGPORT, PGUSER, drop_roles_of, make_dsn, test_name
from pytest_postgresql.janitor import DatabaseJanitor

ROOT = Path(__file__).resolve().parent.parent
PG_VARIABLES = ("DATABASE_URL", "PGHOST", "PGPORT", "PGUSER", "PGDATABASE", "PGSERVICE")


def scrubbed_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in PG_VARIABLES}
    env.pop("MAKEFLAGS", None)
    return dict(env, **extra)


def make_install(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # fmt: skip
        # -o: leave the virtualenv as it is, whatever its timestamps; the target is the test
        ["make", "-s", "-o", ".venv/.installed", "install"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def andal_in(dbname: str) -> bool:
    with psycopg.connect(make_dsn(dbname)) as conn:
        row = conn.execute("select to_regnamespace('queue') is not null").fetchone()
    return bool(row and row[0])


@pytest.fixture
def empty_db() -> Iterator[str]:
    name = test_name("mk", 10)
    janitor = DatabaseJanitor(user=PGUSER, host=PGHOST, port=PGPORT, dbname=name)
    janitor.init()
    try:
        yield name
    finally:
        janitor.drop()
        drop_roles_of(name)


def test_make_install_without_a_database_refuses(empty_db: str) -> None:
    before = andal_in("postgres")
    result = make_install(scrubbed_env())
    assert result.returncode != 0
    assert "no database given" in result.stderr
    assert "installed" not in result.stdout
    assert andal_in("postgres") == before
    assert not andal_in(empty_db)


def test_make_install_uses_database_url(empty_db: str) -> None:
    result = make_install(scrubbed_env(DATABASE_URL=make_dsn(empty_db)))
    assert result.returncode == 0, result.stderr
    assert andal_in(empty_db)


def test_make_install_uses_the_pg_variables(empty_db: str) -> None:
    env = scrubbed_env(PGHOST=PGHOST, PGPORT=str(PGPORT), PGUSER=PGUSER, PGDATABASE=empty_db)
    result = make_install(env)
    assert result.returncode == 0, result.stderr
    assert f"{PGUSER}@{PGHOST}:{PGPORT}/{empty_db}" in result.stdout
    assert andal_in(empty_db)


def test_the_install_script_without_a_database_refuses() -> None:
    before = andal_in("postgres")
    argv = [sys.executable, "-m", "andal.install"]
    result = subprocess.run(argv, env=scrubbed_env(), capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "no database" in result.stderr
    assert andal_in("postgres") == before
