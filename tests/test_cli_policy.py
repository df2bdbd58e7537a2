"""``andal queue``, ``andal schedule``, ``andal rate-limit`` and ``andal history``: each
command changes what the SQL function says it changes, a refused value changes nothing and
exits 1 with the database's message, and ``--json`` writes times in ISO 8601 and durations in
seconds (run as real processes against a real database)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime

import psycopg


def andal(dsn: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "ANDAL_DSN")}
    return subprocess.run(
        [sys.executable, "-m", "andal.cli", "--dsn", dsn, *args],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip


def ok(dsn: str, *args: str) -> str:
    result = andal(dsn, *args)
    assert result.returncode == 0, (args, result.stderr)
    return result.stdout


def setting(dsn: str, queue: str, column: str) -> object:
    with psycopg.connect(dsn) as c:
        row = c.execute(f"select {column} from queue.queue_settings(queue => %s)", (queue,))
        return row.fetchone()[0]  # type: ignore[index]


def test_queue_configure_changes_only_the_options_given(dsn: str) -> None:
    ok(dsn, "queue", "configure", "q1", "--timeout", "90s", "--backoff", "linear")
    assert str(setting(dsn, "q1", "timeout")) == "0:01:30"
    assert setting(dsn, "q1", "backoff") == "linear"
    ok(dsn, "queue", "configure", "q1", "--max-attempts", "9", "--notify", "false")
    assert setting(dsn, "q1", "max_attempts") == 9
    assert setting(dsn, "q1", "notify") is False
    assert str(setting(dsn, "q1", "timeout")) == "0:01:30", "an option left out is kept"
    shown = json.loads(ok(dsn, "queue", "show", "q1", "--json"))
    assert shown["timeout_s"] == 90.0 and shown["max_attempts"] == 9
    datetime.fromisoformat(shown["updated_at"])
    assert "T" in shown["updated_at"]


def test_a_refused_value_exits_1_with_the_reason_and_changes_nothing(dsn: str) -> None:
    ok(dsn, "queue", "configure", "q2", "--max-attempts", "4")
    bad = andal(dsn, "queue", "configure", "q2", "--max-attempts", "7", "--backoff", "weird")
    assert bad.returncode == 1
    assert "backoff" in bad.stderr and "SQLSTATE 22023" in bad.stderr
    assert setting(dsn, "q2", "max_attempts") == 4
    usage = andal(dsn, "queue", "configure", "q2", "--timeout", "soon")
    assert usage.returncode == 2 and "not a duration" in usage.stderr
    assert andal(dsn, "queue", "configure", "q2").returncode == 2


def test_schedule_add_list_update_remove(dsn: str) -> None:
    out = ok(dsn, "schedule", "add", "digest", "--queue", "mail", "--every", "5m",
             "--payload", '{"kind": "digest"}')  # fmt: skip
    assert "next run at" in out
    listed = json.loads(ok(dsn, "schedule", "list", "--json"))
    (mine,) = [s for s in listed if s["name"] == "digest"]
    assert mine["every_s"] == 300.0 and mine["payload"] == {"kind": "digest"}
    assert all(not s["builtin"] for s in listed), "andal's own schedules only with --all"
    assert any(s["builtin"] for s in json.loads(ok(dsn, "schedule", "list", "--all", "--json")))
    ok(dsn, "schedule", "add", "digest", "--queue", "mail", "--cron", "0 3 * * *",
       "--timezone", "Asia/Jakarta")  # fmt: skip
    (mine,) = [s for s in json.loads(ok(dsn, "schedule", "list", "--json"))]
    assert mine["cron"] == "0 3 * * *" and mine["timezone"] == "Asia/Jakarta"
    assert "digest" in ok(dsn, "schedule", "list")
    ok(dsn, "schedule", "remove", "digest")
    again = andal(dsn, "schedule", "remove", "digest")
    assert again.returncode == 1 and "no schedule named" in again.stderr
    bad = andal(dsn, "schedule", "add", "x", "--queue", "mail", "--cron", "61 * * * *")
    assert bad.returncode == 1 and "SQLSTATE" in bad.stderr


def test_rate_limit_set_list_off(dsn: str) -> None:
    ok(dsn, "rate-limit", "set", "smtp", "--starts", "10", "--per", "2s")
    (row,) = json.loads(ok(dsn, "rate-limit", "list", "--json"))
    assert (row["category"], row["starts"], row["per_s"]) == ("smtp", 10, 2.0)
    assert andal(dsn, "rate-limit", "set", "smtp").returncode == 2
    ok(dsn, "rate-limit", "set", "smtp", "--off")
    assert json.loads(ok(dsn, "rate-limit", "list", "--json")) in ([], [{
        "category": "smtp", "starts": None, "per_s": None, "started_in_window": None,
        "max_running": None,
    }])  # fmt: skip


def test_history_set_makes_a_completed_job_answerable(dsn: str) -> None:
    ok(dsn, "history", "set", "hq", "--retention", "7d")
    assert str(setting(dsn, "hq", "history_retention")) == "7 days, 0:00:00"
    with psycopg.connect(dsn, autocommit=True) as c:
        job = c.execute("select queue.enqueue(payload => '{}', queue => 'hq')").fetchone()[0]
        row = c.execute(
            "select job_id, token from queue.claim(worker => 'w', queues => array['hq'])"
        ).fetchone()
        c.execute("select queue.complete(job_id => %s, token => %s)", row)
    shown = json.loads(ok(dsn, "job", str(job), "--json"))
    assert shown["state"] == "completed" and "T" in shown["finished_at"]
    ok(dsn, "history", "set", "hq", "--off")
    assert setting(dsn, "hq", "history_retention") is None
