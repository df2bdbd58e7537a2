"""Security: andal's SECURITY DEFINER functions cannot be hijacked, and each role can call
exactly its part of the API.

* CVE-2018-1058 style: a role that may create objects in a schema on the caller's search_path
  defines look-alikes of the functions and operators andal uses (``now()``,
  ``jsonb_typeof``, ``gen_random_uuid()``, ``=`` on text, ...), each recording that it ran.
  The caller puts that schema before pg_catalog. Calls through the whole API as granted roles
  then run none of them (andal's functions pin ``search_path``). A control shows the trap is
  armed: unqualified SQL on the caller's path does hit it.
* The call matrix: LOGIN roles that are members of andal_producer, andal_worker, andal_admin,
  andal_monitor (and one of none) call every public function; not granted means SQLSTATE
  42501.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from conftest import (
    PGHOST,
    PGPORT,
    PGUSER,
    ROLES,
    TEST_PREFIX,
    drop_roles_of,
    make_dsn,
    own_prefix,
    test_name,
)
from psycopg.conninfo import make_conninfo
from pytest_postgresql.janitor import DatabaseJanitor

from andal.install import install, sql_dir

SUFFIX = uuid.uuid4().hex[:8]
ATTACKER = f"{TEST_PREFIX}_t_attacker_{SUFFIX}"
LOGINS = {
    "producer": f"{TEST_PREFIX}_t_producer_{SUFFIX}",
    "worker": f"{TEST_PREFIX}_t_worker_{SUFFIX}",
    "admin": f"{TEST_PREFIX}_t_admin_{SUFFIX}",
    "monitor": f"{TEST_PREFIX}_t_monitor_{SUFFIX}",
    "nobody": f"{TEST_PREFIX}_t_nobody_{SUFFIX}",
}
MEMBER_OF = ROLES


@pytest.fixture(scope="module")
def roles(dsn: str) -> Iterator[dict[str, str]]:
    """LOGIN roles for the test (cluster-wide, so uniquely named and dropped afterwards)."""
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(f'create role "{ATTACKER}" login')
        for kind, name in LOGINS.items():
            c.execute(f'create role "{name}" login')
            if kind in MEMBER_OF:
                c.execute(f'grant {MEMBER_OF[kind]} to "{name}"')
    try:
        yield LOGINS
    finally:
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute(f'drop owned by "{ATTACKER}"')
            for name in [ATTACKER, *LOGINS.values()]:
                c.execute(f'drop role if exists "{name}"')


def connect_as(dsn: str, role: str) -> psycopg.Connection:
    return psycopg.connect(make_conninfo(dsn, user=role), autocommit=True)


def sqlstate(exc: BaseException) -> str | None:
    return getattr(getattr(exc, "diag", None), "sqlstate", None)


# --- the trap --------------------------------------------------------------------------------

#: name, signature, return type, body returning the genuine result (pg_catalog-qualified).
LOOKALIKES = [
    ("now", "", "timestamptz", "pg_catalog.now()"),
    ("clock_timestamp", "", "timestamptz", "pg_catalog.clock_timestamp()"),
    ("gen_random_uuid", "", "uuid", "pg_catalog.gen_random_uuid()"),
    ("random", "", "double precision", "pg_catalog.random()"),
    ("pg_backend_pid", "", "int", "pg_catalog.pg_backend_pid()"),
    ("jsonb_typeof", "a jsonb", "text", "pg_catalog.jsonb_typeof(a)"),
    ("jsonb_strip_nulls", "a jsonb", "jsonb", "pg_catalog.jsonb_strip_nulls(a)"),
    ("jsonb_array_length", "a jsonb", "int", "pg_catalog.jsonb_array_length(a)"),
    ("length", "a text", "int", "pg_catalog.length(a)"),
    ("octet_length", "a text", "int", "pg_catalog.octet_length(a)"),
    ("lower", "a text", "text", "pg_catalog.lower(a)"),
    ("current_setting", "a text", "text", "pg_catalog.current_setting(a)"),
    ("array_position", "a anyarray, b anyelement", "int", "pg_catalog.array_position(a, b)"),
    ("cardinality", "a anyarray", "int", "pg_catalog.cardinality(a)"),
    ("array_length", "a anyarray, b int", "int", "pg_catalog.array_length(a, b)"),
    ("array_remove", "a anyarray, b anyelement", "anyarray", "pg_catalog.array_remove(a, b)"),
    ("pg_notify", "a text, b text", "void", "pg_catalog.pg_notify(a, b)"),
    ("pg_try_advisory_xact_lock", "a bigint", "boolean", "pg_catalog.pg_try_advisory_xact_lock(a)"),
    ("date_trunc", "a text, b timestamptz", "timestamptz", "pg_catalog.date_trunc(a, b)"),
    ("date_part", "a text, b timestamptz", "double precision", "pg_catalog.date_part(a, b)"),
    (
        "power",
        "a double precision, b double precision",
        "double precision",
        "pg_catalog.power(a, b)",
    ),
    ("md5", "a text", "text", "pg_catalog.md5(a)"),
]

#: operator, left type, right type, result type, genuine function.
OPERATORS = [
    ("=", "text", "text", "boolean", "pg_catalog.texteq"),
    ("<>", "text", "text", "boolean", "pg_catalog.textne"),
    ("=", "bigint", "bigint", "boolean", "pg_catalog.int8eq"),
    ("<=", "timestamptz", "timestamptz", "boolean", "pg_catalog.timestamptz_le"),
    (">", "timestamptz", "timestamptz", "boolean", "pg_catalog.timestamptz_gt"),
    ("+", "timestamptz", "interval", "timestamptz", "pg_catalog.timestamptz_pl_interval"),
    ("||", "jsonb", "jsonb", "jsonb", "pg_catalog.jsonb_concat"),
    ("=", "uuid", "uuid", "boolean", "pg_catalog.uuid_eq"),
]

TRAP_PATH = "public, pg_catalog"  # the attacker's schema first, pg_catalog after it


@pytest.fixture(scope="module")
def trap(dsn: str, roles: dict[str, str]) -> str:
    """Arm the trap in schema public: look-alikes that log to public.attack_log."""
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(f'grant create on schema public to "{ATTACKER}"')
        c.execute(
            "create table public.attack_log (fn text, run_as text,"
            " at timestamptz default pg_catalog.clock_timestamp())"
        )
        c.execute("grant insert, select on public.attack_log to public")
    with connect_as(dsn, ATTACKER) as a:
        for name, args, returns, genuine in LOOKALIKES:
            argtypes = ", ".join(" ".join(arg.split()[1:]) for arg in args.split(", ") if arg)
            result = f"perform {genuine}; return;" if returns == "void" else f"return {genuine};"
            a.execute(
                f"""
                create function public.{name}({args}) returns {returns}
                language plpgsql volatile set search_path = pg_catalog as $f$
                begin
                    insert into public.attack_log (fn, run_as)
                    values ('{name}({argtypes})', current_user);
                    {result}
                end $f$
                """
            )
        for i, (op, left, right, returns, genuine) in enumerate(OPERATORS):
            a.execute(
                f"""
                create function public.evil_op_{i}(a {left}, b {right}) returns {returns}
                language plpgsql volatile set search_path = pg_catalog as $f$
                begin
                    insert into public.attack_log (fn, run_as)
                    values ('operator {op}({left}, {right})', current_user);
                    return {genuine}(a, b);
                end $f$
                """
            )
            a.execute(
                f"create operator public.{op} (leftarg = {left}, rightarg = {right},"
                f" function = public.evil_op_{i})"
            )
    return dsn


def attack_log(dsn: str) -> list[tuple[str, str]]:
    with psycopg.connect(dsn, autocommit=True) as c:
        return c.execute("select fn, run_as from public.attack_log order by at").fetchall()


def clear_log(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("truncate public.attack_log")


def victim(dsn: str, role: str) -> psycopg.Connection:
    conn = connect_as(dsn, role)
    conn.execute(f"set search_path = {TRAP_PATH}")
    return conn


def test_the_trap_is_armed(trap: str, roles: dict[str, str]) -> None:
    """Control: unqualified SQL on the victim's path runs the attacker's look-alikes."""
    clear_log(trap)
    with victim(trap, roles["worker"]) as v:
        v.execute("select now(), length('x'), 'a'::text = 'b'::text, jsonb_typeof('{}')")
    ran = {fn for fn, _ in attack_log(trap)}
    assert {"now()", "length(text)", "operator =(text, text)", "jsonb_typeof(jsonb)"} <= ran
    clear_log(trap)


def test_no_lookalike_runs_inside_the_api(trap: str, roles: dict[str, str], clean: None) -> None:
    clear_log(trap)
    with (
        victim(trap, roles["admin"]) as admin,
        victim(trap, roles["producer"]) as producer,
        victim(trap, roles["worker"]) as worker,
    ):
        admin.execute(
            "select queue.configure_queue('sec', max_attempts => 2, backoff => 'exponential',"
            " jitter => 0.5, keep_results => true)"
        )
        admin.execute("select queue.set_category_limit('cat', 2)")
        producer.execute("select queue.version()")
        ids = [
            producer.execute(
                "select queue.enqueue(%s::jsonb, queue => 'sec', category => %s,"
                " dedup_key => %s, priority => %s)",
                ('{"n": 1}', cat, key, prio),
            ).fetchone()[0]
            for cat, key, prio in [(None, "k1", 1), ("cat", "k2", 2), ("cat", None, 0)]
        ]
        assert (
            producer.execute(
                "select queue.enqueue('{}', queue => 'sec', dedup_key => 'k1')"
            ).fetchone()[0]
            == ids[0]
        )
        producer.execute(
            "select queue.enqueue_many(array['{}', '{}']::jsonb[], queue => 'sec2',"
            " dedup_keys => array['a', 'b'])"
        )
        producer.execute("select queue.enqueue_many(array['{}']::jsonb[], queue => 'sec2')")
        for bad in ("'[1]'", "null"):
            with pytest.raises(psycopg.Error):
                producer.execute(f"select queue.enqueue({bad}::jsonb, queue => 'sec')")

        rows = worker.execute(
            "select job_id, token from queue.claim('w', queues => '{sec,sec2}', batch => 3)"
        ).fetchall()
        assert len(rows) == 3
        (j1, t1), (j2, t2), (j3, t3) = rows
        worker.execute("select queue.heartbeat(%s, %s, extend => '2 minutes')", (j1, t1))
        worker.execute("select * from queue.heartbeat_many(%s, %s)", ([j2, j3], [t2, t3]))
        worker.execute("select queue.fail(%s, %s, 'boom')", (j1, t1))
        worker.execute("select queue.release(%s, %s)", (j2, t2))
        worker.execute("select queue.complete(%s, %s, '{\"ok\": true}')", (j3, t3))
        with pytest.raises(psycopg.Error) as err:
            worker.execute("select queue.complete(%s, %s)", (j3, t3))
        assert sqlstate(err.value) == "AN001"
        more = worker.execute("select job_id, token from queue.claim('w', batch => 10)").fetchall()
        worker.execute(
            "select * from queue.complete_many(%s, %s)",
            ([r[0] for r in more[:1]], [r[1] for r in more[:1]]),
        )
        for job_id, token in more[1:]:
            worker.execute("select queue.fail(%s, %s, 'no', retryable => false)", (job_id, token))
        # A lapsed lease is taken back (and dead-lettered when out of attempts) by a claim.
        with psycopg.connect(trap, autocommit=True) as su:
            su.execute(
                "update queue.jobs set lease_expires_at = now() - interval '1 s'"
                " where status = 'running'"
            )
        worker.execute("select * from queue.claim('w2', batch => 10)")
        worker.execute("select queue.maintain()")
        worker.execute("select * from queue.status()")

        dead = admin.execute("select job_id from queue.list_dead()").fetchall()
        assert dead, "some jobs were dead-lettered"
        admin.execute("select queue.requeue_dead(%s)", (dead[0][0],))
        admin.execute("select queue.cancel(%s)", (dead[0][0],))
        admin.execute("select queue.purge_dead('0 seconds')")
        admin.execute("select * from queue.stats()")
        admin.execute("select queue.metrics()")
    assert attack_log(trap) == [], "andal ran the attacker's functions or operators"


# --- who may call what -----------------------------------------------------------------------

CALLS = {
    "enqueue": "select queue.enqueue('{}', queue => 'rm')",
    "enqueue_many": "select queue.enqueue_many(array['{}']::jsonb[], queue => 'rm')",
    "claim": "select * from queue.claim('w', queues => '{rm-empty}')",
    "complete": "select queue.complete(0, gen_random_uuid())",
    "complete_many": "select * from queue.complete_many('{0}', array[gen_random_uuid()])",
    "complete_many_outcomes": (
        "select * from queue.complete_many_outcomes('{0}', array[gen_random_uuid()])"
    ),
    "refusals": "select * from queue.refusals('{0}', array[gen_random_uuid()])",
    "vacuum_due": "select * from queue.vacuum_due(every => '1 hour')",
    "fail": "select queue.fail(0, gen_random_uuid(), 'e')",
    "fail_outcome": "select * from queue.fail_outcome(0, gen_random_uuid(), 'e')",
    "complete_many_then_claim": (
        "select * from queue.complete_many_then_claim('{0}', array[gen_random_uuid()], null,"
        " 'w', '{rm-empty}', 1, null)"
    ),
    "heartbeat": "select queue.heartbeat(0, gen_random_uuid())",
    "heartbeat_many": "select * from queue.heartbeat_many('{0}', array[gen_random_uuid()])",
    "heartbeat:report_abort": (
        "select * from queue.heartbeat(0, gen_random_uuid(), report_abort => true)"
    ),
    "heartbeat_many:report_abort": (
        "select * from queue.heartbeat_many('{0}', array[gen_random_uuid()], report_abort => true)"
    ),
    "release": "select queue.release(0, gen_random_uuid())",
    "maintain": "select queue.maintain()",
    "status": "select * from queue.status()",
    "stats": "select * from queue.stats()",
    "metrics": "select queue.metrics()",
    "workers": "select * from queue.workers()",
    "unserved_queues": "select * from queue.unserved_queues()",
    "registered_workers": "select * from queue.registered_workers()",
    "register_worker": "select queue.register_worker('rm-w', 'h', 1)",
    "unregister_worker": "select queue.unregister_worker('rm-w')",
    "idle": "select queue.idle(queues => '{rm-empty}')",
    "busy": "select queue.busy()",
    "next_available": "select queue.next_available()",
    "version": "select queue.version()",
    "roles": "select * from queue.roles()",
    "states": "select * from queue.states()",
    "cancel": "select queue.cancel(0)",
    "requeue_dead": "select queue.requeue_dead(0)",
    "purge_dead": "select queue.purge_dead('100 years')",
    "purge_dead_jobs": "select queue.purge_dead_jobs('{0}')",
    "purge_dead_matching": "select queue.purge_dead_matching(queue => 'rm-none')",
    "requeue_dead_matching": "select * from queue.requeue_dead_matching(queue => 'rm-none')",
    "dead_letters_by": "select * from queue.dead_letters_by(queue => 'rm-none')",
    "stats_by_minute": "select * from queue.stats_by_minute()",
    "category_limits": "select * from queue.category_limits()",
    "list_dead": "select * from queue.list_dead()",
    "configure_queue": "select * from queue.configure_queue('rm')",
    "set_category_limit": "select queue.set_category_limit('rm', 1)",
    "shards": "select * from queue.shards()",
    "shard_of": "select queue.shard_of('rm')",
    "set_shards": "select queue.set_shards(shards => 0)",  # 22023 when allowed: no change
    "job": "select * from queue.job(job_id => 0)",
    "jobs_by": "select * from queue.jobs_by(queue => 'rm')",
    "job_payload": "select queue.job_payload(job_id => 0)",
    "job_origin": "select * from queue.job_origin(job_id => 0)",
    "pause": "select queue.pause(queue => 'rm-paused')",
    "resume": "select queue.resume(queue => 'rm-paused')",
    "set_history": "select queue.set_history(queue => 'rm-kept', retention => null)",
    "configure_history": "select queue.configure_history(partition_width => '1 hour')",
    "watch": "select queue.watch(job_id => 0)",
    "parent_results": "select * from queue.parent_results(job_id => 0)",
    "child_jobs": "select * from queue.child_jobs(job_id => 0)",
    "enqueue:trace_context": ("select queue.enqueue('{}', trace_context => '{}', queue => 'rm')"),
    "trace_contexts": "select * from queue.trace_contexts(job_ids => '{0}')",
    "schedule": "select queue.schedule(name => 'rm', queue => 'rm', every => '1 hour')",
    "unschedule": "select queue.unschedule(name => 'rm-none')",
    "schedules": "select * from queue.schedules()",
    "set_rate_limit": "select queue.set_rate_limit('rm', null, null)",
    "queue_settings": "select * from queue.queue_settings(queue => 'rm')",
    "rate_limits": "select * from queue.rate_limits()",
}
READ = {"job", "jobs_by", "job_origin", "parent_results", "child_jobs"}
PRODUCER = {"enqueue", "enqueue:trace_context", "enqueue_many", "version", "roles", "states",
            "shard_of", "watch", *READ}  # fmt: skip
WORKER = {
    "claim",
    "complete",
    "complete_many",
    "complete_many_outcomes",
    "refusals",
    "vacuum_due",
    "complete_many_then_claim",
    "fail",
    "fail_outcome",
    "heartbeat",
    "heartbeat_many",
    "heartbeat:report_abort",
    "heartbeat_many:report_abort",
    "idle",
    "busy",
    "trace_contexts",
    "release",
    "maintain",
    "status",
    "stats",
    "stats_by_minute",
    "category_limits",
    "metrics",
    "workers",
    "unserved_queues",
    "registered_workers",
    "register_worker",
    "unregister_worker",
    "next_available",
    "version",
    "roles",
    "states",
    "shard_of",
    "watch",
    "schedules",
    "queue_settings",
    "rate_limits",
    *READ,
}
MONITOR = {
    "dead_letters_by",
    "status",
    "stats",
    "stats_by_minute",
    "category_limits",
    "metrics",
    "workers",
    "unserved_queues",
    "registered_workers",
    "next_available",
    "version",
    "roles",
    "states",
    "schedules",
    "queue_settings",
    "rate_limits",
    *READ,
}
GRANTED = {
    "producer": PRODUCER,
    "worker": WORKER,
    "admin": set(CALLS),
    "monitor": MONITOR,
    "nobody": set(),
}


def test_matrix_covers_every_public_function(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as c:
        names = {
            r[0]
            for r in c.execute(
                "select proname from pg_proc where pronamespace = 'queue'::regnamespace"
                " and proname not like '\\_%'"
            )
        }
    # an overload's call is keyed "name:what"
    assert names == {name.split(":")[0] for name in CALLS}


@pytest.mark.parametrize("kind", ["producer", "worker", "admin", "monitor", "nobody"])
def test_each_role_calls_exactly_its_functions(
    dsn: str, roles: dict[str, str], clean: None, kind: str
) -> None:
    outcome: dict[str, Any] = {}
    with connect_as(dsn, roles[kind]) as c:
        for name, sql in CALLS.items():
            try:
                c.execute(sql)
                outcome[name] = "ok"
            except psycopg.Error as exc:
                outcome[name] = sqlstate(exc)
    denied = {name for name, result in outcome.items() if result == "42501"}
    assert denied == set(CALLS) - GRANTED[kind], outcome
    # Granted calls run to their own answer (lease lost, unknown job...), never a
    # privilege error on something they use internally.
    assert all(outcome[name] != "42501" for name in GRANTED[kind])


def test_andal_roles_cannot_log_in(dsn: str) -> None:
    for role in ROLES.values():
        with pytest.raises(psycopg.OperationalError, match="not permitted to log in"):
            psycopg.connect(make_conninfo(dsn, user=role)).close()


def test_no_direct_table_access_for_the_roles(dsn: str, roles: dict[str, str]) -> None:
    """The API is the functions: the roles (and PUBLIC) cannot read or write the tables."""
    for kind in ("producer", "worker", "monitor", "nobody"):
        with connect_as(dsn, roles[kind]) as c:
            for sql in (
                "select count(*) from queue.jobs",
                "update queue.jobs set priority = 9",
                "delete from queue.dead_letters",
            ):
                with pytest.raises(psycopg.Error) as err:
                    c.execute(sql)
                assert sqlstate(err.value) == "42501", (kind, sql)


# --- a function file that forgets its REVOKE -------------------------------------------------


@pytest.fixture
def sql_copy_with_unguarded_function(tmp_path: Path) -> Path:
    """A copy of andal's SQL sources plus one function file that grants nothing and revokes
    nothing, as a contributor might write it."""
    root = tmp_path / "sql"
    src = sql_dir()
    for f in src.rglob("*.sql"):
        if "tests" in f.relative_to(src).parts:
            continue
        dest = root / f.relative_to(src)
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(f.read_bytes())
    (root / "functions" / "queue" / "zz_unguarded_probe.sql").write_text(
        "create or replace function queue.unguarded_probe() returns int\n"
        "language sql set search_path = pg_catalog, pg_temp as $$ select 1 $$;\n"
    )
    # listed in the install order as a contributor would, before the last file
    listing = (src / "functions" / "manifest.txt").read_text()
    (root / "functions" / "manifest.txt").write_text(
        listing.replace("\nrevoke_public.sql", "\nqueue/zz_unguarded_probe.sql\nrevoke_public.sql")
    )
    return root


def test_installed_functions_are_never_executable_by_public(
    sql_copy_with_unguarded_function: Path,
) -> None:
    """0001 says "New functions are not executable by PUBLIC unless a file grants it". Its
    `alter default privileges in schema ... revoke execute ... from public` cannot do that
    (PostgreSQL: a per-schema default can only add to the global defaults), so the install
    itself must leave no function of its schemas executable by PUBLIC."""
    name = test_name("t_sec")
    janitor = DatabaseJanitor(user=PGUSER, host=PGHOST, port=PGPORT, dbname=name)
    janitor.init()
    try:
        install(make_dsn(name), root=sql_copy_with_unguarded_function, role_prefix=own_prefix(name))
        with psycopg.connect(make_dsn(name), autocommit=True) as c:
            public_exec = c.execute(
                "select p.oid::regprocedure::text from pg_proc as p"
                " where p.pronamespace in ('queue'::regnamespace, 'cache'::regnamespace)"
                " and (p.proacl is null or exists (select from aclexplode(p.proacl) as a"
                " where a.grantee = 0 and a.privilege_type = 'EXECUTE'))"
            ).fetchall()
    finally:
        janitor.drop()
        drop_roles_of(name)
    assert public_exec == [], "PUBLIC can execute these andal functions"
