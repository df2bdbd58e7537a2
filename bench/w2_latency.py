"""W2 pickup latency: idle workers; a producer enqueues jobs one per transaction at 200/s.

Latency = handler start minus the producer's clock just before the enqueue call (so it includes
the enqueue's own commit). Every system runs one worker process with 4 slots, LISTEN on and a
1 s poll: raw-py is the raw LISTEN + claim loop baseline.
"""

from __future__ import annotations

import time

from . import procs, systems
from .common import Config, log, median, percentile
from .env import Env
from .producers import Producer

WORKLOAD = "W2"
RATE = 200.0
CASE = "200 jobs/s"


def run(cfg: Config, env: Env) -> None:
    n = cfg.size(2_000, 200)
    res = cfg.results
    samples: dict[str, list[list[float]]] = {lbl: [] for lbl in env.py_labels}
    for rep in range(cfg.reps):
        for label in env.py_labels:
            try:
                samples[label].append(_once(env, label, n))
            except Exception as exc:
                res.note(f"W2 {label} rep {rep + 1} failed: {exc}")
                continue
            s = samples[label][-1]
            log(
                f"W2 {label} rep {rep + 1}: p50 {percentile(s, 50):.2f} ms, "
                f"p99 {percentile(s, 99):.2f} ms ({len(s)}/{n} jobs)"
            )
    for label, reps in samples.items():
        if not reps:
            continue
        pooled = sorted(x for s in reps for x in s)
        step = max(1, len(pooled) // 2000)
        extra = {
            "samples": pooled[::step],
            "p50": median([percentile(s, 50) for s in reps]),
            "p99": median([percentile(s, 99) for s in reps]),
            "jobs": n,
        }
        for p in (50, 95, 99):
            res.add(WORKLOAD, label, CASE, f"p{p}", "ms", [percentile(s, p) for s in reps], **extra)
            extra = {}


def _once(env: Env, label: str, n: int) -> list[float]:
    system = procs.PY_SYSTEMS[label]
    dsn = env.dsn(system)
    systems.reset(system, dsn)
    systems.vacuum(system, dsn)
    opts = {"batch": 4, "concurrency": 4, "poll": 1.0}
    with (
        procs.Pool(label, dsn, 1, opts, latencies=True).start() as pool,
        Producer(label, dsn) as prod,
    ):
        pool.go()
        time.sleep(1.0)  # idle: listeners are in place, pools warm
        start = time.perf_counter()
        for i in range(n):
            delay = start + i / RATE - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            prod.one({"t": time.time(), "n": i})
        got = pool.latencies(n, timeout=10.0)
        pool.stop(grace=2.0)
    if len(got) < n:
        raise RuntimeError(f"only {len(got)} of {n} jobs were picked up")
    return [x * 1000.0 for x in got]
