"""``andal status`` and ``andal top``: one database or several, once or refreshed in place."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from typing import Any

import psycopg

from ..hosts import database_labels
from .base import EXIT_USAGE, CliError, _console, _named, connect, one_line
from .snapshot import Snapshot, snapshot_json, take_snapshot
from .views import render


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
