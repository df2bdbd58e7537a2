"""A queue's policy and schedules declared next to its handler (``Registry.handler(timeout=,
max_attempts=, lease=, backoff=)``, ``Registry.periodic``), applied by a worker's start: a
queue never configured takes them, a schedule absent is created, a difference is logged once
and the database wins unless ``apply_policy`` / ``--apply-policy``; a second start writes
nothing. Real database, real workers; each test its own queue names."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import psycopg
import pytest
from conftest import PGHOST, PGPORT, PGUSER, TEST_PREFIX, make_dsn, test_name, wait_for
from pytest_postgresql.janitor import DatabaseJanitor
from workers.inproc import running

import andal
from andal.client import route
from andal.worker import apply_policy


def settings(conn: psycopg.Connection, queue: str) -> dict:
    cur = conn.execute("select * from queue.queue_settings(%s)", (queue,))
    names = [c.name for c in cur.description]
    return dict(zip(names, cur.fetchone(), strict=True))


def queue_written_at(conn: psycopg.Connection, queue: str):
    return conn.execute("select updated_at from queue.queues where queue = %s", (queue,)).fetchone()


def schedule_row(conn: psycopg.Connection, name: str):
    return conn.execute(
        "select queue, cron, every, timezone, payload, missed, updated_at from queue.schedules"
        " where name = %s",
        (name,),
    ).fetchone()


def start_and_stop(dsn: str, registry: andal.Registry, **options) -> andal.Worker:
    """A worker's start (which applies the policy before it claims), then a graceful stop."""
    worker = andal.Worker(dsn, registry, poll=0.2, maintain_every=0, metrics=False, **options)
    with running(worker):
        pass
    return worker


def lines(caplog, name: str, **fields) -> list[logging.LogRecord]:
    return [
        r
        for r in caplog.records
        if r.msg == name and all(getattr(r, k, None) == v for k, v in fields.items())
    ]


def noop(job: andal.Job) -> None:
    pass


def test_a_queue_never_configured_takes_the_handlers_policy(
    dsn: str, conn: psycopg.Connection, caplog
) -> None:
    caplog.set_level(logging.INFO, logger="andal")
    reg = andal.Registry()
    backoff = andal.Backoff("exponential", base=2, cap=timedelta(minutes=1), jitter=0.25)
    reg.handler("pol_fresh", timeout=30, max_attempts=3, lease=45, backoff=backoff)(noop)
    assert not settings(conn, "pol_fresh")["configured"]
    start_and_stop(dsn, reg)
    got = settings(conn, "pol_fresh")
    assert got["configured"]
    assert (got["timeout"], got["max_attempts"], got["lease"]) == (
        timedelta(seconds=30), 3, timedelta(seconds=45),
    )  # fmt: skip
    assert (got["backoff"], got["backoff_base"], got["backoff_cap"], got["jitter"]) == (
        "exponential", timedelta(seconds=2), timedelta(minutes=1), 0.25,
    )  # fmt: skip
    assert len(lines(caplog, "policy_applied", queue="pol_fresh")) == 1
    assert not lines(caplog, "policy_conflict", queue="pol_fresh")


def test_a_queue_row_of_defaults_only_counts_as_never_configured(
    dsn: str, conn: psycopg.Connection
) -> None:
    # an enqueue makes the queue's row with the defaults (queue_settings says configured)
    andal.enqueue(conn, {}, "pol_enqueued")
    assert settings(conn, "pol_enqueued")["configured"]
    reg = andal.Registry()
    reg.add("pol_enqueued", noop, max_attempts=2, backoff="exponential")
    report = apply_policy(dsn, reg)
    assert report.configured == ["pol_enqueued"] and not report.conflicts
    got = settings(conn, "pol_enqueued")
    assert (got["max_attempts"], got["backoff"]) == (2, "exponential")


def test_a_different_database_value_wins_and_is_logged_once(
    dsn: str, conn: psycopg.Connection, caplog
) -> None:
    caplog.set_level(logging.INFO, logger="andal")
    conn.execute("select queue.configure_queue('pol_db', max_attempts => 7, timeout => '20s')")
    before = queue_written_at(conn, "pol_db")
    reg = andal.Registry()
    reg.handler("pol_db", timeout=20, max_attempts=3, lease=60)(noop)  # lease: the default
    start_and_stop(dsn, reg, name="pol-db-worker")
    (line,) = lines(caplog, "policy_conflict", queue="pol_db")
    assert line.settings == ["max_attempts"]
    assert (line.in_database, line.in_code) == ({"max_attempts": 7}, {"max_attempts": 3})
    assert line.winner == "database" and line.levelno == logging.WARNING
    assert line.worker == "pol-db-worker" and line.database.startswith(f"{TEST_PREFIX}_t_")
    assert settings(conn, "pol_db")["max_attempts"] == 7
    assert queue_written_at(conn, "pol_db") == before  # nothing written


def test_apply_policy_writes_the_codes_values_then_a_second_start_writes_nothing(
    dsn: str, conn: psycopg.Connection, caplog
) -> None:
    caplog.set_level(logging.INFO, logger="andal")
    conn.execute("select queue.configure_queue('pol_apply', max_attempts => 9, lease => '2m')")
    reg = andal.Registry()
    reg.handler("pol_apply", max_attempts=4, lease=30, timeout=0)(noop)  # 0: no timeout
    start_and_stop(dsn, reg, apply_policy=True)
    (line,) = lines(caplog, "policy_conflict", queue="pol_apply")
    assert line.settings == ["max_attempts", "lease"] and line.winner == "code"
    assert line.in_database == {"max_attempts": 9, "lease": 120.0}
    got = settings(conn, "pol_apply")
    assert (got["max_attempts"], got["lease"], got["timeout"]) == (4, timedelta(seconds=30), None)
    written = queue_written_at(conn, "pol_apply")
    caplog.clear()
    for apply in (True, False):
        start_and_stop(dsn, reg, apply_policy=apply)
    assert not lines(caplog, "policy_conflict", queue="pol_apply")
    assert queue_written_at(conn, "pol_apply") == written


def test_periodic_creates_its_schedule_and_a_second_start_changes_nothing(
    dsn: str, conn: psycopg.Connection, caplog
) -> None:
    caplog.set_level(logging.INFO, logger="andal")
    reg = andal.Registry()

    @reg.periodic("pol-nightly", "0 3 * * *", payload={"full": True}, timezone="Europe/Berlin")
    @reg.handler("pol_reports", max_attempts=2)
    def report(job: andal.Job) -> None:
        pass

    reg.periodic("pol-every", queue="pol_reports", every=90, missed="all")
    start_and_stop(dsn, reg)
    nightly = schedule_row(conn, "pol-nightly")
    assert nightly[:6] == ("pol_reports", "0 3 * * *", None, "Europe/Berlin", {"full": True},
                           "latest")  # fmt: skip
    every = schedule_row(conn, "pol-every")
    assert every[:6] == ("pol_reports", None, timedelta(seconds=90), "UTC", {}, "all")
    assert len(lines(caplog, "schedule_created")) == 2
    caplog.clear()
    start_and_stop(dsn, reg)
    assert (schedule_row(conn, "pol-nightly"), schedule_row(conn, "pol-every")) == (nightly, every)
    assert not lines(caplog, "schedule_created") and not lines(caplog, "schedule_conflict")
    assert not apply_policy(dsn, reg).wrote


def test_a_schedule_changed_in_the_database_wins_unless_applied(
    dsn: str, conn: psycopg.Connection, caplog
) -> None:
    caplog.set_level(logging.INFO, logger="andal")
    reg = andal.Registry()
    reg.periodic("pol-hourly", "0 * * * *", queue="pol_hourly")
    reg.add("pol_hourly", noop)
    assert apply_policy(dsn, reg).created == ["pol-hourly"]
    conn.execute("select queue.schedule('pol-hourly', 'pol_hourly', cron => '30 * * * *')")
    report = apply_policy(dsn, reg, worker="w")
    assert [(c.in_database, c.in_code, c.applied) for c in report.conflicts] == [
        ({"cron": "30 * * * *"}, {"cron": "0 * * * *"}, False)
    ]
    (line,) = lines(caplog, "schedule_conflict", schedule="pol-hourly")
    assert line.winner == "database" and line.settings == ["cron"]
    assert schedule_row(conn, "pol-hourly")[1] == "30 * * * *"
    assert apply_policy(dsn, reg, apply=True).conflicts[0].applied
    assert schedule_row(conn, "pol-hourly")[1] == "0 * * * *"
    assert not apply_policy(dsn, reg, apply=True).wrote


def test_a_worker_applies_only_the_queues_it_serves(dsn: str, conn: psycopg.Connection) -> None:
    reg = andal.Registry()
    reg.add("pol_served", noop, max_attempts=2)
    reg.add("pol_other", noop, max_attempts=2)
    reg.periodic("pol-other-tick", every=60, queue="pol_other")
    start_and_stop(dsn, reg, queues=["pol_served"])
    assert settings(conn, "pol_served")["max_attempts"] == 2
    assert not settings(conn, "pol_other")["configured"]
    assert schedule_row(conn, "pol-other-tick") is None


def test_a_refused_policy_stops_the_start_naming_the_queue(
    dsn: str, conn: psycopg.Connection
) -> None:
    reg = andal.Registry()
    reg.add("pol_bad", noop, max_attempts=0, backoff="sideways")
    worker = andal.Worker(dsn, reg, poll=0.2, maintain_every=0, metrics=False)
    with pytest.raises(andal.PolicyError, match="queue 'pol_bad' was refused.*22023") as info:
        worker.start()
    assert isinstance(info.value.__cause__, andal.InvalidArgument)
    assert not settings(conn, "pol_bad")["configured"]
    bad = andal.Registry()
    bad.periodic("pol-never", "61 * * * *", queue="pol_bad_schedule")
    with pytest.raises(andal.PolicyError, match="schedule 'pol-never' was refused"):
        apply_policy(dsn, bad)


def test_types_are_checked_when_declared() -> None:
    reg = andal.Registry()
    with pytest.raises(TypeError, match="max_attempts must be an integer"):
        reg.handler("t", max_attempts="3")
    with pytest.raises(TypeError, match="timeout must be seconds or a timedelta"):
        reg.add("t", noop, timeout=True)
    with pytest.raises(TypeError, match="backoff must be a string or an andal.Backoff"):
        reg.add("t", noop, backoff=2)
    with pytest.raises(TypeError, match="Backoff.jitter must be a number"):
        andal.Backoff(jitter="0.1")
    with pytest.raises(TypeError, match="every of schedule 'x' must be seconds"):
        reg.periodic("x", every="1h", queue="t")
    assert "t" not in reg and reg.periodics() == []
    reg.periodic("y", "* * * * *", queue="t")
    with pytest.raises(ValueError, match="schedule 'y' is already declared"):
        reg.periodic("y", "* * * * *", queue="t")


def test_periodic_without_a_queue_takes_the_decorated_handlers() -> None:
    reg = andal.Registry()

    @reg.handler("first")
    @reg.periodic("under", "* * * * *")  # under the handler: bound to it all the same
    def first(job: andal.Job) -> None:
        pass

    reg.periodic("loose", "* * * * *")
    with pytest.raises(ValueError, match="schedule 'loose' names no queue"):
        reg.periodics()
    reg = andal.Registry()
    reg.handler("second")(reg.periodic("over", every=5)(first))
    assert [(p.name, p.queue) for p in reg.periodics()] == [("over", "second")]
    worker = andal.Worker("dbname=unused", reg)
    worker.handler("third", max_attempts=2, backoff="linear")(noop)
    assert reg.policies() == {"third": andal.worker.Policy(max_attempts=2, backoff="linear")}
    copied = andal.Registry({"fourth": reg["third"]})  # a Handler keeps its policy
    assert copied.policies() == {"fourth": andal.worker.Policy(max_attempts=2, backoff="linear")}
    both = andal.Registry({"a": noop, "b": noop})
    both.periodic("twice", every=5)(noop)
    with pytest.raises(ValueError, match="decorates the handler of several queues"):
        both.periodics()


@pytest.fixture(scope="module")
def dsn_b(template_db: str) -> Iterator[str]:
    """A second andal database."""
    name = test_name("t", 10)
    janitor = DatabaseJanitor(
        user=PGUSER, host=PGHOST, port=PGPORT, dbname=name, template_dbname=template_db
    )
    janitor.init()
    try:
        yield make_dsn(name)
    finally:
        janitor.drop()


def test_several_databases_each_take_the_policy_and_a_schedule_goes_to_one(
    dsn: str, dsn_b: str
) -> None:
    dsns = [dsn, dsn_b]
    reg = andal.Registry()
    queues = ["pol_multi_a", "pol_multi_b", "pol_multi_c", "pol_multi_d"]
    for queue in queues:
        reg.add(queue, noop, max_attempts=2)
        reg.periodic(f"{queue}-tick", every=60, queue=queue)
    assert {route(q, 2) for q in queues} == {0, 1}  # both databases get one
    start_and_stop(dsns, reg)
    for i, target in enumerate(dsns):
        with psycopg.connect(target, autocommit=True) as c:
            assert all(settings(c, q)["max_attempts"] == 2 for q in queues)
            names = {r[0] for r in c.execute("select name from queue.schedules")}
            assert {f"{q}-tick" for q in queues} & names == {
                f"{q}-tick" for q in queues if route(q, 2) == i
            }


# -- the command line -------------------------------------------------------------------------


def test_the_cli_lists_apply_policy() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "andal.cli", "worker", "--help"],
        capture_output=True, text=True, timeout=60, check=True,
    ).stdout  # fmt: skip
    assert "--apply-policy" in out


MODULE = """
import andal

registry = andal.Registry()

@registry.handler("pol_cli", max_attempts=3)
def handle(job):
    pass
"""


def test_andal_worker_apply_policy_writes_the_codes_value(
    dsn: str, conn: psycopg.Connection, tmp_path: Path
) -> None:
    conn.execute("select queue.configure_queue('pol_cli', max_attempts => 8)")
    module = tmp_path / "policy_handlers.py"
    module.write_text(MODULE)
    env = dict(os.environ, DATABASE_URL=dsn)
    argv = [sys.executable, "-m", "andal.cli", "worker", str(module), "--apply-policy"]
    proc = subprocess.Popen(
        argv + ["--poll", "0.2", "--maintain-every", "0"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    registered = "select count(*) from queue.registered_workers() where 'pol_cli' = any(queues)"
    try:  # registered: it runs (its signal handlers are in place); the policy came before
        wait_for(
            lambda: conn.execute(registered).fetchone()[0] or proc.poll() is not None,
            timeout=30, what="the worker's registration",
        )  # fmt: skip
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    events = [json.loads(line) for line in err.splitlines()]
    (conflict,) = [e for e in events if e["event"] == "policy_conflict"]
    assert (conflict["queue"], conflict["winner"]) == ("pol_cli", "code")
    assert (conflict["in_database"], conflict["in_code"]) == (
        {"max_attempts": 8},
        {"max_attempts": 3},
    )
    assert settings(conn, "pol_cli")["max_attempts"] == 3
