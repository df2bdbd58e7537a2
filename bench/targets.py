"""The performance targets (docs/performance.md), computed from one run's records (reported, never
asserted)."""

from __future__ import annotations

from typing import Any

#: The driver's two forms in W1: a plain and an ``async def`` handler.
DRIVERS = (("driver", "andal-py"), ("driver (async handler)", "andal-py-async"))


def _get(data: dict[str, Any], w: str, system: str, case: str, metric: str) -> float | None:
    for r in data["records"]:
        if (r["workload"], r["system"], r["case"], r["metric"]) == (w, system, case, metric):
            return r["median"] if r["n"] else None
    return None


def targets(data: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []

    def ratio(name: str, num: float | None, den: float | None, goal: float, higher=True) -> None:
        if num is None or den is None or den == 0:
            return
        v = num / den
        out.append(
            {
                "name": name,
                "value": v,
                "goal": f"≥ {goal}" if higher else f"≤ {goal}",
                "met": v >= goal if higher else v <= goal,
            }
        )

    def absolute(name: str, v: float | None, goal: float, unit: str) -> None:
        if v is None:
            return
        out.append({"name": name, "value": v, "goal": f"≤ {goal} {unit}", "met": v <= goal})

    tp = "jobs/s"
    for c in (1, 4, 8):
        for batch, goal in ((1, 0.8), (100, 0.85)):
            case = f"workers={c} batch={batch}"
            ratio(
                f"SQL claim+complete vs raw, {c} client(s), batch {batch}",
                _get(data, "W1", "andal-sql", case, tp),
                _get(data, "W1", "raw-sql", case, tp),
                goal,
            )
    for c in (1, 4, 8, 16):  # the many-workers workload: claim + complete, batch 1
        case = f"{c} workers"
        ratio(
            f"many workers: claim+complete vs raw, {c} client(s), batch 1",
            _get(data, "WORKERS", "andal-sql", case, tp),
            _get(data, "WORKERS", "raw-sql", case, tp),
            0.8,
        )
    for per_tx in ("1 per tx", "100 per tx"):
        ratio(
            f"SQL enqueue vs raw, {per_tx}",
            _get(data, "W3", "andal-sql", per_tx, tp),
            _get(data, "W3", "raw-sql", per_tx, tp),
            0.8,
        )
    for n in (1, 4, 16, 64):  # the many-producers workload: one job per transaction
        case = f"{n} producers"
        mine = _get(data, "PRODUCERS", "andal-busy", case, tp)
        raw = _get(data, "PRODUCERS", "raw", case, tp)
        ratio(f"many producers: enqueue vs raw insert, {n} client(s)", mine, raw, 0.8)
        for peer in ("procrastinate", "pgqueuer") if n == 16 else ():
            peer_rate = _get(data, "PRODUCERS", peer, case, tp)
            ratio(f"many producers: enqueue vs {peer}, {n} client(s)", mine, peer_rate, 3.0)
    for w in (1, 4):
        for b in (1, 10, 100):
            case = f"workers={w} batch={b}"
            # the driver with a plain and with an async def handler, against both peers
            for label, system in DRIVERS:
                mine = _get(data, "W1", system, case, tp)
                for peer, goal in (("procrastinate", 2.5), ("pgqueuer", 1.5)):
                    peer_rate = _get(data, "W1", peer, case, tp)
                    ratio(f"{label} vs {peer}, {case}", mine, peer_rate, goal)
    for w in (1, 4):  # and the same limit driven from Python (raw-py), as many processes
        case = f"workers={w} batch=100"
        mine = _get(data, "W1", "andal-py", case, tp)
        for name, system in (("raw SQL limit", "raw-sql"), ("raw SQL loop in Python", "raw-py")):
            ratio(f"driver vs {name}, {case}", mine, _get(data, "W1", system, case, tp), 0.6)
    p99 = _get(data, "W2", "andal-py", "200 jobs/s", "p99")
    ratio("W2 p99: driver / pgqueuer", p99, _get(data, "W2", "pgqueuer", "200 jobs/s", "p99"), 1.0,
          higher=False)  # fmt: skip
    ratio("W2 p99: driver / raw LISTEN loop", p99,
          _get(data, "W2", "raw-py", "200 jobs/s", "p99"), 1.5, higher=False)  # fmt: skip
    for system in ("andal-sql", "andal-py"):
        base = _get(data, "W4", system, "10k ready", tp)
        ratio(f"W4 {system}: 1M ready / 10k ready", _get(data, "W4", system, "1M ready", tp),
              base, 0.8)  # fmt: skip
        ratio(f"W4 {system}: 1M scheduled + 10k ready / 10k ready",
              _get(data, "W4", system, "1M scheduled + 10k ready", tp), base, 0.9)  # fmt: skip
    for system in ("andal-sql", "andal-py"):
        for w in (1, 4):
            ratio(
                f"W7 {system}: gated / ungated, {w} worker(s)",
                _get(data, "W7", system, f"gated, workers={w}", tp),
                _get(data, "W7", system, f"ungated, workers={w}", tp),
                0.8,
            )
    absolute("W6 local cache hit", _get(data, "W6", "andal", "local hit", "µs/op"), 5, "µs")
    ratio(
        "W6 shared hit / raw key-value table",
        _get(data, "W6", "andal", "shared hit", "µs/op"),
        _get(data, "W6", "raw-kv", "shared hit", "µs/op"),
        2.0,
        higher=False,
    )
    return out
