"""W5 held xmin: a transaction holds its snapshot open while the queue churns.

A producer thread enqueues ``RATE`` jobs/s (batches of 50); one consumer claims 10 at a time
and completes them, timing every claim statement. Phases: ``before`` (no old snapshot),
``during`` (a REPEATABLE READ transaction in the same database holds its snapshot: deleted
jobs cannot be pruned, so claims walk past their index entries), ``after`` (the snapshot is
gone). Raw and andal (its SQL functions through psycopg) one after the other. Reported: claim
p50/p99 per phase.
"""

from __future__ import annotations

import threading
import time

import psycopg
from psycopg.types.json import Jsonb

from . import systems
from .common import Config, log, percentile
from .env import Env

WORKLOAD = "W5"
RATE = 1000.0
BATCH = 10

ANDAL_CLAIM = (
    "select c.job_id, c.token from queue.claim(worker => 'w5', queues => %s::text[],"
    " batch => %s::int) as c"
)
ANDAL_COMPLETE = (
    "select count(*) from queue.complete_many(job_ids => %s::bigint[], tokens => %s::uuid[])"
)
HOLD = {"raw": "select count(*) from bench_jobs", "andal": "select count(*) from queue.jobs"}


def run(cfg: Config, env: Env) -> None:
    phases = (
        [("before", 2.0), ("during", 4.0), ("after", 2.0)]
        if cfg.quick
        else [("before", 10.0), ("during", 60.0), ("after", 20.0)]
    )
    reps = 1  # the 60 s hold is the workload: one repetition per system (time budget)
    res = cfg.results
    for system in ("raw", "andal"):
        for rep in range(reps):
            out = _once(env, system, phases)
            log(
                f"W5 {system} rep {rep + 1}: "
                + ", ".join(
                    f"{ph} p50 {percentile(v, 50):.2f} / p99 {percentile(v, 99):.2f} ms "
                    f"({len(v) * BATCH / dur:,.0f} claimed/s)"
                    for (ph, dur), v in zip(phases, out.values(), strict=True)
                )
            )
            for (ph, _dur), lat in zip(phases, out.values(), strict=True):
                for p in (50, 99):
                    res.add(
                        WORKLOAD,
                        system,
                        f"{ph} held snapshot",
                        f"claim p{p}",
                        "ms",
                        [percentile(lat, p)],
                        claims=len(lat),
                    )


def _producer(dsn: str, system: str, stop: threading.Event) -> None:
    chunk = 50
    with psycopg.connect(dsn, autocommit=True) as conn:
        start = time.perf_counter()
        i = 0
        while not stop.is_set():
            delay = start + i * chunk / RATE - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            payloads = [Jsonb({"n": i * chunk + k}) for k in range(chunk)]
            if system == "raw":
                conn.execute(
                    "insert into bench_jobs (payload) select * from unnest(%s::jsonb[])",
                    (payloads,),
                )
            else:
                conn.execute(
                    "select count(*) from queue.enqueue_many(payloads => %s::jsonb[],"
                    " queue => %s::text)",
                    (payloads, systems.QUEUE),
                )
            i += 1


def _once(env: Env, system: str, phases: list[tuple[str, float]]) -> dict[str, list[float]]:
    dsn = env.dsn(system)
    systems.reset(system, dsn)
    systems.load(system, dsn, 2_000)  # a small standing backlog
    stop = threading.Event()
    prod = threading.Thread(target=_producer, args=(dsn, system, stop), daemon=True)
    out: dict[str, list[float]] = {}
    holder = psycopg.connect(dsn)
    with psycopg.connect(dsn, autocommit=True) as conn:
        prod.start()
        try:
            for phase, seconds in phases:
                if phase == "during":
                    holder.execute("set transaction isolation level repeatable read")
                    holder.execute(HOLD[system]).fetchone()  # takes and keeps the snapshot
                lat: list[float] = []
                end = time.perf_counter() + seconds
                while time.perf_counter() < end:
                    t0 = time.perf_counter()
                    if system == "raw":
                        rows = conn.execute(
                            systems.RAW_CLAIM_PY, {"batch": BATCH, "worker": "w5"}
                        ).fetchall()
                    else:
                        rows = conn.execute(ANDAL_CLAIM, ([systems.QUEUE], BATCH)).fetchall()
                    lat.append((time.perf_counter() - t0) * 1000.0)
                    if not rows:
                        time.sleep(0.002)
                        continue
                    ids, toks = [r[0] for r in rows], [r[1] for r in rows]
                    if system == "raw":
                        conn.execute(systems.RAW_COMPLETE_MANY_PY, (ids, toks))
                    else:
                        conn.execute(ANDAL_COMPLETE, (ids, toks)).fetchone()
                if phase == "during":
                    holder.rollback()
                out[phase] = lat
        finally:
            stop.set()
            prod.join(5)
            holder.close()
    return out
