"""Version order, end to end: 1,000 pairs of dependent jobs over 4 workers, each with its own
local cache; the second job of a pair must never read data older than the first one wrote.

Job A of a pair increments a counter in the primary store and completes in the same
transaction (its queue's cache_policy rewrites or invalidates the key), then enqueues job B
with the same cache_key, at a higher priority so that it runs next. B carries the key's
version after A's change (cache_version) and reads the key through its worker's local cache
with min_version = cache_version. A stale read is a value below the one A wrote. Workers read
every key through their caches all along, so their local copies are usually one change
behind; half of them do not listen and only poll, twice a second.
"""

from __future__ import annotations

import random
import threading
import time

import psycopg
from psycopg.rows import dict_row

from andal.cache import Cache

PAIRS = 1000
KEYS = 20
WORKERS = 4

CLAIM = (
    "select job_id, queue, payload, token, cache_key, cache_version"
    " from queue.claim(worker => %s, queues => %s, batch => 1)"
)


def test_dependent_jobs_never_read_stale(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as db:
        db.execute("create table primary_store (key text primary key, n int not null)")
        db.execute(
            "insert into primary_store select 'acct:' || g, 0 from generate_series(0, %s) g",
            (KEYS - 1,),
        )
        db.execute("select * from queue.configure_queue('pair_a_rw', cache_policy => 'rewrite')")
        db.execute(
            "select * from queue.configure_queue('pair_a_inv', cache_policy => 'invalidate')"
        )
        rng = random.Random(3)
        for i in range(PAIRS):
            key = f"acct:{rng.randrange(KEYS)}"
            db.execute(
                "select queue.enqueue(payload => %s::jsonb, queue => %s, cache_key => %s)",
                ('{"kind": "A"}', "pair_a_rw" if i % 2 else "pair_a_inv", key),
            )

        stats = {"stale": 0, "b_done": 0, "a_done": 0, "min_version_refetch": 0}
        lock = threading.Lock()
        done = threading.Event()
        errors: list[BaseException] = []

        def worker(n: int) -> None:
            name = f"w{n}"
            listens = n % 2 == 0
            with (
                psycopg.connect(dsn, autocommit=True) as conn,
                Cache(dsn, follow=listens, pool_size=2, pool_name=f"pool-{n}") as cache,
            ):

                def load(key: str) -> dict:
                    row = conn.execute("select n from primary_store where key = %s", (key,))
                    return {"n": row.fetchone()[0]}

                idle_since = None
                next_poll = 0.0
                while not done.is_set():
                    if not listens and time.monotonic() >= next_poll:
                        # A slow poller: its local copies lag the log by up to half a second.
                        cache.poll(conn)
                        next_poll = time.monotonic() + 0.5
                    with conn.cursor(row_factory=dict_row) as cur:
                        job = cur.execute(
                            CLAIM, (name, ["pair_a_rw", "pair_a_inv", "pair_b"])
                        ).fetchone()
                    if job is None:
                        idle_since = idle_since or time.monotonic()
                        if time.monotonic() - idle_since > 30:
                            raise AssertionError("no job for 30 s")
                        time.sleep(0.002)
                        continue
                    idle_since = None
                    key = job["cache_key"]
                    if job["queue"] == "pair_b":
                        before = cache.stats()["by_job_type"].get("pair_b", {}).get("refetch", 0)
                        seen = cache.get(
                            key, load, min_version=job["cache_version"], job_type="pair_b"
                        )
                        after = cache.stats()["by_job_type"].get("pair_b", {}).get("refetch", 0)
                        conn.execute(
                            "select queue.complete(job_id => %s, token => %s)",
                            (job["job_id"], job["token"]),
                        )
                        with lock:
                            stats["b_done"] += 1
                            stats["min_version_refetch"] += after - before
                            if seen["n"] < job["payload"]["expect"]:
                                stats["stale"] += 1
                            if stats["b_done"] == PAIRS:
                                done.set()
                    else:
                        # Read first: the local copy is about to become one change behind.
                        cache.get(key, load, job_type="pair_a")
                        with conn.transaction():
                            n_new = conn.execute(
                                "update primary_store set n = n + 1 where key = %s returning n",
                                (key,),
                            ).fetchone()[0]
                            conn.execute(
                                "select queue.complete(job_id => %s, token => %s,"
                                " result => %s::jsonb)",
                                (job["job_id"], job["token"], f'{{"n": {n_new}}}'),
                            )
                            conn.execute(
                                "select queue.enqueue(payload => %s::jsonb, queue => 'pair_b',"
                                " cache_key => %s, priority => 1)",
                                (f'{{"expect": {n_new}}}', key),
                            )
                        with lock:
                            stats["a_done"] += 1
                per_worker[name] = cache.stats()

        per_worker: dict = {}

        def run(n: int) -> None:
            try:
                worker(n)
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)
                done.set()

        threads = [threading.Thread(target=run, args=(n,)) for n in range(WORKERS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=240)
        assert errors == []
        assert stats["a_done"] == PAIRS and stats["b_done"] == PAIRS
        assert stats["stale"] == 0, per_worker
        # The test exercised what it claims: old local copies were refused by min_version.
        assert stats["min_version_refetch"] > 0
        final = dict(db.execute("select key, n from primary_store").fetchall())
        assert sum(final.values()) == PAIRS
