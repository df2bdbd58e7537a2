"""Failover: a primary and its synchronous standby (``replication.Pair``), a producer and two
``andal worker`` processes on the multi-host DSN (``target_session_attrs=read-write``). Mid-run
the primary is killed as a lost host would be (every process SIGKILLed) and the standby
promoted. Then:

* every enqueue that returned an id before, during or after the switch is in the promoted
  database, and ran (acknowledged enqueues lost: 0);
* a schedule (every second) fires each tick once across the switch (its tick jobs all ran,
  never more ticks than seconds), and a local cache's follower hears of a change made on the
  new primary;
* every transactional job's effect (a row of ``done``, committed with its completion) exists
  once (doubled effects: 0: ``done`` has the job id as its primary key, so a second commit
  would fail and be retried, never kept twice);
* the same worker processes carry on with no manual step, and log ``database_down`` then
  ``database_up`` naming the server that answered (the new primary, not the DSN's list);
* the figures: time from the kill to the first job done on the new primary.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from conftest import wait_for
from workers.recording import make_tables

import andal
from andal.install import install
from reliability import procs
from reliability.replication import Pair

JOBS = 600  # acknowledged enqueues in all; the kill comes after a sixth of them ran


@pytest.fixture
def pair() -> Iterator[Pair]:
    pair = Pair(synchronous=True)
    try:
        pair.start()
        with psycopg.connect(pair.primary.dsn, autocommit=True) as c:
            c.execute("create database t")
        install(pair.primary_dsn("t"))
        with psycopg.connect(pair.primary_dsn("t"), autocommit=True) as c:
            make_tables(c)
            c.execute(
                "select queue.schedule(name => 'tick', queue => 'leased', every => '1 second')"
            )
        yield pair
    finally:
        pair.destroy()


class Producer(threading.Thread):
    """Enqueues ``JOBS`` jobs one by one on the multi-host DSN, alternating the transactional
    and the leased queue; keeps the ids it was given (acknowledged) and reconnects after an
    error (a lost connection is no acknowledgement: that job is enqueued again)."""

    def __init__(self, dsn: str) -> None:
        super().__init__(daemon=True)
        self.dsn, self.acked, self.errors = dsn, {"tx": [], "leased": []}, 0

    def run(self) -> None:
        conn: psycopg.Connection | None = None
        deadline = time.monotonic() + 180
        n = 0
        while n < JOBS and time.monotonic() < deadline:
            queue = "tx" if n % 2 == 0 else "leased"
            try:
                if conn is None or conn.closed or conn.broken:
                    conn = psycopg.connect(self.dsn, autocommit=True)
                job_id = andal.enqueue(conn, {"n": n}, queue)
            except psycopg.OperationalError:
                self.errors += 1
                time.sleep(0.2)  # the server is away: try again shortly
                continue
            assert job_id is not None
            self.acked[queue].append(job_id)
            n += 1
            time.sleep(0.01)


def done_count(dsn: str) -> int:
    try:
        with psycopg.connect(dsn, autocommit=True, connect_timeout=3) as c:
            return int(c.execute("select count(*) from done").fetchone()[0])
    except psycopg.OperationalError:
        return -1


def test_failover_to_the_synchronous_standby_loses_nothing(pair: Pair, tmp_path: Path) -> None:
    dsn = pair.dsn("t")
    logs = [tmp_path / f"worker{i}.log" for i in range(2)]
    args = ("--queue", "tx", "--queue", "leased", "--lease", "2", "--poll", "0.2")
    workers = [procs.spawn(dsn, log, *args, module="workers.recording") for log in logs]
    producer = Producer(dsn)
    cache = andal.Cache(dsn, loader=lambda key: "v1", poll_interval=0.2, max_staleness=2)
    started = time.monotonic()
    try:
        producer.start()
        assert cache.get("k") == "v1"
        wait_for(lambda: done_count(dsn) >= JOBS // 6, timeout=120, what="a sixth done")
        killed_at = pair.crash()
        pair.promote()
        before = done_count(pair.standby_dsn("t"))
        wait_for(lambda: done_count(pair.standby_dsn("t")) > before, timeout=60,
                 what="a job done on the new primary")  # fmt: skip
        first_done_s = time.monotonic() - killed_at
        producer.join(200)
        assert not producer.is_alive(), "the producer did not finish"
        new = pair.standby_dsn("t")
        acked_tx, acked_leased = producer.acked["tx"], producer.acked["leased"]
        with psycopg.connect(new, autocommit=True) as c:
            # disabled, not removed: removing a schedule forgets its ticks
            c.execute(
                "select queue.schedule(name => 'tick', queue => 'leased', every => '1 second',"
                " enabled => false)"
            )
            ticking_s = time.monotonic() - started

            def drained() -> bool:
                return c.execute("select count(*) from queue.jobs").fetchone()[0] == 0

            wait_for(drained, timeout=120, what="every job done on the new primary")
            done = {r[0] for r in c.execute("select job_id from done")}
            ran = {r[0] for r in c.execute("select distinct job_id from runs")}
            ticks = [r[0] for r in c.execute("select job_id from queue.schedule_ticks")]
            # the follower hears of a change made on the new primary
            c.execute("select cache.put(key => 'k', value => '\"v2\"')")
            wait_for(lambda: cache.get("k") == "v2", timeout=30, what="the cache follower")
        assert [j for j in ticks if j not in ran] == [], "a tick's job did not run"
        assert 0 < len(ticks) <= ticking_s + 2, f"{len(ticks)} ticks in {ticking_s:.0f} s"
        assert [j for j in acked_tx if j not in done] == [], "acknowledged tx jobs lost"
        assert [j for j in acked_leased if j not in ran] == [], "acknowledged leased jobs lost"
        for proc in workers:
            assert proc.poll() is None, "a worker exited instead of reconnecting"
    finally:
        cache.close()
        codes = [procs.stop(p) for p in workers]
    events = [json.loads(line) for log in logs for line in log.read_text().splitlines()
              if line.startswith("{")]  # fmt: skip
    names = [e.get("event") for e in events]
    assert "database_down" in names
    ups = [e for e in events if e.get("event") == "database_up"]
    assert ups and {e["host"] for e in ups} == {f"127.0.0.1:{pair.standby.port}"}, ups
    assert codes == [0, 0], codes
    print(
        f"\nfailover: acked {len(acked_tx) + len(acked_leased)} lost 0 doubled 0;"
        f" first job done on the new primary {first_done_s:.1f} s after the kill;"
        f" producer errors {producer.errors}; {len(ticks)} schedule ticks, each once"
    )


def test_with_an_asynchronous_standby_only_the_last_commits_can_be_lost(tmp_path: Path) -> None:
    """Without a synchronous standby, what the standby had not received at the kill is lost
    with the old primary: measured, and it is only the newest of each producer's enqueues
    (each producer's surviving ids are a prefix of what it was acknowledged: no hole)."""
    pair = Pair(synchronous=False)
    try:
        pair.start()
        with psycopg.connect(pair.primary.dsn, autocommit=True) as c:
            c.execute("create database t")
        install(pair.primary_dsn("t"))
        stop = threading.Event()
        acked: list[list[int]] = [[], []]

        def produce(mine: list[int]) -> None:
            with psycopg.connect(pair.primary_dsn("t"), autocommit=True) as c:
                while not stop.is_set():
                    try:
                        mine.append(int(andal.enqueue(c, {}, "async") or 0))
                    except psycopg.OperationalError:
                        return  # the primary is gone

        threads = [threading.Thread(target=produce, args=(a,), daemon=True) for a in acked]
        for t in threads:
            t.start()
        wait_for(lambda: min(len(a) for a in acked) >= 500, timeout=60, what="enqueues")
        pair.crash()
        stop.set()
        for t in threads:
            t.join(30)
        pair.promote()
        with psycopg.connect(pair.standby_dsn("t"), autocommit=True) as c:
            kept = {r[0] for r in c.execute("select id from queue.jobs")}
    finally:
        pair.destroy()
    lost = 0
    for mine in acked:
        present = [job_id in kept for job_id in mine]
        first_missing = present.index(False) if False in present else len(present)
        assert all(not p for p in present[first_missing:]), "a hole: an older enqueue lost"
        lost += len(mine) - first_missing
    print(f"\nasynchronous standby: {sum(map(len, acked))} acknowledged, {lost} lost at the kill")
