"""Workflows at scale, side by side (a targeted A/B run, not part of ``make bench``).

``python -m bench.workflow_ab [--parents N] [--children N] [--batch B] [--reps R]``: one
database of its own (the working tree's andal). Alternately, R times each:

* fan-in: N jobs claimed, then completed with ``queue.complete_many`` in batches of B,
  without a child (A) and with one child enqueued ``after`` all N (B): the completion time
  of the N, its ratio B/A, and that the child was released exactly once (pending, counted
  down to 0);
* fan-out: one job with N children (``enqueue_many(..., after => ...)``) completed by one
  ``queue.complete``: the time of that call, which releases the N in one statement, against
  the same complete without children.

Each figure is the CPU time the server's backend spent on the calls (``/proc/<pid>/schedstat``
of the session's backend: the server must run on this machine), which a machine shared with
other work disturbs less than the wall clock; the enqueue of the child with N parents is
measured too. Prints medians and ranges.
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable

import psycopg

from . import systems
from .common import ADMIN_DSN, RUN_ID, dsn_for, log

DB = f"andal_bench_workflow_{RUN_ID}"


def _cpu(pid: int) -> float:
    """Seconds of CPU the backend ``pid`` has used so far."""
    with open(f"/proc/{pid}/schedstat") as f:
        return int(f.read().split()[0]) / 1e9


def _claim_all(c: psycopg.Connection, queue: str, n: int) -> tuple[list[int], list[str]]:
    ids: list[int] = []
    toks: list[str] = []
    while len(ids) < n:
        rows = c.execute(
            "select job_id, token::text from queue.claim(worker => 'bench', queues => %s,"
            " batch => 1000)",
            ([queue],),
        ).fetchall()
        if not rows:
            raise RuntimeError(f"claimed {len(ids)} of {n}")
        ids += [r[0] for r in rows]
        toks += [r[1] for r in rows]
    return ids, toks


def fan_in(
    c: psycopg.Connection, n: int, batch: int, child: bool, results: bool = False
) -> tuple[float, float]:
    """(seconds to complete the n parents, seconds to enqueue the child) of one round;
    ``results``: each parent completes with a small result (kept for the child)."""
    c.execute("truncate queue.jobs, queue.job_edges, queue.workflow_results, queue.stat_minutes")
    parents = [r[0] for r in c.execute(
        "select id from queue.enqueue_many(payloads => array_fill('{}'::jsonb, array[%s]),"
        " queue => 'fan') as id", (n,)).fetchall()]  # fmt: skip
    enq = 0.0
    pid = c.info.backend_pid
    if child:
        t0 = _cpu(pid)
        kid = c.execute(
            "select queue.enqueue(payload => '{}', after => %s::bigint[], queue => 'sink')",
            (parents,),
        ).fetchone()[0]
        enq = _cpu(pid) - t0
    c.execute("vacuum (analyze) queue.jobs")
    ids, toks = _claim_all(c, "fan", n)
    t0 = _cpu(pid)
    for i in range(0, n, batch):
        part = ids[i : i + batch]
        done = c.execute(
            "select count(*) filter (where completed) from queue.complete_many("
            "job_ids => %s::bigint[], tokens => %s::uuid[], results => %s::jsonb[])",
            (part, toks[i : i + batch], [f'{{"n": {j}}}' for j in part] if results else None),
        ).fetchone()[0]
        assert done == len(ids[i : i + batch])
    took = _cpu(pid) - t0
    if child:
        state, left = c.execute(
            "select status, waiting_on from queue.jobs where id = %s", (kid,)
        ).fetchone()
        assert (state, left) == ("pending", 0), (state, left)
    return took, enq


def fan_out(c: psycopg.Connection, n: int, children: bool) -> tuple[float, float]:
    """(seconds of the parent's complete, seconds to enqueue its n children)."""
    c.execute("truncate queue.jobs, queue.job_edges, queue.workflow_results, queue.stat_minutes")
    parent = c.execute("select queue.enqueue(payload => '{}', queue => 'root')").fetchone()[0]
    enq = 0.0
    pid = c.info.backend_pid
    if children:
        t0 = _cpu(pid)
        c.execute(
            "select count(*) from queue.enqueue_many(payloads => array_fill('{}'::jsonb,"
            " array[%s]), after => array[%s]::bigint[], queue => 'leaf')",
            (n, parent),
        )
        enq = _cpu(pid) - t0
    c.execute("vacuum (analyze) queue.jobs")
    (job_id,), (tok,) = _claim_all(c, "root", 1)
    t0 = _cpu(pid)
    c.execute("select queue.complete(job_id => %s, token => %s::uuid)", (job_id, tok))
    took = _cpu(pid) - t0
    if children:
        ready = c.execute(
            "select count(*) from queue.jobs where queue = 'leaf' and status = 'pending'"
        ).fetchone()[0]
        assert ready == n, ready
    return took, enq


def _show(label: str, values: list[float]) -> str:
    ms = sorted(v * 1000 for v in values)
    return f"{label} {statistics.median(ms):,.1f} ms CPU ({ms[0]:,.1f}-{ms[-1]:,.1f})"


def _ab(reps: int, a: Callable[[], tuple[float, float]], b: Callable[[], tuple[float, float]]):
    got: dict[str, list[tuple[float, float]]] = {"A": [], "B": []}
    for rep in range(reps):
        for key in ("A", "B") if rep % 2 == 0 else ("B", "A"):
            got[key].append((a if key == "A" else b)())
    return got


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m bench.workflow_ab")
    p.add_argument("--parents", type=int, default=10_000)
    p.add_argument("--children", type=int, default=10_000)
    p.add_argument("--batch", type=int, default=1000)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--results", action="store_true", help="parents complete with a result")
    args = p.parse_args()
    dsn = dsn_for(DB)
    with psycopg.connect(ADMIN_DSN, autocommit=True) as c:
        c.execute(f'drop database if exists "{DB}"')
        c.execute(f'create database "{DB}"')
    try:
        systems.setup("andal", dsn)
        with psycopg.connect(dsn, autocommit=True) as c:
            n, b = args.parents, args.batch
            res = args.results
            got = _ab(args.reps, lambda: fan_in(c, n, b, False, res),
                      lambda: fan_in(c, n, b, True, res))  # fmt: skip
            a_t, b_t = [g[0] for g in got["A"]], [g[0] for g in got["B"]]
            ratios = sorted(y / x for x, y in zip(a_t, b_t, strict=True))
            log(f"fan-in {n} parents, complete_many batch {b}"
                + (" with results" if res else "") + ": " + _show("no child", a_t) + "; "
                + _show("one child", b_t) + f"; ratio median {statistics.median(ratios):.3f}"
                f" ({ratios[0]:.3f}-{ratios[-1]:.3f}); "
                + _show("enqueue of the child", [g[1] for g in got["B"]]))  # fmt: skip
            n = args.children
            got = _ab(args.reps, lambda: fan_out(c, n, False), lambda: fan_out(c, n, True))
            log(f"fan-out {n} children: " + _show("complete without children",
                [g[0] for g in got["A"]]) + "; " + _show("complete releasing them",
                [g[0] for g in got["B"]]) + "; " + _show("enqueue_many of the children",
                [g[1] for g in got["B"]]))  # fmt: skip
    finally:
        with psycopg.connect(ADMIN_DSN, autocommit=True) as c:
            c.execute(f'drop database if exists "{DB}" with (force)')


if __name__ == "__main__":
    main()
