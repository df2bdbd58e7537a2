"""8. Backend termination (soak): every 3 s, 20 times, every backend of the 4 worker processes
(the driver's pools and listeners: application_name 'andal ...') is killed with
pg_terminate_backend while a producer feeds 150 jobs/s, half leased, half transactional.

Each kill is checked: pg_terminate_backend answered true for every backend and each of them
left pg_stat_activity. The workers recover without being restarted: after every kill each
process starts a new attempt within 15 s (its recovery time is measured), the processes are
the same ones at the end and exit 0 on SIGTERM. The queue drains and the checker is clean.
"""

from __future__ import annotations

import time
from pathlib import Path

import psycopg
import pytest
from conftest import wait_for

from reliability import history, procs
from reliability.soak import Producer, db_now

PERIOD, KILLS, RATE, WORKERS = 3.0, 20, 150, 4

BACKENDS = (
    "select pid from pg_stat_activity where datname = current_database()"
    " and application_name like 'andal %%' and pid <> pg_backend_pid()"
)


def pid_of(worker: str) -> int:
    return int(worker.split(":")[-2])


@pytest.mark.soak
@pytest.mark.timeout(900)
def test_terminate_backends_every_three_seconds(
    rel_dsn: str, rconn: psycopg.Connection, tmp_path: Path, figures: dict
) -> None:
    for queue in ("rel", "rel_tx"):
        rconn.execute(
            "select queue.configure_queue(%s, keep_results => true, max_attempts => 25)",
            (queue,),
        )
    pool = procs.Pool(
        rel_dsn, tmp_path, WORKERS, "--concurrency", "4", "--poll", "0.5", "--lease", "5"
    )
    pool.wait_ready()
    first_pids = [p.pid for p in pool.procs]
    producer = Producer(
        rel_dsn, ["rel", "rel_tx"], rate=RATE, chunk=15,
        payload=lambda rng: {"ms": rng.randint(1, 20)},
    )  # fmt: skip
    producer.start()
    recoveries: list[float] = []
    terminated = 0
    try:
        for _ in range(KILLS):
            time.sleep(PERIOD)  # the kill period
            at = db_now(rconn)
            pids = [r[0] for r in rconn.execute(BACKENDS, ())]
            assert len(pids) >= WORKERS, f"only {len(pids)} worker backends to kill"
            answers = rconn.execute(
                "select pg_terminate_backend(p) from unnest(%s::int[]) as p", (pids,)
            ).fetchall()
            assert all(a[0] for a in answers), "pg_terminate_backend refused a backend"
            wait_for(
                lambda pids=pids: (
                    not rconn.execute(
                        "select exists (select from pg_stat_activity where pid = any(%s))", (pids,)
                    ).fetchone()[0]
                ),
                timeout=10,
                what="the terminated backends to go",
            )
            terminated += len(pids)

            def recovered(at=at) -> list[float] | None:
                rows = rconn.execute(
                    "select worker, min(started_at) - %s from andal_check.attempts"
                    " where started_at > %s group by worker",
                    (at, at),
                ).fetchall()
                by_pid = {pid_of(w): d.total_seconds() for w, d in rows}
                if not all(p.pid in by_pid for p in pool.procs):
                    return None
                return [by_pid[p.pid] for p in pool.procs]

            recoveries.append(max(wait_for(recovered, timeout=15, what="every worker to work")))
            assert all(p.poll() is None for p in pool.procs), "a worker process died"
        producer.stop()
        producer.join(30)
        wait_for(
            lambda: rconn.execute("select count(*) = 0 from queue.jobs").fetchone()[0],
            timeout=120,
            interval=0.2,
            what="the queue to drain",
        )
    finally:
        producer.stop()
        codes = pool.stop()
    assert codes == [0] * WORKERS, pool.logs()
    assert [p.pid for p in pool.procs] == first_pids == pool.all_pids, "a worker was restarted"
    assert producer.error is None, producer.error
    assert rconn.execute("select count(*) from queue.dead_letters").fetchone()[0] == 0
    for i in range(WORKERS):
        assert '"event": "db_error"' in (tmp_path / f"w{i}.log").read_text()
    counts = history.assert_clean(rconn)
    recoveries.sort()
    figures.update(
        kills=KILLS,
        backends_terminated=terminated,
        jobs=len(producer.acked),
        recovery_s_max=round(recoveries[-1], 2),
        recovery_s_p50=round(recoveries[len(recoveries) // 2], 2),
        checker=str(counts),
    )
