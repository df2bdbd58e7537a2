"""One worker pool over several andal databases, and producers routing by queue
(docs/multi-db.md): real databases, real threads and processes, a real TCP outage."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import zlib
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from conftest import PGHOST, PGPORT, PGUSER, make_dsn, test_name, wait_for
from psycopg.conninfo import conninfo_to_dict
from pytest_postgresql.janitor import DatabaseJanitor
from test_observability_metrics import documented_worker_metrics, families
from workers.inproc import running

import andal
from andal.client import route
from andal.hosts import database_label

QUEUE, TX_QUEUE = "multi", "multi_tx"


@pytest.fixture(scope="module")
def dsn_b(template_db: str) -> Iterator[str]:
    """A second andal database, a copy of the same template as ``dsn``'s (so both hand out
    the same job ids: a token sent to the wrong database would be caught)."""
    name = test_name("t", 10)
    janitor = DatabaseJanitor(
        user=PGUSER, host=PGHOST, port=PGPORT, dbname=name, template_dbname=template_db
    )
    janitor.init()
    try:
        yield make_dsn(name)
    finally:
        janitor.drop()


def truncate(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as c:
        tables = c.execute(
            "select string_agg(format('%I.%I', schemaname, tablename), ', ')"
            " from pg_tables where schemaname in ('queue', 'cache')"
            " and tablename not in ('schema_migrations', 'install_state', 'config', 'log_state')"
        ).fetchone()[0]
        c.execute(f"truncate {tables}")
        c.execute("create table if not exists tx_done (job_id bigint primary key, db text)")
        c.execute("truncate tx_done")
        for queue in (QUEUE, TX_QUEUE):
            andal.configure_queue(c, queue, keep_results=True)


@pytest.fixture
def dbs(dsn: str, dsn_b: str) -> tuple[str, str]:
    """Both databases, emptied, with results kept (a completion leaves a row)."""
    truncate(dsn)
    truncate(dsn_b)
    return dsn, dsn_b


def fill(dsn: str, tag: str, n: int, queue: str = QUEUE, **payload: object) -> list[int]:
    with psycopg.connect(dsn, autocommit=True) as c:
        return andal.enqueue_many(c, [{"db": tag, "n": i, **payload} for i in range(n)], queue)


def scalar(dsn: str, query: str) -> object:
    with psycopg.connect(dsn, autocommit=True) as c:
        return c.execute(query).fetchone()[0]


def results(dsn: str, queue: str = QUEUE) -> dict[int, dict]:
    """job id -> result of the jobs of ``queue`` completed in that database."""
    with psycopg.connect(dsn, autocommit=True) as c:
        rows = c.execute("select job_id, result from queue.results").fetchall()
    return {job_id: result for job_id, result in rows if result and result.get("q") == queue}


def live(dsn: str) -> int:
    return int(scalar(dsn, "select count(*) from queue.jobs"))


class Recorder:
    """Handlers that record every run (database label, payload's tag, job id), in order."""

    def __init__(self, sleep: float = 0.0) -> None:
        self.sleep = sleep
        self.runs: list[tuple[str, str, int]] = []
        self.running: Counter[str] = Counter()
        self.lock = threading.Lock()

    def leased(self, job: andal.Job) -> dict:
        with self.lock:
            self.runs.append((job.database, job.payload["db"], job.id))
            self.running[job.database] += 1
        try:
            if self.sleep:
                threading.Event().wait(self.sleep)
        finally:
            with self.lock:
                self.running[job.database] -= 1
        return {"q": QUEUE, "db": job.payload["db"], "seen": job.database}

    def tx(self, job: andal.Job, conn: psycopg.Connection) -> dict:
        # the connection is the job's database's: the row lands there, with the job's outcome
        conn.execute("insert into tx_done (job_id, db) values (%s, %s)", (job.id, job.database))
        with self.lock:
            self.runs.append((job.database, job.payload["db"], job.id))
        return {"q": TX_QUEUE, "db": job.payload["db"]}

    def registry(self) -> andal.Registry:
        reg = andal.Registry()
        reg.add(QUEUE, self.leased)
        reg.add(TX_QUEUE, self.tx, transactional=True)
        return reg


# -- (a) one pool drains both databases -----------------------------------------------------


def test_one_pool_drains_two_databases_each_job_once_on_its_own(dbs: tuple[str, str]) -> None:
    a, b = dbs
    n, n_tx = 150, 30
    ids = {"a": fill(a, "a", n), "b": fill(b, "b", n)}
    tx_ids = {"a": fill(a, "a", n_tx, TX_QUEUE), "b": fill(b, "b", n_tx, TX_QUEUE)}
    # both databases come from one template: the same ids, told apart only by the database
    assert ids["a"] == ids["b"] and tx_ids["a"] == tx_ids["b"]
    rec = Recorder()
    worker = andal.Worker([a, b], rec.registry(), concurrency=4, batch=10, poll=0.2, metrics=True)
    labels = {"a": database_label(a), "b": database_label(b)}
    assert [s.label for s in worker.sources] == [labels["a"], labels["b"]]
    with running(worker):
        wait_for(
            lambda: live(a) == 0 and live(b) == 0,
            timeout=40,
            what="both databases to drain",
        )
        wait_for(lambda: worker.busy == 0, timeout=10, what="the last outcomes")
    # every run was of a job of the database it came from, and each job ran exactly once
    assert all(labels[tag] == label for label, tag, _ in rec.runs)
    assert Counter((tag, i) for _, tag, i in rec.runs).most_common(1)[0][1] == 1
    assert len(rec.runs) == 2 * (n + n_tx)
    for tag, dsn in (("a", a), ("b", b)):
        done = results(dsn)
        assert sorted(done) == ids[tag], tag  # every job completed, on its own database
        assert {r["db"] for r in done.values()} == {tag}
        assert {r["seen"] for r in done.values()} == {labels[tag]}
        tx_done = results(dsn, TX_QUEUE)
        assert sorted(tx_done) == tx_ids[tag]
        with psycopg.connect(dsn) as c:
            rows = c.execute("select job_id, db from tx_done order by job_id").fetchall()
        assert rows == [(i, labels[tag]) for i in tx_ids[tag]]  # the handler's conn: this db
    for src in worker.sources:
        assert src.counts["completed"] == n + n_tx
        assert src.counts["lease_lost"] == 0 and src.counts["db_errors"] == 0
    assert worker.counts["completed"] == 2 * (n + n_tx)
    assert worker.metrics is not None
    text = worker.metrics.text()
    for label in labels.values():
        line = f'andal_worker_database_claimed_jobs_total{{database="{label}"}} {n + n_tx}.0'
        assert line in text
        assert f'andal_worker_database_up{{database="{label}"}} 1.0' in text
    # the per-database metrics docs/observability.md lists are the ones exported
    documented = documented_worker_metrics(several_databases=True)
    assert documented, "docs/observability.md lists no per-database worker metric"
    exported = {f for f in families(text) if f.startswith("andal_worker_database_")}
    assert {d.removesuffix("_total") for d in documented} == exported


# -- (b) fairness ---------------------------------------------------------------------------


@pytest.mark.parametrize("concurrency", [4, 3])
def test_fair_share_of_slots(dbs: tuple[str, str], concurrency: int) -> None:
    """Both databases full of work (``a`` 240 jobs, ``b`` 90): of the first 120 runs, which
    either could dominate, each database gets 40-60 % (measured: 49-51 %), whatever the
    split of the slots (4: two each; 3: one each and the third in turn). Once ``b`` runs
    dry, ``a`` takes every slot."""
    a, b = dbs
    window, big, small = 120, 240, 90
    fill(a, "a", big)
    fill(b, "b", small)
    rec = Recorder(sleep=0.02)
    worker = andal.Worker([a, b], {QUEUE: rec.leased}, concurrency=concurrency, batch=50, poll=0.2)
    label_a = worker.sources[0].label
    peak_alone = 0

    def a_alone() -> bool:
        nonlocal peak_alone
        peak_alone = max(peak_alone, rec.running[label_a])
        return peak_alone == concurrency or len(rec.runs) >= big + small

    with running(worker):
        wait_for(lambda: live(b) == 0, timeout=40, what="b to run dry")
        wait_for(a_alone, timeout=30, interval=0.005, what="a to take every slot")
        wait_for(lambda: live(a) == 0, timeout=40, what="a to drain")
    first = Counter(tag for _, tag, _ in rec.runs[:window])
    assert 0.4 <= first["b"] / window <= 0.6, first
    assert peak_alone == concurrency, "a did not get b's share once b was idle"
    assert len(rec.runs) == big + small


# -- (c) a database dies and comes back -----------------------------------------------------


class Proxy:
    """A TCP proxy in front of the PostgreSQL server on a port of its own. ``kill()`` closes
    the port and every connection through it (the database is gone: connections reset, new
    ones refused); ``start()`` opens the same port again."""

    def __init__(self) -> None:
        self.listener: socket.socket | None = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.conns: set[socket.socket] = set()
        self.lock = threading.Lock()
        self.stopped = threading.Event()
        self.thread: threading.Thread | None = None

    def start(self) -> None:
        self.stopped.clear()
        if self.listener is None:  # the same port again
            self.listener = socket.create_server(("127.0.0.1", self.port))
        self.listener.settimeout(0.05)
        self.thread = threading.Thread(target=self._accept, args=(self.listener,), daemon=True)
        self.thread.start()

    def _accept(self, listener: socket.socket) -> None:
        while not self.stopped.is_set():
            try:
                client, _ = listener.accept()
            except (TimeoutError, OSError):
                continue
            try:
                upstream = socket.create_connection((PGHOST, PGPORT), timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            client.settimeout(None)
            with self.lock:
                if self.stopped.is_set():
                    client.close()
                    upstream.close()
                    continue
                self.conns |= {client, upstream}
            for src, dst in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(src, dst), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)

    def kill(self) -> None:
        self.stopped.set()
        if self.thread is not None:
            self.thread.join(5)
        if self.listener is not None:
            self.listener.close()
            self.listener = None
        with self.lock:
            conns, self.conns = self.conns, set()
        for s in conns:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()


@pytest.fixture
def proxy() -> Iterator[Proxy]:
    p = Proxy()
    p.start()
    try:
        yield p
    finally:
        p.kill()


def test_dead_database_slows_only_its_share(dbs: tuple[str, str], proxy: Proxy) -> None:
    a, b = dbs
    b_name = conninfo_to_dict(b)["dbname"]
    b_via_proxy = f"postgresql://{PGUSER}@127.0.0.1:{proxy.port}/{b_name}"
    n_a, n_b = 500, 150
    ids_a, ids_b = fill(a, "a", n_a), fill(b, "b", n_b)
    rec = Recorder(sleep=0.02)
    concurrency = 4
    worker = andal.Worker(
        [a, b_via_proxy],
        {QUEUE: rec.leased},
        concurrency=concurrency,
        batch=10,
        poll=0.2,
        lease=2,
        pool_timeout=2,
        maintain_every=0.5,
    )
    src_a, src_b = worker.sources
    with running(worker, timeout=30):
        wait_for(lambda: src_b.counts["completed"] >= 20, timeout=20, what="b to get going")
        proxy.kill()
        wait_for(lambda: not src_b.up, timeout=15, what="the worker to see b is gone")
        a_at_outage = src_a.counts["completed"]
        b_at_outage = src_b.counts["completed"]
        # a keeps going, with every slot: b's share (and its stuck outcomes) hold none
        peak = 0

        def a_takes_all() -> bool:
            nonlocal peak
            peak = max(peak, src_a.busy)
            return peak == concurrency and src_a.counts["completed"] >= a_at_outage + 60

        wait_for(a_takes_all, timeout=20, interval=0.005, what="a at full speed during the outage")
        assert not src_b.up and src_b.counts["completed"] == b_at_outage
        assert live(a) > 0, "a ran out of work during the outage: the test proves nothing"
        # b's jobs that ran so far were all claimed before the outage
        before = {i for label, _, i in list(rec.runs) if label == src_b.label}
        proxy.start()
        wait_for(lambda: live(b) == 0, timeout=40, what="b's jobs after it came back")
        wait_for(lambda: live(a) == 0, timeout=40, what="a to drain")
        wait_for(lambda: worker.busy == 0, timeout=10, what="the last outcomes")
        assert src_b.up
    # none lost: every job of each database completed there, once (one result row each)
    done_a, done_b = results(a), results(b)
    assert sorted(done_a) == ids_a and {r["db"] for r in done_a.values()} == {"a"}
    assert sorted(done_b) == ids_b and {r["db"] for r in done_b.values()} == {"b"}
    # a never ran a job twice; b ran twice only jobs it held when the connection broke (their
    # outcome could not be recorded; their lease ran out and they ran again: at least once)
    runs_a = Counter(i for label, _, i in rec.runs if label == src_a.label)
    runs_b = Counter(i for label, _, i in rec.runs if label == src_b.label)
    assert set(runs_a.values()) == {1} and len(runs_a) == n_a
    assert len(runs_b) == n_b
    again = {i for i, k in runs_b.items() if k > 1}
    assert again <= before and len(again) <= concurrency, again
    assert src_a.counts["db_errors"] == 0 and src_b.counts["db_errors"] >= 1


# -- (d) producers route by queue -----------------------------------------------------------


def where(a: str, b: str, queue: str) -> list[str]:
    """Which databases hold jobs of ``queue``."""
    found = []
    for tag, dsn in (("a", a), ("b", b)):
        if scalar(dsn, f"select count(*) from queue.jobs where queue = '{queue}'"):
            found.append(tag)
    return found


def test_route_is_a_stable_documented_hash() -> None:
    # the documented rule: CRC-32 of the UTF-8 name, modulo the number of databases
    for queue in ("emails", "reports", "ünïcode", "q17"):
        for count in (1, 2, 3, 7):
            assert route(queue, count) == zlib.crc32(queue.encode()) % count
    assert zlib.crc32(b"emails") == 0x4C81E852  # a known answer: the hash itself is fixed
    # the same in another process, whatever its string hash seed
    code = "from andal.client import route; print([route(f'q{i}', 3) for i in range(40)])"
    seen = set()
    for seed in ("1", "2"):
        out = subprocess.run(
            [sys.executable, "-c", code],
            env=dict(os.environ, PYTHONHASHSEED=seed),
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        seen.add(out)
    assert seen == {f"{[route(f'q{i}', 3) for i in range(40)]}\n"}
    with pytest.raises(ValueError):
        route("q", 0)


def test_client_routes_each_queue_to_one_database(dbs: tuple[str, str]) -> None:
    a, b = dbs
    client = andal.Client([a, b])
    to_a = next(f"q{i}" for i in range(100) if route(f"q{i}", 2) == 0)
    to_b = next(f"q{i}" for i in range(100) if route(f"q{i}", 2) == 1)
    assert client.dsn_for(to_a) == a and client.dsn_for(to_b) == b
    for _ in range(3):  # the same queue, the same database, every time
        client.enqueue({}, to_a)
        client.enqueue({}, to_b)
    assert where(a, b, to_a) == ["a"] and where(a, b, to_b) == ["b"]
    assert scalar(a, f"select count(*) from queue.jobs where queue = '{to_a}'") == 3

    # explicit routes win over the hash (by DSN or by position)
    pinned = andal.Client([a, b], routes={to_a: b, to_b: 0})
    assert pinned.dsn_for(to_a) == b and pinned.dsn_for(to_b) == a
    pinned.enqueue({}, to_a)
    pinned.enqueue({}, to_b)
    assert where(a, b, to_a) == ["a", "b"] and where(a, b, to_b) == ["a", "b"]
    with pytest.raises(ValueError, match="not one of"):
        andal.Client([a, b], routes={"x": "postgresql://elsewhere/db"})

    # enqueue_many splits by queue (grouped by database), ids in input order
    truncate(a)
    truncate(b)
    queues = [to_a, to_b, to_b, to_a, to_b]
    got = client.enqueue_many([{"i": i} for i in range(5)], queues)
    assert len(got) == 5
    for i, (queue, job_id) in enumerate(zip(queues, got, strict=True)):
        dsn = a if queue == to_a else b
        with psycopg.connect(dsn) as c:
            row = c.execute("select queue, payload from queue.jobs where id = %s", (job_id,))
            assert row.fetchone() == (queue, {"i": i})
    assert live(a) == 2 and live(b) == 3
    # one queue for all, as before: one database
    client.enqueue_many([{}] * 4, to_b)
    assert live(a) == 2 and live(b) == 7
    # a single DSN is the one-database case of the same client
    assert andal.Client(a).dsn_for(to_b) == a and andal.Client(a).dsn == a


# -- the command line -----------------------------------------------------------------------


def andal_cli(*args: str, dsns: list[str], timeout: float = 60) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("DATABASE_URL", None)
    argv = [sys.executable, "-m", "andal.cli"]
    for d in dsns:
        argv += ["--dsn", d]
    return subprocess.run(
        argv + list(args), capture_output=True, text=True, env=env, timeout=timeout
    )


def test_cli_enqueue_status_and_worker_over_two_databases(
    dbs: tuple[str, str], tmp_path: Path
) -> None:
    a, b = dbs
    labels = [database_label(a), database_label(b)]
    to_a = next(f"q{i}" for i in range(100) if route(f"q{i}", 2) == 0)
    to_b = next(f"q{i}" for i in range(100) if route(f"q{i}", 2) == 1)

    out = andal_cli("enqueue", to_b, '{"x": 1}', dsns=[a, b])
    assert out.returncode == 0, out.stderr
    job_id, label = out.stdout.split()
    assert label == labels[1] and where(a, b, to_b) == ["b"]
    out = andal_cli("enqueue", to_a, "{}", "--count", "3", dsns=[a, b])
    assert out.returncode == 0, out.stderr
    assert f"enqueued 3 jobs on {to_a} in {labels[0]}" in out.stdout

    out = andal_cli("status", "--json", dsns=[a, b])
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert [d["database"] for d in doc] == labels
    assert {q["queue"]: q["ready"] for q in doc[0]["queues"]}[to_a] == 3
    assert {q["queue"]: q["ready"] for q in doc[1]["queues"]}[to_b] == 1
    text = andal_cli("status", dsns=[a, b])
    assert text.returncode == 0, text.stderr
    assert text.stdout.count("andal ") >= 2 and to_a in text.stdout and to_b in text.stdout
    # a database that does not answer: the others are shown, the exit code says it
    gone = "postgresql://postgres@127.0.0.1:1/nowhere?connect_timeout=2"
    out = andal_cli("status", "--json", dsns=[a, gone])
    assert out.returncode == 3, out.stderr
    doc = json.loads(out.stdout)
    assert doc[0]["database"] == labels[0] and "error" in doc[1]
    assert andal_cli("dead", "list", dsns=[a, b]).returncode == 2

    # a worker process over both; SIGTERM drains it: running handlers finish, the jobs not
    # started go back to their own database unspent
    truncate(a)
    truncate(b)
    module = tmp_path / "multi_jobs.py"
    module.write_text(
        f"import time\nhandlers = {{{QUEUE!r}: lambda job: time.sleep(job.payload['sleep'])}}\n"
    )
    fill(a, "a", 10, sleep=0.5)
    fill(b, "b", 10, sleep=0.5)
    env = dict(os.environ)
    env.pop("DATABASE_URL", None)
    log = tmp_path / "worker.log"
    with open(log, "wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "andal.cli", "--dsn", a, "--dsn", b, "worker", str(module),
             "--concurrency", "4", "--poll", "0.2", "--batch", "10"],
            env=env, stdout=sink, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        wait_for(
            lambda: (
                scalar(a, "select count(*) from queue.jobs where status = 'running'") > 0
                and scalar(b, "select count(*) from queue.jobs where status = 'running'") > 0
            ),
            timeout=20,
            what="jobs of both databases running",
        )
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 0, log.read_text()[-3000:]
    finally:
        if proc.poll() is None:
            proc.kill()
    for dsn in (a, b):
        with psycopg.connect(dsn) as c:
            rows = c.execute("select status, attempt from queue.jobs").fetchall()
        assert all(r == ("pending", 0) for r in rows), rows
        assert 0 < 10 - len(rows) < 10  # what ran completed; the others wait, unspent
    text = log.read_text()
    assert '"event": "worker_stopped"' in text and '"exit_code": 0' in text
    assert all(label in text for label in labels)
