"""Backup and restore: ``pg_dump -Fc`` of a working andal database, restored with
``pg_restore`` into a new database of the same server and into a new cluster (initdb'd on a
free port), carries on: the queued, scheduled and dead jobs, a running job (back by its lease),
the schedules, limits, history, cache entries and the id sequence. On the same server
``andal install`` has nothing to do; in a new cluster, where the dump's roles do not exist,
it says so, creates them and grants again what the install grants them. A worker then drains
every job and new ids never repeat old ones.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from conftest import PGHOST, PGPORT, PGUSER, ROLES, make_dsn, test_name, wait_for
from pytest_postgresql.janitor import DatabaseJanitor

import andal
from reliability.soak import PrivateCluster

HERE = Path(__file__).resolve().parent.parent


def andal_cli(dsn: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "ANDAL_DSN")}
    return subprocess.run(
        [sys.executable, "-m", "andal.cli", "--dsn", dsn, *args],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip


@pytest.fixture(scope="module")
def dump(dsn: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The dump of a database in use: 20 ready jobs, a running one (lease 2 s), a dead one, a
    schedule, a category limit, a rate limit, history kept for a queue, a cache entry."""
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("select queue.set_history(queue => 'kept', retention => '1 day')")
        for n in range(20):
            andal.enqueue(c, {"n": n}, "kept" if n % 2 else "plain", category="cat")
        andal.enqueue(c, {"n": "running"}, "running")
        c.execute(
            "select job_id from queue.claim(worker => 'gone', queues => '{running}',"
            " lease => '2 seconds')"
        )
        dead = andal.enqueue(c, {}, "plain", max_attempts=1)
        c.execute("select queue.cancel(job_id => %s)", (dead,))
        c.execute("select queue.schedule(name => 'nightly', queue => 'plain', cron => '0 3 * * *')")
        c.execute("select queue.set_category_limit(category => 'cat', max_running => 2)")
        c.execute("select queue.set_rate_limit(category => 'cat', starts => 1000, per => '1s')")
        c.execute("select cache.put(key => 'greeting', value => '\"hello\"')")
    out = tmp_path_factory.mktemp("dump") / "andal.dump"
    subprocess.run(["pg_dump", "-Fc", "-f", str(out), dsn], check=True, capture_output=True)
    return out


@pytest.fixture
def new_db() -> Iterator[str]:
    name = test_name("restored")
    janitor = DatabaseJanitor(user=PGUSER, host=PGHOST, port=PGPORT, dbname=name)
    janitor.init()
    try:
        yield make_dsn(name)
    finally:
        janitor.drop()


def carries_on(dsn: str) -> None:
    """The restored database is a working install: its state is there, and a worker drains
    every job, the running one once its lease ran out."""
    with psycopg.connect(dsn, autocommit=True) as c:
        assert c.execute("select count(*) from queue.jobs").fetchone()[0] == 21
        assert c.execute("select state from queue.job(job_id => 22)").fetchone()[0] == "cancelled"
        assert [
            r[0] for r in c.execute("select name from queue.schedules() where not builtin")
        ] == ["nightly"]
        assert c.execute("select max_running from queue.category_limits()").fetchone()[0] == 2
        assert c.execute("select starts from queue.rate_limits()").fetchone()[0] == 1000
        assert c.execute("select value from cache.get(key => 'greeting')").fetchone()[0] == "hello"
        new_id = andal.enqueue(c, {}, "plain")
        assert new_id is not None and new_id > 22, "the id sequence carried on"
    registry = andal.Registry()
    for queue in ("plain", "kept", "running"):
        registry.add(queue, lambda job: {"ok": True})
    worker = andal.Worker(dsn, registry, concurrency=2, poll=0.2, metrics=False).start()
    try:
        with psycopg.connect(dsn, autocommit=True) as c:
            wait_for(
                lambda: c.execute("select count(*) from queue.jobs").fetchone()[0] == 0,
                timeout=60, what="every restored job done",
            )  # fmt: skip
            kept = c.execute("select count(*) from queue.history where queue = 'kept'")
            assert kept.fetchone()[0] == 10, "history kept for the restored queue"
    finally:
        worker.stop()
        assert worker.join(60) == 0


def test_restore_into_a_new_database_of_the_same_server(dump: Path, new_db: str) -> None:
    subprocess.run(["pg_restore", "-d", new_db, str(dump)], check=True, capture_output=True)
    again = andal_cli(new_db, "install")
    assert again.returncode == 0, again.stderr
    assert "nothing to do" in again.stdout
    carries_on(new_db)


def test_restore_into_a_new_cluster_recreates_the_roles(dump: Path) -> None:
    cluster = PrivateCluster(prefix="andal-restore-")
    try:
        cluster.init()
        cluster.start()
        with psycopg.connect(cluster.dsn, autocommit=True) as c:
            c.execute("create database app")
        target = cluster.dsn.rsplit("/", 1)[0] + "/app"
        restored = subprocess.run(
            ["pg_restore", "-d", target, str(dump)], capture_output=True, text=True
        )
        missing = f'role "{ROLES["worker"]}" does not exist'
        assert missing in restored.stderr, restored.stderr[-2000:]
        repaired = andal_cli(target, "install")
        assert repaired.returncode == 0, repaired.stderr
        said = f"repaired roles {ROLES['producer']}, {ROLES['worker']}"
        assert said in repaired.stdout, repaired.stdout
        with psycopg.connect(target, autocommit=True) as c:
            granted = c.execute(
                "select has_function_privilege(%s, 'queue.claim(text, text[], int, interval)',"
                " 'execute'), has_schema_privilege(%s, 'queue', 'usage')",
                (ROLES["worker"], ROLES["monitor"]),
            ).fetchone()
            assert granted == (True, True)
        second = andal_cli(target, "install")
        assert "nothing to do" in second.stdout, "the repair is done once"
        carries_on(target)
    finally:
        cluster.destroy()
