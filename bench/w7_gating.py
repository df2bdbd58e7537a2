"""W7 category gating: N jobs over 1,000 categories with limit 1, against the same jobs ungated.

Jobs are inserted directly into ``queue.jobs`` (categories interleaved: job g belongs to
category g mod 1000) after ``queue.set_category_limit`` made the 1,000 categories with
``max_running => 1``; the ungated run inserts the same jobs without a category. Drained by
pgbench (claim batch 10 + complete_many) and by ``andal.Worker`` processes (batch 10, 10
slots), 1 and 4 workers. The raw queue (no gating) drains the same jobs as a reference.
"""

from __future__ import annotations

import math

from . import procs, systems
from .common import Config, log, run_pgbench
from .env import Env
from .w1_drain import pgbench_drain

WORKLOAD = "W7"
CATEGORIES = 1000
BATCH = 10

GATED_INSERT = (
    "insert into queue.jobs (queue, category, payload, max_attempts)"
    f" select '{systems.QUEUE}', 'cat-' || (g %% {CATEGORIES}), jsonb_build_object('n', g), 5"
    " from generate_series(1, %s) as g"
)
UNGATED_INSERT = (
    "insert into queue.jobs (queue, payload, max_attempts)"
    f" select '{systems.QUEUE}', jsonb_build_object('n', g), 5"
    " from generate_series(1, %s) as g"
)
LIMITS = (
    "select count(queue.set_category_limit(category => 'cat-' || g, max_running => 1))"
    f" from generate_series(0, {CATEGORIES - 1}) as g"
)


def _prepare(env: Env, n: int, gated: bool) -> None:
    dsn = env.dsn("andal")
    systems.reset("andal", dsn)
    with env.connect("andal") as conn:
        conn.execute(LIMITS)
        conn.execute(GATED_INSERT if gated else UNGATED_INSERT, (n,))
    systems.vacuum("andal", dsn)
    with env.connect("andal") as conn:
        conn.execute("vacuum (analyze) queue.categories")


def run(cfg: Config, env: Env) -> None:
    n = cfg.size(10_000, 500)
    workers = [1, 4]
    res = cfg.results
    for w in workers:
        runs: dict[tuple[str, str], list[float]] = {}
        for rep in range(cfg.reps):
            for gated in (False, True):
                kind = "gated" if gated else "ungated"
                if env.pgbench:
                    _prepare(env, n, gated)
                    d = pgbench_drain(env, "andal", n, w, BATCH)
                    rate = n / d["seconds"]
                    runs.setdefault(("andal-sql", kind), []).append(rate)
                _prepare(env, n, gated)
                out = procs.drain(
                    "andal-py",
                    env.dsn("andal"),
                    n,
                    w,
                    {"batch": BATCH, "concurrency": BATCH},
                    timeout=60 + n / 50,
                )
                runs.setdefault(("andal-py", kind), []).append(out["jobs_per_s"])
            if env.pgbench:
                dsn = env.dsn("raw")
                systems.reset("raw", dsn)
                systems.load("raw", dsn, n)
                r = run_pgbench(
                    dsn,
                    systems.pgbench_drain_script("raw", BATCH),
                    clients=w,
                    transactions=math.ceil(n / (w * BATCH)),
                    variables={"batch": BATCH},
                )
                runs.setdefault(("raw-sql", "ungated"), []).append(
                    r.tps * n / (math.ceil(n / (w * BATCH)) * w)
                )
            log(
                f"W7 workers={w} rep {rep + 1}: "
                + ", ".join(f"{s} {k} {v[-1]:,.0f}/s" for (s, k), v in runs.items())
            )
        for (system, kind), vals in runs.items():
            res.add(WORKLOAD, system, f"{kind}, workers={w}", "jobs/s", "jobs/s", vals, jobs=n)
