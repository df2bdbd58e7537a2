"""10. Long transaction (soak): a REPEATABLE READ transaction holds its snapshot for 5 minutes
while a producer feeds 200 jobs/s to 2 worker processes (the driver's CLI).

queue.stats() exposes the held-back xmin (``held_xmin_age``: transactions; and
``held_xmin_seconds``: how long its holder has been in its transaction): while the snapshot
is held they grow with it, and within 10 s of its release they fall back. Throughput is
measured every 5 s (completions, backlog, dead tuples of queue.jobs) before, during and after
the hold; within a minute of the release the backlog is back under 2 s of production.

``REL_LONGTX_HOLD`` (seconds, default 300) shortens the hold.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import psycopg
import pytest
from conftest import wait_for

from reliability import history, procs
from reliability.soak import Producer, Sampler

HOLD = float(os.environ.get("REL_LONGTX_HOLD", "300"))
RATE, WARM, AFTER, EVERY = 200, 30.0, 60.0, 5.0


def ensure_held_xmin(conn: psycopg.Connection) -> None:
    cur = conn.execute("select * from queue.stats() limit 0")
    assert {"held_xmin_age", "held_xmin_seconds"} <= {d.name for d in cur.description}


def sample(conn: psycopg.Connection) -> dict:
    stats = conn.execute(
        "select coalesce(sum(ready), 0), max(held_xmin_age), max(held_xmin_seconds)"
        " from queue.stats() where category is null"
    ).fetchone()
    table = conn.execute(
        "select n_dead_tup, pg_relation_size('queue.jobs'), pg_indexes_size('queue.jobs')"
        " from pg_stat_user_tables where relid = 'queue.jobs'::regclass"
    ).fetchone()
    done = conn.execute("select count(*) from queue.results").fetchone()[0]
    return {
        "t": time.monotonic(),
        "ready": int(stats[0]),
        "xmin_age": stats[1] or 0,
        "xmin_s": stats[2] or 0.0,
        "dead_tup": table[0],
        "table_bytes": table[1],
        "index_bytes": table[2],
        "done": done,
    }


@pytest.mark.soak
@pytest.mark.timeout(900)
def test_long_transaction_holds_xmin_and_throughput_recovers(
    rel_dsn: str, rconn: psycopg.Connection, tmp_path: Path, figures: dict
) -> None:
    ensure_held_xmin(rconn)
    rconn.execute("select queue.configure_queue('rel', keep_results => true)")
    pool = procs.Pool(rel_dsn, tmp_path, 2, "--queue", "rel", "--concurrency", "8", "--poll", "0.2")
    producer = Producer(rel_dsn, ["rel"], rate=RATE, chunk=20, payload=lambda rng: {"ms": 2})
    sampler = Sampler(rel_dsn, EVERY, sample)
    holder = psycopg.connect(rel_dsn, application_name="rel long transaction")
    try:
        pool.wait_ready()
        producer.start()
        sampler.start()
        time.sleep(WARM)  # steady state before the hold
        holder.execute("set transaction isolation level repeatable read")
        holder.execute("select count(*) from queue.jobs")  # the snapshot is taken here
        hold_start = time.monotonic()
        time.sleep(HOLD)  # the hold: the samples are the measurement
        holder.rollback()
        release = time.monotonic()
        time.sleep(AFTER)
        producer.stop()
        producer.join(30)
        wait_for(
            lambda: rconn.execute("select count(*) = 0 from queue.jobs").fetchone()[0],
            timeout=120,
            what="the queue to drain",
        )
    finally:
        producer.stop()
        sampler.stop()
        holder.close()
        codes = pool.stop()
    assert codes == [0, 0], pool.logs()
    assert producer.error is None and sampler.error is None, (producer.error, sampler.error)
    rows = sampler.rows
    before = [r for r in rows if r["t"] < hold_start]
    during = [r for r in rows if hold_start + EVERY <= r["t"] <= release]
    after = [r for r in rows if r["t"] >= release + 10]

    # stats() shows the held xmin while it is held, and lets go after
    assert during and all(r["xmin_s"] >= r["t"] - hold_start - EVERY for r in during), during
    assert during[-1]["xmin_age"] > during[0]["xmin_age"] > 0
    assert after and all(r["xmin_s"] < 10 for r in after), after[:3]

    def rate(a: dict, b: dict) -> float:
        return (b["done"] - a["done"]) / (b["t"] - a["t"])

    rates = [(b["t"], rate(a, b), b["ready"]) for a, b in zip(rows, rows[1:], strict=False)]
    recovered_at = next((t for t, _, ready in rates if t >= release and ready < 2 * RATE), None)
    assert recovered_at is not None and recovered_at - release <= 60, rates[-20:]
    counts = history.assert_clean(rconn)
    hold_rates = [r for t, r, _ in rates if hold_start + EVERY <= t <= release]
    figures.update(
        hold_s=HOLD,
        rate_before=round(sum(r for t, r, _ in rates if t < hold_start) / max(1, len(before) - 1)),
        rate_during_min=round(min(hold_rates)),
        rate_during_last=round(hold_rates[-1]),
        backlog_during_max=max(r["ready"] for r in during),
        held_xmin_age_max=max(r["xmin_age"] for r in during),
        held_xmin_s_max=round(max(r["xmin_s"] for r in during)),
        dead_tuples_during_max=max(r["dead_tup"] for r in during),
        dead_tuples_after=after[-1]["dead_tup"],
        table_kb=(before[-1]["table_bytes"] // 1024, max(r["table_bytes"] for r in rows) // 1024),
        index_kb=(before[-1]["index_bytes"] // 1024, max(r["index_bytes"] for r in rows) // 1024),
        recovered_s=round(recovered_at - release, 1),
        checker=str(counts),
    )
