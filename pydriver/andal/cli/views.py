"""The status view drawn with rich: a header, then queues, busy categories, workers, cache."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

from .base import _CONTROL, shown
from .fmt import _cell, fmt_age, fmt_bytes, fmt_count, fmt_ms, fmt_pct, fmt_rate
from .snapshot import Snapshot, _seconds, per_minute


def table(title: str, columns: Sequence[str]) -> Any:
    """A table of the view: first column left-aligned, the figures right-aligned."""
    from rich import box
    from rich.table import Table

    t = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    for i, col in enumerate(columns):
        t.add_column(col, justify="left" if i == 0 else "right", no_wrap=i == 0)
    return t


def render(snap: Snapshot, interval: float | None = None, note: str | None = None) -> Any:
    """The status view: a header line, then tables of queues, busy categories, workers and
    the cache (when cache.stats() exists)."""
    from rich.console import Group
    from rich.text import Text

    parts: list[Any] = []
    head = Text()
    head.append("andal", style="bold")
    head.append(f" {snap.version}  {snap.database}  {snap.taken_at:%Y-%m-%d %H:%M:%S} UTC")
    if interval is not None:
        head.append(f"  every {interval:g}s, Ctrl-C to quit", style="dim")
    parts.append(head)
    if note:
        parts.append(Text(note, style="bold red"))
    parts.append(_queues(snap))
    busy = [
        c for c in snap.categories if c["running"] or c["ready"] or (c["lock_failures"] or 0) > 0
    ]
    if busy:
        parts.append(_categories(busy))
    if snap.workers is None:
        parts.append(Text("workers: not readable by this role (see docs/cli.md)"))
    else:
        parts.append(_workers(snap.workers))
    parts.extend(_cache_parts(snap.cache, table))
    return Group(*parts)


def _queues(snap: Snapshot) -> Any:
    from rich.text import Text

    q = table(
        "queues  (per minute: this minute's pace; failed and pickup: last hour)",
        [
            "queue", "ready", "scheduled", "running", "dead", "oldest ready",
            "done/min", "retried/min", "dead/min", "failed", "pickup p50", "pickup p99",
        ],
    )  # fmt: skip
    for r in snap.queues:
        age = _seconds(r["oldest_ready_age"])
        fail = r["failure_rate"]
        q.add_row(
            Text(str(r["queue"]).translate(_CONTROL)).append("  paused", style="bold yellow")
            if r["paused"]
            else shown(r["queue"]),
            fmt_count(r["ready"]),
            fmt_count(r["scheduled"]),
            fmt_count(r["running"]),
            Text(fmt_count(r["dead"]), style="red" if r["dead"] else ""),
            Text(fmt_age(r["oldest_ready_age"]), style="yellow" if age and age > 60 else ""),
            fmt_rate(per_minute(r, "completed")),
            fmt_rate(per_minute(r, "retried")),
            Text(fmt_rate(per_minute(r, "dead")), style="red" if r["dead_15m"] else ""),
            Text(fmt_pct(fail), style="red" if fail and fail > 0.05 else ""),
            fmt_ms(r["pickup_p50_ms"]),
            fmt_ms(r["pickup_p99_ms"]),
        )
    if not snap.queues:
        q.add_row("(no queues)", *[""] * 11)
    return q


def _categories(busy: list[dict[str, Any]]) -> Any:
    from rich.text import Text

    c = table(
        "categories  (with jobs or contention; try-locks over 1 h)",
        [
            "queue / category", "ready", "running", "oldest ready", "done/min",
            "try-locks", "contention", "pickup p99",
        ],
    )  # fmt: skip
    for r in busy:
        ratio = r["contention_ratio"]
        c.add_row(
            shown(f"{r['queue']} / {r['category']}"),
            fmt_count(r["ready"]),
            fmt_count(r["running"]),
            fmt_age(r["oldest_ready_age"]),
            fmt_rate(per_minute(r, "completed")),
            fmt_count(r["lock_attempts"]),
            Text(fmt_pct(ratio), style="yellow" if ratio and ratio > 0.5 else ""),
            fmt_ms(r["pickup_p99_ms"]),
        )
    return c


def _workers(workers: list[dict[str, Any]]) -> Any:
    w = table(
        "workers",
        ["worker", "running", "queues", "longest running", "next lease expiry", "sessions"],
    )
    for r in workers:
        w.add_row(
            shown(r["worker"]),
            fmt_count(r["running"]),
            shown(",".join(sorted(r["queues"] or [])) or "-"),
            fmt_age(r["oldest_claim_age"]),
            fmt_age(r["next_lease_expiry"]),
            fmt_count(r["connections"]),
        )
    if not workers:
        w.add_row("(none connected)", "", "", "", "", "")
    return w


def _cache_parts(rows: list[dict[str, Any]], table: Callable[..., Any]) -> list[Any]:
    """cache.stats() rows ``(metric, labels, value)``: a summary line, reads per pool and job
    type, and materialized views; any other shape as a plain table."""
    if not rows or set(rows[0]) != {"metric", "labels", "value"}:
        names = list(rows[0]) if rows else ["cache.stats()"]
        t = table("cache", names)
        for r in rows:
            t.add_row(*(shown(_cell(v)) for v in r.values()))
        return [t]
    plain = {r["metric"]: r["value"] for r in rows if not r["labels"]}
    reads: dict[tuple[str, str], dict[str, float]] = {}
    views: dict[str, dict[str, float]] = {}
    for r in rows:
        labels = r["labels"] or {}
        if r["metric"] in ("reads", "hit_ratio") and "job_type" in labels:
            key = (str(labels.get("pool", "-")), str(labels["job_type"]))
            name = labels.get("result", "hit_ratio") if r["metric"] == "reads" else "hit_ratio"
            reads.setdefault(key, {})[name] = r["value"]
        elif r["metric"].startswith("view_") and "view" in labels:
            views.setdefault(str(labels["view"]), {})[r["metric"]] = r["value"]
    out: list[Any] = [_cache_line(plain)]
    if reads:
        out.append(_cache_reads(reads, table))
    if views:
        out.append(_cache_views(views, table))
    return out


def _cache_line(plain: dict[str, Any]) -> Any:
    """The cache's summary line, from its unlabelled figures."""
    from rich.text import Text

    def num(metric: str) -> float | None:
        value = plain.get(metric)
        return None if value is None else float(value)

    line = Text("cache  ", style="bold")
    line.append(f"entries {fmt_count(num('entries'))}  bytes {fmt_bytes(num('bytes'))}  ")
    inv, per_job = num("invalidations_per_minute"), num("invalidations_per_ready_job")
    line.append(f"invalidations/min {fmt_rate(inv or 0)}")
    if per_job is not None:
        line.append(f" ({per_job:.2g} per ready job)")
    overdue, failures = num("stale_overdue") or 0, num("checksum_failures_1h") or 0
    line.append("  stale overdue ")
    line.append(fmt_count(overdue), style="red" if overdue else "")
    line.append("  checksum failures 1h ")
    line.append(fmt_count(failures), style="red" if failures else "")
    since = num("seconds_since_last_invalidation")
    if since is not None:
        line.append(f"  last invalidation {fmt_age(timedelta(seconds=since))} ago")
    return line


def _cache_reads(reads: dict[tuple[str, str], dict[str, float]], table: Callable[..., Any]) -> Any:
    from rich.text import Text

    t = table(
        "cache reads  (reported by the workers, last hour)",
        ["pool / job type", "local hits", "shared hits", "stale hits", "misses", "hit ratio"],
    )
    for (pool, job_type), r in sorted(reads.items()):
        ratio = r.get("hit_ratio")
        t.add_row(
            shown(f"{pool} / {job_type}"),
            *(fmt_count(r.get(k, 0)) for k in ("local_hit", "shared_hit", "stale_hit", "miss")),
            Text(fmt_pct(ratio), style="yellow" if ratio is not None and ratio < 0.5 else ""),
        )
    return t


def _cache_views(views: dict[str, dict[str, float]], table: Callable[..., Any]) -> Any:
    t = table("materialized views", ["view", "data age", "last refresh took", "pending changes"])
    for view, v in sorted(views.items()):
        lag, took = v.get("view_lag_seconds"), v.get("view_last_refresh_seconds")
        t.add_row(
            shown(view),
            fmt_age(None if lag is None else timedelta(seconds=lag)),
            fmt_ms(None if took is None else took * 1000),
            fmt_count(v.get("view_pending_changes")),
        )
    return t
