"""The markdown table (latest.md) and the PNG plots, from a run's JSON data."""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path
from typing import Any

from .targets import targets

SYSTEM_ORDER = [
    "raw-sql",
    "andal-sql",
    "raw-py",
    "andal-py",
    "andal-py-async",
    "procrastinate",
    "pgqueuer",
    "raw",
    "raw+notify",
    "andal",
    "andal-busy",
    "andal-notify",
    "redis",
    "raw-kv",
]

COLORS = {
    "raw-sql": "#1f77b4",
    "andal-sql": "#ff7f0e",
    "raw-py": "#17becf",
    "andal-py": "#d62728",
    "andal-py-async": "#e377c2",
    "procrastinate": "#9467bd",
    "pgqueuer": "#8c564b",
}

TITLES = {
    "W1": "W1 drain (jobs/s, higher is better)",
    "W2": "W2 pickup latency (ms, enqueue to handler start, lower is better)",
    "W3": "W3 enqueue (jobs/s)",
    "W4": "W4 claim throughput with a backlog (jobs/s)",
    "W5": "W5 held xmin (claim latency, ms)",
    "W6": "W6 cache (µs per operation, lower is better)",
    "W7": "W7 category gating (jobs/s)",
    "W8": "W8 scale: shards × databases, and cost over a long run (SQL level)",
    "COST": "Cost per job (1 worker, measured through a counting proxy)",
    "PRODUCERS": "Many producers: enqueue, one job per transaction (jobs/s, pgbench clients)",
    "WORKERS": "Many workers: claim + complete, one job per claim (jobs/s, pgbench clients)",
}


def fmt(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    if isinstance(v, str):
        return v
    a = abs(v)
    if a >= 100:
        return f"{v:,.0f}"
    if a >= 10:
        return f"{v:.1f}"
    if a >= 1:
        return f"{v:.2f}"
    return f"{v:.3f}"


def cell(r: dict[str, Any]) -> str:
    if not r["n"]:
        return "–"
    if r["n"] == 1:
        return fmt(r["median"])
    return f"{fmt(r['median'])} ({fmt(r['min'])}–{fmt(r['max'])})"


def _sort_systems(names: set[str]) -> list[str]:
    return sorted(names, key=lambda s: (SYSTEM_ORDER.index(s) if s in SYSTEM_ORDER else 99, s))


def markdown(data: dict[str, Any], plots: list[str] | None = None) -> str:
    meta = data["meta"]
    recs = data["records"]
    out: list[str] = []
    m = meta.get("machine", {})
    s = meta.get("server", {})
    out.append(f"# andal benchmark — {meta['started']}")
    out.append("")
    out.append(
        f"`{meta['command']}` · {meta['reps']} rep(s), median (min–max) · "
        f"{m.get('nproc')} cores, {m.get('memory_gib')} GiB, load at start "
        f"{', '.join(f'{x:.2f}' for x in m.get('load_at_start', []))} · PostgreSQL "
        f"{s.get('server_version')}, shared_buffers {s.get('shared_buffers')}, "
        f"synchronous_commit {s.get('synchronous_commit')}, fsync {s.get('fsync')}, "
        f"autovacuum {s.get('autovacuum')} · {meta.get('seconds')} s"
    )
    out.append("")
    tgt = targets(data)
    if tgt:
        out.append("## Targets (ratios measured in this run)")
        out.append("")
        out.append("| target | measured | goal | met |")
        out.append("|---|---|---|---|")
        for t in tgt:
            met = "–" if t["met"] is None else ("yes" if t["met"] else "**no**")
            out.append(f"| {t['name']} | {fmt(t['value'])} | {t['goal']} | {met} |")
        out.append("")

    by_w: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in recs:
        by_w[r["workload"]].append(r)
    for w in TITLES:
        rows = by_w.get(w)
        if not rows:
            continue
        out.append(f"## {TITLES[w]}")
        out.append("")
        if w in ("W2", "COST"):
            # one row per system (and case), one column per metric
            out.extend(_pivot(rows, lambda r: f"{r['system']} · {r['case']}", "metric"))
        elif w == "W5":
            out.extend(_pivot(rows, lambda r: f"{r['system']} · {r['case']}", "metric"))
        elif w == "W8":
            out.extend(_w8(rows))
        else:
            out.extend(_pivot(rows, lambda r: r["case"], "system"))
        if w == "W1":
            out.extend(_w1_cost(rows))
    if data.get("notes"):
        out.append("## Notes")
        out.append("")
        for n in data["notes"]:
            out.append(f"- {n}")
        out.append("")
    if plots:
        out.append("## Plots")
        out.append("")
        for p in plots:
            out.append(f"![{Path(p).stem}]({Path(p).name})")
        out.append("")
    return "\n".join(out)


def _pivot(rows: list[dict[str, Any]], row_key: Any, col: str) -> list[str]:
    keys = list(dict.fromkeys(row_key(r) for r in rows))
    if col == "system":
        cols = _sort_systems({r["system"] for r in rows})
        head = "case"
    else:
        cols = list(dict.fromkeys(r[col] for r in rows))
        head = "system · case"
    units = {r[col]: r["unit"] for r in rows}
    out = [
        f"| {head} | "
        + " | ".join(c if col == "system" else f"{c} ({units[c]})" for c in cols)
        + " |",
        "|---|" + "---|" * len(cols),
    ]
    for k in keys:
        cells = []
        for c in cols:
            r = next((x for x in rows if row_key(x) == k and x[col] == c), None)
            cells.append(cell(r) if r else "")
        out.append(f"| {k} | " + " | ".join(cells) + " |")
    out.append("")
    return out


def _w1_cost(rows: list[dict[str, Any]]) -> list[str]:
    out = [
        "W1 cost per job (median over reps): transactions in the system's database; WAL bytes "
        "of the whole cluster in the interval; client CPU = pgbench or the worker processes.",
        "",
        "pgbench's per-statement latency (-r, average over the run) for the SQL cases.",
        "",
        "| system | case | xacts/job | WAL B/job | client CPU µs/job | claim ms | complete ms |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if r["case"] in ("workers=1 batch=1", "workers=1 batch=100", "workers=4 batch=10"):
            out.append(
                f"| {r['system']} | {r['case']} | {fmt(r.get('xacts_per_job'))} | "
                f"{fmt(r.get('wal_bytes_per_job'))} | {fmt(r.get('client_cpu_us_per_job'))} | "
                f"{fmt(r.get('claim_ms'))} | {fmt(r.get('complete_ms'))} |"
            )
    out.append("")
    return out


def _w8_columns(rows: list[dict[str, Any]]) -> list[tuple[int, int]]:
    return sorted({(r["shards"], r["dbs"]) for r in rows})


def _w8_col(shards: int, dbs: int) -> str:
    return f"{shards} shard{'s' if shards > 1 else ''} · {dbs} db{'s' if dbs > 1 else ''}"


def _w8(rows: list[dict[str, Any]]) -> list[str]:
    out: list[str] = []
    part = [r for r in rows if r.get("part") == "shards"]
    if part:
        first = part[0]
        out += [
            f"{first['queues']} queues spread evenly over the shards (`queue.shard_of`), "
            f"{first['clients'] // first['dbs']} pgbench clients per database (claim, then "
            "`complete` at batch 1 or `complete_many`). *per queue*: client *i* claims queue "
            "*i* only; *all queues*: `queues => null`. 2 dbs: two andal databases drained at "
            "the same time, jobs/s = all jobs of both / time until the slower one finished "
            "(so twice the clients). Jobs per database: "
            + ", ".join(
                f"{r['jobs'] // r['dbs']:,} at batch {r['batch']}"
                for r in {r["batch"]: r for r in part}.values()
            )
            + ".",
            "",
        ]
        cols = _w8_columns(part)
        keys = list(dict.fromkeys((r["batch"], r["claim"]) for r in part))
        keys.sort(key=lambda k: (k[0], k[1] != "per queue"))
        head = "| claim · batch | " + " | ".join(_w8_col(*c) for c in cols) + " |"
        sep = "|---|" + "---|" * len(cols)

        def find(metric: str, key: tuple[int, str], col: tuple[int, int]) -> Any:
            return next(
                (
                    r
                    for r in part
                    if r["metric"] == metric
                    and (r["batch"], r["claim"]) == key
                    and (r["shards"], r["dbs"]) == col
                ),
                None,
            )

        captions = {
            "jobs/s": "Throughput (jobs/s, median (min–max)):",
            "WAL B/job": "WAL bytes per job (claim + complete; the WAL records of the case's "
            "databases, read with `pg_walinspect`, else the cluster's):",
            "server CPU µs/job": "Server CPU per job (µs, the case's backends, `/proc`):",
        }
        for metric, caption in captions.items():
            out += [caption, "", head, sep]
            for key in keys:
                cells = []
                for col in cols:
                    r = find(metric, key, col)
                    cells.append(cell(r) if r else "")
                out.append(f"| {key[1]} · batch={key[0]} | " + " | ".join(cells) + " |")
            out.append("")
        base = cols[0]
        out += [f"Throughput relative to {_w8_col(*base)} (same claim and batch):", "", head, sep]
        for key in keys:
            b = find("jobs/s", key, base)
            cells = []
            for col in cols:
                r = find("jobs/s", key, col)
                ok = r and b and r["n"] and b["n"] and b["median"]
                cells.append(fmt(r["median"] / b["median"]) if ok else "")
            out.append(f"| {key[1]} · batch={key[0]} | " + " | ".join(cells) + " |")
        out.append("")
        out += [
            "pgbench's per-statement latency, claim / complete (ms, median of the reps' averages):",
            "",
            head,
            sep,
        ]
        for key in keys:
            cells = []
            for col in cols:
                r = find("jobs/s", key, col)
                cells.append(f"{fmt(r.get('claim_ms'))} / {fmt(r.get('complete_ms'))}" if r else "")
            out.append(f"| {key[1]} · batch={key[0]} | " + " | ".join(cells) + " |")
        out.append("")
    growth = sorted(
        (r for r in rows if r.get("part") == "growth"), key=lambda r: (r["shards"], r["processed"])
    )
    if growth:
        g = growth[0]
        out += [
            f"Growth: jobs processed without pause ({g['clients']} pgbench clients, one queue "
            f"each, claim {g['batch']} + `complete_many`), one producer connection per queue "
            "refilling it through `queue.enqueue_many` to keep "
            f"{g.get('refill_at', 0.75) * g['backlog']:,.0f}–{g['backlog']:,} jobs queued "
            "(min backlog: the fewest seen in the interval); autovacuum is "
            f"off, so the benchmark runs `queue.maintain()` and `VACUUM (ANALYZE)` of "
            f"`queue.jobs` (all partitions) and `queue.stat_minutes` every {g['vacuum_every_s']} "
            "s, as the driver does. Per interval since the previous checkpoint: jobs/s; WAL "
            "bytes per job of the andal database (`pg_walinspect`, over the interval's last "
            "jobs) and of the whole cluster; server CPU (the database's backends: claims, "
            "completions, enqueues, vacuum) and pgbench CPU per job. Size = table + indexes of "
            "every partition of `queue.jobs` at the checkpoint; dead tuples from "
            "`pg_stat_user_tables`.",
            "",
            "| shards | jobs processed | jobs/s | WAL B/job | cluster WAL B/job | server CPU "
            "µs/job | pgbench CPU µs/job | queue.jobs MB (indexes) | dead tuples | vacuums | "
            "min backlog | load |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in growth:
            out.append(
                f"| {r['shards']} | {r['processed']:,} | {fmt(r['median'])} | "
                f"{fmt(r.get('wal_bytes_per_job'))} | {fmt(r.get('cluster_wal_bytes_per_job'))} | "
                f"{fmt(r.get('server_cpu_us_per_job'))} | "
                f"{fmt(r.get('client_cpu_us_per_job'))} | "
                f"{fmt(r['table_bytes'] / 2**20)} ({fmt(r['index_bytes'] / 2**20)}) | "
                f"{r['dead_tuples']:,} | {r['vacuums']} | {r['min_backlog']:,} | "
                f"{fmt(r.get('load1'))} |"
            )
        out.append("")
    return out


BEGIN, END = "<!-- bench:begin -->", "<!-- bench:end -->"


def publish(data: dict[str, Any], plots: list[str], docs: Path) -> None:
    """Copy the plots to docs/img/ and put the tables between the markers of
    docs/performance.md (the rest of the page is left as written)."""
    import shutil

    img = docs / "img"
    img.mkdir(parents=True, exist_ok=True)
    names = []
    for p in plots:
        dest = img / f"bench-{Path(p).name}"
        shutil.copyfile(p, dest)
        names.append(f"img/{dest.name}")
    body = markdown(data, None)
    body = body.split("\n", 1)[1].lstrip()  # the page has its own title
    body = f"Run started {data['meta']['started']}: " + body
    body = body.replace("\n## ", "\n### ").replace("\n# ", "\n## ")
    if body.startswith("## "):
        body = "#" + body
    if names:
        body += "\n### Plots\n\n" + "\n\n".join(f"![{Path(n).stem}]({n})" for n in names)
        body += "\n"
    page = docs / "performance.md"
    text = page.read_text() if page.exists() else f"# Performance\n\n{BEGIN}\n{END}\n"
    if BEGIN not in text or END not in text:
        text += f"\n{BEGIN}\n{END}\n"
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    page.write_text(f"{head}{BEGIN}\n\n{body}\n{END}{tail}")


# -- plots ----------------------------------------------------------------------------------


def plots(data: dict[str, Any], outdir: Path) -> list[str]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        data.setdefault("notes", []).append(
            "matplotlib is not installed (bench extra): plots skipped"
        )
        return []
    made: list[str] = []
    recs = data["records"]
    w1 = [r for r in recs if r["workload"] == "W1" and r["metric"] == "jobs/s"]
    if w1:
        workers = sorted({r["workers"] for r in w1})
        fig, axes = plt.subplots(1, len(workers), figsize=(6 * len(workers), 4.5), squeeze=False)
        for ax, wk in zip(axes[0], workers, strict=False):
            sub = [r for r in w1 if r["workers"] == wk]
            names = _sort_systems({r["system"] for r in sub})
            for name in names:
                pts = sorted((r["batch"], r) for r in sub if r["system"] == name)
                xs = [b for b, _ in pts]
                ys = [r["median"] for _, r in pts]
                lo = [r["median"] - r["min"] for _, r in pts]
                hi = [r["max"] - r["median"] for _, r in pts]
                ax.errorbar(
                    xs, ys, yerr=[lo, hi], marker="o", capsize=3, label=name, color=COLORS.get(name)
                )
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xticks([1, 10, 100])
            ax.set_xticklabels(["1", "10", "100"])
            ax.set_xlabel("batch (jobs per claim)")
            ax.set_ylabel("jobs/s")
            ax.set_title(f"W1 drain, {wk} worker(s)/client(s)")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=8)
        fig.tight_layout()
        path = outdir / "w1_throughput.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        made.append(str(path))
    w2 = [r for r in recs if r["workload"] == "W2" and r.get("samples")]
    if w2:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        order = _sort_systems({r["system"] for r in w2})
        for r in sorted(w2, key=lambda r: order.index(r["system"])):
            s = sorted(r["samples"])
            ys = [(i + 1) / len(s) for i in range(len(s))]
            ax.plot(
                s,
                ys,
                label=f"{r['system']} (p99 {fmt(r.get('p99'))} ms)",
                color=COLORS.get(r["system"]),
            )
        ax.set_xscale("log")
        ax.set_xlabel("enqueue → handler start (ms)")
        ax.set_ylabel("fraction of jobs")
        ax.set_title("W2 pickup latency CDF (200 jobs/s, one per transaction)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        path = outdir / "w2_latency_cdf.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        made.append(str(path))
    made += _w8_plots(recs, outdir, plt)
    made += _clients_plots(recs, outdir, plt)
    return made


def _clients_plots(recs: list[dict[str, Any]], outdir: Path, plt: Any) -> list[str]:
    """jobs/s against the number of clients, one line per system: the many-producers and the
    many-workers workloads."""
    made = []
    for w, name in (("PRODUCERS", "producers_scale.png"), ("WORKERS", "workers_scale.png")):
        rows = [r for r in recs if r["workload"] == w and r.get("clients")]
        if not rows:
            continue
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for system in _sort_systems({r["system"] for r in rows}):
            pts = sorted((r["clients"], r) for r in rows if r["system"] == system)
            xs = [c for c, _ in pts]
            ys = [r["median"] for _, r in pts]
            lo = [r["median"] - r["min"] for _, r in pts]
            hi = [r["max"] - r["median"] for _, r in pts]
            err = [lo, hi]
            ax.errorbar(xs, ys, yerr=err, marker="o", capsize=3, label=system,
                        color=COLORS.get(system))  # fmt: skip
        ax.set_xscale("log", base=2)
        ax.set_xlabel("clients (pgbench)")
        ax.set_ylabel("jobs/s")
        ax.set_title(TITLES[w])
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        path = outdir / name
        fig.savefig(path, dpi=110)
        plt.close(fig)
        made.append(str(path))
    return made


W8_COLORS = {
    ("per queue", 1): "#ff7f0e",
    ("per queue", 2): "#d62728",
    ("all queues", 1): "#1f77b4",
    ("all queues", 2): "#17becf",
}


def _w8_plots(recs: list[dict[str, Any]], outdir: Path, plt: Any) -> list[str]:
    made: list[str] = []
    part = [
        r
        for r in recs
        if r["workload"] == "W8" and r.get("part") == "shards" and r["metric"] == "jobs/s"
    ]
    if part:
        batches = sorted({r["batch"] for r in part})
        shards = sorted({r["shards"] for r in part})
        series = sorted(
            {(r["claim"], r["dbs"]) for r in part}, key=lambda k: (k[0] != "per queue", k[1])
        )
        fig, axes = plt.subplots(1, len(batches), figsize=(6 * len(batches), 4.5), squeeze=False)
        width = 0.8 / len(series)
        for ax, batch in zip(axes[0], batches, strict=False):
            for k, (claim, dbs) in enumerate(series):
                xs, ys, lo, hi = [], [], [], []
                for x, sh in enumerate(shards):
                    r = next(
                        (
                            r
                            for r in part
                            if (r["batch"], r["claim"], r["dbs"], r["shards"])
                            == (batch, claim, dbs, sh)
                        ),
                        None,
                    )
                    if r is None or not r["n"]:
                        continue
                    xs.append(x + (k - (len(series) - 1) / 2) * width)
                    ys.append(r["median"])
                    lo.append(r["median"] - r["min"])
                    hi.append(r["max"] - r["median"])
                ax.bar(
                    xs,
                    ys,
                    width,
                    yerr=[lo, hi],
                    capsize=3,
                    label=f"{claim}, {dbs} db{'s' if dbs > 1 else ''}",
                    color=W8_COLORS.get((claim, dbs)),
                )
            ax.set_xticks(range(len(shards)))
            ax.set_xticklabels([str(s) for s in shards])
            ax.set_xlabel("shards of queue.jobs")
            ax.set_ylabel("jobs/s (all databases)")
            ax.set_title(f"W8 claim + complete, batch {batch}")
            ax.grid(True, axis="y", alpha=0.3)
            ax.legend(fontsize=8)
        fig.tight_layout()
        path = outdir / "w8_shards.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        made.append(str(path))
    growth = [r for r in recs if r["workload"] == "W8" and r.get("part") == "growth"]
    if growth:
        fig, axes = plt.subplots(2, 2, figsize=(12, 8))
        dead_ax = axes[1][1].twinx()
        panels = [
            (axes[0][0], "jobs/s (interval)", lambda r: r["median"]),
            (
                axes[0][1],
                "WAL bytes per job (andal database)",
                lambda r: r.get("wal_bytes_per_job"),
            ),
            (axes[1][0], "server CPU µs per job", lambda r: r.get("server_cpu_us_per_job")),
            (
                axes[1][1],
                "queue.jobs MB (table + indexes, solid)",
                lambda r: r["table_bytes"] / 2**20,
            ),
            (dead_ax, "dead tuples (dashed)", lambda r: r["dead_tuples"]),
        ]
        palette = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728"]
        for k, sh in enumerate(sorted({r["shards"] for r in growth})):
            pts = sorted((r for r in growth if r["shards"] == sh), key=lambda r: r["processed"])
            xs = [r["processed"] for r in pts]
            label = f"{sh} shard{'s' if sh > 1 else ''}"
            color = palette[k % len(palette)]
            for ax, _, get in panels:
                dashed = ax is dead_ax
                ax.plot(
                    xs,
                    [get(r) for r in pts],
                    marker="x" if dashed else "o",
                    linestyle="--" if dashed else "-",
                    color=color,
                    label=None if dashed else label,
                )
        for ax, ylabel, _ in panels:
            ax.set_xscale("log")
            ax.set_ylabel(ylabel)
            ax.set_ylim(bottom=0)
            if ax is not dead_ax:
                ax.set_xlabel("jobs processed")
                ax.grid(True, which="both", alpha=0.3)
                ax.legend(fontsize=8)
        fig.suptitle("W8 growth: cost per job as jobs are processed")
        fig.tight_layout()
        path = outdir / "w8_growth.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        made.append(str(path))
    return made
