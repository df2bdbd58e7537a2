"""The checks can fail: each rule is broken on purpose in this module's own scratch database
(a copy of the template; the repository's SQL is never touched) and the checker, or the
test's own assertion, catches it. Every scenario also runs unbroken first, as the control.

* stale completion accepted (queue.complete without its token and lease test) -> overlapping
* complete_many deletes a neighbour job -> lost
* complete_many leaves the job live -> duplicated (and "completed but still live")
* the category gate counts 100 extra slots -> over_limit
* claim's direct path, the candidate scans and _candidates ignore available_at -> an early
  claim (the retry test's assertion)
* _check_name allows twice the length -> the hostile-input oracle reports acceptances
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, nullcontext

import psycopg
import pytest
from conftest import wait_for

from reliability import history
from reliability.test_hostile_input import Runner, make_cases, run_cases

LEASE_LOST = "AN001"


@contextmanager
def mutated(conn: psycopg.Connection, function: str, old: str, new: str) -> Iterator[None]:
    """Replace ``old`` by ``new`` in the installed body of ``function``, for the block."""
    source = conn.execute("select pg_get_functiondef(%s::regprocedure)", (function,)).fetchone()[0]
    assert old in source, f"mutation target not found in {function}: {old!r}"
    conn.execute(source.replace(old, new))
    try:
        yield
    finally:
        conn.execute(source)


def maybe(flag: bool, conn: psycopg.Connection, function: str, old: str, new: str):
    return mutated(conn, function, old, new) if flag else nullcontext()


def expired(conn: psycopg.Connection, job_id: int) -> bool:
    return conn.execute(
        "select lease_expires_at <= clock_timestamp() from queue.jobs where id = %s", (job_id,)
    ).fetchone()[0]


@pytest.mark.parametrize("broken", [False, True], ids=["control", "broken"])
def test_stale_completion_is_overlapping(rconn: psycopg.Connection, broken: bool) -> None:
    with maybe(
        broken,
        rconn,
        "queue.complete(bigint, uuid, jsonb)",
        "where j.id = complete.job_id and j.token = complete.token\n"
        "          and j.lease_expires_at > v_now and j.abort_requested_at is null",
        "where j.id = complete.job_id",
    ):
        job_id = history.enqueue(rconn, {}, "mut")
        [a] = history.claim(rconn, "A", ["mut"], 1, lease=0.2)
        wait_for(lambda: expired(rconn, job_id), timeout=10, what="A's lease to expire")
        [b] = wait_for(lambda: history.claim(rconn, "B", ["mut"], 1, lease=30), timeout=10)
        # A, stale, reports as fence_worker does: end row, complete, outcome row
        history.log_row(rconn, "end", a.job_id, a.attempt, a.token, "A", "ok")
        try:
            rconn.execute("select queue.complete(%s, %s)", (a.job_id, a.token))
            outcome = "completed"
        except psycopg.Error as exc:
            assert exc.sqlstate == LEASE_LOST
            outcome = "lease_lost"
        history.log_row(rconn, "outcome", a.job_id, a.attempt, a.token, "A", outcome)
        history.complete(rconn, "B", [b])
    counts = history.check(rconn)
    if broken:
        assert outcome == "completed" and counts.overlapping >= 1, counts
    else:
        assert outcome == "lease_lost" and counts.violations == 0, counts


@pytest.mark.parametrize("broken", [False, True], ids=["control", "broken"])
def test_deleted_neighbour_is_lost(rconn: psycopg.Connection, broken: bool) -> None:
    with maybe(
        broken,
        rconn,
        "queue._complete_delete(bigint[], uuid[], jsonb[], timestamptz)",
        "using input as i\n        where j.id = i.id and j.token = i.tok",
        "using input as i\n        where j.id = i.id + 1 or j.id = i.id and j.token = i.tok",
    ):
        # batches of two: the set-based delete (one job takes queue.complete's path)
        history.enqueue_many(rconn, [{}, {}, {}, {}], "mut")
        while batch := history.claim(rconn, "w", ["mut"], 2):
            history.complete(rconn, "w", batch)
    counts = history.check(rconn)
    assert counts.lost == (1 if broken else 0) and counts.duplicated == 0, counts


@pytest.mark.parametrize("broken", [False, True], ids=["control", "broken"])
def test_job_left_live_is_duplicated(rconn: psycopg.Connection, broken: bool) -> None:
    with maybe(
        broken,
        rconn,
        "queue._complete_delete(bigint[], uuid[], jsonb[], timestamptz)",
        "delete from queue.jobs as j using input as i",
        # the jobs are left pending (their tokens kept, so the batch still reports them
        # completed)
        "update queue.jobs as j set status = 'pending', worker = null,"
        " lease_expires_at = null from input as i",
    ):
        # a batch of two: the set-based statement (one job takes queue.complete's path)
        history.enqueue_many(rconn, [{}, {}], "mut")
        for _ in range(2):
            batch = history.claim(rconn, "w", ["mut"], 2)
            history.complete(rconn, "w", batch)
    counts = history.check(rconn)
    assert counts.duplicated == (2 if broken else 0), counts


@pytest.mark.parametrize("broken", [False, True], ids=["control", "broken"])
def test_gate_past_its_limit_is_over_limit(rconn: psycopg.Connection, broken: bool) -> None:
    rconn.execute("select queue.set_category_limit('mutcat', 1)")
    with maybe(
        broken,
        rconn,
        "queue._gate_take(text, bigint[], text[], bigint[], text[], bigint[], int[], int[],"
        " timestamptz)",
        "select k.max - count(*) as slots",
        "select k.max + 100 - count(*) as slots",
    ):
        history.enqueue_many(rconn, [{}] * 4, "mut", category="mutcat")
        sizes = []
        while batch := history.claim(rconn, "w", ["mut"], 4):
            sizes.append(len(batch))
            history.complete(rconn, "w", batch)
    counts = history.check(rconn)
    if broken:
        assert sizes == [4] and counts.over_limit == 3, (sizes, counts)
    else:
        assert sizes == [1, 1, 1, 1] and counts.violations == 0, (sizes, counts)


@pytest.mark.parametrize("broken", [False, True], ids=["control", "broken"])
def test_claim_before_available_at_is_seen(rconn: psycopg.Connection, broken: bool) -> None:
    def source(function: str) -> str:
        sql = "select pg_get_functiondef(%s::regprocedure)"
        return rconn.execute(sql, (function,)).fetchone()[0]

    # every candidate scan: the claim's direct path (queue._claim_direct: every queue, one
    # queue),
    # _scan's and _scan_queues' (and the per-category scan of the gated jobs when categories
    # are left out: its head and its pairs), the gated head's and its read
    claim = source("queue._claim_direct(text, text, int, interval, timestamptz)")
    scans = {
        "queue._scan(text[], int, text[], bigint[])": 5,
        "queue._scan_queues(text[], int, text[], bigint[])": 3,
        "queue._gated_scan(text[], int, text[], bigint[])": 3,
        "queue._gated_pairs(text[], int, text[], bigint[])": 1,
        "queue._gated_head(text[], int, text[], bigint[])": 5,
        "queue._gated_head_read(text[], int, text[], bigint[])": 2,
    }
    assert claim.count("c.available_at <= now()") == 2
    assert {f: source(f).count("j.available_at <= now()") for f in scans} == scans
    with (
        maybe(
            broken,
            rconn,
            "queue._claim_direct(text, text, int, interval, timestamptz)",
            "c.available_at <= now()",
            "c.available_at <= now() + interval '1 hour'",
        ),
        maybe(
            broken,
            rconn,
            "queue._scan(text[], int, text[], bigint[])",
            "j.available_at <= now()",
            "j.available_at <= now() + interval '1 hour'",
        ),
        maybe(
            broken,
            rconn,
            "queue._scan_queues(text[], int, text[], bigint[])",
            "j.available_at <= now()",
            "j.available_at <= now() + interval '1 hour'",
        ),
        maybe(
            broken,
            rconn,
            "queue._gated_scan(text[], int, text[], bigint[])",
            "j.available_at <= now()",
            "j.available_at <= now() + interval '1 hour'",
        ),
        maybe(
            broken,
            rconn,
            "queue._gated_pairs(text[], int, text[], bigint[])",
            "j.available_at <= now()",
            "j.available_at <= now() + interval '1 hour'",
        ),
        maybe(
            broken,
            rconn,
            "queue._gated_head(text[], int, text[], bigint[])",
            "j.available_at <= now()",
            "j.available_at <= now() + interval '1 hour'",
        ),
        maybe(
            broken,
            rconn,
            "queue._gated_head_read(text[], int, text[], bigint[])",
            "j.available_at <= now()",
            "j.available_at <= now() + interval '1 hour'",
        ),
        maybe(
            broken,
            rconn,
            "queue._candidates(text[], int, text[], bigint[])",
            "j.available_at <= now()",
            "j.available_at <= now() + interval '1 hour'",
        ),
    ):
        history.enqueue(rconn, {}, "mut", delay=60)
        batch = history.claim(rconn, "w", ["mut"], 1)
        early, unknown = history.early_claims(rconn)
        if batch:
            history.complete(rconn, "w", batch)
    assert unknown == 0
    assert (len(batch), early) == ((1, 1) if broken else (0, 0))


@pytest.mark.parametrize("broken", [False, True], ids=["control", "broken"])
def test_hostile_oracle_sees_a_loose_length_check(rconn: psycopg.Connection, broken: bool) -> None:
    cases = [c for c in make_cases() if c.family == "enqueue"][:150]
    with maybe(
        broken,
        rconn,
        "queue._check_name(text, text, boolean, int)",
        "length(value) > max_length then",
        "length(value) > max_length * 2 then",
    ):
        problems, _ = run_cases(Runner(rconn), cases)
    if broken:
        assert problems and all(p.endswith("got ok") for p in problems), problems
    else:
        assert problems == []
