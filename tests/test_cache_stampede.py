"""A stampede of readers on one expired key yields exactly one refresh job; the
readers are served the stale value, flagged, meanwhile. 50 real concurrent sessions."""

from __future__ import annotations

import threading

import psycopg

from andal.cache import Cache

READERS = 50
QUEUE = "andal.cache_refresh"


def test_fifty_readers_of_an_expired_key_make_one_refresh_job(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as db:
        db.execute("select cache.put(key => 'hot', value => '{\"n\": 1}'::jsonb)")
        db.execute(
            "update cache.entries set expires_at = now() - interval '1 second' where key = 'hot'"
        )
        conns = [psycopg.connect(dsn, autocommit=True) for _ in range(READERS)]
        try:
            start = threading.Barrier(READERS)
            answers: list[tuple] = []
            errors: list[BaseException] = []

            def read(conn: psycopg.Connection) -> None:
                try:
                    start.wait(timeout=30)
                    row = conn.execute(
                        "select value, stale from cache.get(key => 'hot', refresh_queue => %s)",
                        (QUEUE,),
                    ).fetchone()
                    answers.append(row)
                except BaseException as exc:  # noqa: BLE001 - reported below
                    errors.append(exc)

            threads = [threading.Thread(target=read, args=(c,)) for c in conns]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=60)
        finally:
            for c in conns:
                c.close()
        assert errors == []
        assert len(answers) == READERS
        assert all(a == ({"n": 1}, True) for a in answers), "all served stale, flagged"
        jobs = db.execute(
            "select payload, dedup_key from queue.jobs where queue = %s", (QUEUE,)
        ).fetchall()
        assert jobs == [({"key": "hot"}, "hot")], "exactly one refresh job"

        # The one refresh job runs (a worker with the loader), then readers get fresh data.
        cache = Cache(dsn, loader=lambda key: {"n": 2}, follow=False)
        try:
            job_id, token, payload = db.execute(
                "select job_id, token, payload from queue.claim(worker => 'w', queues => %s)",
                ([QUEUE],),
            ).fetchone()
            cache.refresh_job({"key": payload["key"]})
            db.execute("select queue.complete(job_id => %s, token => %s)", (job_id, token))
            row = db.execute(
                "select value, stale from cache.get(key => 'hot', refresh_queue => %s)", (QUEUE,)
            ).fetchone()
            assert row == ({"n": 2}, False)
            assert (
                db.execute("select count(*) from queue.jobs where queue = %s", (QUEUE,)).fetchone()[
                    0
                ]
                == 0
            ), "a fresh key enqueues nothing"
        finally:
            cache.close()


def test_stampede_through_one_process_cache(dsn: str) -> None:
    """The same through andal.Cache with serve_stale: 50 threads, the loader is never called
    by a reader, one job is enqueued."""
    calls: list[str] = []
    with psycopg.connect(dsn, autocommit=True) as db:
        db.execute("select cache.put(key => 'hot2', value => '\"old\"'::jsonb)")
        db.execute("select cache.invalidate(key => 'hot2')")
        cache = Cache(
            dsn,
            loader=lambda k: calls.append(k) or "new",
            serve_stale=True,
            refresh_queue=QUEUE,
            pool_size=10,
            follow=False,
        )
        try:
            start = threading.Barrier(READERS)
            got: list = []

            def read() -> None:
                start.wait(timeout=30)
                got.append(cache.lookup("hot2", job_type="report"))

            threads = [threading.Thread(target=read) for _ in range(READERS)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=60)
            assert len(got) == READERS
            assert {(g.value, g.stale, g.source) for g in got} == {("old", True, "stale")}
            assert calls == []
            assert cache.stats()["by_job_type"]["report"] == {"stale_hit": READERS}
            assert (
                db.execute(
                    "select count(*) from queue.jobs where queue = %s and dedup_key = 'hot2'",
                    (QUEUE,),
                ).fetchone()[0]
                == 1
            )
        finally:
            cache.close()
