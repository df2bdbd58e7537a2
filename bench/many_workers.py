"""Many workers: claim + complete of one job per claim from 1, 4, 8 and 16 pgbench clients at
once (W1's SQL drain scripts, ``systems.pgbench_drain_script``), raw against andal, on the
same number of preloaded jobs."""

from __future__ import annotations

from . import systems
from .common import Config, log
from .env import Env
from .w1_drain import pgbench_drain

WORKLOAD = "WORKERS"


def run(cfg: Config, env: Env) -> None:
    if not env.pgbench:
        return
    n = cfg.size(20_000, 400)
    clients = [1, 4] if cfg.quick else [1, 4, 8, 16]
    for c in clients:
        runs: dict[str, list[float]] = {"raw": [], "andal": []}
        for rep in range(cfg.reps):
            order = ["raw", "andal"] if rep % 2 == 0 else ["andal", "raw"]
            for system in order:
                dsn = env.dsn(system)
                systems.reset(system, dsn)
                systems.load(system, dsn, n)
                runs[system].append(n / pgbench_drain(env, system, n, c, 1)["seconds"])
            log(f"{WORKLOAD} {c} workers rep {rep + 1}: "
                + ", ".join(f"{k} {v[-1]:,.0f}/s" for k, v in runs.items()))  # fmt: skip
        for system, vals in runs.items():
            cfg.results.add(WORKLOAD, f"{system}-sql", f"{c} workers", "jobs/s", "jobs/s", vals,
                            clients=c)  # fmt: skip
