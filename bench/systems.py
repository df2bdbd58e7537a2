"""The systems under test: their schemas, how to load jobs, what is left, and their SQL.

* ``raw``: a hand-written SKIP LOCKED queue (one table, one partial index, claim = one
  statement, complete = one delete fenced by the claim's token). The limit.
* ``andal``: andal installed with ``andal.install.install``; called through its SQL functions
  (pgbench scripts) and through the Python driver (``andal.Worker``).
* ``procrastinate`` and ``pgqueuer``: the peers, through their own Python APIs (bench extra).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from .common import connect, has_module

QUEUE = "bench"

# -- raw SQL --------------------------------------------------------------------------------

RAW_SCHEMA = """
create table bench_jobs (
    id bigint generated always as identity primary key,
    queue text not null default 'bench',
    category text,
    priority int not null default 0,
    status text not null default 'pending',
    payload jsonb not null,
    attempt int not null default 0,
    available_at timestamptz not null default now(),
    enqueued_at timestamptz not null default now(),
    token uuid,
    worker text,
    lease_expires_at timestamptz
);
create index bench_jobs_ready_idx on bench_jobs (queue, priority desc, available_at, id)
where status = 'pending';
"""


def raw_claim(batch: str, worker: str) -> str:
    return (
        "with c as materialized ("
        " select id from bench_jobs"
        f" where queue = '{QUEUE}' and status = 'pending' and available_at <= now()"
        f" order by priority desc, available_at, id limit {batch} for update skip locked)"
        " update bench_jobs as j set status = 'running', attempt = j.attempt + 1,"
        f" token = gen_random_uuid(), worker = {worker},"
        " lease_expires_at = now() + interval '60 seconds'"
        " from c where j.id = c.id returning j.id, j.token, j.payload"
    )


RAW_CLAIM_PY = raw_claim("%(batch)s", "%(worker)s")
RAW_COMPLETE_ONE_PY = "delete from bench_jobs where id = %s and token = %s"
RAW_COMPLETE_MANY_PY = (
    "delete from bench_jobs as j using unnest(%s::bigint[], %s::uuid[]) as u (id, tok)"
    " where j.id = u.id and j.token = u.tok"
)
RAW_ENQUEUE_PY = "insert into bench_jobs (payload) values (%s) returning id"
RAW_ENQUEUE_NOTIFY_PY = (
    "with i as (insert into bench_jobs (payload) values (%s) returning id)"
    " select i.id, pg_notify('bench_jobs', '') from i"
)

# pgbench scripts. Claim and complete are two transactions, as in the leased mode.
RAW_DRAIN_1 = f"""
with u as ({raw_claim("1", "'pgbench'")})
select count(*) as n, max(id) as id, max(token::text) as tok from u \\gset
\\if :n > 0
delete from bench_jobs where id = :id and token = :tok::uuid;
\\endif
"""

RAW_DRAIN_N = f"""
with u as ({raw_claim(":batch", "'pgbench'")})
select count(*) as n, coalesce(array_agg(id)::text, '{{}}') as ids,
    coalesce(array_agg(token)::text, '{{}}') as toks from u \\gset
\\if :n > 0
delete from bench_jobs as j using unnest(:ids::bigint[], :toks::uuid[]) as u (id, tok)
where j.id = u.id and j.token = u.tok;
\\endif
"""

ANDAL_DRAIN_1 = f"""
select count(*) as n, max(c.job_id) as id, max(c.token::text) as tok
from queue.claim(worker => 'pgbench', queues => '{{{QUEUE}}}', batch => 1) as c \\gset
\\if :n > 0
select queue.complete(job_id => :id, token => :tok::uuid);
\\endif
"""

ANDAL_DRAIN_N = f"""
select count(*) as n, coalesce(array_agg(c.job_id)::text, '{{}}') as ids,
    coalesce(array_agg(c.token)::text, '{{}}') as toks
from queue.claim(worker => 'pgbench', queues => '{{{QUEUE}}}', batch => :batch) as c \\gset
\\if :n > 0
select count(*) from queue.complete_many(job_ids => :ids::bigint[], tokens => :toks::uuid[]);
\\endif
"""

RAW_ENQUEUE_1 = "insert into bench_jobs (payload) values ('{\"n\": 1}');\n"
RAW_ENQUEUE_100 = (
    "insert into bench_jobs (payload)"
    " select jsonb_build_object('n', g) from generate_series(1, 100) as g;\n"
)
ANDAL_ENQUEUE_1 = f"select queue.enqueue(payload => '{{\"n\": 1}}', queue => '{QUEUE}');\n"
ANDAL_ENQUEUE_100 = (
    "select count(*) from queue.enqueue_many(payloads => array("
    "select jsonb_build_object('n', g) from generate_series(1, 100) as g),"
    f" queue => '{QUEUE}');\n"
)


def enqueue_script(system: str, per_tx: int) -> str:
    """W3's pgbench script of ``system`` ("raw" or "andal") for 1 or 100 jobs a transaction."""
    return {
        ("raw", 1): RAW_ENQUEUE_1,
        ("raw", 100): RAW_ENQUEUE_100,
        ("andal", 1): ANDAL_ENQUEUE_1,
        ("andal", 100): ANDAL_ENQUEUE_100,
    }[(system, per_tx)]


#: The many-producers workload's scripts: one job per transaction, the SQL each system sends.
RAW_NOTIFY_ENQUEUE_1 = (
    "insert into bench_jobs (payload) values ('{\"n\": 1}');\nselect pg_notify('bench_jobs', '');\n"
)


def producer_script(system: str) -> str:
    """The one-job enqueue of ``system`` as a pgbench script: raw insert, raw insert with
    ``pg_notify`` in the same transaction, andal's ``queue.enqueue``, and the statement that
    procrastinate's ``defer`` and pgqueuer's ``Queries.enqueue`` send (from the installed
    packages; their insert triggers notify)."""
    if system in ("raw", "andal"):
        return enqueue_script(system, 1)
    if system == "raw+notify":
        return "begin;\n" + RAW_NOTIFY_ENQUEUE_1 + "commit;\n"
    if system == "procrastinate":
        from procrastinate.sql import queries

        job = f"array[row('{QUEUE}', 'noop', 0, null, null, '{{\"n\": 1}}'::jsonb, null)]"
        return _one_line(queries["defer_jobs"].replace("%(jobs)s", job))
    if system == "pgqueuer":
        from pgqueuer.adapters.persistence.qb import QueryQueueBuilder

        sql = QueryQueueBuilder().build_enqueue_query("raise")
        for arg, value in (
            ("$1::int[]", "'{0}'::int[]"),
            ("$2::text[]", f"'{{{QUEUE}}}'::text[]"),
            ("$3::bytea[]", "array[convert_to('{\"n\": 1}', 'UTF8')]::bytea[]"),
            ("$4::interval[]", "'{0}'::interval[]"),
            ("$5::text[]", "array[null]::text[]"),
            ("$6::jsonb[]", "array['null'::jsonb]::jsonb[]"),
        ):
            if arg not in sql:
                raise RuntimeError(f"pgqueuer's enqueue statement changed: no {arg}")
            sql = sql.replace(arg, value)
        return _one_line(sql)
    raise ValueError(system)


def _one_line(sql: str) -> str:
    """A statement as one pgbench command: comments dropped, lines joined, one semicolon."""
    lines = [line.split("--", 1)[0].strip() for line in sql.splitlines()]
    return " ".join(line for line in lines if line).rstrip(";") + ";\n"


def pgbench_drain_script(system: str, batch: int) -> str:
    if system == "raw":
        return RAW_DRAIN_1 if batch == 1 else RAW_DRAIN_N
    return ANDAL_DRAIN_1 if batch == 1 else ANDAL_DRAIN_N


# -- per-system setup, load, reset, remaining -----------------------------------------------


def available(system: str) -> tuple[bool, str]:
    """Whether a system can run here; the reason when not."""
    if system == "procrastinate" and not has_module("procrastinate"):
        return False, "procrastinate is not installed (pip install -e '.[bench]'): skipped"
    if system == "pgqueuer" and not (has_module("pgqueuer") and has_module("asyncpg")):
        return False, "pgqueuer/asyncpg are not installed (pip install -e '.[bench]'): skipped"
    return True, ""


def setup(system: str, dsn: str) -> None:
    """Install the system's schema in a fresh database."""
    if system == "raw":
        with connect(dsn) as conn:
            conn.execute(RAW_SCHEMA)
    elif system == "andal":
        from andal.install import install

        # the plain roles, without the shared-roles warning: a benchmark's databases are
        # dropped again, and roles a default install derived from their names would stay
        install(dsn, role_prefix="andal", warn=lambda _message: None)
    elif system == "procrastinate":
        app = procrastinate_app(dsn)
        with app.open():
            app.schema_manager.apply_schema()
    elif system == "pgqueuer":

        async def go() -> None:
            import asyncpg
            from pgqueuer import AsyncpgDriver, Queries

            conn = await asyncpg.connect(dsn)
            try:
                await Queries(AsyncpgDriver(conn)).install()
            finally:
                await conn.close()

        asyncio.run(go())
    else:
        raise ValueError(system)


#: Tables emptied between repetitions, and analyzed after a load.
TABLES = {
    "raw": ["bench_jobs"],
    "andal": [
        "queue.jobs",
        "queue.worker_locks",
        "queue.stat_minutes",
        "queue.lock_stats",
        "queue.dead_letters",
        "queue.results",
    ],
    "procrastinate": ["procrastinate_jobs", "procrastinate_events", "procrastinate_workers"],
    "pgqueuer": ["pgqueuer", "pgqueuer_log", "pgqueuer_statistics"],
}

REMAINING = {
    "raw": "select count(*) from bench_jobs",
    "andal": "select count(*) from queue.jobs",
    "procrastinate": "select count(*) from procrastinate_jobs where status in ('todo', 'doing')",
    "pgqueuer": "select count(*) from pgqueuer where status in ('queued', 'picked')",
}


def reset(system: str, dsn: str) -> None:
    with connect(dsn) as conn:
        if system == "procrastinate":
            # its delete trigger refuses deleting unfinished jobs one by one; truncate is fine
            conn.execute("truncate " + ", ".join(TABLES[system]) + " cascade")
        else:
            conn.execute("truncate " + ", ".join(TABLES[system]))
        if system == "andal":
            conn.execute("truncate queue.categories restart identity cascade")


def vacuum(system: str, dsn: str) -> None:
    with connect(dsn) as conn:
        for t in TABLES[system]:
            conn.execute(f"vacuum (analyze) {t}")


def remaining(system: str, conn: psycopg.Connection) -> int:
    return int(conn.execute(REMAINING[system]).fetchone()[0])


def load(system: str, dsn: str, n: int, *, chunk: int = 10_000) -> None:
    """Preload n ready no-op jobs ({"n": i}) through each system's own enqueue API."""
    if n <= 0:
        return
    if system == "raw":
        with connect(dsn) as conn:
            conn.execute(
                "insert into bench_jobs (payload)"
                " select jsonb_build_object('n', g) from generate_series(1, %s) as g",
                (n,),
            )
    elif system == "andal":
        with connect(dsn) as conn:
            for lo in range(1, n + 1, chunk):
                hi = min(n, lo + chunk - 1)
                conn.execute(
                    "select count(*) from queue.enqueue_many(payloads => array("
                    "select jsonb_build_object('n', g) from generate_series(%s::int, %s::int) g),"
                    " queue => %s)",
                    (lo, hi, QUEUE),
                )
    elif system == "procrastinate":
        app = procrastinate_app(dsn)
        task = app.tasks["noop"]
        with app.open():
            for lo in range(0, n, 1000):
                task.batch_defer(*({"n": i} for i in range(lo, min(n, lo + 1000))))
    elif system == "pgqueuer":

        async def go() -> None:
            import asyncpg
            from pgqueuer import AsyncpgDriver, Queries

            conn = await asyncpg.connect(dsn)
            try:
                q = Queries(AsyncpgDriver(conn))
                for lo in range(0, n, 1000):
                    k = min(n, lo + 1000) - lo
                    await q.enqueue(
                        [QUEUE] * k,
                        [json.dumps({"n": lo + i}).encode() for i in range(k)],
                        [0] * k,
                    )
            finally:
                await conn.close()

        asyncio.run(go())
    vacuum(system, dsn)


# -- peers' application objects -------------------------------------------------------------


def procrastinate_app(dsn: str, handler: Any = None, **pool: Any) -> Any:
    import procrastinate

    app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=dsn, **pool))

    async def noop(**kwargs: Any) -> None:
        if handler is not None:
            handler(kwargs)

    app.task(name="noop", queue=QUEUE)(noop)
    return app


def andal_enqueue(conn: psycopg.Connection, payload: dict[str, Any]) -> None:
    from andal import enqueue

    enqueue(conn, payload, QUEUE)


def raw_enqueue(conn: psycopg.Connection, payload: dict[str, Any], notify: bool = True) -> None:
    conn.execute(RAW_ENQUEUE_NOTIFY_PY if notify else RAW_ENQUEUE_PY, (Jsonb(payload),))
