"""A worker process for the fencing test, on psycopg directly (no driver): it must try ALL of
heartbeat, complete and fail with its stale token, which the driver never does in one run.

Commands on stdin, one per line; answers on stdout:

* ``claim QUEUE`` -> ``claimed JOB_ID TOKEN ATTEMPT``: claims one job (start row in the claim's
  transaction), then "works" while a heartbeat thread extends the lease every lease/4. The
  test SIGSTOPs the process here, lets the lease expire, has the job taken back and completed
  elsewhere, and SIGCONTs it. The heartbeat thread's next beat is refused; the handler then
  ends (end row) and reports with its stale token: heartbeat, complete, fail, each logged as
  an outcome row (``lease_lost`` when refused with AN001, else what andal accepted), and
  answers ``result BG_HEARTBEAT HEARTBEAT COMPLETE FAIL BEATS`` (SQLSTATEs, or ``ok``).
* ``exit``.

Run as ``python -m reliability.fence_worker LANE LEASE_SECONDS`` (DATABASE_URL, PYTHONPATH).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from datetime import timedelta

import psycopg

from reliability import history

LEASE_LOST = "AN001"


def answer(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def sqlstate(exc: psycopg.Error) -> str:
    return exc.sqlstate or type(exc).__name__


def run_one(conn: psycopg.Connection, dsn: str, worker: str, queue: str, lease: float) -> None:
    claimed = history.claim(conn, worker, [queue], 1, lease)
    if not claimed:
        answer("none")
        return
    c = claimed[0]
    lost = threading.Event()
    state = {"bg": "none", "beats": 0}
    extend = timedelta(seconds=lease)

    def beat() -> None:
        with psycopg.connect(dsn, autocommit=True, application_name="rel fence heartbeat") as hb:
            while True:
                try:
                    hb.execute("select queue.heartbeat(%s, %s, %s)", (c.job_id, c.token, extend))
                    state["beats"] += 1
                except psycopg.Error as exc:
                    state["bg"] = sqlstate(exc)
                    outcome = "lease_lost" if state["bg"] == LEASE_LOST else "error"
                    history.log_row(
                        hb, "outcome", c.job_id, c.attempt, c.token, worker, outcome,
                        "heartbeat (background)",
                    )  # fmt: skip
                    lost.set()
                    return
                time.sleep(lease / 4)

    threading.Thread(target=beat, daemon=True).start()
    answer(f"claimed {c.job_id} {c.token} {c.attempt}")
    # the handler works until its heartbeat says the lease is gone
    if not lost.wait(120):
        answer("error the lease was never lost")
        return
    history.log_row(conn, "end", c.job_id, c.attempt, c.token, worker, "ok", "stale")
    calls = {
        "heartbeat": ("select queue.heartbeat(%s, %s, %s)", (c.job_id, c.token, extend)),
        "complete": (
            "select queue.complete(%s, %s, %s)",
            (c.job_id, c.token, f'{{"token": "{c.token}", "worker": "{worker}"}}'),
        ),
        "fail": ("select queue.fail(%s, %s, 'stale worker failed')", (c.job_id, c.token)),
    }
    got: dict[str, str] = {}
    for op, (sql, params) in calls.items():
        try:
            row = conn.execute(sql, params).fetchone()
            got[op] = "ok"
            accepted = {"heartbeat": "extended", "complete": "completed"}.get(op)
            outcome = accepted or ("dead" if row and row[0] == "dead" else "retried")
        except psycopg.Error as exc:
            got[op] = sqlstate(exc)
            outcome = "lease_lost" if got[op] == LEASE_LOST else "error"
        history.log_row(conn, "outcome", c.job_id, c.attempt, c.token, worker, outcome, op)
    answer(
        f"result {state['bg']} {got['heartbeat']} {got['complete']} {got['fail']} {state['beats']}"
    )


def main() -> int:
    lane, lease = sys.argv[1], float(sys.argv[2])
    dsn = os.environ["DATABASE_URL"]
    worker = f"stale-{lane}-{os.getpid()}"
    with psycopg.connect(dsn, autocommit=True, application_name="rel fence worker") as conn:
        for line in sys.stdin:
            cmd = line.split()
            if not cmd:
                continue
            if cmd[0] == "exit":
                return 0
            if cmd[0] == "claim":
                run_one(conn, dsn, worker, cmd[1], lease)
    return 0


if __name__ == "__main__":
    sys.exit(main())
