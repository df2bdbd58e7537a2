"""Many producers: one job per transaction from 1, 4, 16 and 64 pgbench clients at once (web
servers enqueueing), each system's own SQL (``systems.producer_script``), with
``synchronous_commit`` as the server has it.

Systems: raw (a plain insert), raw+notify (the insert and a ``pg_notify`` in the same
transaction), andal with its queue's worker busy (``andal-busy``: a session that called
``queue.idle`` and then ``queue.busy`` stays connected, as the listener of a worker that is
running jobs: no hint is sent), andal with no session using ``queue.idle`` (``andal-notify``:
every enqueue notifies, as before the sleep protocol), procrastinate's ``defer`` statement
and pgqueuer's enqueue statement (both notify from an insert trigger). A transaction that
notifies takes a cluster-wide lock at commit and holds it through its WAL flush, so those
commit one at a time: the gap to raw grows with the number of producers.
"""

from __future__ import annotations

import psycopg

from . import systems
from .common import Config, connect, log, run_pgbench
from .env import Env

WORKLOAD = "PRODUCERS"
#: label -> (the database's system, the script's system)
SYSTEMS = {
    "raw": ("raw", "raw"),
    "raw+notify": ("raw", "raw+notify"),
    "andal-busy": ("andal", "andal"),
    "andal-notify": ("andal", "andal"),
    "procrastinate": ("procrastinate", "procrastinate"),
    "pgqueuer": ("pgqueuer", "pgqueuer"),
}


def run(cfg: Config, env: Env) -> None:
    if not env.pgbench:
        return
    clients = [1, 4] if cfg.quick else [1, 4, 16, 64]
    seconds = cfg.size(8, 1)
    labels = [k for k, (db, _) in SYSTEMS.items() if db in env.systems]
    for n in clients:
        runs: dict[str, list[float]] = {k: [] for k in labels}
        for rep in range(cfg.reps):
            order = labels[rep % len(labels) :] + labels[: rep % len(labels)]
            for label in order:
                runs[label].append(enqueue_rate(env, label, n, seconds))
            log(f"{WORKLOAD} {n} producers rep {rep + 1}: "
                + ", ".join(f"{k} {v[-1]:,.0f}/s" for k, v in runs.items()))  # fmt: skip
        for label, vals in runs.items():
            cfg.results.add(WORKLOAD, label, f"{n} producers", "jobs/s", "jobs/s", vals,
                            clients=n)  # fmt: skip


def enqueue_rate(env: Env, label: str, clients: int, seconds: float) -> float:
    """jobs/s of ``clients`` pgbench clients enqueueing one job per transaction."""
    db, script = SYSTEMS[label]
    dsn = env.dsn(db)
    systems.reset(db, dsn)
    with connect(dsn) as conn:
        if db == "andal":
            conn.execute("truncate queue.sleepers")
        if label == "andal-busy":
            busy_worker(conn)
        return run_pgbench(dsn, systems.producer_script(script), clients=clients,
                           seconds=seconds).tps  # fmt: skip


def busy_worker(conn: psycopg.Connection) -> None:
    """Make ``conn`` the listener of a worker of the bench queue that is running jobs."""
    conn.execute("listen andal_jobs")
    conn.execute("select queue.idle(queues => %s)", ([systems.QUEUE],))
    conn.execute("select queue.busy()")
