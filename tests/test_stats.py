"""queue.stats() and queue.metrics(): figures match a scripted workload exactly."""

from __future__ import annotations

import psycopg
import pytest
from prometheus_client.parser import text_string_to_metric_families

DOCUMENTED_METRICS = {
    "andal_jobs",
    "andal_dead_jobs",
    "andal_oldest_ready_age_seconds",
    "andal_job_events",
    "andal_run_seconds_avg",
    "andal_run_seconds_p95",
    "andal_failure_rate",
    "andal_retries_per_job",
    "andal_lock_attempts",
    "andal_lock_contention_ratio",
    "andal_pickup_seconds",
    "andal_wal_bytes_per_job",
}


def claim(conn: psycopg.Connection, queue: str, batch: int = 1) -> list[tuple]:
    return conn.execute(
        "select job_id, token from queue.claim(worker => 'w', queues => %s::text[], batch => %s)",
        ([queue], batch),
    ).fetchall()


@pytest.fixture
def workload(dsn: str, clean: None) -> dict[str, int]:
    """7 completions, 3 retries of which 2 end dead, 1 contention event on category 'hot'."""
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("select queue.configure_queue(queue => 'st', max_attempts => 2)")
        c.execute(
            "select queue.enqueue_many(payloads => array_fill('{}'::jsonb, array[9]),"
            " queue => 'st')"
        )
        for job_id, token in claim(c, "st", 7):
            c.execute("select queue.complete(job_id => %s, token => %s)", (job_id, token))
        # two jobs fail twice: one retry each, then dead
        for _ in range(2):
            for job_id, token in claim(c, "st", 2):
                c.execute(
                    "select queue.fail(job_id => %s, token => %s, error => 'boom',"
                    " retry_in => '0')",
                    (job_id, token),
                )
        # contention: A holds the category's gate lock (its row) in an open claim transaction
        c.execute("select queue.enqueue(payload => '{}', queue => 'gated', category => 'hot')")
        c.execute("select queue.enqueue(payload => '{}', queue => 'gated', category => 'hot')")
        c.execute("select queue.set_category_limit(category => 'hot', max_running => 2)")
        with psycopg.connect(dsn) as a, psycopg.connect(dsn) as b:
            assert len(claim(a, "gated")) == 1  # transaction left open: lock held
            assert claim(b, "gated") == []  # try-lock returns false: skipped, counted
            b.commit()
            a.commit()
    return {"completed": 7, "retried": 2, "dead": 2, "lock_attempts": 2, "lock_failures": 1}


def stats_row(conn: psycopg.Connection, queue: str, category: str | None = None) -> dict:
    cur = conn.execute(
        "select * from queue.stats() where queue = %s and category is not distinct from %s",
        (queue, category),
    )
    names = [d.name for d in cur.description]
    row = cur.fetchone()
    assert row is not None, f"no stats row for {queue}/{category}"
    return dict(zip(names, row, strict=True))


def test_counts_match_the_workload(conn: psycopg.Connection, workload: dict) -> None:
    s = stats_row(conn, "st")
    assert s["completed_1m"] == s["completed_1h"] == workload["completed"]
    assert s["retried_1h"] == workload["retried"]
    assert s["dead_1h"] == workload["dead"]
    assert s["dead"] == 2  # rows in the dead letters
    assert s["ready"] == 0 and s["running"] == 0
    ended = workload["completed"] + workload["retried"] + workload["dead"]
    assert s["failure_rate"] == pytest.approx((workload["retried"] + workload["dead"]) / ended)
    assert s["retries_per_job"] == pytest.approx(
        workload["retried"] / (workload["completed"] + workload["dead"])
    )
    assert s["pickup_p50_ms"] is not None and s["pickup_p99_ms"] >= s["pickup_p50_ms"]
    assert s["avg_run_ms"] is not None and s["p95_run_ms"] is not None


def test_contention_ratio_counts_false_try_locks(conn: psycopg.Connection, workload: dict) -> None:
    s = stats_row(conn, "gated", "hot")
    assert s["lock_attempts"] == workload["lock_attempts"]
    assert s["lock_failures"] == workload["lock_failures"]
    assert s["contention_ratio"] == pytest.approx(0.5)
    assert s["running"] == 1 and s["ready"] == 1


def test_metrics_text_parses_with_documented_names(
    conn: psycopg.Connection, workload: dict
) -> None:
    # the deaths counted in the minute of the read, by the statement that reads (the 1m
    # window is that minute: on a loaded machine the workload can straddle a minute's end)
    text, dead_this_minute = conn.execute(
        "select queue.metrics(), (select coalesce(sum(m.dead), 0) from queue.stat_minutes as m"
        " where m.queue = 'st' and m.minute = date_trunc('minute', now()))"
    ).fetchone()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    assert set(families) >= DOCUMENTED_METRICS, DOCUMENTED_METRICS - set(families)
    events = {
        (s.labels["queue"], s.labels.get("category"), s.labels["outcome"], s.labels["window"]): (
            s.value
        )
        for s in families["andal_job_events"].samples
    }
    assert events[("st", None, "completed", "1h")] == workload["completed"]
    assert events[("st", None, "dead", "1m")] == dead_this_minute
    assert events[("st", None, "dead", "15m")] == workload["dead"]
    ratio = {
        s.labels.get("category"): s.value for s in families["andal_lock_contention_ratio"].samples
    }
    assert ratio["hot"] == pytest.approx(0.5)


def test_metrics_escapes_label_values(conn: psycopg.Connection, clean: None) -> None:
    conn.execute("""select queue.enqueue(payload => '{}', queue => 'we"ird\\q')""")
    text = conn.execute("select queue.metrics()").fetchone()[0]
    queues = {
        s.labels["queue"]
        for f in text_string_to_metric_families(text)
        if f.name == "andal_jobs"
        for s in f.samples
    }
    assert 'we"ird\\q' in queues


def test_wal_bytes_per_job_after_two_samples(conn: psycopg.Connection, clean: None) -> None:
    conn.execute("truncate queue.wal_samples, queue.stat_minutes")
    conn.execute(
        "insert into queue.wal_samples (sampled_at, wal_lsn)"
        " values (date_trunc('minute', now()) - interval '2 minutes', pg_current_wal_lsn())"
    )
    conn.execute(
        "select queue.enqueue_many(payloads => array_fill('{}'::jsonb, array[20]), queue => 'w')"
    )
    with conn.transaction():
        for job_id, token in claim(conn, "w", 20):
            conn.execute("select queue.complete(job_id => %s, token => %s)", (job_id, token))
        # book the completions in the previous minute, between the two samples
        conn.execute("update queue.stat_minutes set minute = minute - interval '1 minute'")
    conn.execute("insert into queue.wal_samples (wal_lsn) values (pg_current_wal_lsn())")
    s = stats_row(conn, "w")
    assert s["wal_bytes_per_job"] is not None and s["wal_bytes_per_job"] > 0
