"""``andal schedule``, ``andal queue``, ``andal rate-limit`` and ``andal history``: a queue's
policy and its schedules from the command line.

Each command runs one call of ``andal.operations`` (the same calls as ``Client``'s methods),
so the SQL function decides and refuses; these only read the options and print the answer.
Durations are seconds (``90``) or a number with a unit: ``500ms``, ``30s``, ``5m``, ``2h``,
``7d``. ``--json`` prints every field: times in ISO 8601, durations in seconds.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, fields
from datetime import datetime, timedelta
from typing import Any

from .. import operations as ops
from .base import EXIT_SQL, CliError, connect, print_table
from .fmt import json_default, json_row

_SCHEDULE_COLUMNS = (
    "name", "queue", "cron", "every", "timezone", "enabled", "next_at", "last_fired_at",
    "last_job_id", "last_error",
)  # fmt: skip
_RATE_COLUMNS = ("category", "starts", "per", "started_in_window", "max_running")
_DURATION = re.compile(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*")
_UNIT = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, None: 1}


def duration(text: str) -> timedelta:
    """``90``, ``500ms``, ``30s``, ``5m``, ``2h``, ``7d`` as a timedelta (for argparse)."""
    m = _DURATION.fullmatch(text)
    if m is None:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration (90, 30s, 5m, 2h, 7d)")
    return timedelta(seconds=float(m.group(1)) * _UNIT[m.group(2)])


def _json_arg(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not JSON: {exc}") from None


def _show(rows: list[Any], title: str, as_json: bool, columns: Sequence[str]) -> None:
    """Dataclass rows: one JSON array of every field, or a table of ``columns``."""
    if as_json:
        print(json.dumps([json_row(asdict(r)) for r in rows], default=str))
    elif not rows:
        print(f"no {title}")
    else:
        cells = [[_cell(getattr(r, c)) for c in columns] for r in rows]
        print_table(title, [c.replace("_", " ") for c in columns], cells)


def _cell(value: Any) -> Any:
    if isinstance(value, (datetime, timedelta)):
        return json_default(value, text=True)
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    return value


def _settings(settings: ops.QueueSettings, as_json: bool) -> None:
    if as_json:
        print(json.dumps(json_row(asdict(settings)), default=str))
        return
    for f in fields(settings):
        value = getattr(settings, f.name)
        print(f"{f.name:<18} {'-' if value is None else json_default(value, text=True)}")


def cmd_queue(args: argparse.Namespace) -> int:
    options = {name: getattr(args, name) for name in ops.QUEUE_OPTIONS}
    options = {name: value for name, value in options.items() if value is not None}
    with connect(args.dsn) as conn:
        if args.queue_command == "show":
            settings = ops.queue_settings(args.queue).run(conn)
        elif not options:
            raise CliError("queue configure: give at least one option (see --help)", 2)
        else:
            settings = ops.configure_queue(args.queue, options).run(conn)
    _settings(settings, args.json)
    return 0


def cmd_schedule(args: argparse.Namespace) -> int:
    with connect(args.dsn) as conn:
        if args.schedule_command == "list":
            rows = [s for s in ops.schedules().run(conn) if args.all or not s.builtin]
            _show(rows, "schedules", args.json, _SCHEDULE_COLUMNS)
            return 0
        if args.schedule_command == "remove":
            if not ops.unschedule(args.name).run(conn):
                raise CliError(f"no schedule named {args.name!r}", EXIT_SQL)
            print(f"removed schedule {args.name}")
            return 0
        keys = ("cron", "every", "payload", "timezone", "category", "priority")
        options = {k: getattr(args, k) for k in (*keys, "max_attempts", "missed", "catch_up")}
        options["enabled"] = False if args.disabled else None
        options = {k: v for k, v in options.items() if v is not None}
        next_at = ops.schedule(args.name, args.queue, options).run(conn)
    print(f"schedule {args.name}: next run at {json_default(next_at, text=True)}")
    return 0


def cmd_rate_limit(args: argparse.Namespace) -> int:
    with connect(args.dsn) as conn:
        if args.rate_command == "list":
            _show(ops.rate_limits().run(conn), "rate limits", args.json, _RATE_COLUMNS)
            return 0
        if args.off:
            ops.set_rate_limit(args.category, None, None).run(conn)
            print(f"category {args.category}: no rate limit")
        else:
            ops.set_rate_limit(args.category, args.starts, args.per).run(conn)
            per = json_default(args.per, text=True)
            print(f"category {args.category}: at most {args.starts} starts per {per}")
    return 0


def cmd_history(args: argparse.Namespace) -> int:
    with connect(args.dsn) as conn:
        ops.set_history(args.queue, None if args.off else args.retention).run(conn)
    kept = "no history" if args.off else f"history kept {json_default(args.retention, text=True)}"
    print(f"queue {args.queue}: {kept}")
    return 0


def add_commands(sub: Any) -> None:
    """The parsers of these commands, under ``andal``'s subcommands."""
    _queue(sub.add_parser("queue", help="a queue's policy: show or configure it"))
    _schedule(sub.add_parser("schedule", help="periodic jobs: add, remove, list"))
    _rate(sub.add_parser("rate-limit", help="a category's start rate: set, list"))
    s = sub.add_parser("history", help="keep a queue's finished jobs for `andal job`")
    hist = s.add_subparsers(dest="history_command", metavar="ACTION", required=True)
    s = hist.add_parser("set", help="how long a queue keeps its finished jobs")
    s.add_argument("queue", metavar="QUEUE", help="the queue's name")
    how = s.add_mutually_exclusive_group(required=True)
    how.add_argument("--retention", type=duration, metavar="DURATION", help="e.g. 7d")
    how.add_argument("--off", action="store_true", help="keep no history")
    s.set_defaults(func=cmd_history)


_QUEUE_HELP = {
    "timeout": "each attempt may run this long (0: no timeout)",
    "max_attempts": "attempts before a job dies",
    "lease": "how long a claim holds a job between heartbeats",
    "backoff": "retry delay shape: exponential or linear",
    "backoff_base": "the first retry's delay",
    "backoff_cap": "the longest retry delay",
    "jitter": "random share of each delay, 0..1",
    "notify": "wake sleeping workers on enqueue (true/false)",
    "payload_limit": "largest payload, in bytes of JSON text",
    "keep_results": "keep each completed job's result (true/false)",
    "cache_policy": "a job's end and its cache key: invalidate, rewrite or none",
    "results_retention": "how long kept results stay",
    "dead_retention": "how long dead letters stay",
}


def _boolean(text: str) -> bool:
    if text.lower() in ("true", "on", "yes", "1"):
        return True
    if text.lower() in ("false", "off", "no", "0"):
        return False
    raise argparse.ArgumentTypeError(f"{text!r}: give true or false")


#: How a ``queue configure`` option is read, by its SQL type (``ops.QUEUE_OPTIONS``).
_PARSE: dict[str, Callable[[str], Any]] = {
    "interval": duration, "int": int, "real": float, "boolean": _boolean,
}  # fmt: skip


def _queue(s: argparse.ArgumentParser) -> None:
    sub = s.add_subparsers(dest="queue_command", metavar="ACTION", required=True)
    for name, help_text in (("show", "the queue's policy"), ("configure", "change it")):
        p = sub.add_parser(name, help=help_text)
        p.add_argument("queue", metavar="QUEUE", help="the queue's name")
        p.add_argument("--json", action="store_true", help="one JSON object")
        p.set_defaults(func=cmd_queue)
        for option, cast in ops.QUEUE_OPTIONS.items():
            kind = _PARSE.get(cast, str)
            if name == "configure":
                flag = "--" + option.replace("_", "-")
                shown = {"interval": "DURATION", "int": "N", "real": "X", "boolean": "BOOL"}
                p.add_argument(
                    flag, dest=option, type=kind, metavar=shown.get(cast, "TEXT"),
                    help=_QUEUE_HELP[option],
                )  # fmt: skip
            else:
                p.set_defaults(**{option: None})


def _schedule(s: argparse.ArgumentParser) -> None:
    sub = s.add_subparsers(dest="schedule_command", metavar="ACTION", required=True)
    p = sub.add_parser("add", help="add or update a schedule (its name is the key)")
    p.add_argument("name", metavar="NAME", help="the schedule's name")
    p.add_argument("--queue", required=True, help="the queue its jobs go to")
    when = p.add_mutually_exclusive_group(required=True)
    when.add_argument("--cron", metavar="EXPR", help="five-field cron, e.g. '*/5 * * * *'")
    when.add_argument("--every", type=duration, metavar="DURATION", help="e.g. 5m")
    p.add_argument("--payload", type=_json_arg, metavar="JSON", help="each job's payload")
    p.add_argument("--timezone", metavar="TZ", help="the cron's time zone (default UTC)")
    p.add_argument("--category", help="its jobs' category")
    p.add_argument("--priority", type=int, help="its jobs' priority")
    p.add_argument("--max-attempts", type=int, metavar="N", help="its jobs' attempts")
    p.add_argument("--missed", help="ticks missed while down: latest (default) or all")
    p.add_argument("--catch-up", type=int, metavar="N", help="with all: at most the N latest")
    p.add_argument("--disabled", action="store_true", help="add it switched off")
    p.set_defaults(func=cmd_schedule)
    p = sub.add_parser("remove", help="remove a schedule")
    p.add_argument("name", metavar="NAME", help="the schedule's name")
    p.set_defaults(func=cmd_schedule)
    p = sub.add_parser("list", help="every schedule, its next and last run")
    p.add_argument("--json", action="store_true", help="one JSON array, every field")
    p.add_argument("--all", action="store_true", help="andal's own housekeeping schedules too")
    p.set_defaults(func=cmd_schedule)


def _rate(s: argparse.ArgumentParser) -> None:
    sub = s.add_subparsers(dest="rate_command", metavar="ACTION", required=True)
    p = sub.add_parser("set", help="at most STARTS starts of the category per DURATION")
    p.add_argument("category", metavar="CATEGORY", help="the category's name")
    p.add_argument("--starts", type=int, metavar="N", help="at most N starts per window")
    p.add_argument("--per", type=duration, metavar="DURATION", help="the window, e.g. 1s")
    p.add_argument("--off", action="store_true", help="remove the rate limit")
    p.set_defaults(func=_rate_checked)
    p = sub.add_parser("list", help="every rate limit and its current window")
    p.add_argument("--json", action="store_true", help="one JSON array")
    p.set_defaults(func=cmd_rate_limit)


def _rate_checked(args: argparse.Namespace) -> int:
    if args.off == (args.starts is not None or args.per is not None):
        raise CliError("rate-limit set: give --starts N --per DURATION, or --off", 2)
    return cmd_rate_limit(args)
