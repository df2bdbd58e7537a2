"""W4 backlog: claim throughput with 10k, 100k and 1M ready jobs, and with 1M jobs scheduled
in the future plus 10k ready.

The backlog is inserted directly (one ``insert ... select``, the fastest way to a million rows)
and analyzed; each repetition tops it up to its size, vacuums, checkpoints, then drains K jobs
with pgbench (4 clients, claim batch 10 + complete_many), raw and andal side by side.
"""

from __future__ import annotations

import math

from . import systems
from .common import Config, log, run_pgbench
from .env import Env

WORKLOAD = "W4"
CLIENTS = 4
BATCH = 10


def _label(n: int) -> str:
    return f"{n // 1_000_000}M" if n >= 1_000_000 else f"{n // 1000}k"


INSERT = {
    "raw": (
        "insert into bench_jobs (payload, available_at)"
        " select jsonb_build_object('n', g), now() + %s::interval"
        " from generate_series(1, %s) as g"
    ),
    "andal": (
        "insert into queue.jobs (queue, payload, max_attempts, available_at)"
        f" select '{systems.QUEUE}', jsonb_build_object('n', g), 5, now() + %s::interval"
        " from generate_series(1, %s) as g"
    ),
}
READY = {
    "raw": "select count(*) from bench_jobs where status = 'pending' and available_at <= now()",
    "andal": "select count(*) from queue.jobs where status = 'pending' and available_at <= now()",
}


def run(cfg: Config, env: Env) -> None:
    if not env.pgbench:
        cfg.results.note("W4 needs pgbench: skipped")
        return
    if cfg.quick:
        cases = [(1_000, 0), (5_000, 0), (20_000, 0), (1_000, 20_000)]
        k = 300
    else:
        cases = [(10_000, 0), (100_000, 0), (1_000_000, 0), (10_000, 1_000_000)]
        k = 5_000
    res = cfg.results
    for ready, scheduled in cases:
        name = f"{_label(ready)} ready"
        if scheduled:
            name = f"{_label(scheduled)} scheduled + {name}"
        runs: dict[str, list[float]] = {"raw": [], "andal": []}
        for system in runs:
            dsn = env.dsn(system)
            systems.reset(system, dsn)
            with env.connect(system) as conn:
                if scheduled:
                    conn.execute(INSERT[system], ("1 day", scheduled))
        for rep in range(cfg.reps):
            for system in runs:
                dsn = env.dsn(system)
                with env.connect(system) as conn:
                    have = int(conn.execute(READY[system]).fetchone()[0])
                    if have < ready:
                        conn.execute(INSERT[system], ("0", ready - have))
                systems.vacuum(system, dsn)
                with env.connect(system) as conn:
                    # a million-row load leaves a checkpoint running (max_wal_size): its I/O
                    # and full-page images would land in the timed drain, for both systems
                    conn.execute("checkpoint")
                per_client = math.ceil(k / (CLIENTS * BATCH))
                r = run_pgbench(
                    dsn,
                    systems.pgbench_drain_script(system, BATCH),
                    clients=CLIENTS,
                    transactions=per_client,
                    variables={"batch": BATCH},
                )
                runs[system].append(r.tps * BATCH)
            log(
                f"W4 {name} rep {rep + 1}: "
                + ", ".join(f"{s} {v[-1]:,.0f}/s" for s, v in runs.items())
            )
        for system, vals in runs.items():
            res.add(
                WORKLOAD,
                f"{system}-sql",
                name,
                "jobs/s",
                "jobs/s",
                vals,
                ready=ready,
                scheduled=scheduled,
                drained=k,
                clients=CLIENTS,
                batch=BATCH,
            )
