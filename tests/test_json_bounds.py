"""Refusing an inflated JSON value costs little: the server's memory bound, measured.

A jsonb number of a few stored bytes prints as up to 147,455 characters (``1e131071``), so a
request of a few kilobytes used to print as hundreds of megabytes before its size check
refused it (printed again for the error message in some places), at every entry point that
takes JSON. The checks now measure a value's numbers without printing them
(``queue._json_size``), so the peak memory of the backend that refuses such a request stays
small. The server runs on this machine: the backend's peak resident size is read from
``/proc/<pid>/status`` (VmHWM) against its size before the call, each call on a fresh
connection.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import psycopg
import pytest

# 1,000 numbers of 131,072 digits: 10 kB of request, 131 MB of JSON text (the check's old
# cost was about three times that; the report's 8,190 of them cost 3.2 GB)
BOMB = '{"x": [' + ", ".join(["1e131071"] * 1000) + "]}"
ZEROS = '{"x": [' + ", ".join(["0e-16383"] * 4000) + "]}"  # 4,000 x 16,385 characters
LIMIT_MB = 64


def _kb(pid: int, field: str) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise AssertionError(f"no {field} for backend {pid}")


def _peak_mb(dsn: str, setup: Callable[[psycopg.Connection], tuple], sql: str) -> tuple[float, str]:
    """Run ``sql`` (its arguments made by ``setup``) on a fresh connection; the growth of the
    backend's peak resident memory over its size before the call, and the SQLSTATE."""
    with psycopg.connect(dsn, autocommit=True) as c:
        pid = c.execute("select pg_backend_pid()").fetchone()[0]
        if not os.path.exists(f"/proc/{pid}/status"):
            pytest.skip("the server does not run on this machine")
        args = setup(c)
        before = _kb(pid, "VmRSS")
        try:
            c.execute(sql, args)
            state = "accepted"
        except psycopg.Error as e:
            state = e.sqlstate or "?"
        return (_kb(pid, "VmHWM") - before) / 1024, state


def _claimed(queue: str) -> Callable[[psycopg.Connection], tuple]:
    """A setup: enqueue one job into ``queue`` and claim it; the bomb, its id and token."""

    def setup(c: psycopg.Connection) -> tuple:
        c.execute("select queue.enqueue(payload => '{}', queue => %s)", (queue,))
        job = c.execute(
            "select job_id, token from queue.claim(queues => array[%s], worker => 'w', batch => 1)",
            (queue,),
        ).fetchone()
        return (BOMB, job[0], job[1])

    return setup


def _plain(c: psycopg.Connection) -> tuple:
    c.execute("select queue.enqueue(payload => '{}', queue => 'warm')")  # catalogs cached
    return (BOMB,)


ENTRY_POINTS = {
    "enqueue": "select queue.enqueue(payload => %s::jsonb, queue => 'b')",
    "enqueue with options": "select queue.enqueue(payload => %s::jsonb, queue => 'b',"
    " priority => 1)",
    "enqueue_many": "select queue.enqueue_many(payloads => array[%s::jsonb], queue => 'b')",
    "cache_value": "select queue.enqueue(payload => '{}', queue => 'b', cache_key => 'k',"
    " cache_value => %s::jsonb)",
    "trace_context": "select queue.enqueue(payload => '{}', queue => 'b',"
    " trace_context => %s::jsonb)",
    "cache.put": "select cache.put(key => 'k', value => %s::jsonb)",
    "schedule": "select queue.schedule(name => 's', queue => 'b', payload => %s::jsonb,"
    " every => '1 hour')",
}


@pytest.fixture(scope="module", autouse=True)
def queues(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("select queue.configure_queue(queue => 'kept', keep_results => true)")
        c.execute("select queue.configure_queue(queue => 'rewrite', cache_policy => 'rewrite')")


@pytest.mark.parametrize("name", list(ENTRY_POINTS))
def test_refusing_a_number_bomb_is_cheap(dsn: str, name: str) -> None:
    peak, state = _peak_mb(dsn, _plain, ENTRY_POINTS[name])
    assert state in ("54000", "22023"), state
    assert peak <= LIMIT_MB, f"{name}: {peak:.0f} MB to refuse a {len(BOMB)}-byte request"


@pytest.mark.parametrize(
    ("name", "queue", "sql"),
    [
        (
            "complete, result kept",
            "kept",
            "select queue.complete(result => %s::jsonb, job_id => %s, token => %s)",
        ),
        (
            "complete_many, result kept",
            "kept",
            "select * from queue.complete_many("
            "results => array[%s::jsonb], job_ids => array[%s::bigint], tokens => array[%s::uuid])",
        ),
        (
            "complete, rewrite policy",
            "rewrite",
            "select queue.complete(result => %s::jsonb, job_id => %s, token => %s)",
        ),
        (
            "fail, the bomb as error text",
            "kept",
            "select queue.fail(error => %s, job_id => %s, token => %s)",
        ),
    ],
)
def test_refusing_a_bomb_at_completion_is_cheap(dsn: str, name: str, queue: str, sql: str) -> None:
    peak, _ = _peak_mb(dsn, _claimed(queue), sql)
    assert peak <= LIMIT_MB, f"{name}: {peak:.0f} MB"


def test_a_rewrite_result_with_a_long_number_completes_and_invalidates(
    conn: psycopg.Connection,
) -> None:
    conn.execute("select cache.put(key => 'r', value => '1')")
    conn.execute("select queue.enqueue(payload => '{}', queue => 'rewrite', cache_key => 'r')")
    job_id, token = conn.execute(
        "select job_id, token from queue.claim(queues => array['rewrite'], worker => 'w')"
    ).fetchone()
    conn.execute(
        "select queue.complete(job_id => %s, token => %s, result => %s::jsonb)",
        (job_id, token, BOMB),
    )
    # invalidated, not rewritten (cache.get then answers the old value as stale)
    assert conn.execute("select stale from cache.get(key => 'r')").fetchone()[0] is True
    live = conn.execute("select count(*) from queue.jobs where id = %s", (job_id,)).fetchone()[0]
    assert live == 0


def test_zeros_with_a_long_scale_are_measured_too(dsn: str) -> None:
    def setup(c: psycopg.Connection) -> tuple:
        c.execute("select queue.enqueue(payload => '{}', queue => 'warm')")
        return (ZEROS,)

    peak, state = _peak_mb(dsn, setup, ENTRY_POINTS["enqueue"])
    assert state == "54000"
    assert peak <= LIMIT_MB, f"{peak:.0f} MB"


def test_amplification_within_the_limits_is_bounded(conn: psycopg.Connection) -> None:
    """The longest number a payload may hold prints as 1000 characters from 5 of request
    (1e999): 1,000 jobs from a request of 71 kB now ship about 10 MB in all, where
    numbers of 131,072 digits shipped 92 MB in one batch of 100."""
    payload = '{"x": [' + ", ".join(["1e999"] * 12) + "]}"
    request = len(payload) * 1000
    conn.execute(
        "select count(*) from queue.enqueue_many(payloads => array_fill(%s::jsonb, array[1000]),"
        " queue => 'amp')",
        (payload,),
    )
    shipped = conn.execute(
        "select sum(octet_length(payload::text)) from queue.jobs where queue = 'amp'"
    ).fetchone()[0]
    assert shipped / request <= 200
    with pytest.raises(psycopg.Error) as refused:
        conn.execute("select queue.enqueue(payload => '{\"x\": 1e1000}', queue => 'amp')")
    assert refused.value.sqlstate == "54000"
