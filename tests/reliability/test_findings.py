"""Bugs this suite found, each kept as a test. While a bug is open its test is marked
``xfail(strict=True)``: the suite stays green while the bug is there and turns red the day it
is fixed, so the mark gets removed. See docs/reliability.md ("Findings").

1. (fixed) cache: with no row in cache.config the value size limit was silently off.
2. (fixed) queue.claim chose its direct path by comparing statement_timestamp() with
   transaction_timestamp(), which never holds for the extended query protocol (every
   parameterised call): it now decides by what the scan can over-lock (rows of both kinds,
   or several queues), whatever the protocol or transaction.
3. (fixed) Python driver: a payload nested deeper than Python's recursion limit (about 1,000
   levels; andal accepts 10,000) raised RecursionError out of the dispatcher when psycopg
   decoded the claimed batch, stopping the worker. The payload is now decoded per job; one
   that cannot be decoded fails that job for good (andal.Fail), the others run.
4. (fixed) queue.complete_many with one job id twice in a batch failed with 23505 on a
   keep_results queue, or answered a stale token's entry completed = true.
"""

from __future__ import annotations

import json
import threading
import uuid

import psycopg
import pytest
from conftest import wait_for

import andal
from reliability import history
from reliability.test_mutations import mutated

LIMIT = 1_048_576


def test_cache_value_limit_holds_without_a_config_row(rconn: psycopg.Connection) -> None:
    over = json.dumps({"p": "x" * (LIMIT + 1 - len('{"p": ""}'))})
    with rconn.transaction():  # rolled back in any case: cache.config keeps its row
        rconn.execute("delete from cache.config")
        try:
            rconn.execute("select cache.put('big', %s::jsonb)", (over,))
            state = "accepted"
        except psycopg.Error as exc:
            state = exc.sqlstate
        raise_rollback()
    assert state == "54000", f"a value of {LIMIT + 1} bytes was {state}"


def raise_rollback() -> None:
    raise psycopg.Rollback()


PROBE = (
    "queue._candidates(text[], int, text[], bigint[])",
    "raise sqlstate 'AN900';",
    "raise notice 'andal-probe: subtransaction path'; raise sqlstate 'AN900';",
)


def claim_path(
    conn: psycopg.Connection, sql: str, params: tuple | None, enqueue: bool = True
) -> str:
    """Which path of queue._candidates a claim took (its scan is instrumented)."""
    notices: list[str] = []
    conn.add_notice_handler(lambda d: notices.append(d.message_primary or ""))
    if enqueue:
        history.enqueue(conn, {}, "probe")
    rows = conn.execute(sql, params).fetchall()
    assert len(rows) == 1
    return "subtransaction" if any("subtransaction path" in n for n in notices) else "direct"


def test_claim_takes_the_subtransaction_path_only_when_the_scan_can_over_lock(
    rconn: psycopg.Connection,
) -> None:
    """Finding 2: one kind of ready job in one queue: direct, in a transaction or not, with
    or without parameters; both kinds ready: the scan is rolled back and the pick re-locked."""
    sql = "select job_id from queue.claim(worker => %s, queues => %s)"
    with mutated(rconn, *PROBE):
        direct = claim_path(rconn, sql, ("w", ["probe"]))
        with rconn.transaction():
            direct_in_tx = claim_path(rconn, sql, ("w", ["probe"]))
        history.enqueue(rconn, {}, "probe")
        rconn.execute("select queue.enqueue('{}', queue => 'probe', category => 'c')")
        mixed = claim_path(rconn, sql, ("w", ["probe"]), enqueue=False)
    assert (direct, direct_in_tx, mixed) == ("direct", "direct", "subtransaction")


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_deep_payload_does_not_stop_the_worker(rel_dsn: str, rconn: psycopg.Connection) -> None:
    depth = 2000
    normal = history.enqueue_many(rconn, [{"n": i} for i in range(3)], "deep")
    rconn.execute(
        "select queue.enqueue(%s::text::jsonb, queue => 'deep')",
        ('{"a":' * depth + "1" + "}" * depth,),
    )
    normal += history.enqueue_many(rconn, [{"n": i} for i in range(3, 6)], "deep")
    done: list[int] = []
    worker = andal.Worker(
        rel_dsn, {"deep": lambda job: done.append(job.id)}, lease=2, poll=0.1, grace=0.5
    )
    worker.start()
    try:

        def progress() -> bool:
            alive = any(t.name == "andal-worker" and t.is_alive() for t in threading.enumerate())
            assert alive, "the worker's dispatcher died"
            return set(normal) <= set(done)

        wait_for(progress, timeout=20, what="the normal jobs to run")
    finally:
        worker.stop()
        worker.join(10)


def test_complete_many_with_a_repeated_job_id(rconn: psycopg.Connection) -> None:
    rconn.execute("select queue.configure_queue('dup', keep_results => true)")
    history.enqueue(rconn, {}, "dup")
    [c] = history.claim(rconn, "w", ["dup"], 1)
    try:
        rows = rconn.execute(
            "select job_id, completed from queue.complete_many(%s, %s)",
            ([c.job_id, c.job_id], [uuid.uuid4(), c.token]),
        ).fetchall()
    except psycopg.Error as exc:
        rows = [("error", exc.sqlstate)]
    assert rows == [(c.job_id, False), (c.job_id, True)]
