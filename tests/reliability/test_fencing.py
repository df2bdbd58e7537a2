"""4. Stale-worker fencing, 50 runs.

A worker process (``fence_worker``: psycopg directly, so that one stale attempt can try all
of heartbeat, complete and fail) claims a job with a 1 s lease and keeps it alive with
heartbeats; the test SIGSTOPs it, waits (on the database clock) until its lease has expired,
takes the job back and completes it from another session, then SIGCONTs the stale worker.
Its heartbeat thread is refused, and its heartbeat, complete and fail all get lease lost
(AN001) and change nothing: exactly one completion per job, the rescuer's.

5 lanes (one stale worker process each, its own queue) x 10 runs, in parallel.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psycopg
from conftest import wait_for

from reliability import history, procs

LANES, RUNS, LEASE = 5, 10, 1.0


def read_line(proc: subprocess.Popen, timeout: float) -> str:
    """One line of the process's stdout, within ``timeout`` seconds."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    deadline = time.monotonic() + timeout
    buf = b""
    while not buf.endswith(b"\n"):
        left = deadline - time.monotonic()
        assert left > 0, f"no answer from the stale worker within {timeout}s (got {buf!r})"
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            chunk = os.read(fd, 1)
            assert chunk, f"the stale worker exited (rc {proc.poll()})"
            buf += chunk
    return buf.decode().strip()


def lease_expired(conn: psycopg.Connection, job_id: int) -> bool:
    """The job's lease has run out (or another lane's claim already took the job back)."""
    return conn.execute(
        "select coalesce(lease_expires_at <= clock_timestamp(), status = 'pending')"
        " from queue.jobs where id = %s",
        (job_id,),
    ).fetchone()[0]


def run_lane(dsn: str, lane: int, results: list, tmp_path: Path) -> None:
    queue = f"fence_{lane}"
    with open(tmp_path / f"lane{lane}.err", "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "reliability.fence_worker", str(lane), str(LEASE)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            env=procs.env(dsn),
            bufsize=0,
        )
    assert proc.stdin is not None
    rescuer = f"rescuer-{lane}"
    try:
        with psycopg.connect(dsn, autocommit=True) as c:
            for run in range(RUNS):
                job_id = history.enqueue(c, {"lane": lane, "run": run}, queue)
                proc.stdin.write(f"claim {queue}\n".encode())
                claimed = read_line(proc, 30).split()
                assert claimed[:2] == ["claimed", str(job_id)], claimed
                os.kill(proc.pid, signal.SIGSTOP)
                stopped_at = time.monotonic()
                try:
                    wait_for(
                        lambda job_id=job_id: lease_expired(c, job_id),
                        timeout=30,
                        what="lease expiry",
                    )
                    # a concurrent claim of another lane may be taking it back right now
                    # (SKIP LOCKED): claim again until the job comes
                    taken = wait_for(
                        lambda: history.claim(c, rescuer, [queue], 1, lease=30),
                        timeout=30,
                        what="the rescuer's claim",
                    )
                    assert [(t.job_id, t.attempt) for t in taken] == [(job_id, 2)], taken
                    assert history.complete(c, rescuer, taken) == {job_id: True}
                finally:
                    os.kill(proc.pid, signal.SIGCONT)
                answer = read_line(proc, 30).split()
                results.append((lane, run, job_id, answer, time.monotonic() - stopped_at))
        proc.stdin.write(b"exit\n")
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_stale_worker_is_fenced_fifty_times(
    rel_dsn: str, rconn: psycopg.Connection, tmp_path: Path, figures: dict
) -> None:
    for lane in range(LANES):
        rconn.execute(
            "select queue.configure_queue(%s, keep_results => true, lease => '1 second')",
            (f"fence_{lane}",),
        )
    results: list = []
    errors: list[BaseException] = []

    def lane_main(lane: int) -> None:
        try:
            run_lane(rel_dsn, lane, results, tmp_path)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=lane_main, args=(i,)) for i in range(LANES)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(240)
    assert not errors, errors
    assert len(results) == LANES * RUNS

    # the stale worker: its background heartbeat, heartbeat, complete and fail -> AN001
    answers = {tuple(r[3][:5]) for r in results}
    assert answers == {("result", "AN001", "AN001", "AN001", "AN001")}, answers

    # exactly one completion per job, by the rescuer (attempt 2); the job is gone
    rows = rconn.execute(
        """
        select e.job_id,
            (select array_agg(distinct c.token) from andal_check.completions as c
             where c.job_id = e.job_id) as completers,
            (select a.token from andal_check.attempts as a
             where a.job_id = e.job_id and a.worker like 'rescuer-%') as rescuer,
            (select array_agg(o.outcome order by o.seq) from andal_check.attempt_log as o
             join andal_check.attempts as a on a.token = o.token
             where a.job_id = e.job_id and a.worker like 'stale-%' and o.event = 'outcome')
                as stale_outcomes,
            exists (select from queue.jobs as j where j.id = e.job_id) as live
        from andal_check.enqueued as e
        """
    ).fetchall()
    assert len(rows) == LANES * RUNS
    for job_id, completers, rescuer, stale_outcomes, live in rows:
        assert completers == [rescuer], (job_id, completers, rescuer)
        assert stale_outcomes == ["lease_lost"] * 4, (job_id, stale_outcomes)
        assert not live
    assert rconn.execute("select count(*) from queue.dead_letters").fetchone()[0] == 0
    counts = history.assert_clean(rconn)
    figures.update(
        runs=len(results),
        parallel_lanes=LANES,
        lease_s=LEASE,
        max_stop_to_fenced_s=round(max(r[4] for r in results), 2),
        checker=str(counts),
    )
