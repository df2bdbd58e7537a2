"""W6 cache: andal's cache against Redis and a raw UNLOGGED key-value table, same run.

Per operation, one client, small JSON values (about 120 bytes), 1,000 keys:

* ``local hit``: ``andal.cache.Cache.get`` served from the process's local cache.
* ``shared hit``: one read of the shared cache: ``cache.get`` (SQL, through psycopg) against
  ``select value from kv where key = $1`` (raw-kv) and Redis GET (redis-py); and
  ``Cache.lookup`` with the local copy dropped first (``Cache API``).
* ``miss with loader``: ``Cache.get(key, loader)`` of a key nobody has: shared read, loader,
  refill (``cache.put(if_version => ...)``).
* ``put``: ``cache.put`` against an upsert into the raw table and Redis SET.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from .common import Config, has_module, log
from .env import Env

WORKLOAD = "W6"
KEYS = 1000
VALUE = {"name": "benchmark value", "payload": "x" * 80, "n": 42}

REDIS_PREFIX = "andal-bench:k"  # the local Redis may be shared: own key space, deleted after

KV_SCHEMA = "create unlogged table if not exists bench_kv (key text primary key, value jsonb)"
KV_GET = "select value from bench_kv where key = %s"
KV_PUT = (
    "insert into bench_kv (key, value) values (%s, %s)"
    " on conflict (key) do update set value = excluded.value"
)
ANDAL_GET = "select g.value, g.version, g.stale from cache.get(key => %s::text) as g"
ANDAL_PUT = "select cache.put(key => %s::text, value => %s::jsonb)"


def _per_op(fn: Callable[[int], Any], ops: int) -> float:
    fn(0)  # warm up: prepared statements, connections
    start = time.perf_counter()
    for i in range(ops):
        fn(i)
    return (time.perf_counter() - start) / ops * 1e6


def run(cfg: Config, env: Env) -> None:
    ops = cfg.size(5_000, 300)
    local_ops = cfg.size(200_000, 10_000)
    res = cfg.results
    andal_dsn, raw_dsn = env.dsn("andal"), env.dsn("raw")
    with env.connect("raw") as conn:
        conn.execute(KV_SCHEMA)
        conn.execute("truncate bench_kv")
        conn.execute(
            "insert into bench_kv select 'k' || g, %s from generate_series(0, %s) as g",
            (Jsonb(VALUE), KEYS - 1),
        )
        conn.execute("vacuum analyze bench_kv")
    with env.connect("andal") as conn:
        conn.execute(
            "select count(cache.put(key => 'k' || g, value => %s::jsonb))"
            " from generate_series(0, %s) as g",
            (Jsonb(VALUE), KEYS - 1),
        )
        conn.execute("vacuum analyze cache.entries")

    redis_client = _redis(res)
    rkey = [f"{REDIS_PREFIX}{i}" for i in range(KEYS)]
    cache_cls = _cache_class(res)
    runs: dict[tuple[str, str], list[float]] = {}

    def add(system: str, case: str, value: float) -> None:
        runs.setdefault((system, case), []).append(value)

    for rep in range(cfg.reps):
        with (
            psycopg.connect(andal_dsn, autocommit=True) as a,
            psycopg.connect(raw_dsn, autocommit=True) as r,
        ):
            add("andal", "shared hit", _per_op(
                lambda i: a.execute(ANDAL_GET, (f"k{i % KEYS}",)).fetchone(), ops))  # fmt: skip
            add("raw-kv", "shared hit", _per_op(
                lambda i: r.execute(KV_GET, (f"k{i % KEYS}",)).fetchone(), ops))  # fmt: skip
            add("andal", "put", _per_op(
                lambda i: a.execute(ANDAL_PUT, (f"k{i % KEYS}", Jsonb(VALUE))), ops))  # fmt: skip
            add("raw-kv", "put", _per_op(
                lambda i: r.execute(KV_PUT, (f"k{i % KEYS}", Jsonb(VALUE))), ops))  # fmt: skip
        if redis_client is not None:
            blob = json.dumps(VALUE)
            for i in range(KEYS):
                redis_client.set(f"{REDIS_PREFIX}{i}", blob)
            add("redis", "shared hit", _per_op(
                lambda i: json.loads(redis_client.get(rkey[i % KEYS])), ops))  # fmt: skip
            add("redis", "put", _per_op(
                lambda i: redis_client.set(rkey[i % KEYS], json.dumps(VALUE)), ops))  # fmt: skip
            redis_client.delete(*rkey)
        if cache_cls is not None:
            try:
                _cache_api(cache_cls, andal_dsn, ops, local_ops, rep, add)
            except Exception as exc:
                res.note(f"W6 andal.cache.Cache rep {rep + 1} failed: {exc!r}")
        log(
            f"W6 rep {rep + 1}: "
            + ", ".join(f"{s} {c} {v[-1]:.1f} µs" for (s, c), v in runs.items())
        )
    for (system, case), vals in runs.items():
        res.add(WORKLOAD, system, case, "µs/op", "µs", vals)


def _cache_api(
    cache_cls: Any, dsn: str, ops: int, local_ops: int, rep: int, add: Callable[..., None]
) -> None:
    with cache_cls(dsn) as cache:
        deadline = time.monotonic() + 10
        while not cache.live and time.monotonic() < deadline:
            time.sleep(0.02)
        if not cache.live:
            raise RuntimeError("the cache's follower did not confirm the log within 10 s")
        cache.get("k0")  # into the local cache
        add("andal", "local hit", _per_op(lambda i: cache.get("k0"), local_ops))

        def shared(i: int) -> Any:
            cache.clear()
            return cache.lookup(f"k{i % KEYS}")

        add("andal", "shared hit (Cache API)", _per_op(shared, ops))
        loaded = [0]

        def loader(key: str) -> Any:
            loaded[0] += 1
            return VALUE

        add("andal", "miss with loader (Cache API)", _per_op(
            lambda i: cache.get(f"miss-{rep}-{i}", loader), ops))  # fmt: skip
        add("andal", "put (Cache API)", _per_op(
            lambda i: cache.put(f"k{i % KEYS}", VALUE), ops))  # fmt: skip


def _redis(res: Any) -> Any:
    if not has_module("redis"):
        res.note("W6: redis-py is not installed (bench extra): Redis skipped")
        return None
    import redis

    try:
        client = redis.Redis(host="127.0.0.1", port=6379)
        client.ping()
        return client
    except Exception as exc:
        res.note(f"W6: Redis at 127.0.0.1:6379 does not answer ({exc}): skipped")
        return None


def _cache_class(res: Any) -> Any:
    try:
        from andal.cache import Cache
    except ImportError as exc:
        # TODO(cache): the local/shared/miss cases need andal.cache.Cache (cache issue).
        res.note(f"W6: andal.cache.Cache is not available ({exc}): Cache API cases skipped")
        return None
    return Cache
