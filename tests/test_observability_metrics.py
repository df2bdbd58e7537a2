"""A worker's own Prometheus metrics: exact counts for a scripted workload, served over HTTP,
parsed with prometheus_client's parser, with the names docs/observability.md lists."""

from __future__ import annotations

import re
import threading
import urllib.request
from pathlib import Path

import psycopg
import pytest
from conftest import wait_for
from prometheus_client.parser import text_string_to_metric_families
from workers.inproc import running

import andal
from andal.cache import Cache

DOCS = Path(__file__).resolve().parent.parent / "docs" / "observability.md"


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of an exposition text, keyed by name and sorted labels."""
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def families(text: str) -> set[str]:
    """Metric family names (counters without ``_total``), samples or not; the ``_created``
    series prometheus_client adds to counters and histograms are left out."""
    return {f.name for f in text_string_to_metric_families(text) if not f.name.endswith("_created")}


def value(found: dict, name: str, **labels: str) -> float:
    return found.get((name, tuple(sorted(labels.items()))), 0.0)


def total(found: dict, name: str, **labels: str) -> float:
    """Sum of the samples of ``name`` whose labels include ``labels``."""
    return sum(
        v
        for (n, lbl), v in found.items()
        if n == name and all((k, val) in lbl for k, val in labels.items())
    )


def documented_worker_metrics(several_databases: bool = False) -> set[str]:
    """The worker metric names docs/observability.md lists: those of every worker, or (with
    ``several_databases``) those its table marks as exported only by a worker of several
    databases."""
    text = DOCS.read_text()
    section = text.split("## Worker metrics", 1)[1].split("\n## ", 1)[0]
    names: set[str] = set()
    for line in section.splitlines():
        if line.startswith("|") and ("only with several databases" in line) == several_databases:
            names |= set(re.findall(r"`(andal_worker_[a-z_]+)", line))
    return names


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
        assert resp.status == 200
        return resp.read().decode()


def test_scripted_workload_counts(dsn: str, conn: psycopg.Connection, clean: None) -> None:
    """Two workers in one process, each with its own registry; one serves /metrics over HTTP.
    Together they count exactly the scripted outcomes; cache reads are counted per job type."""
    andal.configure_queue(conn, "obs", max_attempts=3, backoff_base=60)
    andal.configure_queue(conn, "obs_tx", max_attempts=1)
    cache = Cache(dsn, follow=False)
    cache.put("known", {"v": 1})
    release = threading.Event()

    def leased(job: andal.Job) -> None:
        kind = job.payload["kind"]
        cache.lookup("known" if kind == "ok" else "unknown", job_type="obs")
        if kind == "retry":
            raise andal.Retry("later", delay=600)
        if kind == "fail":
            raise andal.Fail("no")
        if kind == "slow":
            release.wait(10)  # held past lease/3: at least one heartbeat

    def tx(job: andal.Job, c: psycopg.Connection) -> None:
        if job.payload["kind"] == "boom":
            raise RuntimeError("boom")

    kinds = ["ok"] * 6 + ["retry"] * 2 + ["fail"] + ["slow"]
    andal.enqueue_many(conn, [{"kind": k} for k in kinds], "obs")
    andal.enqueue_many(conn, [{"kind": "ok"}, {"kind": "ok"}, {"kind": "boom"}], "obs_tx")
    handlers = {"obs": leased, "obs_tx": andal.Handler("obs_tx", tx, transactional=True)}
    one = andal.Worker(
        dsn, handlers, concurrency=3, batch=4, poll=0.2, lease=0.9, metrics_port=0,
        metrics_addr="127.0.0.1", tracing=False, cache=cache,
    )  # fmt: skip
    two = andal.Worker(
        dsn, handlers, concurrency=2, batch=2, poll=0.2, lease=0.9, metrics=True, tracing=False
    )
    try:
        with running(one), running(two):
            assert one.metrics is not None and two.metrics is not None
            assert one.metrics.registry is not two.metrics.registry
            ended = ("completed", "retried", "dead")
            wait_for(
                lambda: sum(w.counts[k] for w in (one, two) for k in ended) == 12,
                timeout=30,
                what="twelve outcomes",
            )
            wait_for(
                lambda: one.counts["heartbeats"] + two.counts["heartbeats"] > 0,
                timeout=10,
                what="a heartbeat of the slow job",
            )
            release.set()
            wait_for(
                lambda: sum(w.counts[k] for w in (one, two) for k in ended) == 13,
                timeout=30,
                what="the slow job",
            )
            assert one.metrics.port
            text_one, text_two = scrape(one.metrics.port), two.metrics.text()
            found_one, found_two = samples(text_one), samples(text_two)
    finally:
        release.set()
        cache.close()

    def both(name: str, **labels: str) -> float:
        return total(found_one, name, **labels) + total(found_two, name, **labels)

    jobs = "andal_worker_jobs_total"
    assert both(jobs, queue="obs", outcome="completed") == 7  # six ok, one slow
    assert both(jobs, queue="obs", outcome="retried") == 2
    assert both(jobs, queue="obs", outcome="dead") == 1
    assert both(jobs, queue="obs_tx", outcome="completed") == 2
    assert both(jobs, queue="obs_tx", outcome="dead") == 1
    assert both(jobs, outcome="lease_lost") == 0 and both(jobs, outcome="released") == 0
    # each worker counted its own jobs only
    for w, found in ((one, found_one), (two, found_two)):
        mine = sum(w.counts[k] for k in ("completed", "retried", "dead"))
        assert total(found, jobs) == mine
        assert total(found, "andal_worker_claimed_jobs_total") == w.counts["claimed"]
        o = w.options
        assert value(found, "andal_worker_info", worker=w.name, concurrency=str(o.concurrency),
                     batch=str(o.batch), version=andal.__version__) == 1  # fmt: skip
    assert both("andal_worker_claimed_jobs_total") == 13
    assert both("andal_worker_handler_seconds_count", queue="obs") == 10
    assert both("andal_worker_handler_seconds_count", queue="obs_tx") == 3
    assert both("andal_worker_claim_seconds_count", mode="leased") >= 1
    assert both("andal_worker_claim_seconds_count", mode="tx") >= 3
    assert both("andal_worker_claims_total", mode="tx", result="full") == 3
    assert both("andal_worker_report_seconds_count", call="fail") >= 3
    assert both("andal_worker_heartbeat_seconds_count") >= 1
    assert value(found_one, "andal_worker_slots") == 3

    # cache reads, per job type, from the attached Cache (only worker one has it)
    reads = "andal_worker_cache_reads_total"
    assert total(found_one, reads, job_type="obs", outcome="shared_hit") == 6
    assert total(found_one, reads, job_type="obs", outcome="miss") == 4
    assert total(found_two, reads) == 0
    assert value(found_one, "andal_worker_cache_live", pool="default") == 0  # not following

    # every documented name is exported, and nothing undocumented (one database: not the
    # per-database metrics, which tests/test_multi_db.py checks)
    exported = families(text_one)
    documented = {d.removesuffix("_total") for d in documented_worker_metrics()}
    assert documented, "docs/observability.md lists no worker metric"
    assert documented == exported, (documented - exported, exported - documented)


def test_lease_loss_counted(dsn: str, conn: psycopg.Connection, clean: None) -> None:
    """A handler outliving its lease, without heartbeats: the completion is refused and
    counted as a lease loss, detected by complete."""
    andal.enqueue(conn, {}, "late")
    done = threading.Event()

    def handle(job: andal.Job) -> None:
        done.wait(1.2)

    worker = andal.Worker(
        dsn, {"late": handle}, poll=0.2, lease=0.4, heartbeat=False, metrics=True, tracing=False,
        maintain_every=0,
    )  # fmt: skip
    with running(worker):
        wait_for(lambda: worker.counts["lease_lost"] == 1, timeout=15, what="the lease loss")
        assert worker.metrics is not None
        found = samples(worker.metrics.text())
    losses = "andal_worker_lease_losses_total"
    assert value(found, losses, queue="late", detected_by="complete") == 1
    assert value(found, "andal_worker_jobs_total", queue="late", outcome="lease_lost") == 1
    assert value(found, "andal_worker_jobs_total", queue="late", outcome="completed") == 0


def test_metrics_off_by_default(dsn: str) -> None:
    worker = andal.Worker(dsn, {"q": print})
    assert worker.metrics is None
    with pytest.raises(ValueError, match="metrics_port"):
        andal.Worker(dsn, {"q": print}, metrics_port=70000)
