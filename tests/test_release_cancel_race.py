"""A release and a cancel of the same running job, sent at the same moment, 200 times.

Real concurrent sessions (one psycopg connection each, released together by a barrier): a
worker gives its claimed job back (queue.release, as the driver does with jobs it has not
started when it stops) while an operator cancels it (queue.cancel). Whichever commits
first, both calls succeed, the job ends cancelled in the dead letters and no claim ever
gets it again: a cancelled job never runs again.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import psycopg

ROUNDS = 200


def test_a_cancel_racing_a_release_is_never_lost(dsn: str, clean: None) -> None:
    with (
        psycopg.connect(dsn, autocommit=True) as worker,
        psycopg.connect(dsn, autocommit=True) as admin,
        ThreadPoolExecutor(max_workers=2) as pool,
    ):
        run_again = []
        barrier = threading.Barrier(2)  # reusable: both calls leave it together each round
        for n in range(ROUNDS):
            job_id = worker.execute(
                "select queue.enqueue(payload => jsonb_build_object('n', %s::int),"
                " queue => 'release_cancel')",
                (n,),
            ).fetchone()[0]
            claimed = worker.execute(
                "select job_id, token from queue.claim(worker => 'w',"
                " queues => array['release_cancel'])"
            ).fetchone()
            assert claimed is not None and claimed[0] == job_id

            def release(token: object = claimed[1], job: int = job_id) -> None:
                barrier.wait(timeout=30)
                worker.execute("select queue.release(job_id => %s, token => %s)", (job, token))

            def cancel(job: int = job_id) -> None:
                barrier.wait(timeout=30)
                admin.execute("select queue.cancel(job_id => %s)", (job,))

            for f in [pool.submit(release), pool.submit(cancel)]:
                f.result(timeout=60)  # both answer success, whichever committed first
            again = worker.execute(
                "select job_id, token from queue.claim(worker => 'w',"
                " queues => array['release_cancel'])"
            ).fetchall()
            if again:  # ended, so that the next round starts from an empty queue
                run_again.append(job_id)
                worker.execute(
                    "select queue.fail(job_id => %s, token => %s, error => 'ran again')", again[0]
                )
        assert run_again == [], f"{len(run_again)} of {ROUNDS} cancelled jobs were claimed again"
        live, dead = worker.execute(
            "select (select count(*) from queue.jobs),"
            " (select count(*) from queue.dead_letters where reason = 'cancelled')"
        ).fetchone()
        assert (live, dead) == (0, ROUNDS)
