"""W3's SQL rows for an earlier revision against the working tree, side by side (A/B).

``python -m bench.enqueue_ab REV [--rounds R]``: the raw baseline, andal as installed by
revision REV and andal as the working tree installs it, each in a database of its own (as
``bench.tree_ab``). Each round runs W3's pgbench scripts (``systems.RAW_ENQUEUE_1`` and
``ANDAL_ENQUEUE_1``: 5,000 transactions of one job; ``*_ENQUEUE_100``: 200 of 100 jobs) on
the three, in an order that rotates every round. Prints jobs/s and each andal's ratio to raw
of the same round (median, min–max). pgbench takes libpq's environment: with
``PGOPTIONS='-c synchronous_commit=off'`` the commit no longer waits for its WAL flush, which
leaves the CPU path the functions control. Not part of ``make bench``.
"""

from __future__ import annotations

import argparse
import statistics

from . import systems
from .common import RUN_ID, log, run_pgbench
from .tree_ab import rotated, three_databases

NAMES = {"raw": f"andal_bench_eab_raw_{RUN_ID}", "base": f"andal_bench_eab_base_{RUN_ID}",
         "tree": f"andal_bench_eab_tree_{RUN_ID}"}  # fmt: skip
CASES = [("1 per tx", 1, 5_000), ("100 per tx", 100, 200)]


def enqueue(name: str, dsn: str, per_tx: int, txs: int) -> float:
    """jobs/s of one W3 run of the system's script."""
    system = "raw" if name == "raw" else "andal"
    systems.reset(system, dsn)
    script = systems.enqueue_script(system, per_tx)
    return run_pgbench(dsn, script, clients=1, transactions=txs).tps * per_tx


def summary(values: list[float], fmt: str = ",.0f") -> str:
    med, lo, hi = statistics.median(values), min(values), max(values)
    return f"{med:{fmt}} ({lo:{fmt}}–{hi:{fmt}})"


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m bench.enqueue_ab")
    p.add_argument("rev", help="the revision to compare the working tree with (e.g. a commit)")
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args()
    with three_databases(args.rev, NAMES) as dsns:
        got: dict[tuple[str, str], list[float]] = {
            (case, k): [] for case, _, _ in CASES for k in NAMES
        }
        for r in range(args.rounds):
            order = rotated(list(NAMES), r)
            for case, per_tx, txs in CASES:
                for name in order:
                    got[(case, name)].append(enqueue(name, dsns[name], per_tx, txs))
                log(f"{case} round {r + 1}: "
                    + ", ".join(f"{k} {got[(case, k)][-1]:,.0f}/s" for k in NAMES))  # fmt: skip
        for case, _, _ in CASES:
            raw = got[(case, "raw")]
            ratios = {
                k: [a / b for a, b in zip(got[(case, k)], raw, strict=True)]
                for k in ("base", "tree")
            }
            print(
                f"{case}: raw {summary(raw)} jobs/s; {args.rev} {summary(ratios['base'], '.3f')}"
                f" of raw; tree {summary(ratios['tree'], '.3f')} of raw",
                flush=True,
            )


if __name__ == "__main__":
    main()
