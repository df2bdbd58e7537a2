"""Releases upgrade for real: each release of sql/releases.txt, taken from git history and
installed by its own installer, filled with jobs, dead letters and cache entries, upgrades to
the working tree with its data intact and a schema equal to a fresh install's, on both
layouts (unsharded and 4 shards). A fresh install also equals the committed schema dump."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from conftest import PGHOST, PGPORT, PGUSER, TEST_PREFIX, make_dsn, test_name
from pytest_postgresql.janitor import DatabaseJanitor
from schema import committed, dump

import andal
from andal.install import install
from andal.roles import DEFAULT_PREFIX, with_roles

ROOT = Path(__file__).resolve().parent.parent
CLAIM = "queue.claim(worker => 'old', queues => %s::text[])"


def releases() -> list[tuple[str, str]]:
    lines = (ROOT / "sql" / "releases.txt").read_text().splitlines()
    return [(ln.split()[0], ln.split()[1]) for ln in lines if ln.strip() and ln[0] != "#"]


def extract(commit: str, dest: Path) -> Path:
    """The release's ``sql/`` and its Python package (whose installer it runs) from git
    history, under ``dest``."""
    known = subprocess.run(
        ["git", "-C", str(ROOT), "cat-file", "-e", f"{commit}^{{commit}}"], capture_output=True
    )
    if known.returncode != 0:
        pytest.fail(
            f"commit {commit} of a recorded release is not in this clone's history: the upgrade"
            " test needs the full history (git fetch --unshallow)"
        )
    paths = ["sql/schema", "sql/functions", "pydriver/andal"]
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", commit, *paths],
        check=True, capture_output=True,
    ).stdout  # fmt: skip
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(dest, filter="data")
    return dest


def install_release(tree: Path, dsn: str, shards: int | None) -> None:
    """Install with the release's own installer (``python -m andal.install`` of its package,
    found first on the path), on the release's own SQL."""
    path = os.pathsep.join([str(tree / "pydriver"), os.environ.get("PYTHONPATH", "")])
    env = dict(os.environ, ANDAL_SQL_DIR=str(tree / "sql"), PYTHONPATH=path)
    env.pop("ANDAL_SHARDS", None)
    argv = [sys.executable, "-m", "andal.install", dsn]
    if "--role-prefix" in (tree / "pydriver" / "andal" / "install.py").read_text():
        argv += ["--role-prefix", "andal"]  # the roles of the fresh install it is compared to
    subprocess.run(
        [*argv, *(["--shards", str(shards)] if shards else [])],
        env=env, check=True, capture_output=True, timeout=300, cwd=tree,
    )  # fmt: skip


@pytest.fixture
def databases() -> Iterator[Callable[[], str]]:
    made: list[DatabaseJanitor] = []

    def new() -> str:
        name = test_name("up", 10)
        janitor = DatabaseJanitor(user=PGUSER, host=PGHOST, port=PGPORT, dbname=name)
        janitor.init()
        made.append(janitor)
        return name

    yield new
    for janitor in made:
        janitor.drop()


def fill(conn: psycopg.Connection[Any]) -> dict[str, Any]:
    """Jobs (pending, delayed, running), a dead letter, a kept result and cache entries,
    through the release's own functions."""
    q = conn.execute
    q("select from queue.configure_queue(queue => 'once', max_attempts => 1)")
    q("select from queue.configure_queue(queue => 'kept', keep_results => true)")
    q("select queue.set_category_limit(category => 'pdf', max_running => 3)")
    for n in range(5):
        q(
            "select queue.enqueue(payload => %s::jsonb, queue => 'work', priority => %s,"
            " dedup_key => %s)",
            (json.dumps({"n": n}), n, f"work-{n}"),
        )
    q("select queue.enqueue(payload => '{}', queue => 'work', category => 'pdf')")
    q("select queue.enqueue(payload => '{}', queue => 'later', delay => '1 day')")
    q("select queue.enqueue(payload => '{\"k\": 1}', queue => 'held')")
    held = q(
        "select job_id, token from queue.claim(worker => 'old', queues => '{held}', lease =>"
        " '1 hour')"
    ).fetchone()
    q("select queue.enqueue(payload => '{\"bad\": true}', queue => 'once')")
    dead = q(
        "select job_id, token from queue.claim(worker => 'old', queues => '{once}')"
    ).fetchone()
    q("select queue.fail(job_id => %s, token => %s, error => 'boom')", dead)
    q("select queue.enqueue(payload => '{}', queue => 'kept')")
    job = q(f"select job_id, token from {CLAIM}", ("{kept}",)).fetchone()
    q("select queue.complete(job_id => %s, token => %s, result => '{\"ok\": 1}')", job)
    q("select cache.put(key => 'user:1', value => '{\"name\": \"Ana\"}', ttl => '1 day')")
    q("select cache.put(key => 'user:2', value => '{\"name\": \"Bo\"}', ttl => '1 day')")
    q("select cache.invalidate(key => 'user:2', reason => 'renamed')")
    assert held is not None and dead is not None
    return {"held": held, "dead": dead}


def contents(
    conn: psycopg.Connection[Any], columns: dict[str, list[str]] | None = None
) -> tuple[dict[str, list[str]], dict[str, list[Any]]]:
    """Every row of andal's data tables (the install's own bookkeeping left out), and each
    table's columns. With ``columns`` (a release's), only those columns are read: an upgrade
    may add tables and columns, but what the release stored must read back unchanged."""
    if columns is None:
        found = conn.execute(
            "select format('%I.%I', c.table_schema, c.table_name), array_agg(quote_ident("
            "c.column_name)::text order by c.ordinal_position) from information_schema.columns c"
            " join pg_tables t on t.schemaname = c.table_schema and t.tablename = c.table_name"
            " where c.table_schema in ('queue', 'cache')"
            " and c.table_name not in ('install_state', 'schema_migrations')"
            " group by 1 order by 1"
        ).fetchall()
        columns = {table: cols for table, cols in found}
    out = {}
    for table, cols in columns.items():
        rows = conn.execute(
            f"select jsonb_build_array({', '.join(cols)})::text from {table}"
        ).fetchall()
        out[table] = sorted(r[0] for r in rows)
    return columns, out


@pytest.mark.parametrize("shards", [None, 4], ids=["unsharded", "4-shards"])
@pytest.mark.parametrize("release", releases(), ids=[r[0] for r in releases()])
def test_a_release_upgrades_with_its_data(
    release: tuple[str, str], shards: int | None, databases: Callable[[], str], tmp_path: Path
) -> None:
    if TEST_PREFIX != DEFAULT_PREFIX:  # 0.1.0 grants to andal_* (it has no role prefix)
        pytest.skip("a release installs the andal_* roles, left alone under ANDAL_TEST_PREFIX")
    version, commit = release
    tree = extract(commit, tmp_path)
    old, fresh = databases(), databases()
    dsn = make_dsn(old)
    install_release(tree, dsn, shards)
    with psycopg.connect(dsn, autocommit=True) as conn:
        assert conn.execute("select queue.version()").fetchone() == (version,)
        made = fill(conn)
        columns, before = contents(conn)

    install(dsn, shards=shards)

    with psycopg.connect(dsn, autocommit=True) as conn:
        assert conn.execute("select queue.version()").fetchone() == (andal.__version__,)
        assert contents(conn, columns)[1] == before
        # the data is usable by the new functions: the old lease still holds...
        conn.execute("select queue.complete(job_id => %s, token => %s)", made["held"])
        # ...the waiting jobs are claimed in priority order, the dead letter requeues
        claimed = conn.execute(
            "select payload from queue.claim(worker => 'new', queues => '{work}', batch => 10)"
        ).fetchall()
        assert [p[0] for p in claimed[:5]] == [{"n": n} for n in (4, 3, 2, 1, 0)]
        assert len(claimed) == 6
        conn.execute("select queue.requeue_dead(job_id => %s)", (made["dead"][0],))
        got = conn.execute("select value, stale from cache.get(key => 'user:1')").fetchone()
        assert got == ({"name": "Ana"}, False)

    install(make_dsn(fresh), shards=shards, role_prefix="andal")
    assert dump(old) == dump(fresh)


def test_a_fresh_install_equals_the_committed_schema_dump(databases: Callable[[], str]) -> None:
    name = databases()
    install(make_dsn(name), role_prefix=TEST_PREFIX)
    assert dump(name) == with_roles(committed(), TEST_PREFIX), (
        "the schema differs from sql/schema.dump.sql: run `make schema-dump` and commit it"
        " with the change"
    )


def test_every_release_has_a_changelog_section() -> None:
    changelog = (ROOT / "CHANGELOG.md").read_text()
    for version, commit in releases():
        assert f"## {version}" in changelog
        assert commit[:7] in changelog
