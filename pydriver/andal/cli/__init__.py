"""The ``andal`` command: install, run a worker, enqueue, look at the queues and dead letters.

Exit codes: 0 ok; 1 the database refused the request; 2 bad usage; 3 the database cannot be
reached; 4 andal is not installed in the database (or its SQL sources are missing); 5 the
handler module cannot be loaded.

``--dsn`` may be given several times (several andal databases, docs/multi-db.md): ``install``
installs in each, ``worker`` runs one worker pool over all of them, ``enqueue`` routes the job
by its queue (``andal.Client``), ``status`` / ``top`` show each database; ``dead`` takes one.

The command in rooms: ``parser`` (every command and option), ``commands`` (install, worker,
enqueue, dead letters), ``jobs`` (job, cancel, pause, resume), ``status`` (status and top),
``snapshot`` (what they read), ``views`` and ``fmt`` (how it is drawn), ``base`` (exit codes,
the checked connection). ``main`` is the console script's entry point.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence

import psycopg

from ..errors import NotInstalled
from ..hosts import is_connection_error
from ..install import SqlNotFound
from .base import (
    EXIT_CONNECT,
    EXIT_MODULE,
    EXIT_NOT_INSTALLED,
    EXIT_SQL,
    EXIT_USAGE,
    NOT_INSTALLED,
    ONE_DATABASE,
    CliError,
    connect,
    escaped_output,
    one_line,
)
from .commands import check_databases, load_handlers
from .parser import parser
from .snapshot import Snapshot, per_minute, snapshot_json, take_snapshot
from .views import render


def main(argv: Sequence[str] | None = None) -> int:
    """The command's exit code; everything it prints goes through ``escaped_output``."""
    with escaped_output():
        return _main(argv)


def _old_distribution() -> None:
    """Warn when the 0.1.0 distribution named ``andal`` is installed beside ``andal-pg``: both
    own the ``andal`` package, and uninstalling the old one later would delete files of the
    new one."""
    from importlib import metadata

    try:
        old = metadata.distribution("andal")
    except metadata.PackageNotFoundError:
        return
    print(
        f"andal: warning: the old distribution `andal` {old.version} is installed too; run"
        " `pip uninstall -y andal andal-pg` then install andal-pg again (README, Install)",
        file=sys.stderr,
    )


def _main(argv: Sequence[str] | None) -> int:
    _old_distribution()
    args = parser().parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
    given = [*(args.dsn or []), *getattr(args, "dsn_after", [])] or [_dsn_from_environment()]
    if not all(given):
        print("andal: no database: pass --dsn or set ANDAL_DSN or DATABASE_URL", file=sys.stderr)
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


def _dsn_from_environment() -> str:
    """``$ANDAL_DSN``, else ``$DATABASE_URL`` (the first one set and not empty), else ""."""
    return os.environ.get("ANDAL_DSN") or os.environ.get("DATABASE_URL") or ""


__all__ = [
    "EXIT_CONNECT", "EXIT_MODULE", "EXIT_NOT_INSTALLED", "EXIT_SQL", "EXIT_USAGE", "CliError",
    "Snapshot", "check_databases", "connect", "load_handlers", "main", "parser", "per_minute",
    "render", "snapshot_json", "take_snapshot",
]  # fmt: skip
