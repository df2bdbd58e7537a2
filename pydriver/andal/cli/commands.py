"""The commands that act: ``install``, ``worker``, ``enqueue`` and ``dead list|requeue|purge``."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import sys
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

import psycopg

from .. import client, logs
from .. import statements as sql
from ..errors import NotInstalled
from ..hosts import database_labels
from ..install import install, sql_dir
from ..router import RouterError, partition_dsns
from ..worker import Registry, Worker
from .base import (
    EXIT_CONNECT,
    EXIT_MODULE,
    EXIT_NOT_INSTALLED,
    EXIT_PORT,
    EXIT_USAGE,
    NOT_INSTALLED,
    CliError,
    _named,
    _version,
    connect,
    connect_failure,
    one_line,
    print_table,
)
from .fmt import json_row


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
                dsn,
                shards=args.shards,
                lock_down=args.lock_down,
                role_prefix=args.role_prefix,
                exclusive_roles=args.exclusive_roles,
            )
            with connect(dsn) as conn:
                version = _version(conn)
        if done:
            for item in done:  # the roles line names them; the others are steps applied
                print(item if item.startswith("roles ") else f"applied {item}")
            print(f"andal {version} installed")
        else:
            print(f"andal {version} is already installed; nothing to do")
    return 0


def cmd_uninstall(args: argparse.Namespace) -> int:
    from ..uninstall import describe, plan, uninstall

    with connect(args.dsn) as conn:
        what = plan(conn)
    if not args.yes:
        print("andal uninstall would drop:")
        for line in describe(what):
            print(f"  {line}")
        raise CliError("nothing dropped: run again with --yes to drop it", EXIT_USAGE)
    done = uninstall(args.dsn, log=print)
    print(f"andal uninstalled from {done.database}")
    if done.kept_roles:
        print(describe(done)[-1])
    return 0


def on_partitions(dsns: Sequence[str]) -> list[str]:
    """``dsns`` with each router DSN (``andal router install``) replaced by its partitions'
    DSNs (``router.partition_dsns``: the router DSN's options, the partitions' hosts): a
    worker claims, sleeps and listens on the partitions. Logs once what a router gave."""
    out: list[str] = []
    for dsn, label in zip(dsns, database_labels(dsns), strict=True):
        try:
            found = partition_dsns(dsn)
        except psycopg.Error as exc:
            if len(dsns) > 1 and isinstance(exc, psycopg.OperationalError):
                found = None  # check_databases says so, and the worker reconnects
            else:
                raise connect_failure(exc) from None
        except RouterError as exc:
            raise CliError(f"{label}: {exc}", EXIT_NOT_INSTALLED) from None
        if found is None:
            out.append(dsn)
            continue
        logs.event("router_partitions", router=label, partitions=database_labels(found))
        out += found
    return out


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
    logs.setup(args.log_level, fmt=args.log_format)
    args.dsns = on_partitions(args.dsns)
    args.dsn = args.dsns[0]
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
            apply_policy=args.apply_policy,
        )
        return worker.run()
    except ValueError as exc:  # e.g. --queue without a handler
        raise CliError(one_line(exc), EXIT_USAGE) from None
    except OSError as exc:  # --metrics-port taken
        message = f"cannot serve metrics on {args.metrics_addr}:{args.metrics_port}: {exc}"
        raise CliError(message, EXIT_PORT) from None
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


def cmd_dead_list(args: argparse.Namespace) -> int:
    with connect(args.dsn) as conn:
        rows = conn.execute(sql.LIST_DEAD, {"queue": args.queue, "lim": args.limit}).fetchall()
    if args.json:
        keys = ["job_id", "queue", "category", "attempt", "reason", "last_error", "died_at"]
        out = [json_row(dict(zip(keys + ["payload"], r, strict=True))) for r in rows]
        print(json.dumps(out, default=str))
        return 0
    if not rows:
        print("no dead letters")
        return 0
    width = 60 if sys.stdout.isatty() else None  # piped: the whole last line
    print_table(
        "dead letters",
        ["job id", "queue", "category", "attempt", "reason", "died at", "last error"],
        [
            (r[0], r[1], r[2], r[3], r[4], r[6].isoformat(timespec="seconds"), _first(r[5], width))
            for r in rows
        ],
    )
    return 0


def _first(text: str | None, width: int | None = 60) -> str:
    lines = (text or "").strip().splitlines()
    line = lines[-1] if lines else ""
    return line if width is None or len(line) <= width else line[: width - 1] + "…"


def cmd_dead_requeue(args: argparse.Namespace) -> int:
    with connect(args.dsn) as conn:
        row = conn.execute(sql.REQUEUE_DEAD, {"job_id": args.id}).fetchone()
    print(f"requeued dead job {row[0] if row else args.id}")
    return 0


#: Dead letters purged per statement by ``dead purge`` with filters (it repeats until done).
PURGE_BATCH = 1000


def cmd_dead_purge(args: argparse.Namespace) -> int:
    """By id (``queue.purge_dead_jobs``), or everything matching the filters, in batches
    (``queue.purge_dead_matching``, each batch its own transaction)."""
    filters = (args.queue, args.reason, args.older_than)
    if not args.id and all(f is None for f in filters):
        raise CliError(
            "say what to purge: --id, --queue, --reason and/or --older-than"
            " (--older-than 0: every dead letter)",
            EXIT_USAGE,
        )
    if args.id and any(f is not None for f in filters):
        raise CliError("--id purges those dead letters: give it without the filters", EXIT_USAGE)
    if args.older_than is not None and args.older_than < 0:
        raise CliError("--older-than must not be negative", EXIT_USAGE)
    with connect(args.dsn) as conn:
        if args.id:
            row = conn.execute(sql.PURGE_DEAD_JOBS, {"job_ids": args.id}).fetchone()
            purged = int(row[0]) if row else 0
        else:
            params = {
                "queue": args.queue,
                "reason": args.reason,
                "older_than": None
                if args.older_than is None
                else timedelta(seconds=args.older_than),
                "max_rows": PURGE_BATCH,
            }
            purged, batch = 0, PURGE_BATCH
            while batch:
                row = conn.execute(sql.PURGE_DEAD_MATCHING, params).fetchone()
                batch = int(row[0]) if row else 0
                purged += batch
    print(f"purged {purged} dead letters")
    return 0
