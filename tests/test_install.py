"""The installer: idempotent, serialised, upgrades in place, works for a non-superuser owner."""

from __future__ import annotations

import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from conftest import (
    PGHOST,
    PGPORT,
    PGUSER,
    TEST_PREFIX,
    drop_roles_of,
    make_dsn,
    own_prefix,
    test_name,
)
from pytest_postgresql.janitor import DatabaseJanitor

from andal.install import install, manifest, sql_dir
from andal.roles import DEFAULT_PREFIX


@pytest.fixture
def empty_db() -> Iterator[str]:
    name = test_name("i", 10)
    janitor = DatabaseJanitor(user=PGUSER, host=PGHOST, port=PGPORT, dbname=name)
    janitor.init()
    try:
        yield name
    finally:
        janitor.drop()
        drop_roles_of(name)


def schema_dump(dbname: str) -> str:
    out = subprocess.run(
        [
            "pg_dump",
            "--schema-only",
            "--no-owner",
            "-h",
            PGHOST,
            "-p",
            str(PGPORT),
            "-U",
            PGUSER,
            "-n",
            "queue",
            "-n",
            "cache",
            dbname,
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    # pg_dump writes its own version banner and restrict keys; keep the objects only
    return "\n".join(
        line
        for line in out.splitlines()
        if not line.startswith(("--", "\\restrict", "\\unrestrict"))
    )


def test_second_install_changes_nothing(empty_db: str) -> None:
    dsn = make_dsn(empty_db)
    first = install(dsn, role_prefix=TEST_PREFIX)
    assert any(step.startswith("migration 0001") for step in first)
    before = schema_dump(empty_db)
    assert install(dsn) == []
    assert schema_dump(empty_db) == before
    with psycopg.connect(dsn) as c:
        versions = [r[0] for r in c.execute("select version from queue.schema_migrations")]
    assert versions == sorted(versions) and versions[0] == "0001"


#: the queue function files whose signatures name a type a later migration made
LATER = ("job.sql", "jobs_by.sql", "dead_letters_by.sql", "_lease.sql", "claim.sql")


def test_upgrade_in_place_equals_fresh_install(empty_db: str, tmp_path: Path) -> None:
    """An install of an older release (first migration only), upgraded, equals a fresh one."""
    if TEST_PREFIX != DEFAULT_PREFIX:  # an install older than the record of its prefix is
        pytest.skip(
            "upgraded to the andal_* roles, which the suite leaves alone under ANDAL_TEST_PREFIX"
        )
    old = tmp_path / "sql"
    (old / "schema").mkdir(parents=True)
    shutil.copy(sql_dir() / "schema" / "0001_queue.sql", old / "schema")
    # The queue functions of today stand in for the old release's, less those that came
    # with a later migration (their signatures name its types).
    shutil.copytree(
        sql_dir() / "functions" / "queue",
        old / "functions" / "queue",
        ignore=shutil.ignore_patterns(*LATER),
    )
    # ... in today's install order (the manifest, less the files left out)
    (old / "functions" / "manifest.txt").write_text(
        "".join(
            f"{name}\n"
            for name in manifest()
            if name.startswith("queue/") and name.removeprefix("queue/") not in LATER
        )
    )
    dsn = make_dsn(empty_db)
    install(dsn, root=old, role_prefix=TEST_PREFIX)
    with psycopg.connect(dsn, autocommit=True) as c:
        job = c.execute(
            "insert into queue.jobs (queue, payload, max_attempts) values ('up', '{\"k\": 1}', 5)"
            " returning id"
        ).fetchone()[0]
    steps = install(dsn)
    assert steps and all("0001" not in s for s in steps)
    with psycopg.connect(dsn) as c:
        assert c.execute("select payload from queue.jobs where id = %s", (job,)).fetchone() == (
            {"k": 1},
        )
        c.execute("delete from queue.jobs")
        c.commit()

    fresh = test_name("f", 10)
    janitor = DatabaseJanitor(user=PGUSER, host=PGHOST, port=PGPORT, dbname=fresh)
    janitor.init()
    try:
        install(make_dsn(fresh), role_prefix=TEST_PREFIX)
        assert schema_dump(empty_db) == schema_dump(fresh)
    finally:
        janitor.drop()


def test_concurrent_installs_apply_each_migration_once(empty_db: str) -> None:
    dsn = make_dsn(empty_db)
    errors: list[BaseException] = []

    def run() -> None:
        try:
            install(dsn, role_prefix=own_prefix(empty_db))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    with psycopg.connect(dsn) as c:
        n, distinct = c.execute(
            "select count(*), count(distinct version) from queue.schema_migrations"
        ).fetchone()
    assert n == distinct and n >= 1


def test_non_superuser_database_owner_can_install(empty_db: str) -> None:
    """The three roles exist (a superuser made them once); an owner without CREATEROLE installs."""
    owner = test_name("owner", 6)
    with psycopg.connect(make_dsn("postgres"), autocommit=True) as su:
        su.execute(f"create role {owner} login nosuperuser nocreaterole")
        su.execute(f"alter database {empty_db} owner to {owner}")
    try:
        with psycopg.connect(make_dsn(empty_db), autocommit=True) as su:
            su.execute(f"alter schema public owner to {owner}")
        dsn = f"postgresql://{owner}@{PGHOST}:{PGPORT}/{empty_db}"
        assert install(dsn, role_prefix=TEST_PREFIX)
        with psycopg.connect(dsn, autocommit=True) as c:
            job = c.execute("select queue.enqueue(payload => '{}')").fetchone()[0]
            claimed = c.execute("select job_id from queue.claim(worker => 'w')").fetchone()
            assert claimed == (job,)
    finally:
        with psycopg.connect(make_dsn("postgres"), autocommit=True) as su:
            su.execute(f"alter database {empty_db} owner to {PGUSER}")
        with psycopg.connect(make_dsn(empty_db), autocommit=True) as su:
            su.execute(f"reassign owned by {owner} to {PGUSER}")
            su.execute(f"drop owned by {owner}")
        with psycopg.connect(make_dsn("postgres"), autocommit=True) as su:
            su.execute(f"drop role {owner}")
