"""Per-install roles: roles are cluster-wide, so a grant of andal_worker works in every
default install of the cluster. A database installed with its own role prefix has roles of
its own: andal's default roles (and so the members granted them for another database) can do
nothing there. The prefix is recorded; another one is refused before anything is written."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator

import psycopg
import pytest
from conftest import PGHOST, PGPORT, PGUSER, make_dsn
from pytest_postgresql.janitor import DatabaseJanitor

from andal.install import install

PREFIX = f"andal_t{uuid.uuid4().hex[:6]}"


@pytest.fixture
def prefixed_db() -> Iterator[str]:
    name = f"andal_r_{uuid.uuid4().hex[:10]}"
    janitor = DatabaseJanitor(user=PGUSER, host=PGHOST, port=PGPORT, dbname=name)
    janitor.init()
    try:
        yield make_dsn(name)
    finally:
        janitor.drop()
        with psycopg.connect(make_dsn("postgres"), autocommit=True) as c:
            for kind in ("producer", "worker", "admin", "monitor"):
                c.execute(f'drop role if exists "{PREFIX}_{kind}"')


def test_an_install_with_its_own_roles(prefixed_db: str) -> None:
    install(prefixed_db, role_prefix=PREFIX)
    with psycopg.connect(prefixed_db, autocommit=True) as c:
        can = c.execute(
            "select has_function_privilege(%s, 'queue.claim(text, text[], int, interval)',"
            " 'execute'), has_function_privilege('andal_worker',"
            " 'queue.claim(text, text[], int, interval)', 'execute'),"
            " has_function_privilege(%s, 'queue.enqueue(jsonb, text, text, int, interval,"
            " int, text, text, jsonb)', 'execute'),"
            " has_schema_privilege('andal_producer', 'queue', 'usage')",
            (f"{PREFIX}_worker", f"{PREFIX}_producer"),
        ).fetchone()
        assert can == (True, False, True, False)
        reads = c.execute(
            "select has_function_privilege(%s, 'queue.stats()', 'execute'),"
            " has_function_privilege('andal_monitor', 'queue.stats()', 'execute')",
            (f"{PREFIX}_monitor",),
        ).fetchone()
        assert reads == (True, False), "the read-only role is the install's own too"
        assert c.execute("select role_prefix from queue.install_state").fetchone() == (PREFIX,)

    assert install(prefixed_db) == [], "re-installing keeps the recorded prefix, changes nothing"
    with pytest.raises(psycopg.Error) as refused:
        install(prefixed_db, role_prefix="andal")
    assert refused.value.diag.sqlstate == "55000"
    result = subprocess.run(
        [sys.executable, "-m", "andal.cli", "--dsn", prefixed_db, "install",
         "--role-prefix", "other"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode != 0 and "role prefix" in result.stderr, result.stderr
    with psycopg.connect(prefixed_db, autocommit=True) as c:
        assert c.execute("select role_prefix from queue.install_state").fetchone() == (PREFIX,)
