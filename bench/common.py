"""Shared plumbing: configuration, databases, statistics, results, pgbench and cost probes."""

from __future__ import annotations

import math
import os
import re
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg

PGHOST = os.environ.get("PGHOST", "127.0.0.1")
PGPORT = os.environ.get("PGPORT", "5432")
PGUSER = os.environ.get("PGUSER", "postgres")
ADMIN_DSN = os.environ.get("BENCH_DSN", f"postgresql://{PGUSER}@{PGHOST}:{PGPORT}/postgres")

#: Tells concurrent runs apart (the working tree may run several `make test` at once): every
#: database name carries it. Spawned worker processes inherit it through the environment.
RUN_ID = os.environ.setdefault("BENCH_RUN_ID", str(os.getpid()))

#: One database per system, created fresh by every run and dropped at its end.
DATABASES = {
    system: f"andal_bench_{system}_{RUN_ID}"
    for system in ("raw", "andal", "procrastinate", "pgqueuer")
}


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def dsn_for(dbname: str, admin: str = ADMIN_DSN, **params: str) -> str:
    parts = urlsplit(admin)
    query = parts.query
    extra = "&".join(f"{k}={v}" for k, v in params.items())
    if extra:
        query = f"{query}&{extra}" if query else extra
    return urlunsplit((parts.scheme, parts.netloc, "/" + dbname, query, parts.fragment))


def connect(dsn: str, **kw: Any) -> psycopg.Connection:
    return psycopg.connect(dsn, autocommit=True, **kw)


def fresh_db(name: str, admin: str = ADMIN_DSN) -> str:
    """Drop and create database ``name``; returns its DSN."""
    with connect(admin) as conn:
        conn.execute(f'drop database if exists "{name}" with (force)')
        conn.execute(f'create database "{name}"')
    return dsn_for(name, admin)


def drop_db(name: str, admin: str = ADMIN_DSN) -> None:
    with connect(admin) as conn:
        conn.execute(f'drop database if exists "{name}" with (force)')


# -- statistics -----------------------------------------------------------------------------


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def percentile(values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100) of unsorted values."""
    if not values:
        return float("nan")
    s = sorted(values)
    k = max(0, min(len(s) - 1, math.ceil(p / 100 * len(s)) - 1))
    return s[k]


def summary(values: Sequence[float]) -> dict[str, float]:
    vals = [v for v in values if v is not None and not math.isnan(v)]
    if not vals:
        return {"median": float("nan"), "min": float("nan"), "max": float("nan"), "n": 0}
    return {"median": median(vals), "min": min(vals), "max": max(vals), "n": len(vals)}


# -- results --------------------------------------------------------------------------------


@dataclass
class Results:
    """Everything a run measured: one record per (workload, system, case, metric)."""

    records: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(
        self,
        workload: str,
        system: str,
        case: str,
        metric: str,
        unit: str,
        values: Iterable[float],
        **extra: Any,
    ) -> dict[str, Any]:
        vals = [float(v) for v in values]
        rec = {
            "workload": workload,
            "system": system,
            "case": case,
            "metric": metric,
            "unit": unit,
            "values": vals,
            **summary(vals),
            **extra,
        }
        self.records.append(rec)
        return rec

    def note(self, text: str) -> None:
        log(f"note: {text}")
        self.notes.append(text)

    def find(self, workload: str, system: str, case: str, metric: str) -> dict[str, Any] | None:
        for r in self.records:
            if (r["workload"], r["system"], r["case"], r["metric"]) == (
                workload,
                system,
                case,
                metric,
            ):
                return r
        return None

    def value(self, workload: str, system: str, case: str, metric: str) -> float | None:
        r = self.find(workload, system, case, metric)
        if r is None or not r["n"]:
            return None
        return r["median"]


@dataclass
class Config:
    quick: bool = False
    reps: int = 3
    admin_dsn: str = ADMIN_DSN
    only: set[str] | None = None
    results: Results = field(default_factory=Results)
    plots: bool = True
    #: W8: jobs processed by its growth run (None: 1M, quick 5k)
    scale_jobs: int | None = None
    #: W1: only these systems (result labels, "sql" for both pgbench systems) and these
    #: "workersxbatch" cases (None: all; see ``bench.run --w1``)
    w1_systems: set[str] | None = None
    w1_cases: set[tuple[int, int]] | None = None

    def size(self, full: int, quick: int) -> int:
        return quick if self.quick else full


def repeat(cfg: Config, fn: Callable[[int], Any]) -> list[Any]:
    return [fn(i) for i in range(cfg.reps)]


# -- pgbench --------------------------------------------------------------------------------


def pgbench_path() -> str | None:
    for candidate in (shutil.which("pgbench"), "/usr/lib/postgresql/15/bin/pgbench"):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


@dataclass
class PgbenchRun:
    tps: float  # script runs per second, without the initial connection time
    seconds: float  # wall time of the pgbench process
    transactions: int
    failed: int
    cpu_s: float  # pgbench's own user + system CPU
    latencies_ms: list[float] = field(default_factory=list)
    output: str = ""
    #: average latency (ms) of each SQL command of the script, in script order (pgbench -r)
    statement_ms: list[float] = field(default_factory=list)


def run_pgbench(
    dsn: str,
    script: str,
    *,
    clients: int = 1,
    transactions: int | None = None,
    seconds: float | None = None,
    variables: dict[str, Any] | None = None,
    log_latency: bool = False,
    rate: float | None = None,
) -> PgbenchRun:
    """Run one pgbench script (prepared statements) and parse its summary."""
    exe = pgbench_path()
    if exe is None:
        raise RuntimeError("pgbench not found")
    with tempfile.TemporaryDirectory(prefix="andal-bench-") as tmp:
        path = os.path.join(tmp, "script.sql")
        with open(path, "w") as f:
            f.write(script)
        args = [exe, "-n", "-r", "-M", "prepared", "-f", path]
        args += ["-c", str(clients), "-j", str(clients)]
        if transactions is not None:
            args += ["-t", str(transactions)]
        if seconds is not None:
            args += ["-T", str(max(1, int(round(seconds))))]
        if rate is not None:
            args += ["-R", str(rate)]
        for k, v in (variables or {}).items():
            args += ["-D", f"{k}={v}"]
        if log_latency:
            args += ["-l", "--log-prefix", os.path.join(tmp, "lat")]
        args.append(dsn)
        _children_cpu()  # reset: count pgbench's CPU only
        start = time.perf_counter()
        proc = subprocess.Popen(
            args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=tmp
        )
        out, _ = proc.communicate()
        seconds_taken = time.perf_counter() - start
        # the child's rusage is gone once communicate() reaped it; read it from /proc instead
        cpu = _children_cpu()
        if proc.returncode != 0:
            raise RuntimeError(f"pgbench failed ({proc.returncode}):\n{out[-2000:]}")
        m = re.search(r"tps = ([\d.]+) \(without initial connection time\)", out)
        tx = re.search(r"number of transactions actually processed: (\d+)", out)
        failed = re.search(r"number of failed transactions: (\d+)", out)
        lat: list[float] = []
        if log_latency:
            for name in os.listdir(tmp):
                if name.startswith("lat"):
                    with open(os.path.join(tmp, name)) as f:
                        for line in f:
                            parts = line.split()
                            if len(parts) >= 3:
                                lat.append(int(parts[2]) / 1000.0)
        stmts = [
            float(x.group(1))
            for x in re.finditer(r"^\s+([\d.]+)\s+\d+\s+(?!\\)\S", out, re.MULTILINE)
        ]
        return PgbenchRun(
            tps=float(m.group(1)) if m else float("nan"),
            seconds=seconds_taken,
            transactions=int(tx.group(1)) if tx else 0,
            failed=int(failed.group(1)) if failed else 0,
            cpu_s=cpu,
            latencies_ms=lat,
            output=out,
            statement_ms=stmts,
        )


_last_children_cpu = 0.0


def _children_cpu() -> float:
    """CPU (user + system) of reaped children since the previous call."""
    global _last_children_cpu
    t = os.times()
    total = t.children_user + t.children_system
    delta, _last_children_cpu = total - _last_children_cpu, total
    return delta


# -- cost probes ----------------------------------------------------------------------------


@dataclass
class Probe:
    """Transactions of one database and WAL of the cluster between two points in time.

    ``pg_stat_wal`` / ``pg_current_wal_lsn()`` are cluster-wide: other databases' writes in the
    interval count too (the benchmark expects a quiet server). Transactions come from
    ``pg_stat_database`` for the system's own database, read after its clients disconnected
    (a backend flushes its counters at exit).
    """

    dbname: str
    admin_dsn: str = ADMIN_DSN
    xacts0: int = 0
    lsn0: str = "0/0"
    t0: float = 0.0
    xacts: int = 0
    wal_bytes: int = 0
    seconds: float = 0.0

    def start(self) -> Probe:
        with connect(self.admin_dsn) as conn:
            self.xacts0 = self._xacts(conn)
            self.lsn0 = conn.execute("select pg_current_wal_lsn()::text").fetchone()[0]
        self.t0 = time.perf_counter()
        return self

    def stop(self, settle: float = 0.3) -> Probe:
        self.seconds = time.perf_counter() - self.t0
        with connect(self.admin_dsn) as conn:
            self.wal_bytes = int(
                conn.execute(
                    "select pg_wal_lsn_diff(pg_current_wal_lsn(), %s::pg_lsn)", (self.lsn0,)
                ).fetchone()[0]
            )
        time.sleep(settle)  # let exiting backends flush their counters
        with connect(self.admin_dsn) as conn:
            self.xacts = self._xacts(conn) - self.xacts0
        return self

    def _xacts(self, conn: psycopg.Connection) -> int:
        conn.execute("select pg_stat_clear_snapshot()")
        row = conn.execute(
            "select xact_commit + xact_rollback from pg_stat_database where datname = %s",
            (self.dbname,),
        ).fetchone()
        return int(row[0]) if row else 0


def server_settings(admin: str = ADMIN_DSN) -> dict[str, str]:
    names = [
        "server_version",
        "shared_buffers",
        "synchronous_commit",
        "fsync",
        "wal_level",
        "max_connections",
        "work_mem",
        "autovacuum",
        "jit",
        "shared_preload_libraries",
        "max_wal_size",
        "checkpoint_timeout",
    ]
    with connect(admin) as conn:
        rows = conn.execute(
            "select name, current_setting(name) from pg_settings where name = any(%s)", (names,)
        ).fetchall()
    return dict(rows)


def machine() -> dict[str, Any]:
    info: dict[str, Any] = {"nproc": os.cpu_count()}
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal"):
                    info["memory_gib"] = round(int(line.split()[1]) / 1024 / 1024, 1)
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    info["cpu"] = line.split(":", 1)[1].strip()
                    break
        info["load_at_start"] = os.getloadavg()
    except OSError:
        pass
    return info


def has_module(name: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False
