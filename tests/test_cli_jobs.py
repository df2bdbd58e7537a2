"""``andal pause``, ``resume``, ``job`` and ``cancel``, run as a user would (subprocesses)."""

from __future__ import annotations

import json

import psycopg
from test_cli import andal_cmd, ok, refused


def test_pause_resume_and_status_shows_it(dsn: str, conn: psycopg.Connection, clean: None) -> None:
    conn.execute("select queue.enqueue('{}', queue => 'mail')")
    assert "paused queue mail" in ok(andal_cmd("pause", "mail", dsn=dsn))
    assert conn.execute("select * from queue.claim('w', queues => '{mail}')").fetchall() == []
    status = json.loads(ok(andal_cmd("status", "--json", dsn=dsn)))
    assert [(q["queue"], q["paused"]) for q in status] == [("mail", True)]
    assert "paused" in ok(andal_cmd("status", dsn=dsn))
    assert "resumed queue mail" in ok(andal_cmd("resume", "mail", dsn=dsn))
    assert len(conn.execute("select * from queue.claim('w', queues => '{mail}')").fetchall()) == 1
    status = json.loads(ok(andal_cmd("status", "--json", dsn=dsn)))
    assert [(q["queue"], q["paused"]) for q in status] == [("mail", False)]


def test_job_and_cancel(dsn: str, conn: psycopg.Connection, clean: None) -> None:
    job = conn.execute("select queue.enqueue('{}', queue => 'mail', delay => '1 hour')").fetchone()
    assert job is not None
    shown = ok(andal_cmd("job", str(job[0]), dsn=dsn))
    assert "scheduled" in shown and "mail" in shown
    assert f"cancelled job {job[0]}" in ok(andal_cmd("cancel", str(job[0]), dsn=dsn))
    doc = json.loads(ok(andal_cmd("job", "--json", str(job[0]), dsn=dsn)))
    assert (doc["job_id"], doc["state"]) == (job[0], "cancelled")
    refused(andal_cmd("job", "987654321", dsn=dsn), 1, "does not remember job 987654321")
    refused(andal_cmd("cancel", "987654321", dsn=dsn), 1, "SQLSTATE 42704")
