"""The status views show names and errors as text: rich markup in a queue name, a session
name (any role can set ``application_name``) or an error text no longer ends ``andal
status``, ``andal top`` or ``andal dead list``, and terminal escape sequences in them never
reach the terminal raw."""

from __future__ import annotations

import io
import os
import subprocess
import sys

import psycopg
from rich.console import Console

from andal import cli

ESCAPE = "\x1b[31mred\x1b[0m"
NAMES = ["[/]", f"esc{ESCAPE}", "[bold]x[/bold]"]


def andal_cmd(*args: str, dsn: str) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "andal.cli", "--dsn", dsn, *args]
    env = dict(os.environ, COLUMNS="250")  # wide enough that no cell wraps
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env)


def hostile_state(conn: psycopg.Connection) -> psycopg.Connection:
    """Queues with hostile names, a dead letter with a hostile error, and a running job held
    by a session whose application_name is hostile (returned: keep it open)."""
    for name in NAMES:
        conn.execute("select queue.enqueue(payload => '{}', queue => %s)", (name,))
    job, token = conn.execute(
        "select job_id, token from queue.claim(worker => 'w', queues => %s)", ([NAMES[0]],)
    ).fetchone()
    conn.execute(
        "select queue.fail(job_id => %s, token => %s, error => %s, retryable => false)",
        (job, token, f"smtp said [/bold] {ESCAPE}"),
    )
    held = psycopg.connect(conn.info.dsn, autocommit=True, application_name="andal [/]")
    held.execute("select queue.claim(worker => 'andal [/]', queues => %s)", ([NAMES[1]],))
    return held


def test_status_and_dead_list_show_hostile_names(
    dsn: str, conn: psycopg.Connection, clean: None
) -> None:
    with hostile_state(conn):
        for args in (["status"], ["dead", "list"]):
            result = andal_cmd(*args, dsn=dsn)
            assert result.returncode == 0, result.stderr
            assert "Traceback" not in result.stderr
            assert "\x1b" not in result.stdout, "a terminal escape reached the terminal"
        status = andal_cmd("status", dsn=dsn).stdout
        assert "[/]" in status and "[bold]x[/bold]" in status
        assert "smtp said [/bold]" in andal_cmd("dead", "list", dsn=dsn).stdout


def test_top_renders_hostile_names(dsn: str, conn: psycopg.Connection, clean: None) -> None:
    """``andal top`` draws the same view (cli.render) on a terminal, colours on."""
    with hostile_state(conn):
        snap = cli.take_snapshot(conn)
    out = io.StringIO()
    Console(file=out, force_terminal=True, width=200).print(cli.render(snap, 1.0))
    text = out.getvalue()
    assert "[/]" in text and "andal [/]" in text
    assert "\x1b[31mred" not in text, "a queue name's escape sequence reached the terminal"


#: A title change, a screen clear and a bell, as an attacker would put them in a name.
TERMINAL_TRICKS = "\x1b]0;pwned\x07\x1b[2J\x07\x9b31m"


def test_every_command_writes_names_and_errors_escaped(
    dsn: str, conn: psycopg.Connection, clean: None
) -> None:
    """``andal job`` (and every other command: their output goes through one escaping
    stream) never writes a control character of a name or an error to the terminal."""
    queue = f"q{TERMINAL_TRICKS}\nfake line"
    job = conn.execute(
        "select queue.enqueue(payload => '{}', queue => %s, category => %s)",
        (queue, f"c{TERMINAL_TRICKS}"),
    ).fetchone()[0]
    _, token = conn.execute(
        "select job_id, token from queue.claim(worker => %s, queues => %s)",
        (f"w{TERMINAL_TRICKS}", [queue]),
    ).fetchone()
    conn.execute(
        "select queue.fail(job_id => %s, token => %s, error => %s, retryable => false)",
        (job, token, f"boom {TERMINAL_TRICKS}"),
    )
    for args in (
        ["job", str(job)],
        ["job", str(job), "--json"],
        ["pause", queue],
        ["resume", queue],
        ["dead", "list"],
        ["status"],
        ["enqueue", queue, "{"],  # refused: the error names the input
    ):
        result = andal_cmd(*args, dsn=dsn)
        assert "Traceback" not in result.stderr, (args, result.stderr)
        for stream in (result.stdout, result.stderr):
            assert not {"\x1b", "\x07", "\x9b"} & set(stream), (args, stream)
    shown = andal_cmd("job", str(job), dsn=dsn).stdout
    assert "boom ?]0;pwned??[2J??31m" in shown
    assert "fake line" in shown and "\nfake line" not in shown  # one line per field
