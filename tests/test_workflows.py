"""Workflows from Python: ``enqueue(..., after=[...])`` (Client, AsyncClient, a connection),
``andal.chain`` / ``andal.group``, ``Job.parents()``, and a 3-stage pipeline (1 → 100 → 1)
through real worker processes, one of them killed with SIGKILL mid-way: every stage's jobs
run, the final job once, none lost."""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path

import psycopg
import pytest
from conftest import wait_for
from test_cli import andal_cmd, ok
from workers.procs import spawn_worker, stop_worker
from workers.recording import make_tables

import andal

HERE = Path(__file__).resolve().parent
PIPELINE = str(HERE / "workers" / "pipeline.py")


def state(conn: psycopg.Connection, job_id: int) -> str | None:
    row = conn.execute("select state from queue.job(%s)", (job_id,)).fetchone()
    return None if row is None else row[0]


def test_client_enqueue_after_waits_for_its_parents(dsn: str, conn, clean) -> None:
    client = andal.Client(dsn)
    a = client.enqueue({"n": 1}, "wf_a")
    b = client.enqueue({"n": 2}, "wf_a")
    c = client.enqueue({"n": 3}, "wf_c", after=[a, b])
    assert state(conn, c) == "waiting"
    assert [(p.job_id, p.state) for p in client.parents(c)] == [(a, "pending"), (b, "pending")]
    client.enqueue({}, "wf_c", after=[a], on_parent_failure="run")
    with pytest.raises(andal.InvalidArgument):
        client.enqueue({}, "wf_c", after=[a + 10_000])  # an id andal never issued
    with pytest.raises(ValueError):
        client.enqueue({}, "wf_c", after=[a], dedup_key="k")
    kids = client.enqueue_many([{"i": 1}, {"i": 2}], "wf_k", after=[c])
    assert [state(conn, k) for k in kids] == ["waiting", "waiting"]
    children = andal.jobs.children(conn, c)
    assert [(k.job_id, k.state, k.waiting_for) for k in children] == [
        (kids[0], "waiting", True),
        (kids[1], "waiting", True),
    ]


def test_async_client_enqueue_after(dsn: str, conn, clean) -> None:
    async def go() -> tuple[int | None, int | None, list[int | None]]:
        client = andal.AsyncClient(dsn)
        parent = await client.enqueue({}, "wf_async")
        child = await client.enqueue({}, "wf_async", after=[parent])
        many = await client.enqueue_many([{}, {}], "wf_async", after=[parent])
        return parent, child, many

    parent, child, many = asyncio.run(go())
    assert state(conn, parent) == "pending"
    assert [state(conn, j) for j in [child, *many]] == ["waiting"] * 3


def test_chain_and_group(dsn: str, conn, clean) -> None:
    client = andal.Client(dsn)
    first, second, third = andal.chain(client, [({"s": 1}, "wf_s"), ({"s": 2}, "wf_s"),
                                                ({"s": 3}, "wf_t")])  # fmt: skip
    assert [state(conn, j) for j in (first, second, third)] == ["pending", "waiting", "waiting"]
    assert [p.job_id for p in client.parents(third)] == [second]
    fan = andal.group(conn, [{"i": i} for i in range(3)], "wf_g", after=[third])
    assert [state(conn, j) for j in fan] == ["waiting"] * 3
    # a chain is one transaction: a bad step leaves nothing behind
    before = conn.execute("select count(*) from queue.jobs").fetchone()[0]
    with pytest.raises(andal.InvalidArgument):
        andal.chain(conn, [({}, "wf_s"), ({}, "wf_s")], after=[first],
                    on_parent_failure="never")  # fmt: skip
    assert conn.execute("select count(*) from queue.jobs").fetchone()[0] == before


def test_andal_job_shows_parents_and_children(dsn: str, conn, clean) -> None:
    parent = andal.enqueue(conn, {}, "wf_cli")
    child = andal.enqueue(conn, {}, "wf_cli", after=[parent])
    shown = ok(andal_cmd("job", str(child), dsn=dsn))
    assert "waiting" in shown and f"parents             {parent}:pending" in shown
    doc = json.loads(ok(andal_cmd("job", "--json", str(parent), dsn=dsn)))
    assert doc["children"] == f"{child}:waiting"
    assert "parents" not in doc


def test_job_page_shows_parents_and_children(dsn: str, conn, clean) -> None:
    pytest.importorskip("starlette")
    from webapp import andal_web, get

    parent = andal.enqueue(conn, {}, "wf_web")
    child = andal.enqueue(conn, {}, "wf_web", after=[parent])
    with andal_web(dsn) as server:
        status, html = get(f"{server.base}/jobs/{child}")
        assert status == 200 and 'data-field="parents"' in html
        assert f'/jobs/{parent}">{parent}</a> <span class="state pending">' in html
        assert '<span class="state waiting">waiting</span>' in html
        status, html = get(f"{server.base}/jobs/{parent}")
        assert status == 200 and f'/jobs/{child}">{child}</a>' in html
        status, html = get(f"{server.base}/queues/wf_web?state=waiting")
        assert status == 200 and f"/jobs/{child}" in html


def test_pipeline_survives_a_killed_worker(dsn: str, conn, clean, tmp_path: Path) -> None:
    """1 → 100 → 1 through two worker processes; one is killed (SIGKILL) while the middle
    stage runs and replaced. Every middle job runs, the final job runs once and reads the
    100 results, nothing is dead or left behind."""
    make_tables(conn)
    andal.configure_queue(conn, "merge", keep_results=True)
    client = andal.Client(dsn)
    split = client.enqueue({"items": 100}, "split")
    middle = andal.group(client, [{"i": i, "sleep": 0.2} for i in range(100)], "work",
                         after=[split], max_attempts=10)  # fmt: skip
    final = client.enqueue({}, "merge", after=middle)
    assert state(conn, final) == "waiting"
    args = ("--concurrency", "4", "--lease", "2", "--poll", "0.5")
    procs = [spawn_worker(dsn, tmp_path / f"w{i}.log", *args, module=PIPELINE) for i in (0, 1)]
    try:
        wait_for(
            lambda: (
                conn.execute("select count(*) from runs where queue = 'work'").fetchone()[0] >= 20
            ),
            timeout=60,
            what="the middle stage to be under way",
        )
        procs[0].send_signal(signal.SIGKILL)
        procs[0].wait()
        at_kill = conn.execute("select count(*) from runs where queue = 'work'").fetchone()[0]
        procs[0] = spawn_worker(dsn, tmp_path / "w2.log", *args, module=PIPELINE)
        wait_for(lambda: state(conn, final) == "completed", timeout=120, what="the final job")
    finally:
        codes = [stop_worker(p) for p in procs]
    logs = [p.read_text()[-2000:] for p in tmp_path.glob("w*.log")]
    assert codes == [0, 0], logs
    assert at_kill < 100, "the kill came after the middle stage: the test proves nothing"
    ran = dict(conn.execute("select queue, count(distinct job_id) from runs group by queue"))
    assert ran == {"split": 1, "work": 100, "merge": 1}
    finals = conn.execute("select count(*) from runs where queue = 'merge'").fetchone()[0]
    assert finals == 1, "the final job ran more than once"
    result = conn.execute("select result from queue.job(%s)", (final,)).fetchone()[0]
    assert result == {"parents": 100, "completed": 100, "sum": sum(range(100))}
    assert conn.execute("select count(*) from queue.dead_letters").fetchone()[0] == 0
    assert conn.execute("select count(*) from queue.jobs").fetchone()[0] == 0
    assert conn.execute("select count(*) from queue.job_edges").fetchone()[0] == 0
    # the kept results no child needs: gone, or left by two children ending at once and
    # dropped by the sweep queue.maintain runs each minute
    conn.execute("select queue._workflow_sweep()")
    assert conn.execute("select count(*) from queue.workflow_results").fetchone()[0] == 0
