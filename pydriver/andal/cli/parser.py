"""The command line: every command, its options and their help."""

from __future__ import annotations

import argparse
from typing import Any

from .. import __version__
from .base import CliError, connect
from .commands import (
    cmd_dead_list,
    cmd_dead_purge,
    cmd_dead_requeue,
    cmd_enqueue,
    cmd_install,
    cmd_uninstall,
    cmd_worker,
)
from .status import cmd_status


def _role_prefix(value: str) -> str:
    from ..roles import ROLE_PREFIX

    if not ROLE_PREFIX.fullmatch(value):
        raise argparse.ArgumentTypeError(f"must match {ROLE_PREFIX.pattern}")
    return value


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="andal",
        description="andal: a job queue inside PostgreSQL.",
        epilog=(
            "exit codes: 1 refused by the database, 2 bad usage, 3 database unreachable,"
            " 4 andal not installed, 5 handler module not loadable,"
            " 6 worker stopped by a configuration problem (see its configuration_error lines),"
            " 7 the database refused the login, 8 bad DSN, 9 port taken (--bind,"
            " --metrics-port). The global options (--dsn) may come before or after the command."
        ),
    )
    p.add_argument("--version", action="version", version=f"andal {__version__}")
    p.add_argument(
        "--dsn",
        action="append",
        metavar="DSN",
        help="database to use (default: $ANDAL_DSN, then $DATABASE_URL); repeat it for several"
        " andal databases (worker, enqueue, status, top, install); may come after the command",
    )
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)

    _install(sub)
    _worker(sub)
    _enqueue(sub)
    _status(sub)
    _dead(sub)
    from ..router import add_command as add_router_command

    add_router_command(sub)

    from .jobs import add_commands

    add_commands(sub, connect, CliError)
    from .policy import add_commands as add_policy_commands

    add_policy_commands(sub)

    from ..web import command as web  # argparse only: the web libraries load when it runs

    s = sub.add_parser("web", help="serve the dashboard to a browser (docs/web.md)")
    web.add_arguments(s)
    s.set_defaults(func=web.run)
    _global_options_after(sub)
    return p


def _global_options_after(sub: Any) -> None:
    """Every command takes the global options after its name too (``andal status --dsn X``):
    added to each command's own parser (the innermost: ``dead list``), under their own
    ``dest`` so that ``main`` joins them to those given before the command."""
    for command in sub.choices.values():
        inner = [a for a in command._actions if isinstance(a, argparse._SubParsersAction)]
        if inner:
            _global_options_after(inner[0])
            continue
        command.add_argument(
            "--dsn",
            action="append",
            dest="dsn_after",
            default=argparse.SUPPRESS,
            metavar="DSN",
            help="database to use, as before the command (repeatable; default: $ANDAL_DSN,"
            " then $DATABASE_URL)",
        )


def _install(sub: Any) -> None:
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
        help="this install's roles are PREFIX_producer, PREFIX_worker, PREFIX_admin,"
        " PREFIX_monitor (default: as installed; for a new install andal, or andal_<database>"
        " when another database of the cluster already uses the andal_* roles;"
        " docs/multi-db.md)",
    )
    s.add_argument(
        "--exclusive-roles",
        action="store_true",
        help="refuse (SQLSTATE 55006) if"
        " the roles hold grants in another database of the cluster (docs/multi-db.md)",
    )
    s.set_defaults(func=cmd_install)
    s = sub.add_parser(
        "uninstall", help="drop andal from the database: its schemas, jobs and own roles"
    )
    s.add_argument(
        "--yes", action="store_true", help="do it (without: show what would be dropped, exit 2)"
    )
    s.set_defaults(func=cmd_uninstall)


def _worker(sub: Any) -> None:
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
        "--apply-policy",
        action="store_true",
        help="write the handlers' declared queue policies (timeout, max_attempts, lease,"
        " backoff) and schedules (periodic) over the database's where they differ (default:"
        " only a queue never configured and an absent schedule take them; a difference is"
        " logged once, as policy_conflict or schedule_conflict, and the database wins)",
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
    _log_options(s)
    s.set_defaults(func=cmd_worker)


def _log_options(s: Any) -> None:
    s.add_argument(
        "--log-level",
        default="info",
        choices=["debug", "info", "warning", "error"],
        help="the least severe log lines written (default info)",
    )
    s.add_argument(
        "--log-format",
        choices=["json", "pretty"],
        default=None,
        help="log lines as JSON objects, or readable lines (default: pretty on a terminal,"
        " JSON otherwise)",
    )


def _enqueue(sub: Any) -> None:
    s = sub.add_parser("enqueue", help="enqueue a job")
    s.add_argument("queue", metavar="QUEUE", help="the queue to put the job in")
    s.add_argument("payload", metavar="PAYLOAD_JSON", help="the job's payload, a JSON document")
    s.add_argument("--category", help="a category: its jobs share its concurrency and rate limits")
    s.add_argument(
        "--priority", type=int, default=0, help="higher runs first (default 0; -32768..32767)"
    )
    s.add_argument("--delay", type=float, default=0.0, help="seconds before it may run")
    s.add_argument(
        "--dedup-key",
        metavar="KEY",
        help="no second live job of the queue with this key (the first one's id is printed)",
    )
    s.add_argument(
        "--max-attempts",
        type=int,
        metavar="N",
        help="attempts before it dies (default: the queue's)",
    )
    s.add_argument("--count", type=int, default=1, help="enqueue N copies")
    s.set_defaults(func=cmd_enqueue)


def _status(sub: Any) -> None:
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


def _dead(sub: Any) -> None:
    dead = sub.add_parser("dead", help="dead letters").add_subparsers(
        dest="dead_command", metavar="ACTION", required=True
    )
    s = dead.add_parser("list", help="list dead letters")
    s.add_argument("--queue", help="only this queue's dead letters")
    s.add_argument("--limit", type=int, default=100, metavar="N", help="the N newest (default 100)")
    s.add_argument("--json", action="store_true", help="one JSON array, every field in full")
    s.set_defaults(func=cmd_dead_list)
    s = dead.add_parser("requeue", help="put a dead job back in its queue")
    s.add_argument("id", metavar="ID", type=int, help="the dead job's id")
    s.set_defaults(func=cmd_dead_requeue)
    s = dead.add_parser(
        "purge",
        help="delete dead letters: by id, or every one matching --queue, --reason, --older-than",
    )
    s.add_argument(
        "--id", type=int, action="append", metavar="ID", help="this dead letter (repeatable)"
    )
    s.add_argument("--queue", help="the dead letters of this queue")
    s.add_argument(
        "--reason",
        choices=["exhausted", "non_retryable", "cancelled"],
        help="the dead letters that died for this reason",
    )
    s.add_argument(
        "--older-than",
        type=float,
        metavar="SECONDS",
        help="the dead letters that died more than SECONDS ago (0: all)",
    )
    s.set_defaults(func=cmd_dead_purge)
