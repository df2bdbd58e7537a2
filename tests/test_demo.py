"""``python -m andal.demo`` on a small scale: against $DATABASE_URL, and on a private cluster."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import psycopg
import pytest

from andal.cluster import Cluster, pg_bin
from andal.demo import local_server, plan

ROOT = Path(__file__).resolve().parent.parent


def run_demo(env: dict[str, str], cwd: Path, jobs: int) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "andal.demo", "--jobs", str(jobs), "--workers", "2"]
    return subprocess.run(
        [*argv, "--concurrency", "16"], env=env, cwd=cwd, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip


def expected_dead(jobs: int) -> int:
    return sum(p["kind"] in ("broken", "fatal") for p in plan(jobs))


def summary(out: str) -> dict[str, str]:
    """The summary table's rows: label -> value (as printed)."""
    rows = {}
    for line in out.splitlines():
        cells = [c.strip() for c in line.strip("│|").split("│")]
        if len(cells) == 2 and cells[0]:
            rows[cells[0]] = cells[1]
    return rows


def number(text: str) -> int:
    return int(text.split()[0].replace(",", ""))


def test_demo_on_database_url(dsn: str, clean: None, tmp_path: Path) -> None:
    result = run_demo(dict(os.environ, DATABASE_URL=dsn), tmp_path, 3000)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "using $DATABASE_URL" in out
    assert f"/{psycopg.conninfo.conninfo_to_dict(dsn)['dbname']}" in out.splitlines()[0]
    for line in ("jobs/s", "enqueue→start p50", "enqueue→start p99", "retries", "dead letters"):
        assert line in out
    assert "nan" not in out.lower()
    rows = summary(out)
    assert rows["enqueue→start p50"].endswith(" ms"), rows
    assert "failures are injected on purpose" in " ".join(out.split())
    assert number(rows["completed"]) + number(rows["dead letters"]) == 3000, rows
    assert number(rows["dead letters"]) == expected_dead(3000)
    assert rows["dead letters"].endswith(f"(injected: {expected_dead(3000)})")
    # it ends with the next commands, exactly as they can be typed (no password)
    tail = out.strip().splitlines()[-4:]
    for line, command in zip(tail, ("status", "top", "dead list", "web"), strict=True):
        assert line.strip().startswith("andal --dsn postgresql://") and f" {command} " in line
    # again on the same database: this run's counts, not the sum of both runs
    again = run_demo(dict(os.environ, DATABASE_URL=dsn), tmp_path, 3000)
    assert again.returncode == 0, again.stderr
    rows = summary(again.stdout)
    assert number(rows["dead letters"]) == expected_dead(3000), rows
    assert number(rows["completed"]) + number(rows["dead letters"]) == 3000, rows
    with psycopg.connect(dsn) as conn:
        assert conn.execute("select count(*) from queue.jobs").fetchone()[0] == 0
        dead = conn.execute("select count(*) from queue.dead_letters").fetchone()[0]
        reasons = dict(
            conn.execute("select reason, count(*) from queue.dead_letters group by 1").fetchall()
        )
    assert dead == 2 * expected_dead(3000) > 0  # both runs' dead letters are kept
    assert set(reasons) == {"exhausted", "non_retryable"}


def test_demo_without_a_server_says_how_to_fix_it(tmp_path: Path) -> None:
    nowhere = "postgresql://demo:s3cret@127.0.0.1:1/x"
    result = run_demo(dict(os.environ, DATABASE_URL=nowhere), tmp_path, 10)
    assert result.returncode == 3
    assert "cannot connect to demo@127.0.0.1:1/x" in result.stderr
    assert "fix: start PostgreSQL there" in result.stderr
    assert "s3cret" not in result.stderr + result.stdout


def test_demo_starts_a_private_cluster(tmp_path: Path) -> None:
    try:
        pg_bin("initdb")
    except FileNotFoundError:
        pytest.skip("no PostgreSQL server binaries")
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env["ANDAL_DEMO_SERVER"] = "postgresql://postgres@127.0.0.1:1/postgres"  # nobody there
    result = run_demo(env, tmp_path, 1000)
    assert result.returncode == 0, result.stderr
    assert "starting a private cluster" in result.stdout
    assert "dead letters" in result.stdout
    # thrown away afterwards
    assert not list((tmp_path / ".andal").glob("cluster-*/data"))


def test_the_server_comes_from_pg_variables() -> None:
    env = {"PGHOST": "db.example", "PGPORT": "6543", "PGUSER": "ana"}
    assert psycopg.conninfo.conninfo_to_dict(local_server(env)) == {
        "host": "db.example", "port": "6543", "user": "ana", "dbname": "postgres",
    }  # fmt: skip
    assert "port=5432" in local_server({})
    assert "port=1" in local_server({"ANDAL_DEMO_SERVER": "postgresql://x@127.0.0.1:1/y"})


def _demo_db_oid(server: str) -> int | None:
    with psycopg.connect(server) as conn:
        row = conn.execute("select oid from pg_database where datname = 'andal_demo'").fetchone()
    return int(row[0]) if row else None


def test_demo_runs_on_the_pgport_server_and_nowhere_else(tmp_path: Path) -> None:
    """PGPORT=<another port> make demo: andal_demo is made (and dropped) on that server only."""
    try:
        pg_bin("initdb")
    except FileNotFoundError:
        pytest.skip("no PostgreSQL server binaries")
    shared = local_server()  # the test suite's server ($PGHOST/$PGPORT)
    before = _demo_db_oid(shared)
    # a directory the postgres user can reach (pytest's tmp_path is private to us)
    cluster = Cluster(Path(tempfile.mkdtemp(prefix="andal-other-server-")))
    cluster.init()
    cluster.start()
    try:
        env = {
            k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "ANDAL_DEMO_SERVER")
        }
        env.update(PGHOST="127.0.0.1", PGPORT=str(cluster.port), PGUSER="postgres")
        env.pop("MAKEFLAGS", None)
        # as a user runs it: PGPORT=<port> make demo
        args = "DEMO_ARGS=--jobs 500 --workers 2 --concurrency 16"
        result = subprocess.run(
            ["make", "-s", "-o", ".venv/.installed", "demo", args],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        assert f"using the server postgres@127.0.0.1:{cluster.port}/andal_demo" in result.stdout
        assert "dead letters" in result.stdout
        with psycopg.connect(psycopg.conninfo.make_conninfo(cluster.dsn, dbname="andal_demo")) as c:
            dead = c.execute("select count(*) from queue.dead_letters").fetchone()
        assert dead is not None and dead[0] == expected_dead(500)
    finally:
        cluster.destroy()
    assert _demo_db_oid(shared) == before
