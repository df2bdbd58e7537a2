"""Periodic jobs for real: a schedule ``every => '1 second'`` served by 4 worker processes
(plain psycopg loops that claim, record and complete) and a psql session calling
``queue.maintain()`` in a loop. Every tick is enqueued once, none is missing, none is
duplicated; after every process is killed for 10 s and restarted, the missed-tick policy
(latest, the default) holds: the ticks of the outage are not fired, except the latest once.
Ticks are fired by the claims and by maintain, whoever gets there first."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import psycopg
import pytest
from conftest import wait_for

#: One worker process: claim the schedule's queue, record each job's tick in the job's
#: completing transaction, complete it. Stops when killed.
WORKER = r"""
import sys, time, psycopg
dsn, name = sys.argv[1], sys.argv[2]
with psycopg.connect(dsn, autocommit=True) as c:
    while True:
        rows = c.execute(
            "select job_id, token, payload ->> '_tick' from queue.claim("
            "worker => %s, queues => '{ticks}', batch => 10)", (name,)).fetchall()
        for job_id, token, tick in rows:
            with c.transaction():
                c.execute("insert into seen (job_id, tick, worker) values (%s, %s, %s)",
                          (job_id, tick, name))
                c.execute("select queue.complete(%s, %s)", (job_id, token))
        if not rows:
            time.sleep(0.05)
"""


def start(dsn: str, script: Path) -> list[subprocess.Popen[bytes]]:
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, dsn, f"w{i}"]) for i in range(4)]
    # the psql session: maintain, a short pause, for far longer than the test runs
    script.write_text("select queue.maintain();\nselect pg_sleep(0.2);\n" * 2000)
    psql = subprocess.Popen(
        ["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", dsn, "-o", "/dev/null",
         "-f", str(script)]
    )  # fmt: skip
    return [*procs, psql]


def kill(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in procs:
        p.send_signal(signal.SIGKILL)
    for p in procs:
        p.wait(timeout=30)


@pytest.fixture
def db(dsn: str, clean: None) -> Iterator[psycopg.Connection]:
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("drop table if exists seen")
        c.execute("create table seen (job_id bigint, tick timestamptz, worker text)")
        c.execute("grant all on seen to public")
        yield c
        c.execute("drop table if exists seen")


def ticks(c: psycopg.Connection) -> list[tuple]:
    return c.execute(
        "select tick, job_id, fired_at from queue.schedule_ticks where schedule = 'tick'"
        " order by tick"
    ).fetchall()


def test_every_tick_once_across_workers_and_restarts(
    dsn: str, db: psycopg.Connection, tmp_path: Path
) -> None:
    c = db
    c.execute("select queue.schedule(name => 'tick', queue => 'ticks', every => '1 second')")
    procs = start(dsn, tmp_path / "maintain.sql")
    try:
        wait_for(lambda: len(ticks(c)) >= 15, timeout=60, what="15 ticks while running")
    finally:
        kill(procs)
    # let a transaction a killed process left behind end (the server notices the kill)
    wait_for(lambda: c.execute(
        "select count(*) = 0 from pg_stat_activity where datname = current_database()"
        " and pid <> pg_backend_pid() and state <> 'idle'").fetchone()[0],
        timeout=30, what="killed sessions gone")  # fmt: skip
    before = ticks(c)
    killed_at = c.execute("select now()").fetchone()[0]
    # nothing runs for 10 s: no tick is fired
    time.sleep(10)
    assert ticks(c) == before, "a tick was fired while no process ran"
    restarted_at = c.execute("select now()").fetchone()[0]
    procs = start(dsn, tmp_path / "maintain.sql")
    try:
        wait_for(lambda: ticks(c)[-1][0] >= restarted_at + timedelta(seconds=5),
                 timeout=60, what="5 ticks after the restart")  # fmt: skip
    finally:
        kill(procs)
    after = ticks(c)
    wait_for(lambda: c.execute("select count(*) from seen").fetchone()[0] >= len(after) - 4,
             timeout=30, what="the jobs handled")  # fmt: skip

    one = timedelta(seconds=1)
    stamps = [t for t, _, _ in after]
    # before the kill: one tick per second, no gap, no repeat
    first_run = [t for t in stamps if t <= before[-1][0]]
    assert first_run == [before[0][0] + i * one for i in range(len(first_run))]
    # the outage: its ticks are missed, and only the latest one is fired, once, at restart
    rest = [t for t in stamps if t > before[-1][0]]
    assert rest, "no tick after the restart"
    assert rest[0] - before[-1][0] >= timedelta(seconds=9), "ticks of the outage were fired"
    fired = {t: f for t, _, f in after}
    assert rest[0] >= restarted_at - one and fired[rest[0]] - rest[0] < one, (
        f"not the latest missed tick: {rest[0]} fired at {fired[rest[0]]} (restart at"
        f" {restarted_at})"
    )
    assert rest == [rest[0] + i * one for i in range(len(rest))], "ticks after the restart"
    assert killed_at < rest[0]
    # every tick has exactly one job, and no job was handled twice or for another tick
    seen = c.execute("select job_id, tick from seen order by tick").fetchall()
    assert len(seen) == len({j for j, _ in seen}), "a job was handled twice"
    assert len({t for _, t in seen}) == len(seen), "a tick was handled twice"
    by_job = {j: t for t, j, _ in after}
    assert all(by_job.get(j) == t for j, t in seen), "a job for a tick it was not fired for"
    # fired within a second of the tick while a worker ran (the claim path fires due ticks)
    late = [t for t, _, f in after if f - t >= one]
    assert len(late) <= len(after) // 10, f"ticks fired a second late or more: {late}"


def test_a_session_firing_a_tick_makes_the_others_skip_it(dsn: str, clean: None) -> None:
    """Two real sessions: while one holds a due tick's firing uncommitted, the other's
    claim and maintain skip the schedule without waiting; after the commit nothing is due
    and the tick has exactly one job."""
    with (
        psycopg.connect(dsn, autocommit=True) as a,
        psycopg.connect(dsn, autocommit=True) as b,
    ):
        a.execute("select queue.schedule(name => 'tick', queue => 'ticks', every => '1 hour')")
        a.execute(
            "update queue.schedules set anchor = now() - interval '90 minutes',"
            " next_at = now() - interval '30 minutes' where name = 'tick'"
        )
        with a.transaction():
            assert a.execute("select queue.maintain()").fetchone() is not None
            assert len(ticks(a)) == 1
            b.execute("set lock_timeout = '5s'")  # a wait would fail the test, not hang it
            assert b.execute("select count(*) from queue.claim('w', queues => '{ticks}')"
                             ).fetchone()[0] == 0  # fmt: skip
            b.execute("select queue.maintain()")
            assert len(ticks(b)) == 0, "the other session sees no committed tick yet"
        b.execute("select queue.maintain()")
        got = b.execute("select count(*) from queue.claim('w', queues => '{ticks}', batch => 10)")
        assert got.fetchone()[0] == 1, "exactly one job for the tick"
        assert len(ticks(b)) == 1
