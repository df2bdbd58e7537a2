"""Crashes: SIGKILLed workers, terminated backends, a restarted server. Nothing is lost."""

from __future__ import annotations

import random
import signal
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path

import psycopg
from conftest import wait_for
from workers.procs import spawn_worker, stop_worker
from workers.recording import make_tables

import andal
from andal.cluster import Cluster
from andal.install import install

LEASE, POLL = 2.0, 1.0


class Producer(threading.Thread):
    """Enqueue ``per_tick`` jobs every ``tick`` seconds, ``total`` in all: a steady stream
    below the workers' capacity, so a reclaimed orphan runs as soon as it is taken back."""

    def __init__(self, dsn: str, queue: str, total: int, per_tick: int, tick: float, payload):
        super().__init__(daemon=True)
        self.dsn, self.queue, self.total = dsn, queue, total
        self.per_tick, self.tick, self.payload = per_tick, tick, payload
        self.sent = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            with psycopg.connect(self.dsn, autocommit=True) as conn:
                while self.sent < self.total:
                    n = min(self.per_tick, self.total - self.sent)
                    andal.enqueue_many(conn, [self.payload] * n, self.queue, max_attempts=25)
                    self.sent += n
                    time.sleep(self.tick)
        except BaseException as exc:  # reported by the test
            self.error = exc


def drained(conn: psycopg.Connection, producer: Producer) -> bool:
    return (
        not producer.is_alive()
        and not conn.execute("select count(*) from queue.jobs").fetchone()[0]
    )


def test_sigkill_a_worker_every_two_seconds(
    dsn: str, conn: psycopg.Connection, clean: None, tmp_path: Path
) -> None:
    make_tables(conn)
    args = ("--concurrency", "4", "--lease", str(LEASE), "--poll", str(POLL))
    procs = [spawn_worker(dsn, tmp_path / f"w{i}.log", *args) for i in range(3)]
    producer = Producer(dsn, "leased", total=4000, per_tick=25, tick=0.1, payload={"sleep": 0.02})
    producer.start()
    kills: dict[int, float] = {}  # pid -> epoch seconds of the kill (database clock)
    rng = random.Random(7)
    try:
        deadline = time.monotonic() + 150
        while not drained(conn, producer):
            assert time.monotonic() < deadline, "the queue did not drain"
            time.sleep(2.0)
            if not producer.is_alive():
                continue  # the stream is over: let the last jobs finish
            i = rng.randrange(len(procs))
            victim = procs[i]
            kills[victim.pid] = conn.execute(
                "select extract(epoch from clock_timestamp())"
            ).fetchone()[0]
            victim.send_signal(signal.SIGKILL)
            victim.wait()
            procs[i] = spawn_worker(dsn, tmp_path / f"w{i}.log", *args)
    finally:
        codes = [stop_worker(p) for p in procs]
    assert producer.error is None
    logs = [(tmp_path / f"w{i}.log").read_text()[-3000:] for i in range(len(procs))]
    assert codes == [0] * len(procs), logs
    assert len(kills) >= 5

    # 0 lost: every job ran and completed, none dead
    assert conn.execute("select count(*) from queue.dead_letters").fetchone()[0] == 0
    assert conn.execute("select count(distinct job_id) from runs").fetchone()[0] == 4000

    # duplicates only of jobs running on a killed worker, each taken back in time
    rows = conn.execute(
        "select job_id, pid, extract(epoch from started_at), errors from runs"
        " order by job_id, started_at"
    ).fetchall()
    by_job: dict[int, list[tuple[int, float]]] = {}
    taken_back: dict[tuple[int, int], tuple[int, float]] = {}  # (job, attempt) -> (pid, when)
    for job_id, pid, at, errors in rows:
        by_job.setdefault(job_id, []).append((pid, float(at)))
        for entry in errors or []:
            # an expired lease taken back by a claim: "lease expired (worker host:pid:tag)"
            owner = int(entry["worker"].split(":")[-2])
            when = datetime.fromisoformat(entry["at"]).timestamp()
            taken_back[(job_id, entry["attempt"])] = (owner, when)

    duplicated = {j: r for j, r in by_job.items() if len(r) > 1}
    assert duplicated, "no job was running on a killed worker: the test proves nothing"
    for job_id, job_runs in duplicated.items():
        for pid, _ in job_runs[:-1]:
            assert pid in kills, f"job {job_id} ran twice without a crash: {job_runs}"
    # every orphan (also one claimed but not started by a killed worker) was taken back
    # within lease + one poll interval of the kill, and only orphans were taken back
    assert taken_back
    for (job_id, attempt), (owner, when) in taken_back.items():
        assert owner in kills, f"job {job_id} lost the lease of a live worker {owner}"
        late = when - float(kills[owner])
        assert 0 <= late <= LEASE + POLL, (job_id, attempt, owner, late)


def test_terminated_backends_recover_within_five_seconds(
    dsn: str, conn: psycopg.Connection, clean: None, tmp_path: Path
) -> None:
    make_tables(conn)
    procs = [
        spawn_worker(dsn, tmp_path / f"w{i}.log", "--concurrency", "4", "--poll", "0.5")
        for i in range(2)
    ]
    leased = Producer(dsn, "leased", total=3000, per_tick=20, tick=0.1, payload={"sleep": 0.01})
    tx = Producer(dsn, "tx", total=3000, per_tick=20, tick=0.1, payload={"sleep": 0.01})
    leased.start()
    tx.start()
    try:
        for _ in range(3):
            # both workers connected again (at least their pools' connections and their
            # listeners) before the next kill: on a loaded machine that can take a while
            wait_for(
                lambda: conn.execute(
                    "select count(*) >= 2 * 2 from pg_stat_activity"
                    " where application_name like 'andal %' and datname = current_database()"
                ).fetchone()[0],
                timeout=60,
                what="the workers' connections",
            )
            killed = conn.execute(
                "select count(pg_terminate_backend(pid)) from pg_stat_activity"
                " where application_name like 'andal %' and datname = current_database()"
            ).fetchone()[0]
            assert killed >= 2 * 2  # at least the pools' connections and the listeners
            since = conn.execute("select clock_timestamp()").fetchone()[0]
            for p in procs:
                wait_for(
                    lambda p=p, since=since: conn.execute(
                        "select exists (select from runs where pid = %(pid)s"
                        "   and started_at > %(t)s)"
                        " or exists (select from done where pid = %(pid)s and done_at > %(t)s)",
                        {"pid": p.pid, "t": since},
                    ).fetchone()[0],
                    timeout=5,
                    what=f"worker {p.pid} to work again",
                )
        wait_for(lambda: drained(conn, leased) and drained(conn, tx), timeout=60, what="drain")
    finally:
        codes = [stop_worker(p) for p in procs]
    assert codes == [0, 0], [(tmp_path / f"w{i}.log").read_text()[-3000:] for i in range(2)]
    assert leased.error is None and tx.error is None
    assert conn.execute("select count(*) from queue.dead_letters").fetchone()[0] == 0
    assert conn.execute("select count(distinct job_id) from runs").fetchone()[0] == 3000
    assert conn.execute("select count(*) from done").fetchone()[0] == 3000
    for i in range(2):
        assert '"event": "db_error"' in (tmp_path / f"w{i}.log").read_text()


def test_server_restart(tmp_path: Path) -> None:
    """A private cluster is restarted under a running worker: it reconnects and goes on."""
    cluster = Cluster(Path(tempfile.mkdtemp(prefix="andal-test-pg-")))
    try:
        cluster.init()
        server = cluster.start()
        with psycopg.connect(server, autocommit=True) as c:
            c.execute("create database t")
        dsn = psycopg.conninfo.make_conninfo(server, dbname="t")
        install(dsn)
        with psycopg.connect(dsn, autocommit=True) as c:
            make_tables(c)
        log = tmp_path / "w.log"
        proc = spawn_worker(dsn, log, "--concurrency", "4", "--poll", "0.5")
        try:
            with psycopg.connect(dsn, autocommit=True) as c:
                andal.enqueue_many(c, [{}] * 50, "leased")
                andal.enqueue_many(c, [{}] * 50, "tx")
                wait_for(lambda: drained_now(c), timeout=20, what="the first jobs")
            cluster.restart()
            with psycopg.connect(dsn, autocommit=True) as c:
                andal.enqueue_many(c, [{}] * 50, "leased")
                andal.enqueue_many(c, [{}] * 50, "tx")
                wait_for(lambda: drained_now(c), timeout=20, what="the jobs after the restart")
                assert c.execute("select count(distinct job_id) from runs").fetchone()[0] == 100
                assert c.execute("select count(*) from done").fetchone()[0] == 100
            assert proc.poll() is None
        finally:
            assert stop_worker(proc) == 0, log.read_text()[-3000:]
        assert '"event": "db_error"' in log.read_text()
    finally:
        cluster.destroy()


def drained_now(conn: psycopg.Connection) -> bool:
    return conn.execute("select count(*) = 0 from queue.jobs").fetchone()[0]


def test_crash_in_a_transactional_handler_leaves_the_job_pending(
    dsn: str, conn: psycopg.Connection, clean: None, tmp_path: Path
) -> None:
    """SIGKILL during a transactional handler: the claim rolls back with the handler's
    writes, so the job is pending again at once, its attempt unspent (no lease to wait for)."""
    make_tables(conn)
    job_id = andal.enqueue(conn, {"sleep": 60}, "tx")
    proc = spawn_worker(dsn, tmp_path / "w.log", "--concurrency", "1", "--lease", "600")
    try:
        wait_for(
            lambda: conn.execute(
                "select count(*) from pg_stat_activity where application_name like 'andal %'"
                " and state = 'idle in transaction' and datname = current_database()"
            ).fetchone()[0],
            timeout=10,
            what="the handler's transaction",
        )
        assert conn.execute("select status, attempt from queue.jobs").fetchall() == [
            ("pending", 0)
        ]  # the claim is not visible outside its transaction
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        wait_for(
            lambda: (
                not conn.execute(
                    "select count(*) from pg_stat_activity where application_name like 'andal %'"
                    " and datname = current_database()"
                ).fetchone()[0]
            ),
            timeout=5,
            what="the backends to go",
        )
        row = conn.execute(
            "select status, attempt, available_at <= now() from queue.jobs where id = %s",
            (job_id,),
        ).fetchone()
        assert row == ("pending", 0, True)
        assert conn.execute("select count(*) from done").fetchone()[0] == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
