"""Cost per job: statements, round trips, transactions, WAL bytes and CPU, one worker.

Each system drains N preloaded jobs once through the counting proxy (``bench/proxy.py``):
statements and round trips are counted on the wire (``pg_stat_statements`` is not loaded on
this server: it needs ``shared_preload_libraries``); transactions come from
``pg_stat_database`` of the system's own database; WAL from ``pg_current_wal_lsn()`` (cluster
wide: expects a quiet server). CPU: the worker processes' own (pgbench: its rusage), and the
server backends of the system's database (sampled from ``/proc``). Throughput here is not
reported: the proxy slows every round trip.
"""

from __future__ import annotations

import os
import threading
import time
from urllib.parse import urlsplit

import psycopg

from . import procs, systems
from .common import Config, Probe, connect, dsn_for, log, run_pgbench
from .env import Env
from .proxy import CountingProxy

WORKLOAD = "COST"
TICK = os.sysconf("SC_CLK_TCK")


class BackendCpu:
    """Sums the CPU of the server backends of one database, sampled every 10 ms."""

    def __init__(self, admin: str, dbname: str) -> None:
        self.admin, self.dbname = admin, dbname
        self.seen: dict[int, float] = {}
        self.base: dict[int, float] = {}
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._loop, daemon=True)

    @staticmethod
    def _cpu(pid: int) -> float | None:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / TICK
        except (OSError, IndexError, ValueError):
            return None

    def _pids(self, conn: psycopg.Connection) -> list[int]:
        rows = conn.execute(
            "select pid from pg_stat_activity where datname = %s and pid <> pg_backend_pid()",
            (self.dbname,),
        ).fetchall()
        return [r[0] for r in rows]

    def start(self) -> BackendCpu:
        with connect(self.admin) as conn:
            for pid in self._pids(conn):
                cpu = self._cpu(pid)
                if cpu is not None:
                    self.base[pid] = cpu
        self._t.start()
        return self

    def _loop(self) -> None:
        with connect(self.admin) as conn:
            pids: list[int] = []
            last = 0.0
            while not self._stop.is_set():
                if time.monotonic() - last > 0.1:
                    pids = self._pids(conn)
                    last = time.monotonic()
                for pid in pids:
                    cpu = self._cpu(pid)
                    if cpu is not None:
                        self.seen[pid] = cpu
                self._stop.wait(0.01)

    def stop(self) -> float:
        self._stop.set()
        self._t.join(2)
        return sum(cpu - self.base.get(pid, 0.0) for pid, cpu in self.seen.items())


def run(cfg: Config, env: Env) -> None:
    sizes = {1: cfg.size(2_000, 200), 100: cfg.size(20_000, 1_000)}
    res = cfg.results
    parts = urlsplit(env.admin)
    host, port = parts.hostname or "127.0.0.1", parts.port or 5432
    cases: list[tuple[str, int]] = []
    if env.pgbench:
        cases += [("raw-sql", 1), ("andal-sql", 1), ("raw-sql", 100), ("andal-sql", 100)]
    for label in env.py_labels:
        cases.append((label, 1))
        if label != "procrastinate":
            cases.append((label, 100))
    with CountingProxy(host, port) as proxy:
        for label, batch in cases:
            n = sizes[batch]
            system = label.split("-")[0] if label.endswith("-sql") else procs.PY_SYSTEMS[label]
            dsn = env.dsn(system)
            pdsn = dsn_for(
                env.dbname(system),
                f"{parts.scheme}://{parts.username or 'postgres'}@127.0.0.1:{proxy.port}/x",
                sslmode="disable",
            )
            try:
                systems.reset(system, dsn)
                systems.load(system, dsn, n)
                time.sleep(0.3)
                proxy.reset()
                probe = Probe(env.dbname(system), env.admin).start()
                backend = BackendCpu(env.admin, env.dbname(system)).start()
                polls = 0
                if label.endswith("-sql"):
                    r = run_pgbench(
                        pdsn,
                        systems.pgbench_drain_script(system, batch),
                        clients=1,
                        transactions=-(-n // batch),
                        variables={"batch": batch},
                    )
                    client_cpu = r.cpu_s
                else:
                    out = procs.drain(label, pdsn, n, 1, {"batch": batch}, timeout=120 + n / 20)
                    client_cpu, polls = out["worker_cpu_s"], int(out["polls"])
                server_cpu = backend.stop()
                probe.stop()
                wire = proxy.snapshot()
            except Exception as exc:
                res.note(f"COST {label} batch={batch} failed: {exc!r}")
                continue
            # the parent's emptiness polls went through the proxy too: one statement each
            stmts = wire["statements"] - polls
            trips = wire["round_trips"] - polls
            extra = {
                "statements_per_job": stmts / n,
                "round_trips_per_job": trips / n,
                "xacts_per_job": (probe.xacts - polls) / n,
                "wal_bytes_per_job": probe.wal_bytes / n,
                "client_cpu_us_per_job": client_cpu * 1e6 / n,
                "server_cpu_us_per_job": server_cpu * 1e6 / n,
                "jobs": n,
            }
            case = f"batch={batch}"
            for key, unit in (
                ("statements_per_job", "statements"),
                ("round_trips_per_job", "round trips"),
                ("xacts_per_job", "transactions"),
                ("wal_bytes_per_job", "bytes"),
                ("client_cpu_us_per_job", "µs"),
                ("server_cpu_us_per_job", "µs"),
            ):
                res.add(WORKLOAD, label, case, key.replace("_per_job", "/job"), unit, [extra[key]])
            log(
                f"COST {label} {case}: {extra['statements_per_job']:.2f} stmts, "
                f"{extra['round_trips_per_job']:.2f} trips, {extra['xacts_per_job']:.2f} xacts, "
                f"{extra['wal_bytes_per_job']:,.0f} WAL B, client "
                f"{extra['client_cpu_us_per_job']:,.0f} µs, server "
                f"{extra['server_cpu_us_per_job']:,.0f} µs per job"
            )
