"""W8 scale: claim + complete throughput with 1, 2 and 4 shards and 1 and 2 databases, WAL per
job, and how the cost per job grows over a long run.

Two databases of its own (``andal_bench_w8a_<run>``, ``andal_bench_w8b_<run>``), andal
installed in both; the shard layout is set with ``queue.set_shards`` on the emptied table.

* **Shards × databases** (pgbench, andal's SQL functions as in W1: one claim transaction, then
  ``queue.complete`` (batch 1) or ``queue.complete_many``): ``QUEUES`` queues whose names are
  picked with ``queue.shard_of`` so that every shard holds as many queues as the others (at 4
  shards one queue each, at 2 shards two), ``CLIENTS`` pgbench clients per database. "per
  queue": client *i* claims only queue *i* (``queues => array[...]``, the case sharding is for:
  the claim reads one shard); "all queues": ``queues => null``. Each case drains N preloaded
  jobs (spread evenly over the queues) per database; with 2 databases both pgbench runs start
  together and the throughput is all jobs of both over the time until the slower one finished.
  Repetitions interleave every case (shards, batch, claim, databases) rep by rep. WAL per job:
  the records of the case's databases between the two ``pg_current_wal_lsn()`` (read with
  ``pg_walinspect``, kept readable by a temporary replication slot: other sessions write WAL
  and checkpoint on this server too); the cluster-wide figure is kept beside it, and used when
  the records cannot be read. Server CPU is the summed CPU of the databases' backends
  (``/proc``, as in the cost pass).
* **Growth**: one long run per layout (unsharded, then 4 shards): the same per-queue clients at
  batch 100 run without pause while one producer connection per queue refills it through
  ``queue.enqueue_many`` whenever its backlog drops below 3/4 of its share of ``BACKLOG``
  (jobs processed come from ``queue.stat_minutes``, written by the completions). The server
  runs with ``autovacuum = off``; like the driver (``maintain_every`` = 60 s) the benchmark
  runs ``queue.maintain()`` and ``VACUUM (ANALYZE)`` of ``queue.jobs`` (every partition) and
  ``queue.stat_minutes`` every ``VACUUM_EVERY`` seconds from a connection of its own. At each
  checkpoint (10k, 30k, 100k, … jobs processed) it records the last interval's throughput,
  server CPU and pgbench CPU per job (enqueue, claim, complete and vacuum all included), WAL
  bytes per job (the andal database's records over the last ``WAL_SAMPLE`` jobs before the
  checkpoint; the cluster's over the whole interval), the size (table + indexes) of every
  partition of ``queue.jobs`` and its dead tuples.
"""

from __future__ import annotations

import contextlib
import math
import os
import subprocess
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import psycopg

from . import systems
from .common import RUN_ID, Config, connect, dsn_for, log, median, pgbench_path, run_pgbench
from .cost import TICK, BackendCpu
from .env import Env

WORKLOAD = "W8"
SYSTEM = "andal-sql"
QUEUES = 4
CLIENTS = 4  # pgbench clients per database; per-queue claims: client i takes queue i
MODES = ("per queue", "all queues")
GROWTH_SHARDS = (1, 4)
GROWTH_BATCH = 100
#: growth: the driver's default maintain_every (s): queue.maintain() and, autovacuum off,
#: VACUUM (ANALYZE) of queue.jobs and queue.stat_minutes (quick: every second)
VACUUM_EVERY = 60
#: growth: ready jobs kept in the queues (each refilled below REFILL_AT of its share)
BACKLOG = 40_000
REFILL_AT = 0.75
POLL = 0.05  # seconds between the growth run's refills
#: growth: the WAL of the andal database is read (pg_walinspect) over the last WAL_SAMPLE jobs
#: before each checkpoint; the cluster's WAL over the whole interval
WAL_SAMPLE = 20_000


def case(mode: str, batch: int, shards: int, dbs: int) -> str:
    return f"{mode} batch={batch} shards={shards} dbs={dbs}"


def _label(n: int) -> str:
    if n >= 1_000_000 and n % 1_000_000 == 0:
        return f"{n // 1_000_000}M"
    if n >= 1000 and n % 1000 == 0:
        return f"{n // 1000}k"
    return f"{n:,}"


def checkpoints(total: int, quick: bool) -> list[int]:
    """10k, 30k, 100k, 300k, 1M, 3M, 10M, … up to ``total`` (quick: from 1k), and ``total``."""
    out: list[int] = []
    base = 1_000 if quick else 10_000
    while base <= total:
        out.extend(x for x in (base, 3 * base) if x <= total)
        base *= 10
    if not out or out[-1] != total:
        out.append(total)
    return out


# -- pgbench scripts ------------------------------------------------------------------------


def script(batch: int, queues: list[str] | None) -> str:
    """Claim ``batch`` then complete; ``queues``: client i claims queues[i % len] only
    (``None``: every queue, ``queues => null``)."""
    head = ""
    qexpr = "null"
    if queues:
        head = f"\\set qi :client_id % {len(queues)} + 1\n"
        qexpr = "array[(array[" + ", ".join(f"'{q}'" for q in queues) + "])[:qi]]"
    if batch == 1:
        return head + (
            "select count(*) as n, max(c.job_id) as id, max(c.token::text) as tok\n"
            f"from queue.claim(worker => 'pgbench', queues => {qexpr}, batch => 1) as c \\gset\n"
            "\\if :n > 0\n"
            "select queue.complete(job_id => :id, token => :tok::uuid);\n"
            "\\endif\n"
        )
    return head + (
        "select count(*) as n, coalesce(array_agg(c.job_id)::text, '{}') as ids,\n"
        "    coalesce(array_agg(c.token)::text, '{}') as toks\n"
        f"from queue.claim(worker => 'pgbench', queues => {qexpr}, batch => :batch) as c \\gset\n"
        "\\if :n > 0\n"
        "select count(*) from queue.complete_many(job_ids => :ids::bigint[],"
        " tokens => :toks::uuid[]);\n"
        "\\endif\n"
    )


# -- databases ------------------------------------------------------------------------------


class Db:
    def __init__(self, env: Env, label: str) -> None:
        from andal.install import install

        self.name = env.extra_db(label)
        self.dsn = dsn_for(self.name, env.admin)
        install(self.dsn, role_prefix="andal", warn=lambda _message: None)  # as systems.py
        with self.connect() as conn:
            self.oid = int(
                conn.execute(
                    "select oid from pg_database where datname = current_database()"
                ).fetchone()[0]
            )
            try:  # reads the server's WAL records: needs a superuser (pg_read_server_files)
                conn.execute("create extension if not exists pg_walinspect")
                self.walinspect = True
            except psycopg.Error:
                self.walinspect = False

    def connect(self) -> psycopg.Connection:
        return connect(self.dsn)

    def set_shards(self, shards: int) -> None:
        systems.reset("andal", self.dsn)
        with self.connect() as conn:
            conn.execute("select queue.set_shards(shards => %s)", (shards,))

    def layout(self, queues: list[str]) -> dict[int, int]:
        """Shard -> how many of ``queues`` land in it."""
        with self.connect() as conn:
            n = len(conn.execute("select shard from queue.shards()").fetchall())
            out = dict.fromkeys(range(n), 0)
            for q in queues:
                out[conn.execute("select queue.shard_of(queue => %s)", (q,)).fetchone()[0]] += 1
        return out

    def load(self, queues: list[str], n: int) -> None:
        """Empty the tables, insert n ready jobs spread evenly over ``queues``, vacuum."""
        systems.reset("andal", self.dsn)
        with self.connect() as conn:
            conn.execute(
                "insert into queue.jobs (queue, payload, max_attempts)"
                " select (%s::text[])[g %% %s + 1], jsonb_build_object('n', g), 5"
                " from generate_series(1, %s) as g",
                (queues, len(queues), n),
            )
        systems.vacuum("andal", self.dsn)

    def remaining(self) -> int:
        with self.connect() as conn:
            return int(conn.execute("select count(*) from queue.jobs").fetchone()[0])


def pick_queues(db: Db, per_shard: int, shards: int) -> list[str]:
    """Queue names such that the i-th lands in shard i % shards of a ``shards``-way layout
    (hence evenly in every layout whose shard count divides it: hash % 2 = hash % 4 % 2)."""
    db.set_shards(shards)
    found: dict[int, list[str]] = {r: [] for r in range(shards)}
    with db.connect() as conn:
        for i in range(10_000):
            name = f"w8-{i}"
            r = conn.execute("select queue.shard_of(queue => %s)", (name,)).fetchone()[0]
            if len(found[r]) < per_shard:
                found[r].append(name)
            if all(len(v) == per_shard for v in found.values()):
                break
    return [found[r][k] for k in range(per_shard) for r in range(shards)]


# -- measurements ---------------------------------------------------------------------------


def _server(admin: str, dbnames: list[str]) -> dict[str, Any]:
    """WAL position, checkpoints so far, and committed transactions outside ``dbnames``."""
    with connect(admin) as conn:
        conn.execute("select pg_stat_clear_snapshot()")
        lsn, ckpt, other = conn.execute(
            "select pg_current_wal_lsn()::text,"
            " (select checkpoints_timed + checkpoints_req from pg_stat_bgwriter),"
            " (select coalesce(sum(xact_commit + xact_rollback), 0) from pg_stat_database"
            "  where datname <> all (%s))",
            (dbnames,),
        ).fetchone()
    return {"lsn": lsn, "checkpoints": int(ckpt), "other_xacts": int(other)}


def _lsn(text: str) -> int:
    hi, lo = text.split("/")
    return (int(hi, 16) << 32) + int(lo, 16)


def _backend_cpu(b: BackendCpu) -> float:
    """CPU seconds of the sampled backends so far (``BackendCpu.stop`` without stopping)."""
    return sum(cpu - b.base.get(pid, 0.0) for pid, cpu in list(b.seen.items()))


#: WAL records between two LSNs: all of them, and those of the given databases (a block of
#: theirs, or the transaction of a record that has one: commits carry no block).
WAL_OURS = (
    "with r as materialized ("
    " select xid, record_length, block_ref from pg_get_wal_records_info(%(a)s, %(b)s)),"
    " x as (select distinct xid from r where xid <> 0 and block_ref ~ %(re)s)"
    " select coalesce(sum(record_length), 0)::bigint,"
    " coalesce(sum(record_length) filter (where block_ref ~ %(re)s"
    " or xid in (select xid from x)), 0)::bigint"
    " from r"
)


class WalKeeper:
    """Keeps the WAL of a measurement readable until it is read: checkpoints (other sessions
    run them every few seconds on a busy server) recycle the segments before their redo point.
    ``reserve`` creates a temporary physical replication slot (dropped when its session ends,
    whatever happens) that retains the WAL from that moment; ``release`` drops it once read,
    so nothing is retained between measurements."""

    def __init__(self, db: Db) -> None:
        self.name = f"andal_bench_w8_{RUN_ID}"
        self.conn: psycopg.Connection | None = db.connect() if db.walinspect else None
        self.held = False

    def reserve(self) -> None:
        """Retain the WAL from now on (until ``release``)."""
        if self.conn is None:
            return
        self.release()
        try:
            self.conn.execute(
                "select pg_create_physical_replication_slot(%s, true, true)", (self.name,)
            )
            self.held = True
        except psycopg.Error as exc:
            log(f"W8: no replication slot ({str(exc).strip()}): WAL may be recycled before read")
            self.close()

    def release(self) -> None:
        if self.conn is not None and self.held:
            self.held = False
            with contextlib.suppress(psycopg.Error):
                self.conn.execute("select pg_drop_replication_slot(%s)", (self.name,))

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()  # drops the temporary slot, if any
            self.conn = None


def wal_ours(via: Db, lsn0: str, lsn1: str, dbs: list[Db]) -> float | None:
    """WAL bytes of ``dbs`` between two LSNs: their records' share of all records, applied to
    the LSN advance (which also counts page headers and alignment); None when the records
    cannot be read (no pg_walinspect, or the segments were recycled: see ``WalKeeper``)."""
    if not via.walinspect:
        return None
    pattern = "/(" + "|".join(str(db.oid) for db in dbs) + ")/"
    try:
        with via.connect() as conn:
            for _ in range(100):  # pg_walinspect reads only flushed WAL
                if conn.execute(
                    "select pg_current_wal_flush_lsn() >= %s::pg_lsn", (lsn1,)
                ).fetchone()[0]:
                    break
                time.sleep(0.02)
            total, ours = conn.execute(WAL_OURS, {"a": lsn0, "b": lsn1, "re": pattern}).fetchone()
    except psycopg.Error as exc:
        log(f"W8: WAL records unreadable ({str(exc).strip()}); cluster-wide WAL used")
        return None
    advance = _lsn(lsn1) - _lsn(lsn0)
    return ours * advance / total if total else 0.0


def drain(db: Db, n: int, batch: int, queues: list[str] | None) -> dict[str, Any]:
    """Drain the n loaded jobs: CLIENTS x n / (CLIENTS x batch) script runs (each client one
    queue when ``queues``); if claims came back short (jobs left), one more client claiming
    every queue finishes them, its time counted."""
    per_client = math.ceil(n / (CLIENTS * batch))
    r = run_pgbench(db.dsn, script(batch, queues), clients=CLIENTS, transactions=per_client,
                    variables={"batch": batch})  # fmt: skip
    seconds = per_client * CLIENTS / r.tps
    left_after = 0
    for _ in range(5):
        left = db.remaining()
        if not left:
            break
        left_after = left_after or left
        extra = run_pgbench(db.dsn, script(batch, None), clients=1,
                            transactions=math.ceil(left / batch) + 1,
                            variables={"batch": batch})  # fmt: skip
        seconds += extra.transactions / extra.tps
    else:
        raise RuntimeError(f"W8: {left} jobs left in {db.name} after draining")
    stmts = r.statement_ms if len(r.statement_ms) == 2 else [float("nan")] * 2
    return {"seconds": seconds, "short": left_after, "claim_ms": stmts[0], "complete_ms": stmts[1]}


def measure(
    env: Env,
    keeper: WalKeeper,
    dbs: list[Db],
    n: int,
    batch: int,
    queues: list[str],
    per_queue: bool,
) -> dict[str, Any]:
    """Load n jobs (spread over ``queues``) into each of ``dbs`` and drain them all at once,
    each client claiming its own queue (``per_queue``) or every queue; jobs/s of all the
    databases' jobs over the time of the slowest database."""
    for db in dbs:
        db.load(queues, n)
    names = [db.name for db in dbs]
    cpus = [BackendCpu(env.admin, db.name).start() for db in dbs]
    keeper.reserve()
    s0 = _server(env.admin, names)
    with ThreadPoolExecutor(max_workers=len(dbs)) as pool:
        outs = list(pool.map(lambda db: drain(db, n, batch, queues if per_queue else None), dbs))
    cpu = sum(c.stop() for c in cpus)
    s1 = _server(env.admin, names)
    jobs = n * len(dbs)
    cluster = _lsn(s1["lsn"]) - _lsn(s0["lsn"])
    ours = wal_ours(dbs[0], s0["lsn"], s1["lsn"], dbs)
    keeper.release()
    return {
        "jobs_per_s": jobs / max(o["seconds"] for o in outs),
        "wal_per_job": (cluster if ours is None else ours) / jobs,
        "cluster_wal_per_job": cluster / jobs,
        "wal_source": "cluster" if ours is None else "pg_walinspect",
        "cpu_us_per_job": cpu * 1e6 / jobs,
        "claim_ms": median([o["claim_ms"] for o in outs]),
        "complete_ms": median([o["complete_ms"] for o in outs]),
        "short": sum(o["short"] for o in outs),
        "checkpoints": s1["checkpoints"] - s0["checkpoints"],
        "other_xacts": s1["other_xacts"] - s0["other_xacts"],
        "load1": os.getloadavg()[0],
    }


# -- the workload ---------------------------------------------------------------------------


def run(cfg: Config, env: Env) -> None:
    if not env.pgbench:
        cfg.results.note("W8 needs pgbench: skipped")
        return
    shards_list = (1, 4) if cfg.quick else (1, 2, 4)
    dbs = [Db(env, "w8a"), Db(env, "w8b")]
    maxs = max(max(shards_list), max(GROWTH_SHARDS))
    queues = pick_queues(dbs[0], QUEUES // maxs, maxs)
    log(f"W8 queues {', '.join(queues)} (shard i % {maxs} at {maxs} shards)")
    with dbs[0].connect() as conn:
        digest = conn.execute("select functions_digest from queue.install_state").fetchone()[0]
    from andal.install import sql_dir

    cfg.results.note(
        f"W8 installed andal from {sql_dir()} (functions digest {digest[:12]}): the SQL of the "
        "working tree at the start of the run unless ANDAL_SQL_DIR points elsewhere"
    )
    keeper = WalKeeper(dbs[0])
    try:
        by_shards(cfg, env, keeper, dbs, queues, shards_list)
        for shards in GROWTH_SHARDS:
            Growth(cfg, env, keeper, dbs[0], queues, shards).run()
    finally:
        keeper.close()


def by_shards(
    cfg: Config,
    env: Env,
    keeper: WalKeeper,
    dbs: list[Db],
    queues: list[str],
    shards_list: tuple[int, ...],
) -> None:
    """Every (shards, batch, claim, databases) case once per repetition, interleaved."""
    batches = (1, 100)
    sizes = {1: cfg.size(3_000, 100), 100: cfg.size(60_000, 1_200)}
    db_counts = (1, 2)
    res = cfg.results
    vals: dict[str, list[dict[str, Any]]] = {}
    order = [(s, b, m, d) for s in shards_list for b in batches for m in MODES for d in db_counts]
    for rep in range(cfg.reps):
        current = None
        for shards, batch, mode, ndb in order:
            if shards != current:
                for db in dbs:
                    db.set_shards(shards)
                spread = dbs[0].layout(queues)
                if len(set(spread.values())) != 1:
                    res.note(f"W8 {shards} shards: queues unevenly spread {spread}")
                current = shards
            out = measure(env, keeper, dbs[:ndb], sizes[batch], batch, queues, mode == "per queue")
            vals.setdefault(case(mode, batch, shards, ndb), []).append(out)
            log(
                f"W8 {case(mode, batch, shards, ndb)} rep {rep + 1}: "
                f"{out['jobs_per_s']:,.0f} jobs/s, {out['wal_per_job']:,.0f} WAL B/job, "
                f"{out['cpu_us_per_job']:,.0f} server µs/job"
            )
    for shards, batch, mode, ndb in order:
        name = case(mode, batch, shards, ndb)
        rs = vals[name]
        extra = {
            "part": "shards",
            "claim": mode,
            "batch": batch,
            "shards": shards,
            "dbs": ndb,
            "clients": CLIENTS * ndb,
            "queues": QUEUES,
            "jobs": sizes[batch] * ndb,
            "claim_ms": median([r["claim_ms"] for r in rs]),
            "complete_ms": median([r["complete_ms"] for r in rs]),
            "checkpoints": sum(r["checkpoints"] for r in rs),
            "other_xacts": median([r["other_xacts"] for r in rs]),
            "load1": median([r["load1"] for r in rs]),
            "cluster_wal_bytes_per_job": median([r["cluster_wal_per_job"] for r in rs]),
            "wal_source": ", ".join(sorted({r["wal_source"] for r in rs})),
        }
        res.add(WORKLOAD, SYSTEM, name, "jobs/s", "jobs/s", [r["jobs_per_s"] for r in rs],
                **extra)  # fmt: skip
        res.add(WORKLOAD, SYSTEM, name, "WAL B/job", "bytes", [r["wal_per_job"] for r in rs],
                **extra)  # fmt: skip
        res.add(WORKLOAD, SYSTEM, name, "server CPU µs/job", "µs",
                [r["cpu_us_per_job"] for r in rs], **extra)  # fmt: skip
        short = [r["short"] for r in rs if r["short"]]
        if short:
            res.note(
                f"W8 {name}: claims came back short while ready jobs were left in "
                f"{len(short)} of {len(rs)} reps ({', '.join(map(str, short))} of "
                f"{extra['jobs']} jobs left after the planned script runs; one more client "
                "drained them, its time counted)"
            )


# -- growth ---------------------------------------------------------------------------------


class Vacuumer:
    """``queue.maintain()`` then ``VACUUM (ANALYZE)`` of the hot tables every ``every`` s."""

    def __init__(self, dsn: str, every: float) -> None:
        self.dsn, self.every = dsn, every
        self.count = 0
        self.seconds = 0.0
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._loop, name="w8-vacuum", daemon=True)

    def start(self) -> Vacuumer:
        self._t.start()
        return self

    def _loop(self) -> None:
        try:
            with connect(self.dsn) as conn:
                while not self._stop.wait(self.every):
                    t0 = time.perf_counter()
                    conn.execute("select queue.maintain()")
                    conn.execute("vacuum (analyze) queue.jobs")
                    conn.execute("vacuum (analyze) queue.stat_minutes")
                    self.seconds += time.perf_counter() - t0
                    self.count += 1
        except BaseException as exc:  # reported by the main thread
            self.error = exc

    def stop(self) -> None:
        self._stop.set()
        self._t.join(600)


def _proc_cpu(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICK
    except (OSError, IndexError, ValueError):
        return 0.0


#: Size (table + indexes) and tuples of every partition of queue.jobs (or of the plain table).
TABLE = (
    "with leaves as ("
    " select i.inhrelid as relid from pg_inherits as i where i.inhparent = 'queue.jobs'::regclass"
    " union all select 'queue.jobs'::regclass where not exists"
    " (select from pg_inherits as i where i.inhparent = 'queue.jobs'::regclass))"
    " select coalesce(sum(pg_total_relation_size(t.relid)), 0)::bigint,"
    " coalesce(sum(pg_indexes_size(t.relid)), 0)::bigint,"
    " coalesce(sum(s.n_dead_tup), 0)::bigint, coalesce(sum(s.n_live_tup), 0)::bigint"
    " from leaves as t left join pg_stat_user_tables as s on s.relid = t.relid"
)

#: Jobs completed so far (queue.complete_many counts them in the same transaction).
DONE = "select coalesce(sum(completed), 0)::bigint from queue.stat_minutes"


class Growth:
    """One growth run: ``total`` jobs processed without pause on ``db`` with ``shards``
    shards; one record per checkpoint with the last interval's figures."""

    def __init__(
        self, cfg: Config, env: Env, keeper: WalKeeper, db: Db, queues: list[str], shards: int
    ) -> None:
        self.cfg, self.env, self.db, self.queues, self.shards = cfg, env, db, queues, shards
        self.keeper = keeper
        self.total = cfg.scale_jobs or cfg.size(1_000_000, 5_000)
        self.backlog = cfg.size(BACKLOG, 4_000)
        self.every = cfg.size(int(VACUUM_EVERY), 1)
        self.sample_jobs = cfg.size(WAL_SAMPLE, 1_000)
        self.share = self.backlog // len(queues)
        self.enqueued = dict.fromkeys(queues, 0)
        self.stop = threading.Event()
        self.errors: list[BaseException] = []

    def refill(
        self, conn: psycopg.Connection, q: str, done: int, low: float, to: float = 1.0
    ) -> bool:
        """Top up queue ``q`` to ``to`` of its share when its backlog fell below ``low``."""
        live = self.enqueued[q] - done
        if live >= low * self.share:
            return False
        k = int(to * self.share) - live
        conn.execute(
            "select count(*) from queue.enqueue_many(payloads => array("
            "select jsonb_build_object('n', g) from generate_series(1, %s) as g),"
            " queue => %s)",
            (k, q),
        )
        self.enqueued[q] += k
        return True

    def _produce(self, q: str) -> None:
        """One producer per queue, each on its own connection: a single one would get one
        backend's share of the 2 cores against the consumers' four and fall behind."""
        try:
            with self.db.connect() as conn:
                while not self.stop.is_set():
                    done = conn.execute(
                        "select coalesce(sum(completed), 0)::bigint from queue.stat_minutes"
                        " where queue = %s",
                        (q,),
                    ).fetchone()[0]
                    if not self.refill(conn, q, done, REFILL_AT):
                        self.stop.wait(POLL)
        except BaseException as exc:  # reported by the main thread
            self.errors.append(exc)

    def run(self) -> None:
        db = self.db
        db.set_shards(self.shards)
        log(
            f"W8 growth, {self.shards} shard(s): {_label(self.total)} jobs, "
            f"backlog {self.backlog:,}, vacuum every {self.every} s"
        )
        exe = pgbench_path()
        assert exe is not None
        with db.connect() as conn, tempfile.TemporaryDirectory(prefix="andal-bench-w8-") as tmp:
            for q in self.queues:  # at the refill mark: the producers work from the start
                self.refill(conn, q, 0, 1.0, REFILL_AT)
            systems.vacuum("andal", db.dsn)
            path = os.path.join(tmp, "growth.sql")
            with open(path, "w") as f:
                f.write(script(GROWTH_BATCH, self.queues))
            args = [exe, "-n", "-M", "prepared", "-f", path, "-c", str(CLIENTS)]
            args += ["-j", str(CLIENTS), "-T", "86400", "-D", f"batch={GROWTH_BATCH}", db.dsn]
            with open(os.path.join(tmp, "out"), "w+") as out:
                self.cpu = BackendCpu(self.env.admin, db.name).start()
                self.prev = {
                    "t": time.perf_counter(),
                    "done": 0,
                    "server": 0.0,
                    "client": 0.0,
                    "vacuums": 0,
                    **_server(self.env.admin, [db.name]),
                }
                self.t_start = self.prev["t"]
                self.proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, cwd=tmp)
                self.vac = Vacuumer(db.dsn, self.every).start()
                producers = [
                    threading.Thread(target=self._produce, args=(q,), name=f"w8-produce-{q}")
                    for q in self.queues
                ]
                for t in producers:
                    t.start()
                try:
                    self._loop(conn, out)
                finally:
                    self.stop.set()
                    for t in producers:
                        t.join(60)
                    self.proc.terminate()
                    self.proc.wait(30)
                    self.vac.stop()
                    self.cpu.stop()
                    out.seek(0)
                    text = out.read()
        if "aborted" in text:
            self.cfg.results.note(
                f"W8 growth {self.shards} shard(s): a pgbench client aborted: {text[-500:]}"
            )

    def _loop(self, conn: psycopg.Connection, out: Any) -> None:
        points = checkpoints(self.total, self.cfg.quick)
        i = 0
        low = self.backlog  # the lowest backlog seen in the interval
        sample: tuple[str, int] | None = None  # (LSN, jobs done) where the WAL sample starts
        seen, last_progress = 0, time.perf_counter()
        while i < len(points):
            if self.proc.poll() is not None:
                out.seek(0)
                raise RuntimeError(f"W8 growth: pgbench ended:\n{out.read()[-2000:]}")
            if self.vac.error is not None:
                raise RuntimeError(f"W8 growth: vacuum failed: {self.vac.error!r}")
            if self.errors:
                raise RuntimeError(f"W8 growth: a producer failed: {self.errors[0]!r}")
            done = conn.execute(DONE).fetchone()[0]
            low = min(low, sum(self.enqueued.values()) - done)
            if sample is None and done >= points[i] - self.sample_jobs:
                self.keeper.reserve()
                sample = (conn.execute("select pg_current_wal_lsn()::text").fetchone()[0], done)
            if done < points[i]:
                if done > seen:
                    seen, last_progress = done, time.perf_counter()
                elif time.perf_counter() - last_progress > 120:
                    raise RuntimeError(f"W8 growth: no progress at {done:,} jobs")
                time.sleep(POLL)
                continue
            while i + 1 < len(points) and points[i + 1] <= done:
                i += 1  # a poll can pass more than one checkpoint (tiny sizes)
            self._record(conn, points[i], done, low, sample)
            i += 1
            low, sample = self.backlog, None

    def _record(
        self,
        conn: psycopg.Connection,
        point: int,
        done: int,
        low: int,
        sample: tuple[str, int] | None,
    ) -> None:
        prev, db = self.prev, self.db
        now = time.perf_counter()
        size, idx, dead, live = conn.execute(TABLE).fetchone()
        server, client = _backend_cpu(self.cpu), _proc_cpu(self.proc.pid)
        s = _server(self.env.admin, [db.name])
        jobs = done - prev["done"]
        cluster = _lsn(s["lsn"]) - _lsn(prev["lsn"])
        if sample is None or done <= sample[1]:
            sample = (prev["lsn"], prev["done"])
        ours = wal_ours(db, sample[0], s["lsn"], [db])
        self.keeper.release()
        wal = cluster / jobs if ours is None else ours / (done - sample[1])
        rate = jobs / (now - prev["t"])
        self.cfg.results.add(
            WORKLOAD,
            SYSTEM,
            f"growth shards={self.shards} {_label(point)}",
            "growth jobs/s",
            "jobs/s",
            [rate],
            part="growth",
            shards=self.shards,
            processed=done,
            checkpoint=point,
            seconds=now - self.t_start,
            interval_s=now - prev["t"],
            wal_bytes_per_job=wal,
            wal_sample_jobs=done - sample[1] if ours is not None else jobs,
            wal_source="cluster" if ours is None else "pg_walinspect",
            cluster_wal_bytes_per_job=cluster / jobs,
            server_cpu_us_per_job=(server - prev["server"]) * 1e6 / jobs,
            client_cpu_us_per_job=(client - prev["client"]) * 1e6 / jobs,
            table_bytes=int(size),
            index_bytes=int(idx),
            dead_tuples=int(dead),
            live_tuples=int(live),
            vacuums=self.vac.count - prev["vacuums"],
            vacuums_total=self.vac.count,
            vacuum_s_total=round(self.vac.seconds, 2),
            min_backlog=low,
            load1=os.getloadavg()[0],
            checkpoints=s["checkpoints"] - prev["checkpoints"],
            other_xacts=s["other_xacts"] - prev["other_xacts"],
            batch=GROWTH_BATCH,
            clients=CLIENTS,
            backlog=self.backlog,
            refill_at=REFILL_AT,
            vacuum_every_s=self.every,
        )
        log(
            f"W8 growth {self.shards} shard(s) {done:,} jobs: {rate:,.0f} jobs/s, "
            f"{wal:,.0f} WAL B/job, {(server - prev['server']) * 1e6 / jobs:,.0f} server µs/job, "
            f"{size / 2**20:,.1f} MB, {dead:,} dead, backlog ≥ {low:,}, "
            f"{self.vac.count} vacuum(s)"
        )
        if low <= 0:
            self.cfg.results.note(
                f"W8 growth {self.shards} shard(s), up to {_label(point)}: the backlog ran dry"
                " (the refill did not keep up): that interval's throughput is bounded by the"
                " producer"
            )
        self.prev = {
            "t": now,
            "done": done,
            "server": server,
            "client": client,
            "vacuums": self.vac.count,
            **s,
        }
