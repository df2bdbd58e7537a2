"""``andal router install``: a PL/Proxy router database in front of N andal databases.

Each partition database gets andal (as ``andal install`` does, all with the role names of the
first) and its job numbering (``queue._set_partition(k, n)``: ids = k mod n, so an id names its
partition). The router database gets ``sql/router/*.sql`` (PL/Proxy's cluster configuration,
the routing rules) and, generated from partition 0's catalog, a function for every public
function of the schemas ``queue`` and ``cache`` with the same name, signature, defaults,
comment and grants: a PL/pgSQL wrapper that picks the partitions by the function's routing
mode (``andal_router.modes``) and calls a PL/Proxy function per partition
(``andal_router_px``), mapping an unreachable partition (PL/Proxy's XX000) to AN003. The
functions that only make sense on one partition (``LOCAL``) are left off. A second run with
nothing changed does nothing; an upgrade of the partitions regenerates the router's functions.
See docs/scaling.md.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from .install import install
from .roles import create_roles, with_roles
from .sources import SqlNotFound, sql_dir

#: Proxy functions live here; the wrappers keep andal's own schema names on the router.
PX = "andal_router_px"

#: Functions by name: (target, merge, reason). Targets: queue:ARG / id:ARG / key:ARG (one
#: partition), opt_queue:ARG (that queue's partition, all when null), split_id:ARG /
#: split_key:ARG (the array split per partition), all, first (partition 0: the same on
#: every partition), claim, settle_then_claim. Merges: one, union, page:COLUMN (the newest
#: ``lim`` rows of all), sum, sum_row, bool_or, min, void, metrics, labels.
MODES: dict[str, tuple[str, str, str]] = {
    **{
        f: ("queue:queue", "one", "a queue's jobs and settings live on its partition")
        for f in (
            "enqueue",
            "enqueue_many",
            "configure_queue",
            "pause",
            "resume",
            "queue_settings",
            "set_history",
        )
    },
    **{
        f: ("id:job_id", "one", "a job id carries its partition (id % n)")
        for f in (
            "cancel",
            "child_jobs",
            "complete",
            "fail",
            "fail_outcome",
            "heartbeat",
            "job",
            "job_origin",
            "job_payload",
            "parent_results",
            "release",
            "requeue_dead",
            "watch",
        )
    },
    **{
        f: ("split_id:job_ids", "union", "each id goes to its partition")
        for f in (
            "complete_many",
            "complete_many_outcomes",
            "heartbeat_many",
            "refusals",
            "trace_contexts",
        )
    },
    "purge_dead_jobs": ("split_id:job_ids", "sum", "each id goes to its partition; summed"),
    **{
        f: ("key:key", "one", "a cache key lives on crc32(key) % n")
        for f in ("get", "put", "refill", "invalidate", "ttl_for")
    },
    **{
        f: ("split_key:keys", "union", "each key goes to its partition")
        for f in ("get_many", "validate")
    },
    **{
        f: ("opt_queue:queue", "page:job_id", "the queue's partition, or all: newest ids, lim")
        for f in ("jobs_by", "dead_letters_by")
    },
    "list_dead": ("opt_queue:queue", "page:died_at", "the queue's partition, or all: newest"),
    "purge_dead_matching": ("opt_queue:queue", "sum", "the queue's partition, or all: summed"),
    "requeue_dead_matching": ("opt_queue:queue", "sum_row", "the queue's partition, or all"),
    "schedule": ("opt_queue:queue", "min", "on the queue's partition (null queue: on all)"),
    **{
        f: ("all", "union", "run on all partitions, rows merged (a queue lives on one)")
        for f in ("stats", "status", "stats_by_minute", "unserved_queues", "workers", "schedules")
    },
    **{
        f: ("all", "sum", "run on all partitions, counts summed")
        for f in ("maintain", "purge_dead", "reset")
    },
    "prune": ("all", "sum_row", "run on all partitions, counts summed"),
    "next_available": ("all", "min", "run on all partitions, the earliest"),
    **{
        f: ("all", "bool_or", "run on all partitions, true when any did")
        for f in ("unschedule", "unregister_worker")
    },
    "register_worker": ("all", "min", "registered on every partition (each has its jobs)"),
    **{
        f: ("all", "void", "a setting kept the same on every partition")
        for f in ("set_category_limit", "set_rate_limit", "configure_history")
    },
    "metrics": ("all", "metrics", 'run on all partitions, samples labelled partition="n"'),
    **{
        f: ("first", "union", "the same on every partition: read from partition 0")
        for f in ("states", "roles", "category_limits", "rate_limits", "registered_workers")
    },
    "version": ("first", "one", "the same on every partition: read from partition 0"),
    "claim": ("claim", "union", "the partitions of its queues in rotating order, up to batch"),
    "complete_many_then_claim": (
        "settle_then_claim",
        "union",
        "the router's complete_many, then its claim (two calls: not one transaction)",
    ),
}
# cache.stats (not queue.stats): labelled per partition
CACHE_MODES = {"stats": ("all", "labels", "run on all partitions, labels get partition")}

#: Left off the router, with the reason (docs/scaling.md lists them).
LOCAL: dict[str, str] = {
    "set_shards": "the live table's layout of one database",
    "shards": "the live table's layout of one database",
    "shard_of": "the live table's layout of one database",
    "register_view": "takes a regclass of the partition's own database",
    "unregister_view": "takes a regclass of the partition's own database",
    "refresh_view": "takes a regclass of the partition's own database",
    "track": "takes a regclass of the partition's own database",
    "untrack": "takes a regclass of the partition's own database",
    "refresh_due": "returns regclasses of the partition's own database",
    "changes_since": "the cache's change log of one database (its xids and snapshots)",
    "report_reads": "a cache pool's read counts of one database",
    "idle": "the session's own sleep state: a proxied call runs in another session",
    "busy": "the session's own sleep state: a proxied call runs in another session",
    "vacuum_due": "the tables of one database: VACUUM runs on the partition, not through a call",
}


class RouterError(ValueError):
    """A router install refused before anything was written (for example, a partition count
    that is not a power of two)."""


@dataclass
class Function:
    schema: str
    name: str
    args: str  # with names and defaults, as pg_get_function_arguments gives
    types: list[str]  # input types
    names: list[str]  # input names
    result: str
    retset: bool
    void: bool
    volatility: str
    comment: str | None
    grantees: list[str]

    @property
    def signature(self) -> str:
        return f"{self.schema}.{self.name}({', '.join(self.types)})"


CATALOG = """
select n.nspname, p.proname, pg_get_function_arguments(p.oid),
    array(select format_type(t, null) from unnest(p.proargtypes::oid[]) as t),
    array(select a.name from unnest(coalesce(p.proargnames, '{}'), coalesce(p.proargmodes,
        array_fill('i'::"char", array[coalesce(cardinality(p.proargnames), 0)]))) as a (name, mode)
        where a.mode in ('i', 'b', 'v')),
    pg_get_function_result(p.oid), p.proretset, p.prorettype = 'void'::regtype,
    p.provolatile::text, obj_description(p.oid, 'pg_proc'),
    array(select distinct a.grantee::regrole::text from aclexplode(p.proacl) as a
          where a.privilege_type = 'EXECUTE' and a.grantee not in (0, p.proowner) order by 1)
from pg_proc as p join pg_namespace as n on n.oid = p.pronamespace
where n.nspname in ('queue', 'cache') and p.proname !~ '^_' and p.prokind = 'f'
order by 1, 2, pg_get_function_identity_arguments(p.oid)
"""

TYPES = """
select format_type(t.oid, null), string_agg(format('%I %s', a.attname,
    format_type(a.atttypid, a.atttypmod)), ', ' order by a.attnum)
from pg_type as t join pg_namespace as n on n.oid = t.typnamespace
join pg_attribute as a on a.attrelid = t.typrelid and a.attnum > 0 and not a.attisdropped
where n.nspname in ('queue', 'cache') and t.typrelid <> 0 and t.oid in (
    select p.prorettype from pg_proc as p where p.proname !~ '^_'
    union select unnest(p.proargtypes::oid[]) from pg_proc as p where p.proname !~ '^_')
group by t.oid order by 1
"""


def catalog(conn: psycopg.Connection) -> list[Function]:
    """The public functions of schemas queue and cache on a partition."""
    rows = conn.execute(CATALOG).fetchall()
    return [Function(*row) for row in rows]


def mode_of(f: Function) -> tuple[str, str, str] | None:
    """The routing mode of a function, or None for the local list."""
    if f.name in LOCAL:
        return None
    if f.schema == "cache" and f.name in CACHE_MODES:
        return CACHE_MODES[f.name]
    mode = MODES.get(f.name)
    if mode is None:
        raise RouterError(f"{f.signature} has no routing mode: add it to andal.router.MODES")
    return mode


def connstr(dsn: str) -> str:
    """A partition's connect string for PL/Proxy: the DSN without user and password."""
    params = {k: v for k, v in conninfo_to_dict(dsn).items() if k not in ("user", "password")}
    return make_conninfo(**{k: str(v) for k, v in params.items() if v is not None})


def px_name(f: Function, index: int) -> str:
    return f'{PX}."{f.schema}_{f.name}_{index}"'


def proxy_sql(f: Function, index: int) -> str:
    """The PL/Proxy function that runs ``f`` on partition $1 (its other arguments follow)."""
    params = ", ".join(["partition int", *f.types])
    call = ", ".join(f"${i + 2}::{t}" for i, t in enumerate(f.types))
    select = (
        f"select * from {f.schema}.{f.name}({call})"
        if f.retset
        else (f"select {f.schema}.{f.name}({call})")
    )
    return (
        f"create function {px_name(f, index)}({params}) returns {f.result}\n"
        f"language plproxy as $px$ cluster 'andal'; run on $1; {select}; $px$;\n"
        f"revoke all on function {px_name(f, index)}({', '.join(['int', *f.types])})"
        " from public;\n"
    )


def _rule(target: str) -> str:
    return {
        "queue": "queue_partition",
        "id": "id_partition",
        "key": "key_partition",
        "split_id": "id_partition",
        "split_key": "key_partition",
        "opt_queue": "queue_partition",
    }[target]


def partitions_expr(f: Function, target: str) -> str:
    """A SQL expression of the partitions (int[]) a call of ``f`` runs on."""
    kind, _, arg = target.partition(":")
    ref = f"{f.name}.{arg}"
    every = "select p from andal_router.all_partitions() as p"
    if kind in ("queue", "id", "key"):
        return f"array[coalesce(andal_router.{_rule(kind)}({ref}), 0)]"
    if kind.startswith("split"):
        return (
            f"coalesce(nullif(array(select distinct andal_router.{_rule(kind)}(e)"
            f" from unnest({ref}) as e order by 1), '{{}}'), array[0])"
        )
    if kind in ("opt_queue", "claim"):
        first = (
            f"andal_router.queue_partition({ref})"
            if kind == "opt_queue"
            else (f"andal_router.queue_partition(q) from unnest({ref}) as q")
        )
        return (
            f"coalesce(nullif(array(select {first} where {ref} is not null union"
            f" {every} where {ref} is null order by 1), '{{}}'), array[0])"
        )
    return "array[0]" if kind == "first" else f"array({every})"


def call_args(f: Function, target: str) -> str:
    """The proxy call's arguments: the partition, then f's own (split arrays filtered)."""
    kind, _, key = target.partition(":")
    out = ["v_p"]
    for name, typ in zip(f.names, f.types, strict=True):
        ref = f"{f.name}.{name}"
        if kind.startswith("split") and typ.endswith("[]"):
            k = f"{f.name}.{key}"
            ref = (
                f"case when {ref} is null then null else array(select {ref}[o]"
                f" from generate_subscripts({k}, 1) as o"
                f" where andal_router.{_rule(kind)}({k}[o]) = v_p order by o) end"
            )
        out.append(ref)
    return ", ".join(out)


def call_sql(f: Function, index: int, target: str, merge: str) -> str:
    """The statement that calls the proxy on each partition of v_parts and merges."""
    px = f"{px_name(f, index)}({call_args(f, target)})"
    each = "from unnest(v_parts) as v_p"
    rows = f"{each} cross join lateral {px} as r"
    if merge == "sum_row":
        cols = [c.split(" ", 1) for c in f.result[len("TABLE(") : -1].split(", ")]
        sums = ", ".join(f"coalesce(sum(r.{c}), 0)::{t}" for c, t in cols)
        return f"return query select {sums} {rows};"
    if merge == "labels":
        return (
            "return query select r.metric, r.labels || jsonb_build_object('partition',"
            f" v_p), r.value {rows};"
        )
    if merge.startswith("page:"):  # one page of the merged rows: newest first, at most lim
        return f"return query select r.* {rows} order by r.{merge[5:]} desc limit {f.name}.lim;"
    if f.retset:
        return f"return query select r.* {rows};"
    if f.void:
        return f"perform {px} {each};\n    return;"
    agg = {
        "sum": f"coalesce(sum({px}), 0)::{f.result}",
        "bool_or": f"bool_or({px})",
        "min": f"min({px})",
        "metrics": f"string_agg(andal_router._relabel({px}, v_p,"
        " v_p = v_parts[1]), E'\\n' order by v_p)",
    }.get(merge, px)
    return f"return (select {agg} {each} limit 1);"


def checks_sql(f: Function, target: str) -> str:
    """What a call must not do through the router (0A000): a category over partitions, an
    enqueue whose parents or cache key are elsewhere, a job-fenced write of another
    partition's key."""
    out = []
    kind = target.split(":")[0]
    if kind in ("queue", "opt_queue") and "category" in f.names:
        out.append(f"perform andal_router._check_category({f.name}.category, {f.name}.queue);")
    if kind == "queue" and ("after" in f.names or "cache_key" in f.names):
        after = f"{f.name}.after" if "after" in f.names else "null"
        key = f"{f.name}.cache_key" if "cache_key" in f.names else "null"
        out.append(
            f"perform andal_router._check_together(andal_router.queue_partition("
            f"{f.name}.queue), {after}, {key}, 'an enqueue with parents or a cache key');"
        )
    if kind == "key" and "job_id" in f.names:
        out.append(
            f"perform andal_router._check_together(andal_router.key_partition("
            f"{f.name}.key), array[{f.name}.job_id], null, 'a job-fenced cache write');"
        )
    return "".join(f"    {c}\n" for c in out)


WRAPPER = """create function {schema}.{name}({args}) returns {result}
language plpgsql
{volatility}
set search_path = pg_catalog, pg_temp
as $fn$
#variable_conflict use_column
declare
    v_parts int[];
    v_state text;
    v_msg text;
    v_detail text;
    v_hint text;
begin
{checks}    v_parts := {parts};
    {call}
exception when others then
    get stacked diagnostics v_state = returned_sqlstate, v_msg = message_text,
        v_detail = pg_exception_detail, v_hint = pg_exception_hint;
    perform andal_router._raise(v_state, v_msg, v_detail, v_hint);
end
$fn$;
"""

VOLATILITY = {"i": "immutable", "s": "stable", "v": "volatile"}

CLAIM = """#variable_conflict use_column
declare
    v_parts int[] := {parts};
    v_left int := {fn}.batch;
    v_start int := floor(random() * cardinality(v_parts))::int;
    v_p int;
    v_n int;
    v_down int := 0;
    v_queues text[];
    v_state text;
    v_msg text;
    v_detail text;
    v_hint text;
begin
    for v_i in 0 .. cardinality(v_parts) - 1 loop
        exit when v_i > 0 and (v_left is null or v_left <= 0);
        v_p := v_parts[1 + (v_start + v_i) % cardinality(v_parts)];
        v_queues := case when {fn}.queues is null then null else array(select q from
            unnest({fn}.queues) as q where andal_router.queue_partition(q) = v_p) end;
        begin
            return query select r.* from {px}(v_p, {fn}.worker, v_queues, v_left, {rest}) as r;
            get diagnostics v_n = row_count;
            v_left := v_left - v_n;
        exception when sqlstate 'XX000' then
            v_down := v_down + 1;  -- a partition that is down: the others are claimed from
        end;
    end loop;
    if v_down = cardinality(v_parts) then
        raise exception 'no partition of these queues can be reached' using errcode = 'XX000';
    end if;
exception when others then
    get stacked diagnostics v_state = returned_sqlstate, v_msg = message_text,
        v_detail = pg_exception_detail, v_hint = pg_exception_hint;
    perform andal_router._raise(v_state, v_msg, v_detail, v_hint);
end
"""

#: queue.complete_many_then_claim on the router: the router's complete_many (split by id),
#: then its claim (the deadlines overload), in the rows of the partition's function.
SETTLE_THEN_CLAIM = """#variable_conflict use_column
begin
    return query
    select false, d.job_id, null::text, null::text, null::int, null::jsonb, null::int,
        null::int, null::uuid, null::timestamptz, null::timestamptz, null::text,
        null::bigint, null::timestamptz, d.completed
    from queue.complete_many(complete_many_then_claim.job_ids,
        complete_many_then_claim.tokens, complete_many_then_claim.results) as d;
    return query
    select true, c.job_id, c.queue, c.category, c.priority, c.payload, c.attempt,
        c.max_attempts, c.token, c.lease_expires_at, c.enqueued_at, c.cache_key,
        c.cache_version, c.deadline, null::boolean
    from queue.claim(complete_many_then_claim.worker, complete_many_then_claim.queues,
        complete_many_then_claim.batch, complete_many_then_claim.lease, true) as c;
end
"""


def wrapper_sql(f: Function, index: int, mode: tuple[str, str, str]) -> str:
    """The router's function ``f``: same signature, defaults, comment and grants."""
    target, merge, _ = mode
    fields = {
        "schema": f.schema,
        "name": f.name,
        "args": f.args,
        "result": f.result,
        "volatility": VOLATILITY[f.volatility],
        "checks": checks_sql(f, target),
        "parts": partitions_expr(f, target),
    }
    if target == "settle_then_claim":
        sql = (
            WRAPPER.split("#variable_conflict")[0].format(**fields) + SETTLE_THEN_CLAIM + "$fn$;\n"
        )
    elif target == "claim":
        rest = ", ".join(f"{f.name}.{n}" for n in f.names[3:])
        body = CLAIM.format(
            parts=partitions_expr(f, "claim:queues"), fn=f.name, px=px_name(f, index), rest=rest
        )
        head = WRAPPER.format(**fields, call="").split("#variable_conflict")[0]
        sql = head + body + "$fn$;\n"
    else:
        sql = WRAPPER.format(**fields, call=call_sql(f, index, target, merge))
    ident = f"{f.schema}.{f.name}({', '.join(f.types)})"
    sql += f"revoke all on function {ident} from public;\n"
    for role in f.grantees:
        sql += f'grant execute on function {ident} to "{role}";\n'
        sql += (
            f"grant execute on function {px_name(f, index)}(int, {', '.join(f.types)})".replace(
                "(int, )", "(int)"
            )
            + f' to "{role}";\n'
        )
    if f.comment is not None:
        sql += f"comment on function {ident} is {_literal(f.comment)};\n"
    return sql


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def generated_sql(functions: list[Function], types: list[tuple[str, str]]) -> str:
    """Everything the router's schemas queue, cache and andal_router_px hold, from a
    partition's catalog; and the rows of andal_router.functions."""
    roles = sorted({r for f in functions for r in f.grantees})
    grants = ", ".join(f'"{r}"' for r in roles)
    out = [
        f"drop schema if exists {PX}, queue, cache cascade;",
        f"create schema {PX}; create schema queue; create schema cache;",
        f"revoke all on schema {PX}, queue, cache from public;",
        "delete from andal_router.functions;",
    ]
    if grants:
        out.append(f"grant usage on schema {PX}, queue, cache, andal_router, plproxy to {grants};")
    out += [f"create type {name} as ({attrs});" for name, attrs in types]
    for i, f in enumerate(functions):
        mode = mode_of(f)
        reason = LOCAL.get(f.name, "")
        if mode is not None:
            out.append(proxy_sql(f, i) + wrapper_sql(f, i, mode))
            reason = mode[2]
        label = "local" if mode is None else f"{mode[0].split(':')[0]}/{mode[1]}"
        out.append(
            "insert into andal_router.functions values"
            f" ({_literal(f.signature)}, {_literal(label)}, {_literal(reason)});"
        )
    return "\n".join(out) + "\n"


def router_files(root: Path | None = None) -> list[Path]:
    """The router's SQL (``sql/router/*.sql``, in name order). Raises ``SqlNotFound`` when
    they are missing (an installed wheel does not carry them yet: run from a checkout)."""
    base = (root or sql_dir()) / "router"
    files = sorted(base.glob("*.sql"))
    if not files:
        raise SqlNotFound(f"the router's SQL is missing (looked in {base}): run from a checkout")
    return files


def _prefix(dsn: str) -> str | None:
    """The role prefix andal recorded in a database, or None when it has no andal."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "select exists (select from pg_class where relkind = 'r'"
            " and oid = to_regclass('queue.install_state'))"
        ).fetchone()
        if not row or not row[0]:
            return None
        got = conn.execute("select role_prefix from queue.install_state").fetchone()
        return str(got[0]) if got else None


def install_partitions(
    shards: list[str], role_prefix: str | None, log: Callable[[str], None]
) -> list[str]:
    """Install andal into each partition (all with the first one's roles) and number its
    job ids (partition k of n). Returns the steps done."""
    done: list[str] = []
    n = len(shards)
    for k, dsn in enumerate(shards):
        steps = install(dsn, log=log, role_prefix=role_prefix, warn=lambda _m: None)
        role_prefix = role_prefix or _prefix(dsn)
        with psycopg.connect(dsn, autocommit=True) as conn:
            row = conn.execute("select k, n from queue._partition()").fetchone()
            if row != (k, n):
                conn.execute("select queue._set_partition(%s, %s)", (k, n))
                steps.append(f"job ids of partition {k} of {n}")
        done += [f"partition {k}: {s}" for s in steps]
    return done


def install_router(
    dsn: str,
    shards: list[str],
    role_prefix: str | None = None,
    log: Callable[[str], None] | None = None,
) -> list[str]:
    """Install or upgrade the partitions ``shards`` and the router database ``dsn``.
    Raises ``RouterError`` when the partition count is not a power of two, the router
    database holds andal itself, or a public function has no routing mode. Returns the
    steps done (nothing on a second run with nothing changed)."""
    log = log or (lambda _msg: None)
    n = len(shards)
    if n < 1 or n & (n - 1):
        raise RouterError(f"the partition count must be a power of two (1, 2, 4, ...), got {n}")
    if _prefix(dsn) is not None:
        raise RouterError("the router database holds andal itself: give it a database of its own")
    router_files()  # SqlNotFound before anything is written
    _check_count(dsn, n)
    done = install_partitions(shards, role_prefix, log)
    with psycopg.connect(shards[0], autocommit=True) as conn:
        functions = catalog(conn)
        types = [(str(a), str(b)) for a, b in conn.execute(TYPES).fetchall()]
    generated = generated_sql(functions, types)
    with psycopg.connect(dsn, autocommit=True) as conn:
        done += _install_router_db(conn, shards, functions, generated, log)
    return done


def _install_router_db(
    conn: psycopg.Connection,
    shards: list[str],
    functions: list[Function],
    generated: str,
    log: Callable[[str], None],
) -> list[str]:
    """The router database's part: its roles, ``sql/router``, the partitions' rows and the
    generated functions, each only when it changed (a second run writes nothing)."""
    roles = sorted({r for f in functions for r in f.grantees})
    present = {r[0] for r in conn.execute("select rolname from pg_roles where rolname = any(%s)",
                                          (roles,))}  # fmt: skip
    if missing := [r for r in roles if r not in present]:
        create_roles(conn, missing)
    prefix = roles[0].rsplit("_", 1)[0] if roles else "andal"
    static = "".join(with_roles(p.read_text(), prefix) for p in router_files())
    digest = hashlib.sha256((static + generated).encode()).hexdigest()
    wanted = [(k, connstr(d)) for k, d in enumerate(shards)]
    done = []
    with conn.transaction():
        conn.execute("select pg_advisory_xact_lock(%s)", (0x616E64616C + 1,))
        state = _router_state(conn)
        if state is None or state[0] != digest:
            conn.execute(static)
        have = conn.execute("select partition, connstr from andal_router.partitions order by 1")
        have_rows = [tuple(r) for r in have.fetchall()]
        if have_rows != wanted:
            conn.execute("delete from andal_router.partitions")
            for k, c in wanted:
                conn.execute("insert into andal_router.partitions values (%s, %s)", (k, c))
            done.append(f"router partitions: {len(wanted)}")
        if state is None or state[0] != digest:
            log("generating the router's functions")
            conn.execute(generated)
            conn.execute(
                "insert into andal_router.install_state (id, digest) values (true, %s)"
                " on conflict (id) do update set digest = excluded.digest, installed_at = now()",
                (digest,),
            )
            done.append(f"router functions ({sum(mode_of(f) is not None for f in functions)})")
    return done


def _check_count(dsn: str, n: int) -> None:
    """Refuse another partition count than the router has: job ids would go elsewhere."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        if _router_state(conn) is None:
            return
        row = conn.execute("select count(*) from andal_router.partitions").fetchone()
    if row and row[0] and row[0] != n:
        raise RouterError(
            f"the router has {row[0]} partitions, not {n}: changing the count would send job"
            " ids and queues to other partitions (not supported; see docs/scaling.md)"
        )


def _router_state(conn: psycopg.Connection) -> tuple[Any, ...] | None:
    """The digest of the router's last install, or None on a new router database."""
    if conn.execute("select to_regclass('andal_router.install_state') is null").fetchone() == (
        True,
    ):
        return None
    return conn.execute("select digest from andal_router.install_state").fetchone()


def direct_dsn(router_dsn: str, queue: str) -> str:
    """The DSN of the partition that serves ``queue``, for what a proxied call cannot carry:
    an enqueue in the producer's own transaction (``andal.enqueue(conn, ...)`` on a
    connection to it) and transactional handlers. Asks the router
    (``andal_router.partition_for``) and keeps the router DSN's options (``on_partition``)."""
    with psycopg.connect(router_dsn, autocommit=True) as conn:
        row = conn.execute(
            "select connstr from andal_router.partition_for(queue => %s)", (queue,)
        ).fetchone()
    if row is None:
        raise RouterError(f"the router has no partition for queue {queue!r}")
    return on_partition(router_dsn, str(row[0]))


#: The options a partition's connect string gives; every other one comes from the router DSN.
_WHERE = ("host", "hostaddr", "port", "dbname")


def on_partition(router_dsn: str, partition: str) -> str:
    """A partition's connect string with every option of the router DSN but where it
    connects (host, hostaddr, port, dbname: the partition's): the same user, password,
    sslmode, ... as PL/Proxy's own connections (it connects as the calling role)."""
    given = {k: str(v) for k, v in conninfo_to_dict(router_dsn).items() if k not in _WHERE}
    return make_conninfo(partition, **given)


def is_router(conn: psycopg.Connection[Any]) -> bool:
    """Whether ``conn``'s database is an andal router (``andal router install``)."""
    row = conn.execute(
        "select to_regprocedure('andal_router.partition_dsns()') is not null"
    ).fetchone()
    return bool(row and row[0])


def partition_dsns(router_dsn: str) -> list[str] | None:
    """The DSNs of the router's partitions in partition order (``andal_router.partition_dsns``,
    each with the router DSN's options: ``on_partition``), or None when ``router_dsn`` is not
    a router. ``andal worker`` runs on them: LISTEN and the sleep state are partition-local."""
    with psycopg.connect(router_dsn, autocommit=True, connect_timeout=5) as conn:
        if not is_router(conn):
            return None
        rows = conn.execute("select connstr from andal_router.partition_dsns()").fetchall()
    if not rows:
        raise RouterError("the router has no partitions: run andal router install")
    return [on_partition(router_dsn, str(r[0])) for r in rows]


def add_command(sub: Any) -> None:
    """``andal router install --dsn ROUTER --shard DSN_A --shard DSN_B [...]``."""
    s = sub.add_parser("router", help="a PL/Proxy router over N andal databases (docs/scaling.md)")
    actions = s.add_subparsers(dest="router_command", metavar="ACTION", required=True)
    s = actions.add_parser(
        "install", help="install or upgrade the partitions (--shard) and the router (--dsn)"
    )
    s.add_argument(
        "--shard",
        action="append",
        required=True,
        metavar="DSN",
        help="a partition database, in partition order (repeat; a power of two)",
    )
    s.add_argument(
        "--role-prefix",
        metavar="PREFIX",
        help="the partitions' roles (default: as partition 0 has or chooses)",
    )
    s.set_defaults(func=cmd_router_install)


def cmd_router_install(args: argparse.Namespace) -> int:
    try:
        done = install_router(args.dsn, args.shard, role_prefix=args.role_prefix)
    except RouterError as exc:
        print(f"andal router install: {exc}", file=sys.stderr)
        return 2
    for step in done:
        print(f"applied {step}")
    print(f"andal router: {len(args.shard)} partitions" + ("" if done else "; nothing to do"))
    return 0
