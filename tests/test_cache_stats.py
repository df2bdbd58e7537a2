"""cache.stats(): driver-reported reads per job type and pool, and the cache's alerts."""

from __future__ import annotations

import psycopg
import pytest
from prometheus_client.parser import text_string_to_metric_families

from andal.cache import Cache


def stat(conn: psycopg.Connection, metric: str, **labels: str) -> float | None:
    rows = conn.execute(
        "select value from cache.stats() where metric = %s and labels @> %s::jsonb",
        (metric, psycopg.types.json.Jsonb(labels)),
    ).fetchall()
    assert len(rows) == 1, (metric, labels, rows)
    return rows[0][0]


def test_reads_reported_by_a_cache_match_its_counts(dsn: str, clean: None) -> None:
    loads: list[str] = []

    def loader(key: str) -> dict:
        loads.append(key)
        return {"k": key}

    with psycopg.connect(dsn, autocommit=True) as conn:
        cache = Cache(dsn, loader=loader, pool_name="billing", follow=False, report_every=0)
        try:
            cache.get("a", job_type="invoice")  # miss: loaded, fills shared and local
            for _ in range(3):
                cache.poll()  # the log is read: local entries may be served
                cache.get("a", job_type="invoice")
            cache.clear()
            cache.poll()
            cache.get("a", job_type="invoice")  # shared hit
            cache.get("b", job_type="mail")  # miss
            assert cache.report() == 2
            assert cache.report() == 0  # nothing new: nothing sent
            local = cache.stats()["by_job_type"]
        finally:
            cache.close()
        assert loads == ["a", "b"]
        assert local["invoice"]["miss"] == 1 and local["invoice"]["local_hit"] >= 1
        assert local["invoice"]["shared_hit"] >= 1
        invoice = {
            r: stat(conn, "reads", pool="billing", job_type="invoice", result=r)
            for r in ("local_hit", "shared_hit", "stale_hit", "miss")
        }
        assert invoice == {r: local["invoice"].get(r, 0) for r in invoice}
        hits = invoice["local_hit"] + invoice["shared_hit"]
        assert stat(conn, "hit_ratio", pool="billing", job_type="invoice") == pytest.approx(
            hits / sum(invoice.values())
        )
        assert stat(conn, "hit_ratio", pool="billing", job_type="mail") == 0
        assert stat(conn, "entries") == 2

        text = conn.execute("select queue.metrics()").fetchone()[0]
        ratios = {
            (s.labels["pool"], s.labels["job_type"]): s.value
            for f in text_string_to_metric_families(text)
            if f.name == "andal_cache_hit_ratio"
            for s in f.samples
        }
        assert ratios[("billing", "invoice")] == pytest.approx(hits / sum(invoice.values()))


def test_stale_overdue_counts_invalidated_entries_left_unrefreshed(
    conn: psycopg.Connection, clean: None
) -> None:
    conn.execute("select cache.put(key => 'x', value => '1')")
    conn.execute("select cache.put(key => 'y', value => '2')")
    conn.execute("select cache.invalidate(key => 'x', reason => 'changed')")
    assert stat(conn, "stale_overdue") == 0
    conn.execute(
        "update cache.entries set invalidated_at = now() - interval '2 minutes' where key = 'x'"
    )
    assert stat(conn, "stale_overdue") == 1
    assert conn.execute(
        "select value from cache.stats(stale_after => '5 minutes') where metric = 'stale_overdue'"
    ).fetchone() == (0,)


def test_report_reads_rejects_bad_counts(conn: psycopg.Connection) -> None:
    for counts in ("[1]", '{"t": 3}', '{"t": {"miss": -1}}', '{"t": {"miss": "x"}}'):
        with pytest.raises(psycopg.Error) as err:
            conn.execute("select cache.report_reads(pool => 'p', counts => %s::jsonb)", (counts,))
        assert err.value.diag.sqlstate == "22023", counts
