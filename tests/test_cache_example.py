"""The worked example of docs/cache.md, run for real: an andal.Worker whose handlers read
customers through a local cache; a transactional handler changes a customer, writes the
cache through and enqueues the dependent invoice job in the same transaction."""

from __future__ import annotations

from typing import Any

import psycopg
from conftest import wait_for

import andal
from andal.cache import Cache, register_refresh


def test_worked_example(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as db:
        db.execute("create table customers (id int primary key, name text, tier text)")
        db.execute("create table invoices (job_id bigint primary key, customer int, rate numeric)")
        db.execute("insert into customers values (42, 'Ana', 'silver')")
        # Invoices only read the customer: completing one must not invalidate it.
        db.execute(
            "select * from queue.configure_queue(queue => 'invoice', cache_policy => 'none')"
        )

    # -- the example (docs/cache.md) -------------------------------------------------------
    def load_customer(key: str) -> dict[str, Any] | None:
        """The primary store: a customer by cache key 'customer:<id>'."""
        with psycopg.connect(dsn) as conn:
            row = conn.execute(
                "select id, name, tier from customers where id = %s",
                (int(key.removeprefix("customer:")),),
            ).fetchone()
        return None if row is None else {"id": row[0], "name": row[1], "tier": row[2]}

    cache = Cache(dsn, loader=load_customer, pool_name="billing", max_entries=50_000)
    registry = andal.Registry()
    rates = {"silver": 0.9, "gold": 0.8}

    @registry.handler("invoice")
    def invoice(job: andal.Job) -> dict:
        # min_version: never older than the change this job was enqueued after.
        customer = cache.get(job.cache_key, min_version=job.cache_version, job_type=job.queue)
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(
                "insert into invoices values (%s, %s, %s)",
                (job.id, customer["id"], rates[customer["tier"]]),
            )
        return {"rate": rates[customer["tier"]]}

    @registry.handler("customer.upgrade", transactional=True)
    def upgrade(job: andal.Job, conn: psycopg.Connection) -> None:
        row = conn.execute(
            "update customers set tier = 'gold' where id = %s returning id, name, tier",
            (job.payload["id"],),
        ).fetchone()
        key = f"customer:{row[0]}"
        # Write through before enqueueing the dependent job: it carries the new version.
        cache.put(key, {"id": row[0], "name": row[1], "tier": row[2]}, conn=conn)
        andal.enqueue(conn, {"reason": "upgrade"}, "invoice", cache_key=key)

    register_refresh(registry)  # andal.refresh: materialized-view refresh jobs
    worker = andal.Worker(dsn, registry, concurrency=4, poll=0.2)
    # --------------------------------------------------------------------------------------

    worker.start()
    try:
        with psycopg.connect(dsn, autocommit=True) as db:
            andal.enqueue(db, {}, "invoice", cache_key="customer:42")
            wait_for(
                lambda: db.execute("select count(*) from invoices").fetchone()[0] == 1,
                timeout=20,
            )
            assert cache.lookup("customer:42").source == "local", "the worker cached it"
            andal.enqueue(db, {"id": 42}, "customer.upgrade")
            wait_for(
                lambda: db.execute("select count(*) from invoices").fetchone()[0] == 2,
                timeout=20,
            )
            rates_seen = [r[0] for r in db.execute("select rate from invoices order by job_id")]
            assert [float(r) for r in rates_seen] == [0.9, 0.8], "the invoice saw the upgrade"
            stats = cache.stats()
            assert stats["pool"] == "billing" and "invoice" in stats["by_job_type"]
    finally:
        worker.stop()
        worker.join(30)
        cache.close()
