"""``python -m andal.demo`` on a small scale: against $DATABASE_URL, and on a private cluster."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from andal.demo import pg_bin, plan


def run_demo(env: dict[str, str], cwd: Path, jobs: int) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "andal.demo", "--jobs", str(jobs), "--workers", "2"]
    return subprocess.run(
        [*argv, "--concurrency", "16"], env=env, cwd=cwd, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip


def expected_dead(jobs: int) -> int:
    return sum(p["kind"] in ("broken", "fatal") for p in plan(jobs))


def test_demo_on_database_url(dsn: str, clean: None, tmp_path: Path) -> None:
    result = run_demo(dict(os.environ, DATABASE_URL=dsn), tmp_path, 3000)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "using $DATABASE_URL" in out
    for line in ("jobs/s", "enqueue→start p50", "enqueue→start p99", "retries", "dead letters"):
        assert line in out
    with psycopg.connect(dsn) as conn:
        assert conn.execute("select count(*) from queue.jobs").fetchone()[0] == 0
        dead = conn.execute("select count(*) from queue.dead_letters").fetchone()[0]
        reasons = dict(
            conn.execute("select reason, count(*) from queue.dead_letters group by 1").fetchall()
        )
    assert dead == expected_dead(3000) > 0
    assert set(reasons) == {"exhausted", "non_retryable"}


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
