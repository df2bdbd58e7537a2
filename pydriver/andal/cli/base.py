"""What every command shares: exit codes, the one-line error, the checked connection, safe
text for a terminal."""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TextIO

import psycopg

from .. import statements as sql
from ..router import is_router

EXIT_SQL, EXIT_USAGE, EXIT_CONNECT, EXIT_NOT_INSTALLED, EXIT_MODULE = 1, 2, 3, 4, 5
#: 6 is the worker's (a configuration problem: andal.worker.EXIT_CONFIG).
EXIT_LOGIN, EXIT_BAD_DSN, EXIT_PORT = 7, 8, 9
#: What a server that answered says when it refuses the login (libpq's FATAL messages).
_LOGIN_REFUSED = (
    "authentication failed",
    "no pg_hba.conf entry",
    "does not exist",  # role "x" / database "x" does not exist
    "not permitted to log in",
    "too many connections",
    "permission denied for database",
)
NOT_INSTALLED = "andal is not installed in this database; run `andal install`"
#: Commands that act on one database.
ONE_DATABASE = (
    "dead", "job", "cancel", "pause", "resume", "queue", "schedule", "rate-limit", "history",
    "uninstall",
)  # fmt: skip


class CliError(Exception):
    """A failure explained in one line, with its exit code."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def connect_failure(exc: psycopg.Error) -> CliError:
    """Why a connection could not be made, with its own exit code: the DSN is not one
    (``EXIT_BAD_DSN``), the server answered and refused the login (``EXIT_LOGIN``), or no
    server answered (``EXIT_CONNECT``)."""
    text = one_line(exc)
    if isinstance(exc, psycopg.ProgrammingError) or "connection is bad: invalid" in text:
        return CliError(f"bad DSN: {text}", EXIT_BAD_DSN)
    if "FATAL:" in text and any(reason in text for reason in _LOGIN_REFUSED):
        return CliError(f"the database refused the login: {text}", EXIT_LOGIN)
    return CliError(f"cannot connect to the database: {text}", EXIT_CONNECT)


@contextmanager
def connect(dsn: str, *, installed: bool = True) -> Iterator[psycopg.Connection]:
    """An autocommit connection; checks that andal is installed unless told not to."""
    try:
        conn = psycopg.connect(dsn, autocommit=True, connect_timeout=5)
    except psycopg.Error as exc:
        raise connect_failure(exc) from None
    with conn:
        if installed:
            row = conn.execute(sql.INSTALLED).fetchone()
            if not (row and row[0]) and not is_router(conn):  # a router: the same functions
                raise CliError(NOT_INSTALLED, EXIT_NOT_INSTALLED)
        yield conn


@contextmanager
def _named(label: str | None) -> Iterator[None]:
    """With several databases: say which one an error is about."""
    try:
        yield
    except CliError as exc:
        if label is None:
            raise
        raise CliError(f"{label}: {exc}", exc.code) from None


def _version(conn: psycopg.Connection) -> str:
    try:
        row = conn.execute(sql.VERSION).fetchone()
    except psycopg.Error:
        return "(version unknown)"
    return str(row[0]) if row else "(version unknown)"


#: Control characters (U+0000 to U+001F, DEL, U+0080 to U+009F): ESC starts an escape sequence.
_CONTROL = str.maketrans({c: "?" for c in [*range(0x20), *range(0x7F, 0xA0)]})
#: The same but line feed and tab: what the command's own output may hold.
_CONTROL_IN_TEXT = str.maketrans(
    {c: "?" for c in [*range(0x20), *range(0x7F, 0xA0)] if c not in (0x0A, 0x09)}
)


def plain(value: Any) -> str:
    """A value as one line of text: every control character (line feed too) is "?"."""
    return str(value).translate(_CONTROL)


class Escaped(io.TextIOBase):
    """The command's stdout and stderr (``escaped_output``): every control character written,
    but line feed and tab, becomes "?". A name or an error holding a terminal escape sequence
    (title change, clear screen, bell) reaches the terminal as text whichever command prints
    it. Rich draws with its own escape sequences: it writes to ``raw`` (``_console``) and
    its cells go through ``shown``."""

    def __init__(self, raw: TextIO) -> None:
        self.raw = raw

    def write(self, text: str) -> int:
        self.raw.write(text.translate(_CONTROL_IN_TEXT))
        return len(text)

    def flush(self) -> None:
        self.raw.flush()

    def isatty(self) -> bool:
        return self.raw.isatty()

    def fileno(self) -> int:
        return self.raw.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.raw, "encoding", "utf-8")


@contextmanager
def escaped_output() -> Iterator[None]:
    """``sys.stdout`` and ``sys.stderr`` escaped (``Escaped``) while the block runs."""
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = Escaped(saved[0]), Escaped(saved[1])
    try:
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        sys.stdout, sys.stderr = saved


def raw_stdout() -> TextIO:
    """The terminal's stdout under ``Escaped`` (for rich, which escapes its cells itself)."""
    out = sys.stdout
    return out.raw if isinstance(out, Escaped) else out


def shown(value: Any) -> str:
    """A value as text safe to show in a rich table: control characters become "?" (no
    terminal escape from a queue name reaches the terminal) and rich markup is escaped (a
    name like ``[/]`` prints as itself instead of ending the command)."""
    from rich.markup import escape

    return escape(str(value).translate(_CONTROL))


def print_table(title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    from rich.table import Table

    table = Table(title=title)
    for i, col in enumerate(columns):
        # a narrow terminal or a pipe wraps a long cell, never cuts it (overflow="fold")
        right = i and col not in ("last error",)
        table.add_column(col, justify="right" if right else "left", overflow="fold")
    for row in rows:
        table.add_row(*("-" if v is None else shown(v) for v in row))
    _console().print(table)


def _console() -> Any:
    from rich.console import Console

    # Piped or redirected: wide lines rather than squeezed columns (COLUMNS still wins).
    if not sys.stdout.isatty() and "COLUMNS" not in os.environ:
        return Console(file=raw_stdout(), width=160)
    return Console(file=raw_stdout())
