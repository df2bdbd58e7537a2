"""The PL/Proxy router's cost per call and its throughput with 1, 2 and 4 partitions.

``python -m bench.router [--rounds R] [--chunk C] [--seconds T] [--reps K] [--quick]`` starts
PostgreSQL servers of its own (``andal.cluster.Cluster``, initdb on free ports, as
tests/test_router.py does): four partition servers and one router server. It installs three
routers (``andal.router.install_router``): over 1 partition (server 0), 2 (servers 0-1) and 4
(servers 0-3), each partition a database of its own, so the three set-ups share the servers.

1. **Cost per call** (the 1-partition router against a direct connection to its partition):
   ``queue.enqueue`` (one job per transaction), and claim + complete at batch 1
   (``queue.claim`` then ``queue.complete``) and batch 100 (then ``queue.complete_many``).
   R rounds, each of C calls (C/10 cycles at batch 100) per path, the order of the two paths
   rotating. It reports the latency per call or cycle (median and p95 of every call) and the
   server CPU per call of the router's backend and of the partition's backend (the backend
   PL/Proxy connected, found in the partition's ``pg_stat_activity``), read from
   ``/proc/<pid>/schedstat``: the median over the rounds.
2. **Throughput**: pgbench with 4 clients, first enqueues (one job a transaction into 4 queues
   placed round-robin on the partitions) for T seconds, then claim + complete at batch 1 (each
   client claims one of the 4 queues) for T seconds; jobs/s of the claim phase is the drop in
   live jobs over its wall time. Directly on one partition, then through the routers over 1, 2
   and 4 partitions; K repetitions in rotating order, the median.

Every server runs on this machine: the partitions, the router and pgbench share its cores,
so more partitions add no CPU here. The servers run with ``fsync`` and
``synchronous_commit`` off (``Cluster``'s settings). Nothing is asserted. Needs the
PostgreSQL server binaries, PL/Proxy (``make deps``) and pgbench. Not part of ``make bench``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import psycopg
from psycopg.conninfo import make_conninfo

from andal.cluster import Cluster, pg_bin
from andal.router import install_router

from .common import percentile, pgbench_path, run_pgbench
from .cpu_ab import backend_ns
from .tree_ab import rotated

PARTITIONS = (1, 2, 4)
QUEUES = [f"rq{i}" for i in range(4)]
OPS = ("enqueue", "claim+complete 1", "claim+complete 100")

ENQUEUE = "select queue.enqueue(payload => '{\"n\": 1}'::jsonb, queue => %s)"
CLAIM = (
    "select array_agg(c.job_id), array_agg(c.token) from queue.claim(worker => 'rbench',"
    " queues => array[%s], batch => %s) as c"
)
COMPLETE = "select queue.complete(job_id => %s, token => %s)"
COMPLETE_MANY = (
    "select count(*) from queue.complete_many(job_ids => %s::bigint[], tokens => %s::uuid[])"
)
PGB_ENQUEUE = (
    "\\set q random(0, 3)\n"
    "select queue.enqueue(payload => '{\"n\": 1}'::jsonb, queue => 'rq' || :q);\n"
)
PGB_DRAIN = """\\set q :client_id % 4
select count(*) as n, max(c.job_id) as id, max(c.token::text) as tok
from queue.claim(worker => 'pgbench', queues => array['rq' || :q], batch => 1) as c \\gset
\\if :n > 0
select queue.complete(job_id => :id, token => :tok::uuid);
\\endif
"""


class Setup:
    """A router over n partitions: its DSN, its partitions' DSNs."""

    def __init__(self, n: int, router: str, parts: list[str]) -> None:
        self.n, self.router, self.parts = n, router, parts


@contextmanager
def servers() -> Iterator[dict[int, Setup]]:
    """Five servers of our own and the three routers; everything removed at the end."""
    with ExitStack() as stack:
        clusters = []
        for _ in range(max(PARTITIONS) + 1):
            c = Cluster(Path(tempfile.mkdtemp(prefix="andal-rbench-")))
            stack.callback(c.destroy)
            c.init()
            c.start()
            clusters.append(c)
        router_server, part_servers = clusters[0], clusters[1:]
        setups = {}
        for n in PARTITIONS:
            parts = []
            for k in range(n):
                with psycopg.connect(part_servers[k].dsn, autocommit=True) as conn:
                    conn.execute(f"create database p{n}_{k}")
                parts.append(make_conninfo(part_servers[k].dsn, dbname=f"p{n}_{k}"))
            with psycopg.connect(router_server.dsn, autocommit=True) as conn:
                conn.execute(f"create database router{n}")
            router = make_conninfo(router_server.dsn, dbname=f"router{n}")
            install_router(router, parts, role_prefix=f"rb{n}")
            with psycopg.connect(router, autocommit=True) as conn:
                for i, q in enumerate(QUEUES + ["rb100"]):
                    conn.execute("insert into andal_router.placements values (%s, %s)", (q, i % n))
            setups[n] = Setup(n, router, parts)
        yield setups


def unavailable() -> str | None:
    """Why this cannot run here, or None."""
    try:
        bindir = Path(pg_bin("initdb")).parent
    except FileNotFoundError:
        return "no PostgreSQL server binaries (initdb)"
    if pgbench_path() is None:
        return "no pgbench"
    sharedir = subprocess.run(
        [str(bindir / "pg_config"), "--sharedir"], capture_output=True, text=True
    ).stdout.strip()
    if not sharedir or not (Path(sharedir) / "extension" / "plproxy.control").exists():
        return "no PL/Proxy (make deps installs postgresql-15-plproxy)"
    return None


def _connect(dsn: str) -> psycopg.Connection:
    return psycopg.connect(dsn, autocommit=True, prepare_threshold=0)


def proxied_pid(part: psycopg.Connection, direct_pid: int) -> int | None:
    """The partition's backend PL/Proxy connected (the one client backend not ours)."""
    rows = part.execute(
        "select pid from pg_stat_activity where datname = current_database()"
        " and backend_type = 'client backend' and pid <> pg_backend_pid() and pid <> %s",
        (direct_pid,),
    ).fetchall()
    return rows[0][0] if len(rows) == 1 else None


def one_op(conn: psycopg.Connection, op: str, queue: str) -> int:
    """One enqueue, or one claim + complete cycle; the jobs it handled."""
    if op == "enqueue":
        conn.execute(ENQUEUE, (queue,))
        return 1
    batch = 1 if op == "claim+complete 1" else 100
    row = conn.execute(CLAIM, (queue, batch)).fetchone()
    assert row is not None and row[0], f"{op}: the claim found no job"
    if batch == 1:
        conn.execute(COMPLETE, (row[0][0], row[1][0]))
    else:
        conn.execute(COMPLETE_MANY, (row[0], row[1]))
    return len(row[0])


def turn(
    conn: psycopg.Connection, op: str, calls: int, pids: tuple[int, int]
) -> tuple[list[float], float, float]:
    """``calls`` ops on ``conn``: each one's latency (ms), and µs of CPU per job of the
    partition's backend and the router's (pids: partition, router; router 0: none)."""
    ppid, rpid = pids
    queue = "rb100" if op.endswith("100") else "rq0"
    ms: list[float] = []
    jobs = 0
    p0, r0 = backend_ns(ppid), backend_ns(rpid) if rpid else 0
    for _ in range(calls):
        t0 = time.perf_counter()
        jobs += one_op(conn, op, queue)
        ms.append((time.perf_counter() - t0) * 1000)
    r_us = (backend_ns(rpid) - r0) / jobs / 1000 if rpid else 0.0
    return ms, (backend_ns(ppid) - p0) / jobs / 1000, r_us


def per_call(s: Setup, rounds: int, chunk: int) -> dict[tuple[str, str], dict[str, list[float]]]:
    """Latency (ms, every call or cycle) and backend CPU (µs per job, one figure per turn)
    of each op and path. One op after the other, so that each claims only its own queue
    (rq0: what the enqueues left; rb100: preloaded before its turns)."""
    big = chunk // 10 or 1
    with (
        _connect(s.parts[0]) as direct,
        _connect(s.router) as router,
        _connect(s.parts[0]) as watch,
    ):
        for _ in range(5):  # warm both paths: plans, PL/Proxy's connection
            for c in (direct, router):
                one_op(c, "enqueue", "rq0")
                one_op(c, "claim+complete 1", "rq0")
        got: dict[tuple[str, str], dict[str, list[float]]] = {}
        for op in OPS:
            if op.endswith("100"):
                direct.execute(
                    "select count(*) from queue.enqueue_many(payloads => array(select"
                    " '{}'::jsonb from generate_series(1, %s)), queue => 'rb100')",
                    ((rounds * 2 + 2) * big * 100,),
                )
                direct.execute("vacuum analyze queue.jobs")
                for c in (direct, router):
                    one_op(c, op, "rb100")
            for r in range(rounds):
                for path in rotated(["direct", "router"], r):
                    ppid: int | None = direct.info.backend_pid
                    if path == "router":
                        ppid = proxied_pid(watch, direct.info.backend_pid)
                    if ppid is None:
                        continue  # PL/Proxy reconnected: no partition backend to read
                    rpid = router.info.backend_pid if path == "router" else 0
                    conn = direct if path == "direct" else router
                    ms, p_us, r_us = turn(conn, op, big if op.endswith("100") else chunk,
                                          (ppid, rpid))  # fmt: skip
                    g = got.setdefault((op, path), {"ms": [], "router_us": [], "part_us": []})
                    g["ms"] += ms
                    g["part_us"].append(p_us)
                    g["router_us"].append(r_us)
        return got


def live_jobs(s: Setup) -> dict[str, int]:
    """Live jobs per benchmark queue, over every partition."""
    got = dict.fromkeys(QUEUES, 0)
    for dsn in s.parts:
        with psycopg.connect(dsn) as conn:
            for q, n in conn.execute(
                "select queue, count(*) from queue.jobs where queue = any(%s) group by queue",
                (QUEUES,),
            ):
                got[q] += n
    return got


def throughput(s: Setup, dsn: str, seconds: float, clients: int) -> tuple[float, float]:
    """(enqueues/s, claim + complete jobs/s) with pgbench on ``dsn``."""
    enq = run_pgbench(dsn, PGB_ENQUEUE, clients=clients, seconds=seconds)
    before = live_jobs(s)
    t0 = time.perf_counter()
    run_pgbench(dsn, PGB_DRAIN, clients=clients, seconds=seconds)
    wall = time.perf_counter() - t0
    after = live_jobs(s)
    if min(after.values()) == 0:
        print(f"  note: a queue ran dry during the claim phase on {dsn}: jobs/s is a floor")
    for dsn_k in s.parts:  # the next run starts from an empty table
        with psycopg.connect(dsn_k, autocommit=True) as conn:
            conn.execute("delete from queue.jobs where queue like 'rq%'")
            conn.execute("vacuum queue.jobs")
    return enq.tps, (sum(before.values()) - sum(after.values())) / wall


def show_per_call(got: dict[tuple[str, str], dict[str, list[float]]]) -> dict[str, Any]:
    print("\nCost per call: router over 1 partition against the partition directly")
    print(
        "| call (latency per call or cycle; CPU per job) | path | median ms | p95 ms"
        " | router CPU µs | partition CPU µs |"
    )
    print("|---|---|---|---|---|---|")
    inputs: dict[str, Any] = {}
    for (op, path), g in got.items():
        rcpu = statistics.median(g["router_us"]) if g["router_us"] else 0.0
        pcpu = statistics.median(g["part_us"]) if g["part_us"] else float("nan")
        print(
            f"| {op} | {path} | {statistics.median(g['ms']):.3f} | {percentile(g['ms'], 95):.3f}"
            f" | {rcpu:.1f} | {pcpu:.1f} |"
        )
        inputs[f"{op} {path}"] = (rcpu, pcpu)
    return inputs


def show_model(inputs: dict[str, Any], cores: int) -> None:
    """The N-server model's inputs: CPU per call on the router and on a partition."""
    print("\nModel inputs (µs of server CPU per job):")
    for op in OPS:
        _, p_direct = inputs[f"{op} direct"]
        c_r, c_p = inputs[f"{op} router"]
        print(
            f"  {op}: partition direct c_d = {p_direct:.1f}, through the router partition"
            f" c_p = {c_p:.1f} + router c_r = {c_r:.1f};"
            f" one {cores}-core router carries ~{cores * 1e6 / c_r:,.0f}/s,"
            f" each {cores}-core partition ~{cores * 1e6 / c_p:,.0f}/s"
        )


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m bench.router")
    p.add_argument("--rounds", type=int, default=11)
    p.add_argument("--chunk", type=int, default=200, help="calls per turn (a tenth at batch 100)")
    p.add_argument("--seconds", type=float, default=6.0, help="per pgbench phase")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--clients", type=int, default=4)
    p.add_argument("--quick", action="store_true", help="tiny sizes: a smoke test")
    a = p.parse_args()
    if a.quick:
        a.rounds, a.chunk, a.seconds, a.reps = 2, 20, 1.0, 1
    missing = unavailable()
    if missing:
        print(f"bench.router: skipped, {missing}")
        return
    print("uptime:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    with servers() as setups:
        inputs = show_per_call(per_call(setups[1], a.rounds, a.chunk))
        show_model(inputs, os.cpu_count() or 1)
        cases = [("direct, 1 partition", setups[1], setups[1].parts[0])]
        cases += [
            (f"router, {n} partition{'s' * (n > 1)}", setups[n], setups[n].router)
            for n in PARTITIONS
        ]
        res: dict[str, list[tuple[float, float]]] = {name: [] for name, _, _ in cases}
        for rep in range(a.reps):
            by_name = {name: (s, dsn) for name, s, dsn in cases}
            for name in rotated(list(by_name), rep):
                s, dsn = by_name[name]
                res[name].append(throughput(s, dsn, a.seconds, a.clients))
        print(f"\nThroughput, {a.clients} pgbench clients, median of {a.reps} (min-max)")
        print("| | enqueue jobs/s | claim + complete jobs/s |")
        print("|---|---|---|")
        for name, v in res.items():
            e, c = [x[0] for x in v], [x[1] for x in v]
            print(
                f"| {name} | {statistics.median(e):,.0f} ({min(e):,.0f}-{max(e):,.0f})"
                f" | {statistics.median(c):,.0f} ({min(c):,.0f}-{max(c):,.0f}) |"
            )
    print("uptime:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())


if __name__ == "__main__":
    main()
