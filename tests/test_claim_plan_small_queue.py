"""A claim of a small (or empty) queue never reads another queue's backlog.

With 20,000 ready jobs in one queue and the statistics knowing only that queue, the generic
plans of the claim's one-queue statements (made once per session, for any queue) used to
estimate ``queue = $1`` as matching every row, and walked the queue-less claim index,
filtering out the whole backlog on every call (about 8 ms each, for an idle worker's poll).
The real plans (auto_explain with ANALYZE, nested statements, after enough calls for PL/pgSQL
to use its generic plans) show no read of ``queue.jobs`` that removes more than a handful of
rows by filter, for an empty queue and for one with a few jobs, ungated and gated.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

BIG = 20_000
CALLS = 8  # > 5: PL/pgSQL plans its statements generically after five custom plans


@pytest.fixture(scope="module")
def one_big_queue(dsn: str) -> str:
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("select queue.set_category_limit('sq_cat', 1000000)")
        c.execute(
            "insert into queue.jobs (queue, category, payload, max_attempts)"
            " select 'sq_big', case when g %% 2 = 0 then 'sq_cat' end, '{}', 5"
            " from generate_series(1, %s) as g",
            (BIG,),
        )
        c.execute("analyze queue.jobs")
    return dsn


def nodes(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield plan
    for child in plan.get("Plans", []):
        yield from nodes(child)


def filtered_rows(messages: list[str]) -> int:
    """The most rows one read of queue.jobs (or a shard of it) removed by its filter."""
    worst = 0
    for m in messages:
        doc = json.loads(m[m.index("{") :])
        for node in nodes(doc["Plan"]):
            if node.get("Relation Name", "").startswith("jobs"):
                worst = max(worst, int(node.get("Rows Removed by Filter", 0)))
    return worst


@pytest.mark.parametrize("small", [0, 3], ids=["empty-queue", "three-jobs"])
@pytest.mark.parametrize("gated", [False, True], ids=["ungated", "gated"])
def test_a_small_queue_is_claimed_without_reading_the_big_one(
    one_big_queue: str, small: int, gated: bool
) -> None:
    plans: list[str] = []
    with psycopg.connect(one_big_queue, autocommit=True) as c:
        c.execute("load 'auto_explain'")
        c.execute("set auto_explain.log_min_duration = 0")
        c.execute("set auto_explain.log_nested_statements = on")
        c.execute("set auto_explain.log_analyze = on")
        c.execute("set auto_explain.log_format = 'json'")
        c.execute("set client_min_messages = log")
        c.add_notice_handler(
            lambda d: (
                plans.append(d.message_primary or "")
                if (d.message_primary or "").startswith("duration:")
                else None
            )
        )
        with c.transaction(force_rollback=True):  # leave the backlog as it was
            category = "sq_cat" if gated else None
            for _ in range(small):
                c.execute(
                    "select queue.enqueue('{}', queue => 'sq_small', category => %s)", (category,)
                )
            got = 0
            for _ in range(CALLS):
                rows = c.execute(
                    "select job_id from queue.claim('w', queues => '{sq_small}', batch => 1)"
                ).fetchall()
                got += len(rows)
    assert got == small, "the small queue's jobs were claimed, and nothing else"
    assert filtered_rows(plans) <= 100, "a read of queue.jobs filtered out the big queue"
