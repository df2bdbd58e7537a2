"""W1 drain: N no-op jobs preloaded, then timed until none is left.

SQL level (pgbench, claim transaction + complete transaction per script run): raw and andal at
1, 4 and 8 clients and batch 1, 10, 100. Python: raw-py (a psycopg SKIP LOCKED loop),
andal-py (``andal.Worker``, a plain no-op handler), andal-py-async (the same with an
``async def`` no-op handler), procrastinate and pgqueuer with 1 and 4 worker processes, each
claiming ``batch`` jobs at a time with ``batch`` slots (procrastinate has no batch fetch: it
runs at batch 1 only).

Every case drains 20,000 jobs except the Python systems at batch 1, which drain 5,000: at a few
hundred jobs/s per process (procrastinate, pgqueuer, the driver) 20,000 jobs × 3 repetitions ×
4 systems alone would take longer than the whole suite's 30 minutes, and the rate of a drain
is steady well before 5,000 jobs (one drain still lasts 4–21 s here).
"""

from __future__ import annotations

import math
from typing import Any

from . import procs, systems
from .common import Config, Probe, log, median, run_pgbench
from .env import Env

WORKLOAD = "W1"


def case(workers: int, batch: int) -> str:
    return f"workers={workers} batch={batch}"


def run(cfg: Config, env: Env) -> None:
    n = cfg.size(20_000, 400)
    n_py_batch1 = cfg.size(5_000, 400)
    batches = [1, 100] if cfg.quick else [1, 10, 100]
    sql_clients = [1, 4] if cfg.quick else [1, 4, 8]
    py_procs = [1] if cfg.quick else [1, 4]
    res = cfg.results

    if env.pgbench and _wanted(cfg, "sql"):
        for batch in batches:
            for clients in sql_clients:
                if not _case_wanted(cfg, clients, batch):
                    continue
                runs: dict[str, list[dict[str, float]]] = {"raw": [], "andal": []}
                for rep in range(cfg.reps):
                    for system in ("raw", "andal"):
                        runs[system].append(_pgbench_drain(env, system, n, clients, batch))
                    log(
                        f"W1 sql {case(clients, batch)} rep {rep + 1}: "
                        + ", ".join(
                            f"{s} {runs[s][-1]['jobs_per_s']:,.0f}/s" for s in ("raw", "andal")
                        )
                    )
                for system, rs in runs.items():
                    _record(res, f"{system}-sql", clients, batch, rs, n)
                    short = [int(r["short"]) for r in rs if r.get("short")]
                    if short:
                        res.note(
                            f"W1 {system}-sql {case(clients, batch)}: claims came back short "
                            f"while ready jobs were left in {len(short)} of {len(rs)} reps "
                            f"({', '.join(map(str, short))} of {n} jobs left after the planned "
                            "script runs; one more client drained them, its time counted)"
                        )

    for procs_n in py_procs:
        for batch in batches:
            if not _case_wanted(cfg, procs_n, batch):
                continue
            labels = [
                lbl for lbl in env.drain_labels if _applies(lbl, batch, cfg) and _wanted(cfg, lbl)
            ]
            if not labels:
                continue
            runs = {lbl: [] for lbl in labels}
            jobs = n_py_batch1 if batch == 1 else n
            for rep in range(cfg.reps):
                for label in labels:
                    try:
                        runs[label].append(_py_drain(env, label, jobs, procs_n, batch))
                    except Exception as exc:  # one system's failure must not end the run
                        res.note(f"W1 {label} {case(procs_n, batch)} rep {rep + 1} failed: {exc}")
                log(
                    f"W1 py {case(procs_n, batch)} rep {rep + 1}: "
                    + ", ".join(
                        f"{lbl} {runs[lbl][-1]['jobs_per_s']:,.0f}/s" for lbl in labels if runs[lbl]
                    )
                )
            for label, rs in runs.items():
                if rs:
                    _record(res, label, procs_n, batch, rs, jobs)


def _wanted(cfg: Config, system: str) -> bool:
    return cfg.w1_systems is None or system in cfg.w1_systems


def _case_wanted(cfg: Config, workers: int, batch: int) -> bool:
    return cfg.w1_cases is None or (workers, batch) in cfg.w1_cases


def _applies(label: str, batch: int, cfg: Config) -> bool:
    # procrastinate has no batch fetch (one job per fetch and slot): batch 1 is the only equal
    # setting, and more slots only add minutes to the run.
    return not (label == "procrastinate" and batch > 1)


def _record(res: Any, system: str, workers: int, batch: int, rs: list[dict], n: int) -> None:
    res.add(
        WORKLOAD,
        system,
        case(workers, batch),
        "jobs/s",
        "jobs/s",
        [r["jobs_per_s"] for r in rs],
        workers=workers,
        batch=batch,
        jobs=n,
        wal_bytes_per_job=median([r["wal_bytes"] / n for r in rs]),
        xacts_per_job=median([r["xacts"] / n for r in rs]),
        client_cpu_us_per_job=median([r["cpu_s"] * 1e6 / n for r in rs]),
        claim_ms=median([r["claim_ms"] for r in rs if "claim_ms" in r]),
        complete_ms=median([r["complete_ms"] for r in rs if "complete_ms" in r]),
    )


def pgbench_drain(env: Env, system: str, n: int, clients: int, batch: int) -> dict[str, Any]:
    """Drain the n loaded jobs with pgbench: clients x ceil(n / (clients x batch)) script runs;
    if claims came back short (jobs left), one more client finishes them, its time counted."""
    dsn = env.dsn(system)
    per_client = math.ceil(n / (clients * batch))
    script = systems.pgbench_drain_script(system, batch)
    r = run_pgbench(dsn, script, clients=clients, transactions=per_client,
                    variables={"batch": batch})  # fmt: skip
    seconds = per_client * clients / r.tps
    left_after = 0
    for _ in range(5):
        with env.connect(system) as conn:
            left = systems.remaining(system, conn)
        if not left:
            break
        left_after = left_after or left
        extra = run_pgbench(dsn, script, clients=1, transactions=math.ceil(left / batch) + 1,
                            variables={"batch": batch})  # fmt: skip
        seconds += extra.transactions / extra.tps
    else:
        raise RuntimeError(f"{system}-sql: {left} jobs left after draining")
    return {"seconds": seconds, "run": r, "short": left_after}


def _pgbench_drain(env: Env, system: str, n: int, clients: int, batch: int) -> dict[str, float]:
    dsn = env.dsn(system)
    systems.reset(system, dsn)
    systems.load(system, dsn, n)
    probe = Probe(env.dbname(system), env.admin).start()
    d = pgbench_drain(env, system, n, clients, batch)
    probe.stop()
    r = d["run"]
    out = {
        "short": d["short"],
        "jobs_per_s": n / d["seconds"],
        "wal_bytes": probe.wal_bytes,
        "xacts": probe.xacts,
        "cpu_s": r.cpu_s,
    }
    if len(r.statement_ms) == 2:  # pgbench -r: the claim, then the complete
        out["claim_ms"], out["complete_ms"] = r.statement_ms
    return out


def _py_drain(env: Env, label: str, n: int, procs_n: int, batch: int) -> dict[str, float]:
    system = procs.PY_SYSTEMS[label]
    dsn = env.dsn(system)
    systems.reset(system, dsn)
    systems.load(system, dsn, n)
    probe = Probe(env.dbname(system), env.admin).start()
    out = procs.drain(label, dsn, n, procs_n, {"batch": batch}, timeout=60 + n / 50)
    probe.stop()
    return {
        "jobs_per_s": out["jobs_per_s"],
        "wal_bytes": probe.wal_bytes,
        "xacts": probe.xacts - out["polls"],
        "cpu_s": out["worker_cpu_s"],
    }
