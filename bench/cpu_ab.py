"""Server CPU per job of W1's claim + complete, an earlier revision against the working tree.

``python -m bench.cpu_ab REV [--jobs N] [--batch B] [--chunk C] [--gated]``: three databases
of their own, as ``bench.tree_ab`` (raw, andal as revision REV installs it, andal as the
working tree installs it), N preloaded jobs each. One connection per database runs W1's cycle
(one claim of B jobs, then their completion: ``queue.complete`` at batch 1,
``queue.complete_many`` above; raw's DELETE), each statement its own transaction,
``synchronous_commit`` off; C cycles at a time, rotating between the three. What is counted is
the CPU time of each connection's server backend (``/proc/<pid>/schedstat``: nanoseconds on a
CPU), so a loaded machine moves it far less than a rate. With many clients on two cores the
drain is bound by CPU, so raw's CPU per job over andal's is about the ratio a saturated drain
reaches. ``--gated``: the andal jobs of both revisions spread over 1,000 categories of limit
1, as W7's (raw stays ungated: the reference). Needs the server on this machine. Not part of
``make bench``.
"""

from __future__ import annotations

import argparse
import statistics

import psycopg

from . import systems
from .common import RUN_ID
from .tree_ab import rotated, three_databases

NAMES = {"raw": f"andal_bench_cpu_raw_{RUN_ID}", "base": f"andal_bench_cpu_base_{RUN_ID}",
         "tree": f"andal_bench_cpu_tree_{RUN_ID}"}  # fmt: skip


def backend_ns(pid: int) -> int:
    with open(f"/proc/{pid}/schedstat") as f:
        return int(f.read().split()[0])


def statements(system: str, batch: int) -> tuple[str, str]:
    """The claim (answering the ids and tokens as two arrays) and the completion."""
    if system == "raw":
        claim = "with u as (" + systems.raw_claim(str(batch), "'cpu'") + ")"
        claim += " select array_agg(id), array_agg(token) from u"
        if batch == 1:
            return claim, (
                "delete from bench_jobs where id = (%s::bigint[])[1] and token = (%s::uuid[])[1]"
            )
        return claim, (
            "delete from bench_jobs as j using unnest(%s::bigint[], %s::uuid[]) as u (id, tok)"
            " where j.id = u.id and j.token = u.tok"
        )
    claim = (
        "select array_agg(c.job_id), array_agg(c.token) from queue.claim(worker => 'cpu',"
        f" queues => '{{{systems.QUEUE}}}', batch => {batch}) as c"
    )
    if batch == 1:
        return claim, (
            "select queue.complete(job_id => (%s::bigint[])[1], token => (%s::uuid[])[1])"
        )
    return claim, (
        "select count(*) from queue.complete_many(job_ids => %s::bigint[], tokens => %s::uuid[])"
    )


#: ``--gated``: W7's shape, the andal jobs spread over 1,000 categories of limit 1 (raw keeps
#: its ungated jobs, the reference)
GATE = (
    "select queue.set_category_limit(category => 'cat-' || g, max_running => 1)"
    " from generate_series(0, 999) as g",
    "update queue.jobs set category = 'cat-' || (id % 1000)",
)


def measure(
    dsns: dict[str, str], jobs: int, batch: int, chunk: int, gated: bool = False
) -> dict[str, list[float]]:
    """µs of backend CPU per job, one figure per chunk of cycles, per system."""
    conns: dict[str, psycopg.Connection] = {}
    try:
        for name, dsn in dsns.items():
            system = "raw" if name == "raw" else "andal"
            systems.reset(system, dsn)
            systems.load(system, dsn, jobs)
            if gated and system == "andal":
                with psycopg.connect(dsn, autocommit=True) as g:
                    for statement in GATE:
                        g.execute(statement)
            systems.vacuum(system, dsn)
            c = psycopg.connect(dsn, autocommit=True, prepare_threshold=0)
            c.execute("set synchronous_commit = off")
            conns[name] = c
        pids = {k: c.info.backend_pid for k, c in conns.items()}
        sql = {k: statements("raw" if k == "raw" else "andal", batch) for k in conns}

        def cycle(name: str) -> None:
            claim, complete = sql[name]
            row = conns[name].execute(claim).fetchone()
            assert row is not None and row[0], f"{name}: the claim found no job"
            conns[name].execute(complete, (row[0], row[1]))

        got: dict[str, list[float]] = {k: [] for k in conns}
        rounds = (jobs // batch - 10) // chunk
        for name in conns:  # warm: plans, caches
            for _ in range(10):
                cycle(name)
        for r in range(rounds):
            order = rotated(list(conns), r)
            for name in order:
                t0 = backend_ns(pids[name])
                for _ in range(chunk):
                    cycle(name)
                got[name].append((backend_ns(pids[name]) - t0) / (chunk * batch) / 1000)
        return got
    finally:
        for c in conns.values():
            c.close()


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m bench.cpu_ab")
    p.add_argument("rev", help="the revision to compare the working tree with (e.g. a commit)")
    p.add_argument("--jobs", type=int, default=12_000)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--chunk", type=int, default=0, help="cycles per turn (default ~100 jobs)")
    p.add_argument("--gated", action="store_true", help="W7's jobs: 1,000 categories of limit 1")
    args = p.parse_args()
    chunk = args.chunk or max(1, 100 // args.batch)
    with three_databases(args.rev, NAMES) as dsns:
        got = measure(dsns, args.jobs, args.batch, chunk, args.gated)
        med = {k: statistics.median(v) for k, v in got.items()}
        for k, v in got.items():
            label = args.rev if k == "base" else k
            print(
                f"{'gated ' if args.gated and k != 'raw' else ''}"
                f"batch {args.batch:>3} {label:>8}: {med[k]:7.1f} µs/job"
                f" ({min(v):.1f}-{max(v):.1f}, {len(v)} turns),"
                f" raw / this {med['raw'] / med[k]:.2f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
