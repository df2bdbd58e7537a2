"""The ``andal`` command: install, run a worker, enqueue, look at the queues and dead letters.

Exit codes: 0 ok; 1 the database refused the request; 2 bad usage; 3 the database cannot be
reached; 4 andal is not installed in the database (or its SQL sources are missing); 5 the
handler module cannot be loaded.

``--dsn`` may be given several times (several andal databases, docs/multi-db.md): ``install``
installs in each, ``worker`` runs one worker pool over all of them, ``enqueue`` routes the job
by its queue (``andal.Client``), ``status`` / ``top`` show each database; ``dead`` takes one.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import ModuleType
from typing import Any

import psycopg

from . import __version__, client, logs
from . import statements as sql
from .errors import NotInstalled
from .install import SqlNotFound, install, sql_dir
from .worker import Registry, Worker, database_labels, is_connection_error

EXIT_SQL, EXIT_USAGE, EXIT_CONNECT, EXIT_NOT_INSTALLED, EXIT_MODULE = 1, 2, 3, 4, 5
NOT_INSTALLED = "andal is not installed in this database; run `andal install`"
#: Commands that act on one database.
ONE_DATABASE = ("dead", "job", "cancel", "pause", "resume")


class CliError(Exception):
    """A failure explained in one line, with its exit code."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


@contextmanager
def connect(dsn: str, *, installed: bool = True) -> Iterator[psycopg.Connection]:
    """An autocommit connection; checks that andal is installed unless told not to."""
    try:
        conn = psycopg.connect(dsn, autocommit=True, connect_timeout=5)
    except psycopg.Error as exc:
        raise CliError(f"cannot connect to the database: {one_line(exc)}", EXIT_CONNECT) from None
    with conn:
        if installed:
            row = conn.execute(sql.INSTALLED).fetchone()
            if not row or not row[0]:
                raise CliError(NOT_INSTALLED, EXIT_NOT_INSTALLED)
        yield conn


def fmt_age(age: timedelta | None) -> str:
    if age is None:
        return "-"
    s = age.total_seconds()
    if s < 60:
        return f"{s:.1f}s"
    if s < 3600:
        return f"{int(s // 60)}m{int(s % 60):02d}s"
    if s < 86400:
        return f"{int(s // 3600)}h{int(s % 3600 // 60):02d}m"
    return f"{int(s // 86400)}d{int(s % 86400 // 3600):02d}h"


#: C0 and C1 control characters and DEL: ESC starts a terminal escape sequence.
_CONTROL = str.maketrans({c: "?" for c in [*range(0x20), *range(0x7F, 0xA0)]})


def shown(value: Any) -> str:
    """A value as text safe to show in a rich table: control characters become "?" (no
    terminal escape from a queue name reaches the terminal) and rich markup is escaped (a
    name like ``[/]`` prints as itself instead of ending the command)."""
    from rich.markup import escape

    return escape(str(value).translate(_CONTROL))


def print_table(title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    for i, col in enumerate(columns):
        table.add_column(col, justify="right" if i and col not in ("last error",) else "left")
    for row in rows:
        table.add_row(*("-" if v is None else shown(v) for v in row))
    Console().print(table)


# -- commands -------------------------------------------------------------------------------


def _role_prefix(value: str) -> str:
    from .install import ROLE_PREFIX

    if not ROLE_PREFIX.fullmatch(value):
        raise argparse.ArgumentTypeError(f"must match {ROLE_PREFIX.pattern}")
    return value


def cmd_install(args: argparse.Namespace) -> int:
    sql_dir()  # SqlNotFound (exit 4) before any database is touched
    several = len(args.dsns) > 1
    for dsn, label in zip(args.dsns, database_labels(args.dsns), strict=True):
        if several:
            print(f"{label}:", flush=True)
        with _named(label if several else None):
            with connect(dsn, installed=False):
                pass  # a clear message when the server does not answer
            done = install(
                dsn, shards=args.shards, lock_down=args.lock_down, role_prefix=args.role_prefix,
                exclusive_roles=args.exclusive_roles,
            )  # fmt: skip
            with connect(dsn) as conn:
                version = _version(conn)
        if done:
            for item in done:
                print(f"applied {item}")
            print(f"andal {version} installed")
        else:
            print(f"andal {version} is already installed; nothing to do")
    return 0


@contextmanager
def _named(label: str | None) -> Iterator[None]:
    """With several databases: say which one an error is about."""
    try:
        yield
    except CliError as exc:
        if label is None:
            raise
        raise CliError(f"{label}: {exc}", exc.code) from None


def check_databases(dsns: Sequence[str]) -> list[str]:
    """Connect to each database and check that andal is installed there. Raises ``CliError``
    when one has no andal, or when none answers; returns why the others that do not answer
    cannot be reached (a worker starts without them and reconnects in the background)."""
    several = len(dsns) > 1
    unreachable: list[CliError] = []
    for dsn, label in zip(dsns, database_labels(dsns), strict=True):
        try:
            with _named(label if several else None), connect(dsn):
                pass
        except CliError as exc:
            if exc.code != EXIT_CONNECT:
                raise
            unreachable.append(exc)
    if len(unreachable) == len(dsns):
        raise unreachable[0]
    return [str(exc) for exc in unreachable]


def _version(conn: psycopg.Connection) -> str:
    try:
        row = conn.execute(sql.VERSION).fetchone()
    except psycopg.Error:
        return "(version unknown)"
    return str(row[0]) if row else "(version unknown)"


def load_handlers(target: str) -> Registry:
    """Import ``target`` (a module path or a .py file) and return its handlers."""
    module = _import(target)
    for attr in ("registry", "handlers"):
        found = getattr(module, attr, None)
        if found is not None:
            try:
                registry = Registry.coerce(found)
            except (TypeError, ValueError, AttributeError) as exc:
                raise CliError(f"{target}: bad `{attr}`: {one_line(exc)}", EXIT_MODULE) from None
            if not registry:
                raise CliError(f"{target}: `{attr}` holds no handler", EXIT_MODULE)
            return registry
    raise CliError(
        f"{target}: exposes no `registry` (andal.Registry) or `handlers` ({{queue: fn}})",
        EXIT_MODULE,
    )


def _import(target: str) -> ModuleType:
    path = Path(target)
    try:
        if target.endswith(".py") or os.sep in target:
            if not path.is_file():
                raise CliError(f"handler module not found: {target}", EXIT_MODULE)
            name = f"andal_handlers_{path.stem}"
            spec = importlib.util.spec_from_file_location(name, path)
            if spec is None or spec.loader is None:
                raise CliError(f"cannot load handler module {target}", EXIT_MODULE)
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            sys.path.insert(0, str(path.resolve().parent))
            spec.loader.exec_module(module)
            return module
        if os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())
        return importlib.import_module(target)
    except CliError:
        raise
    except ModuleNotFoundError as exc:
        if exc.name and (target == exc.name or target.startswith(exc.name + ".")):
            raise CliError(f"handler module not found: {target}", EXIT_MODULE) from None
        message = f"cannot import handler module {target}: {one_line(exc)}"
        raise CliError(message, EXIT_MODULE) from None
    except Exception as exc:
        raise CliError(
            f"cannot import handler module {target}: {type(exc).__name__}: {one_line(exc)}",
            EXIT_MODULE,
        ) from None


def cmd_worker(args: argparse.Namespace) -> int:
    registry = load_handlers(args.module)
    logs.setup(args.log_level)
    for reason in check_databases(args.dsns):
        print(f"andal: {reason}; starting without it (reconnecting)", file=sys.stderr)
    try:
        worker = Worker(
            args.dsns if len(args.dsns) > 1 else args.dsn,
            registry,
            queues=args.queue or None,
            concurrency=args.concurrency,
            batch=args.batch,
            lease=args.lease,
            poll=args.poll,
            grace=args.grace,
            maintain_every=args.maintain_every,
            vacuum=not args.no_vacuum,
            metrics_port=args.metrics_port,
            metrics_addr=args.metrics_addr,
            tracing=False if args.no_tracing else None,
            pooler=args.pooler,
            listen_dsn=args.listen_dsn,
        )
        return worker.run()
    except ValueError as exc:  # e.g. --queue without a handler
        raise CliError(one_line(exc), EXIT_USAGE) from None
    except OSError as exc:  # --metrics-port taken
        message = f"cannot serve metrics on {args.metrics_addr}:{args.metrics_port}: {exc}"
        raise CliError(message, EXIT_USAGE) from None
    except NotInstalled:
        raise CliError(NOT_INSTALLED, EXIT_NOT_INSTALLED) from None


def cmd_enqueue(args: argparse.Namespace) -> int:
    try:
        payload = json.loads(args.payload)
    except json.JSONDecodeError as exc:
        raise CliError(f"PAYLOAD_JSON is not valid JSON: {exc}", EXIT_USAGE) from None
    if args.count < 1:
        raise CliError("--count must be at least 1", EXIT_USAGE)
    if args.dedup_key and args.count > 1:
        raise CliError("--dedup-key cannot be combined with --count > 1", EXIT_USAGE)
    options: dict[str, Any] = {
        "category": args.category,
        "priority": args.priority,
        "delay": args.delay,
        "max_attempts": args.max_attempts,
    }
    # With several databases the job goes to its queue's (andal.Client's routing rule).
    producer = client.Client(args.dsns)
    where = producer.index_for(args.queue)
    label = database_labels(args.dsns)[where] if len(args.dsns) > 1 else None
    with _named(label), connect(producer.dsns[where]) as conn:
        if args.count == 1:
            job_id = client.enqueue(conn, payload, args.queue, dedup_key=args.dedup_key, **options)
            print(job_id if label is None else f"{job_id} {label}")
        else:
            ids = client.enqueue_many(conn, [payload] * args.count, args.queue, **options)
            on = args.queue if label is None else f"{args.queue} in {label}"
            print(f"enqueued {len(ids)} jobs on {on} (ids {ids[0]}..{ids[-1]})")
    return 0


# -- status and top -------------------------------------------------------------------------

_STAT_KEYS = (
    "queue", "category", "ready", "scheduled", "running", "dead", "oldest_ready_age",
    "avg_run_ms", "p95_run_ms", "completed_1m", "completed_15m", "completed_1h",
    "retried_1m", "retried_15m", "retried_1h", "dead_1m", "dead_15m", "dead_1h",
    "failure_rate", "retries_per_job", "lock_attempts", "lock_failures", "contention_ratio",
    "pickup_p50_ms", "pickup_p95_ms", "pickup_p99_ms", "wal_bytes_per_job", "paused",
    "minute_elapsed_s",
)  # fmt: skip
_WORKER_KEYS = (
    "worker", "running", "queues", "oldest_claim_age", "next_lease_expiry", "connections",
)  # fmt: skip


@dataclass
class Snapshot:
    """One reading of the database for ``andal status``: queues (with their categories),
    workers, and the cache's figures when ``cache.stats()`` exists."""

    taken_at: datetime
    queues: list[dict[str, Any]]
    categories: list[dict[str, Any]]
    workers: list[dict[str, Any]] | None  # None: not readable with this role
    cache: list[dict[str, Any]] | None  # None: cache.stats() is not installed
    version: str = ""
    database: str = ""


def take_snapshot(conn: psycopg.Connection) -> Snapshot:
    """Read queue.status(), queue.stats(), the workers and cache.stats() on ``conn``."""
    status = conn.execute(sql.STATUS).fetchall()
    stats = [dict(zip(_STAT_KEYS, r, strict=True)) for r in conn.execute(sql.STATS).fetchall()]
    totals = {r["queue"]: r for r in stats if r["category"] is None}
    queues = []
    for name, ready, scheduled, running, dead, oldest in status:
        row = dict(totals.get(name) or _empty_stats(name))
        # live counts from queue.status(), which also lists configured queues without jobs
        row.update(ready=ready, scheduled=scheduled, running=running, dead=dead)
        row["oldest_ready_age"] = oldest
        queues.append(row)
    known = {q["queue"] for q in queues}
    queues += [r for r in totals.values() if r["queue"] not in known]
    categories = [r for r in stats if r["category"] is not None]
    has_workers, has_cache = conn.execute(sql.HAS_FUNCTIONS).fetchone() or (False, False)
    workers = _read_workers(conn, has_workers)
    cache = None
    if has_cache:
        cur = conn.execute(sql.CACHE_STATS)
        names = [d.name for d in cur.description or []]
        cache = [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
    info = conn.info
    return Snapshot(
        taken_at=datetime.now(timezone.utc),
        queues=queues,
        categories=categories,
        workers=workers,
        cache=cache,
        version=_version(conn),
        database=f"{info.dbname}@{info.host}:{info.port}",
    )


def _empty_stats(queue: str) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(_STAT_KEYS)
    row.update(queue=queue, lock_attempts=0, lock_failures=0, minute_elapsed_s=0.0)
    for key in _STAT_KEYS:
        if key[-3:] in ("_1m", "15m", "_1h"):
            row[key] = 0
    return row


def _read_workers(conn: psycopg.Connection, has_function: bool) -> list[dict[str, Any]] | None:
    try:
        with conn.transaction():  # a refused fallback must not spoil the connection
            rows = conn.execute(sql.WORKERS if has_function else sql.WORKERS_FALLBACK).fetchall()
    except psycopg.errors.InsufficientPrivilege:
        return None
    return [dict(zip(_WORKER_KEYS, r, strict=True)) for r in rows]


def per_minute(row: Mapping[str, Any], outcome: str) -> float:
    """Attempts ended per minute with ``outcome``: the pace of the current minute so far (its
    count over the seconds elapsed in it, at least one). queue.stats() keeps whole minutes, so
    this is the most recent figure it can give; right after a minute starts it is noisy."""
    elapsed = max(float(row.get("minute_elapsed_s") or 0.0), 1.0)
    return float(row.get(f"{outcome}_1m") or 0) * 60 / elapsed


def _seconds(value: timedelta | None) -> float | None:
    return None if value is None else value.total_seconds()


def snapshot_json(snap: Snapshot, full: bool = False) -> Any:
    """The JSON form: a list of queues (each with its categories); with ``full`` an object
    with the queues, workers and cache."""

    def clean(row: Mapping[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in row.items():
            if key == "minute_elapsed_s":
                continue
            if isinstance(value, timedelta):
                out[f"{key}_s"] = value.total_seconds()
            else:
                out[key] = value
        return out

    queues = []
    for q in snap.queues:
        item = clean(q)
        item.pop("category", None)
        for outcome in ("completed", "retried", "dead"):
            item[f"{outcome}_per_min"] = round(per_minute(q, outcome), 3)
        item["categories"] = [
            clean({k: v for k, v in c.items() if k != "queue"})
            for c in snap.categories
            if c["queue"] == q["queue"]
        ]
        queues.append(item)
    if not full:
        return queues
    return {
        "taken_at": snap.taken_at.isoformat(timespec="seconds"),
        "database": snap.database,
        "version": snap.version,
        "queues": queues,
        "workers": None if snap.workers is None else [clean(w) for w in snap.workers],
        "cache": None if snap.cache is None else [clean(c) for c in snap.cache],
    }


def fmt_count(n: float | None) -> str:
    if n is None:
        return "-"
    if n < 10_000:
        return f"{n:g}" if isinstance(n, float) and n != int(n) else f"{int(n)}"
    if n < 1_000_000:
        return f"{n / 1000:.1f}k"
    return f"{n / 1_000_000:.1f}M"


def fmt_rate(n: float) -> str:
    if n == 0:
        return "0"
    if n < 10:
        return f"{n:.1f}"
    return fmt_count(round(n))


def fmt_ms(ms: float | None) -> str:
    if ms is None:
        return "-"
    if ms < 10:
        return f"{ms:.1f}ms"
    if ms < 1000:
        return f"{ms:.0f}ms"
    return fmt_age(timedelta(milliseconds=ms))


def fmt_pct(ratio: float | None) -> str:
    return "-" if ratio is None else f"{ratio * 100:.1f}%"


def render(snap: Snapshot, interval: float | None = None, note: str | None = None) -> Any:
    """The status view: a header line, then tables of queues, busy categories, workers and
    the cache (when cache.stats() exists)."""
    from rich import box
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    parts: list[Any] = []
    head = Text()
    head.append("andal", style="bold")
    head.append(f" {snap.version}  {snap.database}  {snap.taken_at:%Y-%m-%d %H:%M:%S} UTC")
    if interval is not None:
        head.append(f"  every {interval:g}s, Ctrl-C to quit", style="dim")
    parts.append(head)
    if note:
        parts.append(Text(note, style="bold red"))

    def table(title: str, columns: Sequence[str]) -> Table:
        t = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
        for i, col in enumerate(columns):
            t.add_column(col, justify="left" if i == 0 else "right", no_wrap=i == 0)
        return t

    q = table(
        "queues  (per minute: this minute's pace; failed and pickup: last hour)",
        [
            "queue", "ready", "scheduled", "running", "dead", "oldest ready",
            "done/min", "retried/min", "dead/min", "failed", "pickup p50", "pickup p99",
        ],
    )  # fmt: skip
    for r in snap.queues:
        age = _seconds(r["oldest_ready_age"])
        fail = r["failure_rate"]
        q.add_row(
            Text(str(r["queue"]).translate(_CONTROL)).append("  paused", style="bold yellow")
            if r["paused"]
            else shown(r["queue"]),
            fmt_count(r["ready"]),
            fmt_count(r["scheduled"]),
            fmt_count(r["running"]),
            Text(fmt_count(r["dead"]), style="red" if r["dead"] else ""),
            Text(fmt_age(r["oldest_ready_age"]), style="yellow" if age and age > 60 else ""),
            fmt_rate(per_minute(r, "completed")),
            fmt_rate(per_minute(r, "retried")),
            Text(fmt_rate(per_minute(r, "dead")), style="red" if r["dead_15m"] else ""),
            Text(fmt_pct(fail), style="red" if fail and fail > 0.05 else ""),
            fmt_ms(r["pickup_p50_ms"]),
            fmt_ms(r["pickup_p99_ms"]),
        )
    if not snap.queues:
        q.add_row("(no queues)", *[""] * 11)
    parts.append(q)

    busy = [
        c for c in snap.categories if c["running"] or c["ready"] or (c["lock_failures"] or 0) > 0
    ]
    if busy:
        c = table(
            "categories  (with jobs or contention; try-locks over 1 h)",
            [
                "queue / category", "ready", "running", "oldest ready", "done/min",
                "try-locks", "contention", "pickup p99",
            ],
        )  # fmt: skip
        for r in busy:
            ratio = r["contention_ratio"]
            c.add_row(
                shown(f"{r['queue']} / {r['category']}"),
                fmt_count(r["ready"]),
                fmt_count(r["running"]),
                fmt_age(r["oldest_ready_age"]),
                fmt_rate(per_minute(r, "completed")),
                fmt_count(r["lock_attempts"]),
                Text(fmt_pct(ratio), style="yellow" if ratio and ratio > 0.5 else ""),
                fmt_ms(r["pickup_p99_ms"]),
            )
        parts.append(c)

    if snap.workers is None:
        parts.append(Text("workers: not readable by this role (see docs/cli.md)"))
    else:
        w = table(
            "workers",
            ["worker", "running", "queues", "longest running", "next lease expiry", "sessions"],
        )
        for r in snap.workers:
            w.add_row(
                shown(r["worker"]),
                fmt_count(r["running"]),
                shown(",".join(sorted(r["queues"] or [])) or "-"),
                fmt_age(r["oldest_claim_age"]),
                fmt_age(r["next_lease_expiry"]),
                fmt_count(r["connections"]),
            )
        if not snap.workers:
            w.add_row("(none connected)", "", "", "", "", "")
        parts.append(w)

    if snap.cache is not None:
        parts.extend(_cache_parts(snap.cache, table))
    return Group(*parts)


def _cache_parts(rows: list[dict[str, Any]], table: Callable[..., Any]) -> list[Any]:
    """cache.stats() rows ``(metric, labels, value)``: a summary line, reads per pool and job
    type, and materialized views; any other shape as a plain table."""
    from rich.text import Text

    if not rows or set(rows[0]) != {"metric", "labels", "value"}:
        names = list(rows[0]) if rows else ["cache.stats()"]
        t = table("cache", names)
        for r in rows:
            t.add_row(*(shown(_cell(v)) for v in r.values()))
        return [t]
    plain = {r["metric"]: r["value"] for r in rows if not r["labels"]}
    reads: dict[tuple[str, str], dict[str, float]] = {}
    views: dict[str, dict[str, float]] = {}
    for r in rows:
        labels = r["labels"] or {}
        if r["metric"] in ("reads", "hit_ratio") and "job_type" in labels:
            key = (str(labels.get("pool", "-")), str(labels["job_type"]))
            name = labels.get("result", "hit_ratio") if r["metric"] == "reads" else "hit_ratio"
            reads.setdefault(key, {})[name] = r["value"]
        elif r["metric"].startswith("view_") and "view" in labels:
            views.setdefault(str(labels["view"]), {})[r["metric"]] = r["value"]

    def num(metric: str) -> float | None:
        value = plain.get(metric)
        return None if value is None else float(value)

    line = Text("cache  ", style="bold")
    line.append(f"entries {fmt_count(num('entries'))}  bytes {fmt_bytes(num('bytes'))}  ")
    inv, per_job = num("invalidations_per_minute"), num("invalidations_per_ready_job")
    line.append(f"invalidations/min {fmt_rate(inv or 0)}")
    if per_job is not None:
        line.append(f" ({per_job:.2g} per ready job)")
    overdue, failures = num("stale_overdue") or 0, num("checksum_failures_1h") or 0
    line.append("  stale overdue ")
    line.append(fmt_count(overdue), style="red" if overdue else "")
    line.append("  checksum failures 1h ")
    line.append(fmt_count(failures), style="red" if failures else "")
    since = num("seconds_since_last_invalidation")
    if since is not None:
        line.append(f"  last invalidation {fmt_age(timedelta(seconds=since))} ago")
    out: list[Any] = [line]
    if reads:
        t = table(
            "cache reads  (reported by the workers, last hour)",
            ["pool / job type", "local hits", "shared hits", "stale hits", "misses", "hit ratio"],
        )
        for (pool, job_type), r in sorted(reads.items()):
            ratio = r.get("hit_ratio")
            t.add_row(
                shown(f"{pool} / {job_type}"),
                *(fmt_count(r.get(k, 0)) for k in ("local_hit", "shared_hit", "stale_hit", "miss")),
                Text(fmt_pct(ratio), style="yellow" if ratio is not None and ratio < 0.5 else ""),
            )
        out.append(t)
    if views:
        t = table(
            "materialized views", ["view", "data age", "last refresh took", "pending changes"]
        )
        for view, v in sorted(views.items()):
            lag, took = v.get("view_lag_seconds"), v.get("view_last_refresh_seconds")
            t.add_row(
                shown(view),
                fmt_age(None if lag is None else timedelta(seconds=lag)),
                fmt_ms(None if took is None else took * 1000),
                fmt_count(v.get("view_pending_changes")),
            )
        out.append(t)
    return out


def fmt_bytes(n: float | None) -> str:
    if n is None:
        return "-"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return "-"  # unreachable


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, timedelta):
        return fmt_age(value)
    if isinstance(value, float):
        return f"{value:.3g}"
    if isinstance(value, int):
        return fmt_count(value)
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    return str(value)


def _console() -> Any:
    from rich.console import Console

    # Piped or redirected: wide lines rather than squeezed columns (COLUMNS still wins).
    if not sys.stdout.isatty() and "COLUMNS" not in os.environ:
        return Console(width=160)
    return Console()


def cmd_status(args: argparse.Namespace) -> int:
    if args.interval <= 0:
        raise CliError("--interval must be positive", EXIT_USAGE)
    if args.watch:
        return _watch(args)
    labels = database_labels(args.dsns)
    snaps, notes, code = _snapshots(args.dsns, labels)
    if args.json:
        print(json.dumps(_status_json(labels, snaps, notes, args.full), default=str))
        for note in notes:
            if note is not None:
                print(f"andal: {note}", file=sys.stderr)
        return code
    _console().print(_status_view(labels, snaps, notes))
    return code


def _snapshots(
    dsns: Sequence[str], labels: Sequence[str]
) -> tuple[list[Snapshot | None], list[str | None], int]:
    """A snapshot of each database. With one, its errors are raised (the usual exit codes);
    with several, a database that fails gets no snapshot but a note, and the worst exit code
    is returned with the others' snapshots (all failing: raised)."""
    several = len(dsns) > 1
    snaps: list[Snapshot | None] = []
    notes: list[str | None] = []
    errors: list[CliError] = []
    for dsn, label in zip(dsns, labels, strict=True):
        try:
            with _named(label if several else None), connect(dsn) as conn:
                snaps.append(take_snapshot(conn))
                notes.append(None)
        except CliError as exc:
            if not several:
                raise
            snaps.append(None)
            notes.append(str(exc))
            errors.append(exc)
    if errors and len(errors) == len(dsns):
        raise errors[0]
    return snaps, notes, max((e.code for e in errors), default=0)


def _status_json(
    labels: Sequence[str],
    snaps: Sequence[Snapshot | None],
    notes: Sequence[str | None],
    full: bool,
) -> Any:
    """One database: its document (``snapshot_json``). Several: a list with, per database,
    ``{"database", "queues"}`` (with ``full``: the full object), or ``{"database", "error"}``
    for one that cannot be read."""
    if len(snaps) == 1 and snaps[0] is not None:
        return snapshot_json(snaps[0], full)
    out: list[dict[str, Any]] = []
    for label, snap, note in zip(labels, snaps, notes, strict=True):
        if snap is None or note is not None:
            out.append({"database": label, "error": note})
        elif full:
            out.append(dict(snapshot_json(snap, True), database=label))
        else:
            out.append({"database": label, "queues": snapshot_json(snap)})
    return out


def _status_view(
    labels: Sequence[str],
    snaps: Sequence[Snapshot | None],
    notes: Sequence[str | None],
    interval: float | None = None,
) -> Any:
    """One database: ``render``. Several: each one's view (its header line names it), one
    after the other; one never read shows its name and why."""
    if len(snaps) == 1 and snaps[0] is not None:
        return render(snaps[0], interval, notes[0])
    from rich.console import Group
    from rich.text import Text

    parts: list[Any] = []
    for label, snap, note in zip(labels, snaps, notes, strict=True):
        if snap is None:
            head = Text()
            head.append("andal", style="bold")
            head.append(f"  {label}")
            parts += [head, Text(note or "no data", style="bold red")]
        else:
            parts.append(render(snap, interval, note))
        parts.append(Text(""))
    return Group(*parts)


def _watch(args: argparse.Namespace) -> int:
    """Refresh in place until Ctrl-C (exit 0). A lost database is shown, and retried."""
    from rich.live import Live

    dsns: list[str] = args.dsns
    labels = database_labels(dsns)
    conns: list[psycopg.Connection | None] = [None] * len(dsns)
    try:
        # the usual exit codes when it cannot start (with several: when none answers)
        snaps, notes, _code = _snapshots(dsns, labels)
        if args.json:
            while True:
                if len(dsns) == 1 and notes[0] is not None:
                    # no stale document: the reason, on stderr
                    print(f"andal: {notes[0]}", file=sys.stderr, flush=True)
                else:
                    doc = _status_json(labels, snaps, notes, args.full)
                    print(json.dumps(doc, default=str), flush=True)
                time.sleep(args.interval)
                _refresh_all(dsns, conns, snaps, notes)
        console = _console()
        with Live(
            _status_view(labels, snaps, notes, args.interval),
            console=console,
            auto_refresh=False,
            transient=False,
        ) as live:
            while True:
                time.sleep(args.interval)
                _refresh_all(dsns, conns, snaps, notes)
                live.update(_status_view(labels, snaps, notes, args.interval), refresh=True)
    except KeyboardInterrupt:  # the way out
        return 0
    except BrokenPipeError:  # `| head` has seen enough; nothing more to flush at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    finally:
        for conn in conns:
            if conn is not None:
                conn.close()


def _refresh_all(
    dsns: Sequence[str],
    conns: list[psycopg.Connection | None],
    snaps: list[Snapshot | None],
    notes: list[str | None],
) -> None:
    """Refresh every database's snapshot in place (see ``_refresh``)."""
    for i, dsn in enumerate(dsns):
        snaps[i], conns[i], notes[i] = _refresh(dsn, conns[i], snaps[i])


def _refresh(
    dsn: str, conn: psycopg.Connection | None, last: Snapshot | None
) -> tuple[Snapshot | None, psycopg.Connection | None, str | None]:
    """A new snapshot; on a lost database the last one, a note, and no connection."""
    try:
        if conn is None or conn.closed or conn.broken:
            conn = psycopg.connect(dsn, autocommit=True, connect_timeout=5)
        return take_snapshot(conn), conn, None
    except psycopg.Error as exc:
        if conn is not None:
            conn.close()
        if last is None:
            return None, None, f"database error: {one_line(exc)}"
        return last, None, f"database error, showing {last.taken_at:%H:%M:%S}: {one_line(exc)}"


def cmd_dead_list(args: argparse.Namespace) -> int:
    with connect(args.dsn) as conn:
        rows = conn.execute(sql.LIST_DEAD, {"queue": args.queue, "lim": args.limit}).fetchall()
    if args.json:
        keys = ["job_id", "queue", "category", "attempt", "reason", "last_error", "died_at"]
        out = [dict(zip(keys + ["payload"], r, strict=True)) for r in rows]
        print(json.dumps(out, default=str))
        return 0
    if not rows:
        print("no dead letters")
        return 0
    print_table(
        "dead letters",
        ["job id", "queue", "category", "attempt", "reason", "died at", "last error"],
        [
            (r[0], r[1], r[2], r[3], r[4], r[6].isoformat(timespec="seconds"), _first(r[5]))
            for r in rows
        ],
    )
    return 0


def _first(text: str | None, width: int = 60) -> str:
    lines = (text or "").strip().splitlines()
    line = lines[-1] if lines else ""
    return line if len(line) <= width else line[: width - 1] + "…"


def cmd_dead_requeue(args: argparse.Namespace) -> int:
    with connect(args.dsn) as conn:
        row = conn.execute(sql.REQUEUE_DEAD, {"job_id": args.id}).fetchone()
    print(f"requeued dead job {row[0] if row else args.id}")
    return 0


def cmd_dead_purge(args: argparse.Namespace) -> int:
    if args.older_than < 0:
        raise CliError("--older-than must not be negative", EXIT_USAGE)
    with connect(args.dsn) as conn:
        row = conn.execute(
            sql.PURGE_DEAD, {"older_than": timedelta(seconds=args.older_than)}
        ).fetchone()
    print(f"purged {row[0] if row else 0} dead letters")
    return 0


# -- parser ---------------------------------------------------------------------------------


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="andal",
        description="andal: a job queue inside PostgreSQL.",
        epilog=(
            "exit codes: 1 refused by the database, 2 bad usage, 3 database unreachable,"
            " 4 andal not installed, 5 handler module not loadable,"
            " 6 worker stopped by a configuration problem (see its configuration_error lines)"
        ),
    )
    p.add_argument("--version", action="version", version=f"andal {__version__}")
    p.add_argument(
        "--dsn",
        action="append",
        metavar="DSN",
        help="database to use (default: $DATABASE_URL); repeat it for several andal databases"
        " (worker, enqueue, status, top, install)",
    )
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)

    s = sub.add_parser("install", help="install or upgrade andal in the database")
    s.add_argument(
        "--shards",
        type=int,
        metavar="N",
        help="partition the live table by hash of the queue into N shards, in place"
        " (1: unsharded; default: keep the current layout)",
    )
    s.add_argument(
        "--lock-down",
        action="store_true",
        help="revoke CONNECT and TEMPORARY on the database from PUBLIC and send notifications"
        " without names (queue._lock_down(); docs/reliability.md, threat model)",
    )
    s.add_argument(
        "--role-prefix",
        type=_role_prefix,
        metavar="PREFIX",
        help="this install's roles are PREFIX_producer, PREFIX_worker, PREFIX_admin"
        " (default: as installed; andal for a new install; docs/multi-db.md)",
    )
    s.add_argument(
        "--exclusive-roles",
        action="store_true",
        help="refuse (SQLSTATE 55006) if"
        " the roles hold grants in another database of the cluster (docs/multi-db.md)",
    )
    s.set_defaults(func=cmd_install)

    s = sub.add_parser("worker", help="run a worker for the handlers of MODULE")
    s.add_argument("module", metavar="MODULE", help="module path or .py file with a `registry`")
    s.add_argument("--queue", action="append", help="only these queues (repeatable)")
    s.add_argument("--concurrency", type=int, default=4, help="handler slots (default 4)")
    s.add_argument("--batch", type=int, default=100, help="max jobs per claim (default 100)")
    s.add_argument("--lease", type=float, help="lease in seconds (default: the queue's)")
    s.add_argument("--poll", type=float, default=1.0, help="max seconds between claims")
    s.add_argument("--grace", type=float, default=30.0, help="seconds to finish on SIGTERM")
    s.add_argument(
        "--maintain-every",
        type=float,
        default=60.0,
        metavar="S",
        help="seconds between queue.maintain() runs (and vacuums, autovacuum off); 0: never",
    )
    s.add_argument(
        "--no-vacuum", action="store_true", help="never vacuum, even with autovacuum off"
    )
    s.add_argument(
        "--metrics-port", type=int, metavar="N", help="serve Prometheus metrics on :N/metrics"
    )
    s.add_argument(
        "--metrics-addr", default="0.0.0.0", metavar="ADDR", help="address for --metrics-port"
    )
    s.add_argument(
        "--no-tracing",
        action="store_true",
        help="no OpenTelemetry spans even when a tracer provider is set",
    )
    s.add_argument(
        "--pooler",
        choices=["transaction", "session"],
        help="a pooler (pgbouncer) is between the worker and the database, in this mode:"
        " no server-side prepared statements; in transaction mode LISTEN needs --listen-dsn"
        " (otherwise the worker polls)",
    )
    s.add_argument(
        "--listen-dsn",
        action="append",
        metavar="DSN",
        help="a direct connection (not through the pooler) for LISTEN and the vacuum's lock;"
        " one per --dsn, in the same order",
    )
    s.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    s.set_defaults(func=cmd_worker)

    s = sub.add_parser("enqueue", help="enqueue a job")
    s.add_argument("queue", metavar="QUEUE")
    s.add_argument("payload", metavar="PAYLOAD_JSON")
    s.add_argument("--category")
    s.add_argument("--priority", type=int, default=0)
    s.add_argument("--delay", type=float, default=0.0, help="seconds before it may run")
    s.add_argument("--dedup-key")
    s.add_argument("--max-attempts", type=int)
    s.add_argument("--count", type=int, default=1, help="enqueue N copies")
    s.set_defaults(func=cmd_enqueue)

    for name, help_text in (
        ("status", "queues, categories, workers and cache at a glance"),
        ("top", "live status view (status --watch)"),
    ):
        s = sub.add_parser(name, help=help_text)
        s.add_argument(
            "--watch", action="store_true", default=name == "top", help="refresh in place"
        )
        s.add_argument(
            "--interval", type=float, default=2.0, metavar="S", help="seconds between refreshes (2)"
        )
        s.add_argument("--json", action="store_true", help="JSON (with --watch: one per line)")
        s.add_argument(
            "--full", action="store_true", help="with --json: an object with workers and cache"
        )
        s.set_defaults(func=cmd_status)

    dead = sub.add_parser("dead", help="dead letters").add_subparsers(
        dest="dead_command", metavar="ACTION", required=True
    )
    s = dead.add_parser("list", help="list dead letters")
    s.add_argument("--queue")
    s.add_argument("--limit", type=int, default=100)
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_dead_list)
    s = dead.add_parser("requeue", help="put a dead job back in its queue")
    s.add_argument("id", metavar="ID", type=int)
    s.set_defaults(func=cmd_dead_requeue)
    s = dead.add_parser("purge", help="delete dead letters older than SECONDS")
    s.add_argument("--older-than", type=float, required=True, metavar="SECONDS")
    s.set_defaults(func=cmd_dead_purge)

    from .cli_jobs import add_commands

    add_commands(sub, connect, CliError)

    from .web import command as web  # argparse only: the web libraries load when it runs

    s = sub.add_parser("web", help="serve the dashboard to a browser (docs/web.md)")
    web.add_arguments(s)
    s.set_defaults(func=web.run)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
    given: list[str] = args.dsn if args.dsn is not None else [os.environ.get("DATABASE_URL", "")]
    if not all(given):
        print("andal: no database: pass --dsn or set DATABASE_URL", file=sys.stderr)
        return EXIT_USAGE
    if len(set(given)) != len(given):
        print("andal: --dsn: the same database is given twice", file=sys.stderr)
        return EXIT_USAGE
    if len(given) > 1 and args.command in ONE_DATABASE:
        print(
            f"andal: `andal {args.command}` works on one database: give one --dsn", file=sys.stderr
        )
        return EXIT_USAGE
    # every database given; ``dsn`` is the first (the only one, mostly)
    args.dsns, args.dsn = given, given[0]
    try:
        return func(args)
    except CliError as exc:
        print(f"andal: {exc}", file=sys.stderr)
        return exc.code
    except NotInstalled:
        print(f"andal: {NOT_INSTALLED}", file=sys.stderr)
        return EXIT_NOT_INSTALLED
    except SqlNotFound as exc:
        print(f"andal: {one_line(exc)}", file=sys.stderr)
        return EXIT_NOT_INSTALLED
    except psycopg.Error as exc:
        if is_connection_error(exc):
            print(f"andal: lost the database: {one_line(exc)}", file=sys.stderr)
            return EXIT_CONNECT
        code = getattr(exc.diag, "sqlstate", None) or "?"
        message = exc.diag.message_primary or one_line(exc)
        print(f"andal: {message} (SQLSTATE {code})", file=sys.stderr)
        return EXIT_SQL
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["main"]
