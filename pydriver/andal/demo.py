"""``make demo``: install andal, stream ~20,000 jobs through a pool of worker processes.

Where the database comes from, in order: ``$DATABASE_URL`` (used as it is, nothing dropped);
else the server ``$PGHOST``/``$PGPORT``/``$PGUSER`` name (default postgres@127.0.0.1:5432),
when it answers: a database ``andal_demo`` is made there, an old one dropped, on that server
and no other; else a private throwaway cluster under ``.andal/`` (initdb + pg_ctl, run as
``postgres`` when we are root), stopped and removed at the end.

Some jobs fail on purpose, and the demo says so before it starts: 3 % fail once and retry,
0.2 % always fail (dead after 3 attempts) and 0.1 % raise ``andal.Fail`` (dead at once), to
show retries and dead letters. The queue's backoff is short so the demo ends quickly. The
summary counts this run's jobs only (on a reused database too), and ends with the commands
that show the queue (``andal status``, ``andal top``, ``andal web``).
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import math
import multiprocessing as mp
import os
import random
import shlex
import signal
import statistics
import sys
import threading
import time
from collections import Counter
from collections.abc import Mapping
from typing import Any

import psycopg
from psycopg import sql as psql

import andal

from . import logs
from . import statements as sql
from .cluster import Cluster, private_root
from .install import install

QUEUE = "demo"
CATEGORIES = ["email", "image", "report", "sync"]
DEMO_DB = "andal_demo"


def local_server(env: Mapping[str, str] | None = None) -> str:
    """The server tried before starting a private cluster: ``$ANDAL_DEMO_SERVER`` (a DSN),
    else the one ``$PGHOST``/``$PGPORT``/``$PGUSER`` name; its maintenance database."""
    env = os.environ if env is None else env
    if env.get("ANDAL_DEMO_SERVER"):
        return with_database(env["ANDAL_DEMO_SERVER"], "postgres")
    return psycopg.conninfo.make_conninfo(
        host=env.get("PGHOST") or "127.0.0.1",
        port=env.get("PGPORT") or "5432",
        user=env.get("PGUSER") or "postgres",
        dbname="postgres",
    )


def describe(dsn: str) -> str:
    """``user@host:port/dbname`` of a DSN, for the banner (never its password)."""
    info = psycopg.conninfo.conninfo_to_dict(dsn)
    host = info.get("host") or os.environ.get("PGHOST") or "127.0.0.1"
    port = info.get("port") or os.environ.get("PGPORT") or "5432"
    user = info.get("user") or os.environ.get("PGUSER") or "postgres"
    return f"{user}@{host}:{port}/{info.get('dbname') or user}"


# -- choosing a database --------------------------------------------------------------------


def answers(dsn: str) -> bool:
    return why_not(dsn) is None


def why_not(dsn: str) -> str | None:
    """Why ``dsn`` cannot be connected to (one line), or None when it answers."""
    try:
        with psycopg.connect(dsn, connect_timeout=2):
            return None
    except psycopg.Error as exc:
        return " ".join(str(exc).split()) or type(exc).__name__


def with_database(dsn: str, dbname: str) -> str:
    return psycopg.conninfo.make_conninfo(dsn, dbname=dbname)


def fresh_database(server_dsn: str) -> str:
    with psycopg.connect(server_dsn, autocommit=True) as conn:
        name = psql.Identifier(DEMO_DB)
        conn.execute(psql.SQL(sql.DEMO_DROP_DATABASE).format(name))
        conn.execute(psql.SQL(sql.DEMO_CREATE_DATABASE).format(name))
    return with_database(server_dsn, DEMO_DB)


# -- the work -------------------------------------------------------------------------------


def handle(job: andal.Job) -> dict[str, Any]:
    """The demo's handler: a little CPU, a little sleep, and the scripted failures."""
    kind = job.payload.get("kind", "ok")
    if kind == "flaky" and job.attempt == 1:
        raise ConnectionError("upstream timed out (first attempt only)")
    if kind == "broken":
        raise ValueError("this job always fails")
    if kind == "fatal":
        raise andal.Fail("refused: bad input")
    digest = hashlib.sha256(repr(job.payload).encode()).hexdigest()
    time.sleep(random.random() * 0.002)
    return {"digest": digest[:12]}


class _Collector(logging.Handler):
    """Keep the enqueue->start latency of first attempts from the ``claimed`` log events
    (``debug`` lines: the worker logs them only when its logger is at debug)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.latencies: list[float] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.msg == "claimed" and getattr(record, "attempt", 0) == 1:
            self.latencies.append(float(getattr(record, "duration_ms", 0.0)))


def worker_process(dsn: str, concurrency: int, batch: int, stop: Any, out: Any) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when to stop
    quiet = logs.setup(logging.WARNING, stream=open(os.devnull, "w"))  # noqa: SIM115
    quiet.setLevel(logging.WARNING)  # the debug lines go to the collector only
    collector = _Collector()
    logs.log.addHandler(collector)
    logs.log.setLevel(logging.DEBUG)
    worker = andal.Worker(
        dsn, {QUEUE: handle}, concurrency=concurrency, batch=batch, poll=0.5, grace=10
    )

    def stop_when_told() -> None:
        stop.wait()
        worker.stop()

    threading.Thread(target=stop_when_told, daemon=True).start()
    worker.run(install_signals=False)
    out.put((dict(worker.counts), collector.latencies))


def plan(jobs: int, seed: int = 42) -> list[dict[str, Any]]:
    """The payloads: 3 % fail once, 0.2 % always fail, 0.1 % fail for good."""
    rng = random.Random(seed)
    payloads = []
    for n in range(jobs):
        r = rng.random()
        kind = "flaky" if r < 0.03 else "broken" if r < 0.032 else "fatal" if r < 0.033 else "ok"
        payloads.append({"n": n, "kind": kind})
    return payloads


def injected(payloads: list[dict[str, Any]]) -> Counter[str]:
    """How many jobs of each scripted kind (``plan``): flaky, broken, fatal, ok."""
    return Counter(p["kind"] for p in payloads)


def say_injected(console: Any, kinds: Counter[str]) -> None:
    console.print(
        "failures are injected on purpose, to show retries and dead letters:"
        f" {kinds['flaky']:,} jobs fail once and retry (3 %),"
        f" {kinds['broken']:,} always fail and die after 3 attempts (0.2 %),"
        f" {kinds['fatal']:,} raise andal.Fail and die at once (0.1 %)"
    )


def run_demo(
    dsn: str, jobs: int, workers: int, concurrency: int, batch: int, backlog: int, categories: bool
) -> dict[str, Any]:
    from rich.console import Console

    console = Console()
    done = install(dsn)
    console.print(f"[bold]andal[/] installed ({', '.join(done) or 'already up to date'})")
    payloads = plan(jobs)
    kinds = injected(payloads)
    say_injected(console, kinds)
    with psycopg.connect(dsn, autocommit=True) as conn:
        andal.configure_queue(
            conn, QUEUE, max_attempts=3, backoff="linear", backoff_base=0.05, backoff_cap=0.5,
            lease=30,
        )  # fmt: skip
        for name in CATEGORIES:
            andal.set_category_limit(conn, name, concurrency * workers)
        leftover = count(conn, sql.DEMO_LIVE_JOBS)
        if leftover:
            console.print(f"{leftover:,} jobs of an earlier run are still queued: they run too")

        ctx = mp.get_context("spawn")
        stop, out = ctx.Event(), ctx.Queue()
        procs = [
            ctx.Process(target=worker_process, args=(dsn, concurrency, batch, stop, out))
            for _ in range(workers)
        ]
        for p in procs:
            p.start()
        console.print(
            f"{workers} worker processes x {concurrency} slots; enqueueing {jobs:,} jobs"
            + (f", keeping at most {backlog:,} waiting" if backlog else " at once")
        )
        groups: list[str | None] = list(CATEGORIES) if categories else [None]
        wall, first_id = feed(conn, console, payloads, groups, backlog)
        stop.set()
        counts: Counter[str] = Counter()
        latencies: list[float] = []
        for _ in procs:
            c, lat = out.get(timeout=60)
            counts.update(c)
            latencies.extend(lat)
        for p in procs:
            p.join(30)
        row = conn.execute(sql.DEMO_DEAD_SINCE, (QUEUE, first_id)).fetchone()
        dead = int(row[0]) if row else 0
    latencies.sort()
    return {
        "jobs": jobs,
        "leftover": leftover,
        "seconds": wall,
        "jobs_per_s": jobs / wall,
        "p50_ms": percentile(latencies, 50),
        "p99_ms": percentile(latencies, 99),
        "retries": counts["retried"],
        "dead": dead,
        "injected_dead": kinds["broken"] + kinds["fatal"],
        # a flaky job retries once; a broken one twice before it dies (max_attempts 3)
        "injected_retries": kinds["flaky"] + 2 * kinds["broken"],
        "completed": counts["completed"],
        "lease_lost": counts["lease_lost"],
    }


def feed(
    conn: psycopg.Connection[Any],
    console: Any,
    payloads: list[dict[str, Any]],
    groups: list[str | None],
    backlog: int,
) -> tuple[float, int]:
    """The producer, with a progress bar: enqueue ``payloads`` in chunks per category, keeping
    at most ``backlog`` waiting (0: all at once), until every job has left the queue. Returns
    the wall time in seconds and the first job id enqueued (ids only grow: this run's jobs
    are those from it on)."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    columns = [
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[speed]}"),
        TimeElapsedColumn(),
    ]
    jobs = len(payloads)
    chunk = 100  # per category and statement: every category has work at any time
    start = time.monotonic()
    sent = live = 0
    first_id: int | None = None
    with Progress(*columns, console=console) as progress:
        task = progress.add_task("jobs", total=jobs, speed="")
        while True:
            while sent < jobs and (not backlog or live < backlog):
                for category in groups:
                    part = payloads[sent : sent + chunk]
                    if part:
                        ids = andal.enqueue_many(conn, part, QUEUE, category=category)
                        if first_id is None:
                            first_id = min(i for i in ids if i is not None)
                    sent += len(part)
                    live += len(part)
            live = count(conn, sql.DEMO_LIVE_JOBS)
            finished = sent - live
            elapsed = time.monotonic() - start
            progress.update(task, completed=finished, speed=f"{finished / elapsed:,.0f} jobs/s")
            if sent == jobs and live == 0:
                return time.monotonic() - start, first_id or 0
            time.sleep(0.05)  # the progress bar's refresh: a display period, not a wait


def count(conn: psycopg.Connection[Any], query: str) -> int:
    """A ``count(*)`` of the demo queue's rows."""
    row = conn.execute(query, (QUEUE,)).fetchone()
    return int(row[0]) if row else 0


def percentile(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[int(p) - 1]


def _ms(value: float) -> str:
    return "not measured" if math.isnan(value) else f"{value:.1f} ms"


def print_summary(s: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="andal demo summary", show_header=False)
    table.add_column(justify="left")
    table.add_column(justify="right")
    table.add_row("jobs", f"{s['jobs']:,}")
    if s["leftover"]:
        table.add_row("left from an earlier run (also run)", f"{s['leftover']:,}")
    table.add_row("wall time", f"{s['seconds']:.1f} s")
    table.add_row("throughput", f"{s['jobs_per_s']:,.0f} jobs/s")
    table.add_row("enqueue→start p50", _ms(s["p50_ms"]))
    table.add_row("enqueue→start p99", _ms(s["p99_ms"]))
    table.add_row("completed", f"{s['completed']:,}")
    table.add_row("retries", f"{s['retries']:,} (injected: {s['injected_retries']:,})")
    table.add_row("dead letters", f"{s['dead']:,} (injected: {s['injected_dead']:,})")
    table.add_row("leases lost", f"{s['lease_lost']:,}")
    Console().print(table)


def next_steps(dsn: str, kept: bool) -> str:
    """What to run next, with the exact commands (the DSN without its password)."""
    if not kept:
        return (
            "the private cluster is removed now. To keep the demo's database and look at it"
            " with `andal status`, `andal top` and `andal web`, run the demo against a server:"
            " DATABASE_URL=postgresql://USER@HOST/DB make demo"
        )
    shown = shlex.quote("postgresql://" + describe(dsn))  # never the password
    steps = [
        ("status", "every queue at a glance"),
        ("top", "the same, live"),
        ("dead list", "the injected dead letters"),
        ("web", "the dashboard: http://127.0.0.1:8080/"),
    ]
    width = max(len(command) for command, _ in steps)
    lines = [f"  andal --dsn {shown} {c.ljust(width)}  # {why}" for c, why in steps]
    return "\n".join(["next, look at the demo queue and its dead letters:", *lines])


def no_server(where: str, reason: str) -> str:
    """The message (and the fix) when the demo has no database to run on."""
    return (
        f"andal demo: cannot connect to {where}: {reason}\n"
        "fix: start PostgreSQL there, or point the demo at a running server"
        " (DATABASE_URL=postgresql://USER@HOST/DB make demo, or PGHOST/PGPORT/PGUSER),"
        " or unset DATABASE_URL and install the PostgreSQL server binaries (initdb, pg_ctl:"
        " apt install postgresql) so that the demo starts a private cluster"
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m andal.demo", description=__doc__.split("\n")[0])
    p.add_argument("--jobs", type=int, default=20_000)
    p.add_argument("--workers", type=int, default=3, help="worker processes")
    p.add_argument("--concurrency", type=int, default=32, help="slots per worker process")
    p.add_argument("--batch", type=int, default=100)
    p.add_argument(
        "--backlog", type=int, default=300, help="max jobs waiting (0: enqueue all at once)"
    )
    p.add_argument("--no-categories", action="store_true", help="enqueue without categories")
    args = p.parse_args(argv)

    cluster: Cluster | None = None
    try:
        server = local_server()
        if os.environ.get("DATABASE_URL"):
            dsn = os.environ["DATABASE_URL"]
            print(f"using $DATABASE_URL: {describe(dsn)}")
        elif answers(server):
            dsn = fresh_database(server)
            print(f"using the server {describe(dsn)}")
        else:
            cluster = Cluster(private_root())
            print(f"no server at {describe(server)}: starting a private cluster in {cluster.root}")
            cluster.init()
            dsn = fresh_database(cluster.start())
            print(f"using the private cluster {describe(dsn)}")
        reason = why_not(dsn)
        if reason is not None:
            print(no_server(describe(dsn), reason), file=sys.stderr)
            return 3
        summary = run_demo(
            dsn, args.jobs, args.workers, args.concurrency, args.batch, args.backlog,
            not args.no_categories,
        )  # fmt: skip
        print_summary(summary)
        print(next_steps(dsn, kept=cluster is None))
        return 0
    except (RuntimeError, FileNotFoundError) as exc:
        print(no_server("a private cluster", str(exc)), file=sys.stderr)
        return 1
    finally:
        if cluster is not None:
            cluster.destroy()


if __name__ == "__main__":
    sys.exit(main())
