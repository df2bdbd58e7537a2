"""W3 enqueue: one job per transaction, and 100 jobs per transaction; one client.

SQL level: pgbench scripts (raw insert vs ``queue.enqueue`` / ``queue.enqueue_many``). Python:
raw-py (psycopg insert), andal-py (``andal.enqueue`` / ``andal.enqueue_many`` on one
connection), procrastinate (``defer`` / ``batch_defer``), pgqueuer (``Queries.enqueue``).
"""

from __future__ import annotations

import time

from . import procs, systems
from .common import Config, log, run_pgbench
from .env import Env
from .producers import Producer

WORKLOAD = "W3"


def run(cfg: Config, env: Env) -> None:
    single = cfg.size(5_000, 300)
    batches = cfg.size(200, 5)
    res = cfg.results
    cases = [("1 per tx", 1, single), ("100 per tx", 100, batches)]
    for name, per_tx, txs in cases:
        runs: dict[str, list[float]] = {}
        for rep in range(cfg.reps):
            if env.pgbench:
                for system in ("raw", "andal"):
                    dsn = env.dsn(system)
                    systems.reset(system, dsn)
                    script = systems.enqueue_script(system, per_tx)
                    r = run_pgbench(dsn, script, clients=1, transactions=txs)
                    runs.setdefault(f"{system}-sql", []).append(r.tps * per_tx)
            for label in env.py_labels:
                try:
                    runs.setdefault(label, []).append(_py(env, label, per_tx, txs))
                except Exception as exc:
                    res.note(f"W3 {label} {name} rep {rep + 1} failed: {exc}")
            log(
                f"W3 {name} rep {rep + 1}: "
                + ", ".join(f"{k} {v[-1]:,.0f}/s" for k, v in runs.items() if v)
            )
        for system, vals in runs.items():
            res.add(WORKLOAD, system, name, "jobs/s", "jobs/s", vals, per_tx=per_tx)


def _py(env: Env, label: str, per_tx: int, txs: int) -> float:
    system = procs.PY_SYSTEMS[label]
    dsn = env.dsn(system)
    systems.reset(system, dsn)
    with Producer(label, dsn, notify=False) as prod:
        if per_tx == 1:
            prod.one({"n": 0})  # warm up (prepared statements, pools)
            start = time.perf_counter()
            for i in range(txs):
                prod.one({"n": i})
        else:
            payloads = [{"n": i} for i in range(per_tx)]
            prod.many(payloads)
            start = time.perf_counter()
            for _ in range(txs):
                prod.many(payloads)
        seconds = time.perf_counter() - start
    return txs * per_tx / seconds
