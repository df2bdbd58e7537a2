"""Claim reads its indexes, never the backlog.

With 100,000 ready and 100,000 future-scheduled jobs, the real plans of the statements inside
queue.claim (captured with auto_explain, nested statements included, after enough calls for
PL/pgSQL to switch to its generic plans) contain no sequential scan of queue.jobs and no sort
of the backlog: every Sort sits above a Limit that bounds what it reads from queue.jobs
(at most batch rows per queue and kind). Checked for one queue, three queues, forty queues
(four with jobs: the claim shares its batch between them) and every queue.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

READY = 100_000
FUTURE = 100_000
QUEUES = ["q1", "q2", "q3", "q4"]
CALLS = 8  # > 5: PL/pgSQL plans its statements generically after five custom plans


@pytest.fixture(scope="module")
def backlog(dsn: str) -> str:
    """200,000 jobs in four queues: half ready now, half scheduled an hour ahead; one job in
    ten has one of three categories (gated with room to spare)."""
    with psycopg.connect(dsn, autocommit=True) as c:
        for category in ("c1", "c2", "c3"):
            c.execute("select queue.set_category_limit(%s, 1000000)", (category,))
        c.execute(
            """
            insert into queue.jobs (queue, category, priority, payload, max_attempts,
                                    available_at)
            select (%(queues)s::text[])[1 + g %% 4],
                case when g %% 10 = 0 then 'c' || (1 + g %% 3) end,
                g %% 3, jsonb_build_object('n', g), 5,
                case when g <= %(ready)s then now() - make_interval(secs => g %% 1000)
                     else now() + interval '1 hour' end
            from generate_series(1, %(total)s) as g
            """,
            {"queues": QUEUES, "ready": READY, "total": READY + FUTURE},
        )
        c.execute("analyze queue.jobs")
        c.execute("analyze queue.categories")
    return dsn


@pytest.fixture
def explained(backlog: str) -> Iterator[tuple[psycopg.Connection, list[str]]]:
    """A session whose statements' plans (nested ones too) arrive as LOG notices."""
    plans: list[str] = []
    with psycopg.connect(backlog, autocommit=True) as c:
        c.execute("load 'auto_explain'")
        c.execute("set auto_explain.log_min_duration = 0")
        c.execute("set auto_explain.log_nested_statements = on")
        c.execute("set auto_explain.log_analyze = off")
        c.execute("set auto_explain.log_format = 'json'")
        c.execute("set client_min_messages = log")
        c.add_notice_handler(
            lambda d: (
                plans.append(d.message_primary or "")
                if (d.message_primary or "").startswith("duration:")
                else None
            )
        )
        yield c, plans


def plan_trees(messages: list[str]) -> list[dict[str, Any]]:
    """The JSON plans in auto_explain's messages ("duration: ... ms  plan:\\n{...}")."""
    trees = []
    for m in messages:
        doc = json.loads(m[m.index("{") :])
        trees.append(doc)
    return trees


def nodes(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield plan
    for child in plan.get("Plans", []):
        yield from nodes(child)


def is_jobs(node: dict[str, Any]) -> bool:
    """A node reading queue.jobs, or one of its shards (queue.jobs_p0 ...) when sharded."""
    return re.fullmatch(r"jobs(_p\d+)?", node.get("Relation Name", "")) is not None


def by_id(node: dict[str, Any]) -> bool:
    """A read of queue.jobs by primary key (id = ... / id = ANY (...)): bounded by its keys."""
    cond = node.get("Index Cond") or node.get("Recheck Cond") or ""
    return re.search(r"\((?:\w+\.)?id = ", cond) is not None


def reads_jobs_unbounded(plan: dict[str, Any]) -> bool:
    """True if this node scans queue.jobs (other than by id), or is fed by such a scan with no
    Limit in between."""
    if is_jobs(plan) and "Scan" in plan["Node Type"]:
        return not by_id(plan)
    if plan["Node Type"] == "Limit":
        return False
    return any(reads_jobs_unbounded(child) for child in plan.get("Plans", []))


def problems(doc: dict[str, Any]) -> list[str]:
    found = []
    for node in nodes(doc["Plan"]):
        if node["Node Type"] == "Seq Scan" and is_jobs(node):
            found.append("Seq Scan on jobs")
        if node["Node Type"] in ("Sort", "Incremental Sort") and any(
            reads_jobs_unbounded(child) for child in node.get("Plans", [])
        ):
            found.append(f"{node['Node Type']} over the jobs backlog ({node.get('Sort Key')})")
    return found


@pytest.mark.parametrize(
    "queues",
    [["q1"], ["q1", "q2", "q3"], [f"q{i}" for i in range(1, 41)], None],
    ids=["one-queue", "three-queues", "forty-queues", "every-queue"],
)
@pytest.mark.parametrize("batch", [1, 50])
def test_claim_plans_use_indexes(
    explained: tuple[psycopg.Connection, list[str]], queues: list[str] | None, batch: int
) -> None:
    conn, messages = explained
    claimed = 0
    with conn.transaction(force_rollback=True):  # leave the backlog as it was
        for _ in range(CALLS):
            rows = conn.execute(
                "select job_id, category from queue.claim('planner', queues => %s, batch => %s)",
                (queues, batch),
            ).fetchall()
            claimed += len(rows)
    assert claimed == CALLS * batch, "every call found a full batch"
    docs = plan_trees(messages)
    texts = [d["Query Text"] for d in docs]
    jobs_plans = [d for d in docs if "queue.jobs" in d["Query Text"]]
    # The candidate scans ran in every call, generic plans included.
    assert sum("for update skip locked" in t for t in texts) >= CALLS
    bad = {p["Query Text"][:200]: problems(p) for p in jobs_plans if problems(p)}
    assert bad == {}, json.dumps(bad, indent=1)
    index_scans = [
        n for d in jobs_plans for n in nodes(d["Plan"]) if is_jobs(n) and "Index" in n["Node Type"]
    ]
    assert index_scans, "the candidates were read by index"


def test_lease_statements_read_jobs_by_id(explained: tuple[psycopg.Connection, list[str]]) -> None:
    """heartbeat, release, complete and fail find their job by primary key, even when the
    statistics say no job runs (the backlog was analyzed before any claim): a condition on
    ``status = 'running'`` would let the planner read jobs_lease_idx, every running job's
    entry, instead of one row."""
    conn, messages = explained
    with conn.transaction(force_rollback=True):  # leave the backlog as it was
        jobs = conn.execute(
            "select job_id, token from queue.claim('planner', queues => %s, batch => %s)",
            (["q1"], 4 * CALLS),
        ).fetchall()
        assert len(jobs) == 4 * CALLS
        messages.clear()
        for i in range(CALLS):
            for j, call in enumerate(
                (
                    "select queue.heartbeat(job_id => %s, token => %s)",
                    "select queue.release(job_id => %s, token => %s)",
                    "select queue.complete(job_id => %s, token => %s)",
                    "select queue.fail(job_id => %s, token => %s, error => 'x')",
                )
            ):
                conn.execute(call, jobs[4 * i + j])
    docs = [d for d in plan_trees(messages) if "queue.jobs" in d["Query Text"]]
    assert len(docs) >= 4 * CALLS, "every call's statements on queue.jobs were explained"
    unbounded = {
        d["Query Text"][:200]: n.get("Index Name") or n["Node Type"]
        for d in docs
        for n in nodes(d["Plan"])
        if is_jobs(n) and "Scan" in n["Node Type"] and not by_id(n)
    }
    assert unbounded == {}, json.dumps(unbounded, indent=1)


def test_complete_many_deletes_in_id_order_by_primary_key(
    explained: tuple[psycopg.Connection, list[str]],
) -> None:
    """complete_many has no separate lock pass: its delete is a nested loop driven by its
    input sorted by id, probing the primary key once per pair, so it takes its row locks in
    id order (the order heartbeat_many locks in) whatever the order of its arguments; the
    generic plans included."""
    conn, messages = explained
    with conn.transaction(force_rollback=True):  # leave the backlog as it was
        jobs = conn.execute(
            "select job_id, token from queue.claim('planner', queues => %s, batch => %s)",
            (["q1"], 5 * CALLS),
        ).fetchall()
        messages.clear()
        for i in range(CALLS):
            part = sorted(jobs[5 * i : 5 * i + 5], reverse=True)  # arguments in descending order
            done = conn.execute(
                "select count(*) filter (where c.completed)"
                " from queue.complete_many(%s::bigint[], %s::uuid[]) as c",
                ([p[0] for p in part], [p[1] for p in part]),
            ).fetchone()
            assert done is not None and done[0] == 5
    deletes = [
        n
        for d in plan_trees(messages)
        if "delete from queue.jobs" in d["Query Text"]
        for n in nodes(d["Plan"])
        if n["Node Type"] == "ModifyTable" and n.get("Operation") == "Delete"
    ]
    assert len(deletes) >= CALLS, "every call's delete was explained"
    for delete in deletes:
        (join,) = delete["Plans"]
        assert join["Node Type"] == "Nested Loop", json.dumps(delete, indent=1)
        outer, inner = join["Plans"]
        assert outer["Node Type"] == "CTE Scan" and outer["CTE Name"] == "input"
        scans = [n for n in nodes(inner) if is_jobs(n)]
        assert scans and all(by_id(n) for n in scans), json.dumps(inner, indent=1)
