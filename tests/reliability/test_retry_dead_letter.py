"""2. Retry, backoff and dead letter: 500 always-failing jobs, max 5 attempts, linear backoff of
10 ms x attempt, run by two worker processes (the driver's CLI).

Each job runs exactly 5 times; no attempt is claimed before the job's available_at (recorded
at the claim: the start row reads the job's claimed_at and available_at as the claim left
them); each available_at is the previous failure's time plus the configured backoff; then the
job is dead with reason ``exhausted``, its 5 errors in order and the last one as last_error.
"""

from __future__ import annotations

from pathlib import Path

import psycopg
from conftest import wait_for

from reliability import history, procs

JOBS = 500
ATTEMPTS = 5


def test_retry_backoff_then_dead_letter(
    rel_dsn: str, rconn: psycopg.Connection, tmp_path: Path, figures: dict
) -> None:
    rconn.execute(
        "select queue.configure_queue('rel', max_attempts => %s, backoff => 'linear',"
        " backoff_base => '10 milliseconds', jitter => 0, keep_results => true)",
        (ATTEMPTS,),
    )
    for start in range(0, JOBS, 250):
        history.enqueue_many(
            rconn, [{"fail": True, "n": n} for n in range(start, start + 250)], "rel"
        )
    pool = procs.Pool(
        rel_dsn, tmp_path, 2, "--queue", "rel", "--concurrency", "8", "--poll", "0.05"
    )
    try:
        wait_for(
            lambda: rconn.execute("select count(*) from queue.dead_letters").fetchone()[0] == JOBS,
            timeout=150,
            interval=0.2,
            what="every job to be dead-lettered",
        )
    finally:
        codes = pool.stop()
    assert codes == [0, 0], pool.logs()

    per_job = rconn.execute(
        "select count(*), count(distinct job_id), min(n), max(n), bool_and(ok)"
        " from (select job_id, count(*) as n,"
        "       array_agg(attempt order by attempt) = array[1, 2, 3, 4, 5] as ok"
        "       from andal_check.attempts group by job_id) as t"
    ).fetchone()
    assert per_job == (JOBS, JOBS, ATTEMPTS, ATTEMPTS, True), per_job

    early, unknown, off_schedule, wrong_backoff, max_wait = rconn.execute(
        """
        with a as (select job_id, attempt, claimed_at, available_at from andal_check.attempts),
        e as (
            select d.job_id, (x ->> 'attempt')::int as attempt, (x ->> 'at')::timestamptz as at,
                (x ->> 'retry_in')::interval as retry_in
            from queue.dead_letters as d, jsonb_array_elements(d.errors) as x
        )
        select
            count(*) filter (where a.claimed_at < a.available_at),
            count(*) filter (where a.claimed_at is null or a.available_at is null),
            count(*) filter (
                where a.attempt > 1 and a.available_at is distinct from e.at + e.retry_in),
            count(*) filter (
                where a.attempt > 1
                  and e.retry_in is distinct from interval '10 milliseconds' * (a.attempt - 1)),
            max(a.claimed_at - a.available_at)
        from a left join e on e.job_id = a.job_id and e.attempt = a.attempt - 1
        """
    ).fetchone()
    assert unknown == 0, "every claim's claimed_at and available_at are on record"
    assert early == 0, "an attempt was claimed before its available_at"
    assert off_schedule == 0, "available_at is the failure's time plus the backoff"
    assert wrong_backoff == 0, "backoff is 10 ms x attempt"

    dead = rconn.execute(
        "select count(*) filter (where d.reason = 'exhausted' and d.attempt = 5"
        "   and jsonb_array_length(d.errors) = 5"
        "   and d.last_error like '%always fails: job ' || d.job_id || ' attempt 5%'"
        "   and d.errors -> 4 ->> 'error' = d.last_error"
        "   and (select array_agg((x ->> 'attempt')::int) from jsonb_array_elements(d.errors) x)"
        "       = array[1, 2, 3, 4, 5])"
        " from queue.dead_letters as d"
    ).fetchone()[0]
    assert dead == JOBS, "dead with reason exhausted, 5 errors in order, the last as last_error"
    assert rconn.execute("select count(*) from queue.jobs").fetchone()[0] == 0
    outcomes = dict(
        rconn.execute(
            "select outcome, count(*) from andal_check.attempt_log where event = 'outcome'"
            " group by outcome"
        ).fetchall()
    )
    assert outcomes == {"retried": JOBS * (ATTEMPTS - 1), "dead": JOBS}, outcomes
    counts = history.assert_clean(rconn)
    figures.update(
        jobs=JOBS,
        attempts=JOBS * ATTEMPTS,
        max_claim_after_available_ms=round(max_wait.total_seconds() * 1000, 1),
        checker=str(counts),
    )
