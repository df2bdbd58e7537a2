"""andal.contrib.django against the real Django (psycopg 3 backend) and a real PostgreSQL:
a job enqueued on Django's connection commits or rolls back with ``transaction.atomic()``,
the DSN comes from ``settings.DATABASES``, and ``andal_worker`` runs a handler module (one
that uses Django itself) to completion in a ``python -m django`` process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import django
import psycopg
import pytest
from conftest import wait_for
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connections, transaction
from django.test.utils import override_settings
from psycopg.conninfo import conninfo_to_dict

import andal
from andal.cli import parser
from andal.contrib.django import connection, database_dsn, enqueue, enqueue_many
from andal.contrib.django import dsn as settings_dsn
from andal.contrib.django.management.commands.andal_worker import worker_argv


class Boom(Exception):
    pass


def django_database(url: str) -> dict[str, Any]:
    """The ``DATABASES`` entry of the andal database ``url``."""
    parts = conninfo_to_dict(url)
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": parts["dbname"],
        "USER": parts["user"],
        "HOST": parts["host"],
        "PORT": parts["port"],
    }


@pytest.fixture(scope="module", autouse=True)
def django_settings(dsn: str) -> Iterator[None]:
    assert not settings.configured, "another test module configured Django first"
    settings.configure(
        DATABASES={
            "default": django_database(dsn),
            "lite": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"},
        },
        INSTALLED_APPS=["andal.contrib.django"],
        ANDAL={"QUEUES": ["dj_a", "dj_b"], "CONCURRENCY": 2},
        USE_TZ=True,
    )
    django.setup()
    try:
        yield
    finally:
        connections.close_all()


def live_count(url: str, marker: str) -> int:
    with psycopg.connect(url) as c:
        row = c.execute(
            "select count(*) from queue.jobs where payload->>'marker' = %s", [marker]
        ).fetchone()
    assert row is not None
    return int(row[0])


def test_django_runs_on_psycopg_3() -> None:
    assert isinstance(connection(), psycopg.Connection)


def test_a_job_of_a_committed_atomic_block_exists_after_the_commit_only(dsn: str) -> None:
    producer = andal.Client(dsn)
    with transaction.atomic():
        job_id = enqueue({"marker": "committed"}, "dj_a", priority=5)
        assert job_id is not None
        assert producer.job(job_id) is None  # not committed yet: invisible to others
        assert live_count(dsn, "committed") == 0
    info = producer.job(job_id)
    assert info is not None and info.queue == "dj_a" and info.priority == 5
    assert live_count(dsn, "committed") == 1


def test_a_job_of_an_atomic_block_that_raises_does_not_exist(dsn: str) -> None:
    with pytest.raises(Boom), transaction.atomic():
        job_id = enqueue({"marker": "rolled back"}, "dj_a")
        assert job_id is not None
        raise Boom
    assert andal.Client(dsn).job(job_id) is None
    assert live_count(dsn, "rolled back") == 0


def test_a_rolled_back_savepoint_drops_its_job_only(dsn: str) -> None:
    with transaction.atomic():
        kept = enqueue({"marker": "outer"}, "dj_a")
        with pytest.raises(Boom), transaction.atomic():
            dropped = enqueue({"marker": "inner"}, "dj_a")
            raise Boom
    assert kept is not None and dropped is not None
    assert andal.Client(dsn).job(kept) is not None
    assert andal.Client(dsn).job(dropped) is None


def test_outside_atomic_the_job_commits_at_once_and_options_pass_through(dsn: str) -> None:
    first = enqueue({"marker": "auto"}, "dj_b", dedup_key="k1")
    assert andal.Client(dsn).job(first or 0) is not None
    assert enqueue({"marker": "auto"}, "dj_b", dedup_key="k1") == first
    ids = enqueue_many([{"marker": "many"}, {"marker": "many"}], "dj_b")
    assert len(ids) == 2 and live_count(dsn, "many") == 2


def test_a_database_that_is_not_postgresql_is_refused_clearly() -> None:
    with pytest.raises(ImproperlyConfigured, match="'lite' is sqlite, not PostgreSQL"):
        enqueue({"marker": "never"}, using="lite")
    with pytest.raises(ImproperlyConfigured, match="no database 'nope'"):
        enqueue({"marker": "never"}, using="nope")
    with override_settings(ANDAL={"DATABASE": "lite"}), pytest.raises(ImproperlyConfigured):
        settings_dsn()


def test_the_dsn_is_built_from_databases_and_reaches_the_database(dsn: str) -> None:
    built = database_dsn("default")
    assert conninfo_to_dict(built) == conninfo_to_dict(dsn)
    assert andal.Client(built).version() == andal.Client(dsn).version()
    with override_settings(ANDAL={"DSN": "dbname=elsewhere"}):
        assert settings_dsn() == "dbname=elsewhere"


def test_wrong_settings_are_refused_with_their_key() -> None:
    for conf, key in (
        ({"QUEUE": ["x"]}, "unknown keys \\['QUEUE'\\]"),
        ({"CONCURRENCY": "8"}, "CONCURRENCY"),
        ({"QUEUES": [""]}, "QUEUES"),
        ({"DSN": []}, "DSN"),
    ):
        with override_settings(ANDAL=conf), pytest.raises(ImproperlyConfigured, match=key):
            worker_argv("handlers", [])


def test_the_worker_argv_takes_the_settings_and_the_command_line_wins(dsn: str) -> None:
    argv = worker_argv("handlers", ["--grace", "5"])
    assert argv[:2] == ["--dsn", database_dsn("default")]
    assert argv[2:] == ["worker", "handlers", "--concurrency", "2", "--queue", "dj_a",
                        "--queue", "dj_b", "--grace", "5"]  # fmt: skip
    own = worker_argv("handlers", ["--queue", "mine", "--concurrency", "7"])
    assert "dj_a" not in own and own[-4:] == ["--queue", "mine", "--concurrency", "7"]
    parsed = parser().parse_args(own)
    assert parsed.queue == ["mine"] and parsed.concurrency == 7
    with pytest.raises(CommandError, match="--dsn is not taken"):
        worker_argv("handlers", ["--dsn", dsn])


def test_the_command_reports_andal_worker_exit_code() -> None:
    with pytest.raises(CommandError, match="exit code 5") as caught:
        call_command("andal_worker", "no_such_andal_handlers_module")
    assert caught.value.returncode == 5


HANDLERS = """
import andal
from django.db import connection, transaction

from andal.contrib.django import enqueue

registry = andal.Registry()


@registry.handler("dj_a")
def first(job: andal.Job) -> dict:
    with transaction.atomic():  # Django is set up in the worker: the ORM's connection works
        child = enqueue({"parent": job.id}, "dj_b")
    return {"child": child}


@registry.handler("dj_b")
def second(job: andal.Job) -> dict:
    with connection.cursor() as cur:
        cur.execute("select current_database()")
        return {"db": cur.fetchone()[0], "parent": job.payload["parent"]}
"""


def settings_module(url: str) -> str:
    return textwrap.dedent(f"""
        DATABASES = {{"default": {django_database(url)!r}}}
        INSTALLED_APPS = ["andal.contrib.django"]
        ANDAL = {{"QUEUES": ["dj_a", "dj_b"]}}
        USE_TZ = True
        SECRET_KEY = "test"
    """)


def test_manage_andal_worker_runs_the_handlers_to_completion(dsn: str, tmp_path: Path) -> None:
    (tmp_path / "dj_settings.py").write_text(settings_module(dsn))
    (tmp_path / "dj_handlers.py").write_text(HANDLERS)
    producer = andal.Client(dsn)
    for queue in ("dj_a", "dj_b"):  # keep the finished jobs, to read their results
        producer.set_history(queue, 3600)
    job_id = producer.enqueue({"marker": "worker"}, "dj_a")
    assert job_id is not None
    env = {k: v for k, v in os.environ.items() if k not in ("ANDAL_DSN", "DATABASE_URL")}
    env.update(DJANGO_SETTINGS_MODULE="dj_settings", PYTHONPATH=str(tmp_path))
    argv = [sys.executable, "-m", "django", "andal_worker", "dj_handlers", "--poll", "0.2"]
    worker = subprocess.Popen(argv + ["--grace", "5"], env=env, cwd=tmp_path, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)  # fmt: skip
    try:
        done = _wait_finished(producer, job_id, worker)
        assert done.state == "completed", done
        child = _wait_finished(producer, done.result["child"], worker)
        assert child.state == "completed", child
        assert child.result == {"db": conninfo_to_dict(dsn)["dbname"], "parent": job_id}
    finally:
        worker.send_signal(signal.SIGTERM)
        out, _ = worker.communicate(timeout=60)
    assert worker.returncode == 0, out


def _wait_finished(
    producer: andal.Client, job_id: int, worker: subprocess.Popen[str]
) -> andal.JobInfo:
    """The job once it has finished; fails at once when the worker has exited."""

    def finished() -> andal.JobInfo | None:
        if worker.poll() is not None:
            out, _ = worker.communicate()
            raise AssertionError(f"andal_worker exited ({worker.returncode}):\n{out}")
        info = producer.job(job_id)
        return info if info is not None and info.finished else None

    found = wait_for(finished, timeout=60, what=f"job {job_id} to finish")
    assert isinstance(found, andal.JobInfo)
    return found
