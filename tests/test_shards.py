"""Sharded live table: queue.set_shards converts queue.jobs in place, under load.

* Converting 1 → 4 → 2 → 1 shards while claimers, completers and a producer keep running
  loses no job and completes none twice; every claim and completion call succeeds (they wait
  on the conversion's lock, then go on against the new table).
* `andal install --shards N` converts an install holding pending, running and dead-lettered
  jobs; the running jobs complete with their old tokens afterwards.
* A claim of listed queues reads only their shards: the other partitions' indexes are not
  scanned (pg_stat_user_indexes, counted across 40 claims), expired-lease reaping included.
"""

from __future__ import annotations

import threading
import time
from collections import Counter

import psycopg
import pytest
from conftest import wait_for

from andal.cli import main as cli_main

pytestmark = pytest.mark.usefixtures("clean")

QUEUES = [f"s{i}" for i in range(6)]


def shard_count(conn: psycopg.Connection) -> int:
    return len(conn.execute("select shard from queue.shards()").fetchall())


def test_conversion_under_load_loses_nothing(dsn: str, conn: psycopg.Connection) -> None:
    conn.execute("select queue.set_shards(shards => 1)")
    conn.execute(
        "select queue.enqueue_many(array_agg(jsonb_build_object('n', g)), queue => q)"
        " from generate_series(1, 500) as g, unnest(%s::text[]) as q group by q",
        (QUEUES,),
    )
    preloaded = conn.execute("select count(*) from queue.jobs").fetchone()[0]
    stop = threading.Event()
    completed: Counter[int] = Counter()
    enqueued: list[int] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def claimer(name: str) -> None:
        try:
            with psycopg.connect(dsn, autocommit=True) as c:
                while not stop.is_set():
                    rows = c.execute(
                        "select job_id, token from queue.claim(worker => %s, batch => 10)",
                        (name,),
                    ).fetchall()
                    if not rows:
                        time.sleep(0.01)
                        continue
                    ids = [r[0] for r in rows]
                    c.execute(
                        "select queue.complete_many(job_ids => %s, tokens => %s)",
                        (ids, [r[1] for r in rows]),
                    )
                    with lock:
                        completed.update(ids)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)

    def producer() -> None:
        try:
            with psycopg.connect(dsn, autocommit=True) as c:
                for i in range(600):
                    job = c.execute(
                        "select queue.enqueue(payload => %s, queue => %s)",
                        (psycopg.types.json.Jsonb({"late": i}), QUEUES[i % len(QUEUES)]),
                    ).fetchone()[0]
                    enqueued.append(job)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)

    threads = [threading.Thread(target=claimer, args=(f"w{i}",)) for i in range(4)]
    threads.append(threading.Thread(target=producer))
    for t in threads:
        t.start()
    try:
        for shards in (4, 2, 1):
            wait_for(lambda: errors or len(completed) > 200, what="claimers to make progress")
            before = len(completed)
            conn.execute("select queue.set_shards(shards => %s)", (shards,))
            assert shard_count(conn) == shards
            wait_for(
                lambda b=before: errors or len(completed) > b + 200,
                what=f"progress after converting to {shards} shards",
            )
        threads[-1].join(timeout=60)
        wait_for(
            lambda: errors or len(completed) == preloaded + len(enqueued),
            timeout=60,
            what="every job completed",
        )
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=30)
    assert not errors, errors
    assert len(enqueued) == 600
    assert sum(completed.values()) == preloaded + len(enqueued), "a job completed twice"
    assert all(n == 1 for n in completed.values())
    assert conn.execute("select count(*) from queue.jobs").fetchone()[0] == 0
    assert conn.execute("select count(*) from queue.dead_letters").fetchone()[0] == 0


def test_install_shards_converts_live_jobs(dsn: str, conn: psycopg.Connection, capsys) -> None:
    conn.execute("select queue.set_shards(shards => 1)")
    conn.execute(
        "select queue.enqueue(payload => jsonb_build_object('n', g), queue => q,"
        " dedup_key => 'k' || g)"
        " from generate_series(1, 50) as g, unnest(%s::text[]) as q",
        (QUEUES[:3],),
    )
    running = conn.execute(
        "select job_id, token, attempt from queue.claim(worker => 'old', batch => 20)"
    ).fetchall()
    dead_id, dead_token = running[0][0], running[0][1]
    conn.execute(
        "select queue.fail(job_id => %s, token => %s, error => 'boom', retryable => false)",
        (dead_id, dead_token),
    )
    before = conn.execute(
        "select status, count(*) from queue.jobs group by 1 order by 1"
    ).fetchall()

    assert cli_main(["--dsn", dsn, "install", "--shards", "4"]) == 0
    assert "shards 1 -> 4 (149 live jobs moved)" in capsys.readouterr().out
    assert shard_count(conn) == 4
    after = conn.execute("select status, count(*) from queue.jobs group by 1 order by 1").fetchall()
    assert before == [("pending", 130), ("running", 19)]
    assert after == before
    for job_id, token, _attempt in running[1:]:
        conn.execute("select queue.complete(job_id => %s, token => %s)", (job_id, token))
    assert conn.execute("select count(*) from queue.jobs where status = 'running'").fetchone() == (
        0,
    )
    assert conn.execute("select queue.requeue_dead(job_id => %s)", (dead_id,)).fetchone()[0] == (
        dead_id
    )
    shard = conn.execute(
        "select s.shard from queue.jobs as j join queue.shards() as s"
        " on s.relation = j.tableoid::regclass::text where j.id = %s",
        (dead_id,),
    ).fetchone()[0]
    queue = conn.execute("select queue from queue.jobs where id = %s", (dead_id,)).fetchone()[0]
    assert shard == conn.execute("select queue.shard_of(%s)", (queue,)).fetchone()[0]
    # Idempotent: the same count again changes nothing.
    assert cli_main(["--dsn", dsn, "install", "--shards", "4"]) == 0
    assert "nothing to do" in capsys.readouterr().out


def index_scans(conn: psycopg.Connection) -> dict[str, int]:
    conn.execute("select pg_stat_clear_snapshot()")
    return {
        r[0]: r[1]
        for r in conn.execute(
            "select relname::text, sum(idx_scan)::bigint from pg_stat_user_indexes"
            " where schemaname = 'queue' and relname like 'jobs\\_p%%' group by 1"
        )
    }


def test_claim_reads_only_the_shards_of_its_queues(dsn: str, conn: psycopg.Connection) -> None:
    conn.execute("select queue.set_shards(shards => 4)")
    # One queue per shard, so each shard holds work a careless claim would read.
    names: dict[int, str] = {}
    i = 0
    while len(names) < 4:
        q = f"queue-{i}"
        names.setdefault(conn.execute("select queue.shard_of(%s)", (q,)).fetchone()[0], q)
        i += 1
    for q in names.values():
        conn.execute(
            "select queue.enqueue_many(array_agg(jsonb_build_object('n', g)), queue => %s)"
            " from generate_series(1, 200) as g",
            (q,),
        )
    target = names[2]
    with psycopg.connect(dsn, autocommit=True) as worker:
        worker.execute("select 1")
        conn.execute("select pg_stat_force_next_flush()")
        before = index_scans(conn)
        for _ in range(40):  # claims only: a completion finds its job by id, in every shard
            rows = worker.execute(
                "select job_id from queue.claim(worker => 'w', queues => %s, batch => 2)",
                ([target],),
            ).fetchall()
            assert len(rows) == 2
        worker.execute("select pg_stat_force_next_flush()")
    after = wait_for(
        lambda: (s := index_scans(conn))["jobs_p2"] >= before.get("jobs_p2", 0) + 40 and s,
        what="the claim's index scans to reach the statistics",
    )
    assert after["jobs_p2"] - before.get("jobs_p2", 0) >= 40
    for part in ("jobs_p0", "jobs_p1", "jobs_p3"):
        assert after[part] == before.get(part, 0), f"claims of {target} read {part}"
