"""``andal uninstall``: without ``--yes`` it only says what it would drop; with it the schemas
and the install's own roles are gone (and a new install works), while roles another database
of the cluster uses are kept (real processes, real databases)."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator

import psycopg
import pytest
from conftest import PGHOST, PGPORT, PGUSER, TEST_PREFIX, make_dsn, test_name
from pytest_postgresql.janitor import DatabaseJanitor

from andal.install import install


def andal(dsn: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "ANDAL_DSN")}
    return subprocess.run(
        [sys.executable, "-m", "andal.cli", "--dsn", dsn, *args],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip


@pytest.fixture
def two_dbs() -> Iterator[tuple[str, str]]:
    names = [test_name("un") for _ in range(2)]
    janitors = [DatabaseJanitor(user=PGUSER, host=PGHOST, port=PGPORT, dbname=n) for n in names]
    for j in janitors:
        j.init()
    try:
        yield make_dsn(names[0]), make_dsn(names[1])
    finally:
        for j in janitors:
            j.drop()


def schemas(dsn: str) -> list[str]:
    with psycopg.connect(dsn) as c:
        rows = c.execute(
            "select nspname from pg_namespace where nspname in ('queue', 'cache') order by 1"
        )
        return [r[0] for r in rows]


def roles(dsn: str, prefix: str) -> list[str]:
    with psycopg.connect(dsn) as c:
        rows = c.execute("select rolname from pg_roles where rolname like %s", (f"{prefix}\\_%",))
        return sorted(r[0] for r in rows)


def test_uninstall_asks_then_drops_schemas_and_own_roles(two_dbs: tuple[str, str]) -> None:
    dsn, _ = two_dbs
    prefix = f"{TEST_PREFIX}_u{uuid.uuid4().hex[:6]}"
    install(dsn, role_prefix=prefix)
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("select queue.enqueue(payload => '{}', queue => 'q')")
    asked = andal(dsn, "uninstall")
    assert asked.returncode == 2 and "--yes" in asked.stderr
    assert "1 live job" in asked.stdout and f"{prefix}_worker" in asked.stdout
    assert schemas(dsn) == ["cache", "queue"], "nothing dropped without --yes"
    done = andal(dsn, "uninstall", "--yes")
    assert done.returncode == 0, done.stderr
    assert schemas(dsn) == []
    assert roles(dsn, prefix) == []
    assert andal(dsn, "uninstall", "--yes").returncode == 4, "not installed any more"
    install(dsn, role_prefix=prefix)
    assert schemas(dsn) == ["cache", "queue"], "a new install after an uninstall works"
    andal(dsn, "uninstall", "--yes")


def test_roles_another_database_uses_are_kept(two_dbs: tuple[str, str]) -> None:
    first, second = two_dbs
    prefix = f"{TEST_PREFIX}_s{uuid.uuid4().hex[:6]}"
    install(first, role_prefix=prefix)
    install(second, role_prefix=prefix, warn=lambda _m: None)
    done = andal(first, "uninstall", "--yes")
    assert done.returncode == 0, done.stderr
    assert "kept" in done.stdout and second.rsplit("/", 1)[1] in done.stdout
    assert schemas(first) == []
    assert len(roles(first, prefix)) == 4
    with psycopg.connect(second, autocommit=True) as c:
        c.execute("select queue.enqueue(payload => '{}', queue => 'q')")
    assert andal(second, "uninstall", "--yes").returncode == 0
    assert roles(second, prefix) == []
