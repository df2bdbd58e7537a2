"""9. Database crash (soak): a private cluster (initdb'd into a temporary directory, run as the
postgres user on its own port, synchronous_commit on) serves 20,000 jobs of 5-20 ms, half
leased and half transactional, produced at 500/s while 4 worker processes (the driver's CLI,
3 s lease) run them. At 30 % of the jobs completed it is restarted with
``pg_ctl restart -m immediate`` (every backend killed, crash recovery at the start).

The workers resume on their own (the same processes) within 30 s; every enqueue whose commit
the producer saw acknowledged is there and completed (the checker's lost = 0); a job ran
twice only if an attempt of it was in flight at the crash (every refused attempt started
before the crash); the checker is clean. The attempt log is written with synchronous commits
(REL_LOG_SYNC=1) so that it survives the crash exactly as andal's own tables do.
"""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest
from conftest import wait_for
from psycopg.conninfo import make_conninfo

from andal.install import install
from reliability import history, procs
from reliability.soak import PrivateCluster, Producer, db_now

JOBS, RATE, WORKERS, CRASH_AT = 20_000, 500, 4, 0.30


def pid_of(worker: str) -> int:
    return int(worker.split(":")[-2])


@pytest.mark.soak
@pytest.mark.timeout(900)
def test_database_crash_at_thirty_percent(tmp_path: Path, figures: dict) -> None:
    cluster = PrivateCluster()
    pool: procs.Pool | None = None
    producer: Producer | None = None
    try:
        cluster.init()
        server = cluster.start()
        with psycopg.connect(server, autocommit=True) as c:
            c.execute("create database t")
        dsn = make_conninfo(server, dbname="t")
        install(dsn)
        conn = psycopg.connect(dsn, autocommit=True)
        history.install(conn)
        for queue in ("rel", "rel_tx"):
            conn.execute(
                "select queue.configure_queue(%s, keep_results => true, max_attempts => 25)",
                (queue,),
            )
        pool = procs.Pool(
            dsn, tmp_path, WORKERS, "--concurrency", "8", "--poll", "0.5", "--lease", "3",
            extra_env={"REL_LOG_SYNC": "1", "REL_LOG_RETRY": "120"},
        )  # fmt: skip
        pool.wait_ready()
        first_pids = [p.pid for p in pool.procs]
        producer = Producer(
            dsn, ["rel", "rel_tx"], rate=RATE, total=JOBS, chunk=50,
            payload=lambda rng: {"ms": rng.randint(5, 20)},
        )  # fmt: skip
        producer.start()

        def completed() -> int:
            return conn.execute("select count(*) from queue.results").fetchone()[0]

        wait_for(lambda: completed() >= CRASH_AT * JOBS, timeout=300, interval=0.2, what="30 %")
        crash_at = db_now(conn)
        done_before = completed()
        conn.close()
        cluster.crash_restart()
        conn = psycopg.connect(dsn, autocommit=True)
        back_at = db_now(conn)

        def resumed() -> list[float] | None:
            rows = conn.execute(
                "select worker, min(started_at) - %s from andal_check.attempts"
                " where started_at > %s group by worker",
                (back_at, back_at),
            ).fetchall()
            by_pid = {pid_of(w): d.total_seconds() for w, d in rows}
            if not all(p.pid in by_pid for p in pool.procs):
                return None
            return [by_pid[p.pid] for p in pool.procs]

        resume = wait_for(resumed, timeout=30, interval=0.2, what="every worker to resume")
        wait_for(
            lambda: (
                not producer.is_alive()
                and conn.execute("select count(*) = 0 from queue.jobs").fetchone()[0]
            ),
            timeout=600,
            interval=0.5,
            what="the queue to drain",
        )
        codes = pool.stop()
        assert codes == [0] * WORKERS, pool.logs()
        assert [p.pid for p in pool.procs] == first_pids, "a worker process was replaced"
        assert producer.error is None, producer.error
        assert len(producer.acked) == JOBS
        assert "not properly shut down" in cluster.log.read_text(), "no crash recovery happened"

        recorded = {r[0] for r in conn.execute("select job_id from andal_check.enqueued")}
        missing = set(producer.acked) - recorded
        assert not missing, f"{len(missing)} acknowledged enqueues lost"
        # in flight at the crash: claimed before the server was back (no claim can happen
        # while it is down) and not ended before it went down. A start row written during
        # the outage is stamped after the restart, but its claimed_at is the claim's.
        in_flight_sql = (
            "a.claimed_at < %(back)s and (a.ended_at is null or a.ended_at >= %(crash)s)"
        )
        late_refused, reruns, in_flight, resent = conn.execute(
            f"""
            select
                (select count(*) from andal_check.attempts as a
                 where a.token not in (select token from andal_check.accepted)
                   and not ({in_flight_sql})),
                (select count(*) from (select job_id from andal_check.attempts
                                       group by 1 having count(*) > 1) as t),
                (select count(*) from andal_check.attempts as a where {in_flight_sql}),
                (select count(*) from andal_check.attempt_log
                 where event = 'outcome' and detail like '%%resent%%')
            """,
            {"crash": crash_at, "back": back_at},
        ).fetchone()
        assert late_refused == 0, "an attempt not in flight at the crash was refused"
        assert conn.execute("select count(*) from queue.dead_letters").fetchone()[0] == 0
        counts = history.assert_clean(conn)
        conn.close()
        figures.update(
            jobs=JOBS,
            completed_before_crash=done_before,
            in_flight_at_crash=in_flight,
            jobs_run_twice=reruns,
            reports_resent_after_reconnect=resent,
            resume_s_max=round(max(resume), 2),
            producer_retries=producer.failures,
            checker=str(counts),
        )
    finally:
        if producer is not None:
            producer.stop()
        if pool is not None:
            for p in pool.procs:
                if p.poll() is None:
                    p.kill()
        cluster.destroy()
