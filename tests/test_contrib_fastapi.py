"""andal.contrib.fastapi against the real FastAPI (TestClient runs the lifespan) and a real
PostgreSQL: a route enqueues through the ``get_client`` dependency, the job is in the
database, a worker beside the app runs it, and once the lifespan has ended the client is off
``app.state`` and no connection of the app or its worker is left."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Annotated, Any

import psycopg
import pytest
from conftest import PGHOST, PGPORT, PGUSER, make_dsn, wait_for
from fastapi import Depends, FastAPI
from fastapi.testclient import TestClient
from psycopg.conninfo import conninfo_to_dict
from pytest_postgresql.janitor import DatabaseJanitor

import andal
from andal.contrib.fastapi import STATE_KEY, get_client, lifespan

APP_NAME = "andal_fastapi_test"
Client = Annotated[andal.AsyncClient, Depends(get_client)]


def make_app(**given: Any) -> FastAPI:
    app = FastAPI(lifespan=lifespan(**given))

    @app.post("/jobs/{queue}")
    async def create(queue: str, body: dict[str, Any], client: Client) -> dict[str, Any]:
        return {"job": await client.enqueue(body, queue)}

    @app.get("/jobs/{job_id}")
    async def wait(job_id: int, client: Client) -> dict[str, Any]:
        done = await client.wait(job_id, timeout=60, poll=0.2)
        return {"state": done and done.state, "result": done and done.result}

    return app


def named(url: str) -> str:
    """``url`` with an application_name, to find its sessions in pg_stat_activity."""
    return f"{url}?application_name={APP_NAME}"


def sessions(url: str, worker: str = "-") -> list[str]:
    """The application names of the sessions of the app's client or of ``worker``."""
    with psycopg.connect(url, autocommit=True) as c:
        rows = c.execute(
            "select application_name from pg_stat_activity where datname = current_database()"
            " and pid <> pg_backend_pid() and (application_name = %s or application_name like %s)",
            [APP_NAME, f"andal {worker}%"],
        ).fetchall()
    return [r[0] for r in rows]


def test_a_route_enqueues_through_the_dependency(dsn: str) -> None:
    app = make_app(dsn=named(dsn))
    with TestClient(app) as http:
        assert isinstance(getattr(app.state, STATE_KEY), andal.AsyncClient)
        answer = http.post("/jobs/fa_mail", json={"to": "a@b.c"})
        assert answer.status_code == 200, answer.text
        job_id = answer.json()["job"]
    info = andal.Client(dsn).job(job_id)
    assert info is not None and (info.queue, info.state) == ("fa_mail", "pending")
    with psycopg.connect(dsn) as c:
        row = c.execute("select payload from queue.jobs where id = %s", [job_id]).fetchone()
    assert row == ({"to": "a@b.c"},)


def test_after_the_lifespan_the_client_is_gone_and_no_connection_is_left(dsn: str) -> None:
    app = make_app(dsn=named(dsn))
    with TestClient(app) as http:
        assert http.post("/jobs/fa_mail", json={}).status_code == 200
    assert not hasattr(app.state, STATE_KEY)
    wait_for(lambda: not sessions(dsn), timeout=30, what="the app's sessions to end")
    with pytest.raises(RuntimeError, match="no AsyncClient on app.state"):
        TestClient(app).post("/jobs/fa_mail", json={})  # no `with`: no lifespan


def test_a_worker_beside_the_app_runs_the_job_and_stops_with_it(dsn: str) -> None:
    andal.Client(dsn).set_history("fa_side", 3600)  # keep the result, to read it
    registry = andal.Registry()

    @registry.handler("fa_side")
    def side(job: andal.Job) -> dict[str, Any]:
        return {"echo": job.payload["n"]}

    worker = andal.Worker(dsn, registry, concurrency=1, poll=0.2, grace=5, name="fa-side")
    app = make_app(dsn=named(dsn), worker=worker)
    with TestClient(app) as http:
        job_id = http.post("/jobs/fa_side", json={"n": 7}).json()["job"]
        answer = http.get(f"/jobs/{job_id}")
        assert answer.json() == {"state": "completed", "result": {"echo": 7}}
        assert sessions(dsn, "fa-side")  # the worker is on while the app is
    assert worker.join(0) == 0  # stopped by the lifespan's end, gracefully
    wait_for(lambda: not sessions(dsn, "fa-side"), timeout=30, what="the worker's sessions")


def test_a_worker_factory_serves_each_start_of_the_app(dsn: str) -> None:
    made: list[andal.Worker] = []

    def make() -> andal.Worker:
        made.append(andal.Worker(dsn, {"fa_twice": lambda job: None}, poll=0.2, grace=5))
        return made[-1]

    app = make_app(dsn=named(dsn), worker=make)
    for _ in range(2):  # a Worker runs once: the second start needs a new one
        with TestClient(app) as http:
            job_id = http.post("/jobs/fa_twice", json={}).json()["job"]
            assert http.get(f"/jobs/{job_id}").json()["state"] == "completed"
    assert len(made) == 2 and [w.join(0) for w in made] == [0, 0]
    assert made[0].counts["completed"] == made[1].counts["completed"] == 1


@pytest.fixture
def empty_db() -> Iterator[str]:
    name = f"andal_empty_{uuid.uuid4().hex[:10]}"
    janitor = DatabaseJanitor(user=PGUSER, host=PGHOST, port=PGPORT, dbname=name)
    janitor.init()
    try:
        yield make_dsn(name)
    finally:
        janitor.drop()


def test_the_startup_fails_on_a_database_without_andal(empty_db: str) -> None:
    with pytest.raises(andal.NotInstalled), TestClient(make_app(dsn=empty_db)):
        pass
    with TestClient(make_app(dsn=empty_db, check=False)) as http:  # no check: starts
        assert http.app is not None


def test_the_dsn_comes_from_the_environment(dsn: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANDAL_DSN", raising=False)
    monkeypatch.delenv("DATABASE_URL", raising=False)
    with pytest.raises(RuntimeError, match="no database"), TestClient(make_app()):
        pass
    monkeypatch.setenv("DATABASE_URL", dsn)
    app = make_app()
    with TestClient(app) as http:
        job_id = http.post("/jobs/fa_env", json={}).json()["job"]
        client = getattr(app.state, STATE_KEY)
        assert conninfo_to_dict(client.dsns[0])["dbname"] == conninfo_to_dict(dsn)["dbname"]
    assert andal.Client(dsn).job(job_id) is not None
