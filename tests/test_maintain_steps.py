"""queue.maintain() reports a housekeeping step that failed: a WARNING naming the step, with
its SQLSTATE, while the other steps still run (their pgTAP test:
sql/tests/queue/maintain/a_failing_step_stops_no_other.sql). The failure is injected by
replacing a step's private function inside a transaction that is rolled back."""

from __future__ import annotations

import psycopg


def test_a_failed_step_is_reported_by_name(dsn: str) -> None:
    with psycopg.connect(dsn) as conn:
        notices: list[tuple[str | None, str | None]] = []
        # a notice's fields are read in the handler (the object is not kept valid after it)
        conn.add_notice_handler(
            lambda d: notices.append((d.severity_nonlocalized, d.message_primary))
        )
        conn.execute(
            "create or replace function queue._history_roll() returns int language plpgsql"
            " as $$ begin raise exception 'cannot bin by months' using errcode = '0A000'; end $$"
        )
        reaped = conn.execute("select queue.maintain()").fetchone()[0]
        conn.rollback()
    assert reaped == 0
    warnings = [message for severity, message in notices if severity == "WARNING"]
    assert len(warnings) == 1, notices
    assert warnings[0] == (
        "queue.maintain: rolling the history and the recent completions failed (0A000):"
        " cannot bin by months"
    )
