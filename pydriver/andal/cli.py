"""The ``andal`` command: install, run a worker, enqueue, look at the queues and dead letters.

Exit codes: 0 ok; 1 the database refused the request; 2 bad usage; 3 the database cannot be
reached; 4 andal is not installed in the database; 5 the handler module cannot be loaded.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

import psycopg

from . import client, logs, sql
from .errors import NotInstalled
from .install import install
from .worker import Registry, Worker, is_connection_error

EXIT_SQL, EXIT_USAGE, EXIT_CONNECT, EXIT_NOT_INSTALLED, EXIT_MODULE = 1, 2, 3, 4, 5
NOT_INSTALLED = "andal is not installed in this database; run `andal install`"


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


def print_table(title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    for i, col in enumerate(columns):
        table.add_column(col, justify="right" if i and col not in ("last error",) else "left")
    for row in rows:
        table.add_row(*("-" if v is None else str(v) for v in row))
    Console().print(table)


# -- commands -------------------------------------------------------------------------------


def cmd_install(args: argparse.Namespace) -> int:
    with connect(args.dsn, installed=False):
        pass  # a clear message when the server does not answer
    done = install(args.dsn)
    with connect(args.dsn) as conn:
        version = _version(conn)
    if done:
        for item in done:
            print(f"applied {item}")
        print(f"andal {version} installed")
    else:
        print(f"andal {version} is already installed; nothing to do")
    return 0


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
    with connect(args.dsn):
        pass
    try:
        worker = Worker(
            args.dsn,
            registry,
            queues=args.queue or None,
            concurrency=args.concurrency,
            batch=args.batch,
            lease=args.lease,
            poll=args.poll,
            grace=args.grace,
        )
        return worker.run()
    except ValueError as exc:  # e.g. --queue without a handler
        raise CliError(one_line(exc), EXIT_USAGE) from None
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
    with connect(args.dsn) as conn:
        if args.count == 1:
            job_id = client.enqueue(conn, payload, args.queue, dedup_key=args.dedup_key, **options)
            print(job_id)
        else:
            ids = client.enqueue_many(conn, [payload] * args.count, args.queue, **options)
            print(f"enqueued {len(ids)} jobs on {args.queue} (ids {ids[0]}..{ids[-1]})")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    with connect(args.dsn) as conn:
        rows = conn.execute(sql.STATUS).fetchall()
    if args.json:
        out = [
            {
                "queue": r[0],
                "ready": r[1],
                "scheduled": r[2],
                "running": r[3],
                "dead": r[4],
                "oldest_ready_age_s": None if r[5] is None else r[5].total_seconds(),
            }
            for r in rows
        ]
        print(json.dumps(out))
        return 0
    if not rows:
        print("no queues")
        return 0
    print_table(
        "andal queues",
        ["queue", "ready", "scheduled", "running", "dead", "oldest ready"],
        [(*r[:5], fmt_age(r[5])) for r in rows],
    )
    return 0


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
            " 4 andal not installed, 5 handler module not loadable"
        ),
    )
    p.add_argument(
        "--dsn",
        default=os.environ.get("DATABASE_URL"),
        help="database to use (default: $DATABASE_URL)",
    )
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)

    s = sub.add_parser("install", help="install or upgrade andal in the database")
    s.set_defaults(func=cmd_install)

    s = sub.add_parser("worker", help="run a worker for the handlers of MODULE")
    s.add_argument("module", metavar="MODULE", help="module path or .py file with a `registry`")
    s.add_argument("--queue", action="append", help="only these queues (repeatable)")
    s.add_argument("--concurrency", type=int, default=4, help="handler slots (default 4)")
    s.add_argument("--batch", type=int, default=100, help="max jobs per claim (default 100)")
    s.add_argument("--lease", type=float, help="lease in seconds (default: the queue's)")
    s.add_argument("--poll", type=float, default=1.0, help="max seconds between claims")
    s.add_argument("--grace", type=float, default=30.0, help="seconds to finish on SIGTERM")
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

    s = sub.add_parser("status", help="jobs per queue")
    s.add_argument("--json", action="store_true")
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
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
    if not args.dsn:
        print("andal: no database: pass --dsn or set DATABASE_URL", file=sys.stderr)
        return EXIT_USAGE
    try:
        return func(args)
    except CliError as exc:
        print(f"andal: {exc}", file=sys.stderr)
        return exc.code
    except NotInstalled:
        print(f"andal: {NOT_INSTALLED}", file=sys.stderr)
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
