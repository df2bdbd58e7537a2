"""The many-producers workload for an earlier revision against the working tree (A/B).

``python -m bench.producers_ab REV [--rounds R] [--seconds S] [--clients C ...]``: the raw
baseline, andal as installed by revision REV and andal as the working tree installs it, each
in a database of its own (``bench.tree_ab.three_databases``). In both andal databases a
session that LISTENs and has called ``queue.idle`` then ``queue.busy`` stays connected, as the
listener of a worker that is running jobs (an install without those functions just LISTENs).
Each round runs ``systems.producer_script`` (one job per transaction) for S seconds from C
pgbench clients on the three, in an order that rotates every round, and prints jobs/s and
each andal's ratio to raw of the same round (median, min–max). Not part of ``make bench``.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

import psycopg

from . import systems
from .common import RUN_ID, connect, log, run_pgbench
from .enqueue_ab import summary
from .many_producers import busy_worker
from .tree_ab import rotated, three_databases

NAMES = {"raw": f"andal_bench_pab_raw_{RUN_ID}", "base": f"andal_bench_pab_base_{RUN_ID}",
         "tree": f"andal_bench_pab_tree_{RUN_ID}"}  # fmt: skip


@contextmanager
def listener(dsn: str) -> Iterator[None]:
    """The busy worker's listener of an andal database (just LISTEN where queue.idle is not)."""
    with connect(dsn) as conn:
        try:
            busy_worker(conn)
        except psycopg.errors.UndefinedFunction:
            conn.execute("listen andal_jobs")
        yield


def rate(name: str, dsn: str, clients: int, seconds: float) -> float:
    system = "raw" if name == "raw" else "andal"
    systems.reset(system, dsn)
    script = systems.producer_script(system)
    return run_pgbench(dsn, script, clients=clients, seconds=seconds).tps


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m bench.producers_ab")
    p.add_argument("rev", help="the revision to compare the working tree with (e.g. a commit)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seconds", type=float, default=8)
    p.add_argument("--clients", type=int, action="append", help="default 1, 4, 16, 64")
    args = p.parse_args()
    clients = args.clients or [1, 4, 16, 64]
    with three_databases(args.rev, NAMES) as dsns, ExitStack() as stack:
        for name in ("base", "tree"):
            stack.enter_context(listener(dsns[name]))
        for c in clients:
            got: dict[str, list[float]] = {k: [] for k in NAMES}
            for r in range(args.rounds):
                for name in rotated(list(NAMES), r):
                    got[name].append(rate(name, dsns[name], c, args.seconds))
                log(f"{c} producers round {r + 1}: "
                    + ", ".join(f"{k} {got[k][-1]:,.0f}/s" for k in NAMES))  # fmt: skip
            raw = got["raw"]
            ratios = {
                k: [a / b for a, b in zip(got[k], raw, strict=True)] for k in ("base", "tree")
            }
            print(
                f"{c:>2} producers: raw {summary(raw)} jobs/s; {args.rev} {summary(got['base'])}"
                f" ({summary(ratios['base'], '.2f')} of raw); tree {summary(got['tree'])}"
                f" ({summary(ratios['tree'], '.2f')} of raw)",
                flush=True,
            )


if __name__ == "__main__":
    main()
