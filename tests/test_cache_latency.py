"""Read latencies of andal.Cache: local hit, shared hit (cache.get), miss (cache.get + the
loader + the refill). Printed in microseconds (median and p99); the bounds asserted are loose,
the figures in docs/cache.md come from this test run on an idle machine."""

from __future__ import annotations

import json
import statistics
import time

import psycopg
from conftest import wait_for

from andal.cache import Cache

N = 2000


def _percentiles(samples: list[float]) -> dict[str, float]:
    samples = sorted(samples)
    return {
        "median_us": round(statistics.median(samples) * 1e6, 1),
        "p99_us": round(samples[int(len(samples) * 0.99) - 1] * 1e6, 1),
    }


def test_read_latencies(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as db:
        for i in range(N):
            db.execute(
                "select cache.put(key => %s, value => %s::jsonb)",
                (f"lat:{i}", json.dumps({"id": i, "name": f"customer {i}", "tier": "gold"})),
            )
    loader = lambda key: {"id": key, "name": "loaded", "tier": "silver"}  # noqa: E731
    with Cache(dsn, loader=loader, max_entries=N * 2) as cache:
        wait_for(cache.live, timeout=10)
        shared_hit = []
        for i in range(N):
            t = time.perf_counter()
            found = cache.lookup(f"lat:{i}")
            shared_hit.append(time.perf_counter() - t)
            assert found.source == "shared"
        local_hit = []
        for _ in range(5):
            for i in range(N):
                t = time.perf_counter()
                found = cache.lookup(f"lat:{i}")
                local_hit.append(time.perf_counter() - t)
                assert found.source == "local"
        miss = []
        for i in range(N):
            t = time.perf_counter()
            found = cache.lookup(f"lat:miss:{i}")
            miss.append(time.perf_counter() - t)
            assert found.source == "loader"
    report = {
        "local_hit": _percentiles(local_hit),
        "shared_hit": _percentiles(shared_hit),
        "miss": _percentiles(miss),
    }
    print("\nlatency:", json.dumps(report))
    assert report["local_hit"]["median_us"] < 500
    assert report["shared_hit"]["median_us"] < 20_000
    assert report["miss"]["median_us"] < 50_000
