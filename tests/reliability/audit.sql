-- andal security audit. Rerun it any time against an installed database, as a superuser or
-- the installing role (it only reads the catalogs and creates temporary views):
--
--     psql "$DATABASE_URL" -X -v ON_ERROR_STOP=1 -f tests/reliability/audit.sql
--
-- It prints one row per finding, then fails (psql exit status 3) when there is any, or says
-- "andal audit: clean". What it checks, for the schemas queue and cache:
--   public_execute  no function is executable by PUBLIC (a null ACL is PUBLIC's default grant)
--   search_path     every function pins search_path to pg_catalog and pg_temp only, pg_temp
--                   last (an unpinned or wider path lets a caller's objects shadow what a
--                   SECURITY DEFINER function calls: CVE-2018-1058)
--   matrix          EXECUTE grants to andal_producer / andal_worker / andal_admin /
--                   andal_monitor match the
--                   documented matrix exactly (docs/sql-api.md "Roles", docs/cache.md); private
--                   functions (_name) are granted to nobody
--   unknown_function a public function the matrix does not know
--   role            the andal roles are NOLOGIN, not superuser, no CREATEROLE/CREATEDB/BYPASSRLS
--   schema          nobody but the owner has CREATE on the schemas; PUBLIC has no USAGE
--   table           nobody but the owner has any privilege on a table, view or sequence
--   default_acl     no default privilege in the schemas grants anything to anybody
--   foreign_owner   every object in the schemas belongs to the schemas' owner
--   foreign_trigger no trigger on an andal table runs a function from another schema
\set ON_ERROR_STOP on
-- plain catalog reads: JIT compilation would cost more than the query
set jit = off;

create or replace temporary view andal_audit_matrix (fn, roles) as values
    -- producing
    ('queue.enqueue', '{andal_admin,andal_producer}'::text []),
    ('queue.enqueue_many', '{andal_admin,andal_producer}'),
    ('queue.version', '{andal_admin,andal_monitor,andal_producer,andal_worker}'),
    ('queue.roles', '{andal_admin,andal_monitor,andal_producer,andal_worker}'),
    ('queue.states', '{andal_admin,andal_monitor,andal_producer,andal_worker}'),
    -- working
    ('queue.claim', '{andal_admin,andal_worker}'),
    ('queue.complete', '{andal_admin,andal_worker}'),
    ('queue.complete_many', '{andal_admin,andal_worker}'),
    ('queue.complete_many_outcomes', '{andal_admin,andal_worker}'),
    ('queue.refusals', '{andal_admin,andal_worker}'),
    ('queue.vacuum_due', '{andal_admin,andal_worker}'),
    ('queue.fail', '{andal_admin,andal_worker}'),
    ('queue.fail_outcome', '{andal_admin,andal_worker}'),
    ('queue.complete_many_then_claim', '{andal_admin,andal_worker}'),
    ('queue.heartbeat', '{andal_admin,andal_worker}'),
    ('queue.heartbeat_many', '{andal_admin,andal_worker}'),
    ('queue.trace_contexts', '{andal_admin,andal_worker}'),
    ('queue.release', '{andal_admin,andal_worker}'),
    ('queue.maintain', '{andal_admin,andal_worker}'),
    ('queue.status', '{andal_admin,andal_monitor,andal_worker}'),
    ('queue.stats', '{andal_admin,andal_monitor,andal_worker}'),
    ('queue.stats_by_minute', '{andal_admin,andal_monitor,andal_worker}'),
    ('queue.category_limits', '{andal_admin,andal_monitor,andal_worker}'),
    ('queue.queue_settings', '{andal_admin,andal_monitor,andal_worker}'),
    ('queue.rate_limits', '{andal_admin,andal_monitor,andal_worker}'),
    ('queue.metrics', '{andal_admin,andal_monitor,andal_worker}'),
    ('queue.workers', '{andal_admin,andal_monitor,andal_worker}'),
    ('queue.unserved_queues', '{andal_admin,andal_monitor,andal_worker}'),
    ('queue.next_available', '{andal_admin,andal_monitor,andal_worker}'),
    ('queue.registered_workers', '{andal_admin,andal_monitor,andal_worker}'),
    ('queue.register_worker', '{andal_admin,andal_worker}'),
    ('queue.unregister_worker', '{andal_admin,andal_worker}'),
    -- looking jobs up and waiting for them
    ('queue.job', '{andal_admin,andal_monitor,andal_producer,andal_worker}'),
    ('queue.jobs_by', '{andal_admin,andal_monitor,andal_producer,andal_worker}'),
    ('queue.job_origin', '{andal_admin,andal_monitor,andal_producer,andal_worker}'),
    ('queue.watch', '{andal_admin,andal_producer,andal_worker}'),
    -- workflows: a job's parents' results, a job's children
    ('queue.parent_results', '{andal_admin,andal_monitor,andal_producer,andal_worker}'),
    ('queue.child_jobs', '{andal_admin,andal_monitor,andal_producer,andal_worker}'),
    -- a listening worker says when it sleeps (the wake-up hint)
    ('queue.idle', '{andal_admin,andal_worker}'),
    ('queue.busy', '{andal_admin,andal_worker}'),
    -- administering
    ('queue.cancel', '{andal_admin}'),
    ('queue.requeue_dead', '{andal_admin}'),
    ('queue.purge_dead', '{andal_admin}'),
    ('queue.list_dead', '{andal_admin}'),
    ('queue.purge_dead_jobs', '{andal_admin}'),
    ('queue.dead_letters_by', '{andal_admin,andal_monitor}'),
    ('queue.purge_dead_matching', '{andal_admin}'),
    ('queue.requeue_dead_matching', '{andal_admin}'),
    ('queue.job_payload', '{andal_admin}'),
    ('queue.pause', '{andal_admin}'),
    ('queue.resume', '{andal_admin}'),
    ('queue.set_history', '{andal_admin}'),
    ('queue.configure_history', '{andal_admin}'),
    -- time: schedules and rate limits
    ('queue.schedule', '{andal_admin}'),
    ('queue.unschedule', '{andal_admin}'),
    ('queue.schedules', '{andal_admin,andal_monitor,andal_worker}'),
    ('queue.set_rate_limit', '{andal_admin}'),
    ('queue.configure_queue', '{andal_admin}'),
    ('queue.set_category_limit', '{andal_admin}'),
    ('queue.shards', '{andal_admin}'),
    ('queue.set_shards', '{andal_admin}'),
    ('queue.shard_of', '{andal_admin,andal_producer,andal_worker}'),
    -- the cache (docs/cache.md)
    ('cache.put', '{andal_admin,andal_producer,andal_worker}'),
    ('cache.refill', '{andal_admin,andal_producer,andal_worker}'),
    ('cache.get', '{andal_admin,andal_worker}'),
    ('cache.get_many', '{andal_admin,andal_worker}'),
    ('cache.invalidate', '{andal_admin,andal_worker}'),
    ('cache.changes_since', '{andal_admin,andal_worker}'),
    ('cache.validate', '{andal_admin,andal_worker}'),
    ('cache.ttl_for', '{andal_admin,andal_worker}'),
    ('cache.refresh_view', '{andal_admin,andal_worker}'),
    ('cache.report_reads', '{andal_admin,andal_worker}'),
    ('cache.stats', '{andal_admin,andal_monitor,andal_worker}'),
    ('cache.register_view', '{andal_admin}'),
    ('cache.unregister_view', '{andal_admin}'),
    ('cache.track', '{andal_admin}'),
    ('cache.untrack', '{andal_admin}'),
    ('cache.refresh_due', '{andal_admin}'),
    ('cache.prune', '{andal_admin}'),
    ('cache.reset', '{andal_admin}');

create or replace temporary view andal_audit (finding, object, detail) as
with schemas as (
    select n.oid, n.nspname, n.nspowner, n.nspacl
    from pg_catalog.pg_namespace as n
    where n.nspname in ('queue', 'cache')
),
fns as (
    select p.oid, s.nspname || '.' || p.proname as fn, p.proname,
        p.oid::pg_catalog.regprocedure::text as sig, p.proconfig, p.proowner,
        coalesce(p.proacl, pg_catalog.acldefault('f', p.proowner)) as acl
    from pg_catalog.pg_proc as p
    join schemas as s on s.oid = p.pronamespace
),
fn_grants as (
    select f.sig, a.grantee, a.privilege_type
    from fns as f, pg_catalog.aclexplode(f.acl) as a
    where a.grantee <> f.proowner
),
paths as (
    select f.sig, substr(c, 13) as path
    from fns as f, unnest(f.proconfig) as c
    where c like 'search\_path=%'
),
rels as (
    select c.oid, s.nspname || '.' || c.relname as rel, c.relkind, c.relowner,
        coalesce(c.relacl, pg_catalog.acldefault(
            case when c.relkind = 'S' then 's' else 'r' end::"char", c.relowner)) as acl
    from pg_catalog.pg_class as c
    join schemas as s on s.oid = c.relnamespace
    where c.relkind in ('r', 'p', 'v', 'm', 'S', 'f')
)
-- PUBLIC may execute
select 'public_execute'::text as finding, f.sig as object,
    'PUBLIC can execute it'::text as detail
from fns as f
where exists (select from fn_grants as g
              where g.sig = f.sig and g.grantee = 0 and g.privilege_type = 'EXECUTE')

union all
-- search_path: missing, wider than pg_catalog + pg_temp, or pg_temp not last
select 'search_path', f.sig, coalesce('search_path=' || p.path, 'search_path not pinned')
from fns as f
left join paths as p on p.sig = f.sig
where p.path is null
   or exists (select from regexp_split_to_table(p.path, ',\s*') as e
              where e not in ('pg_catalog', 'pg_temp', '""', ''))
   or (p.path like '%pg_temp%' and p.path !~ 'pg_temp\s*$')
   or p.path not like '%pg_temp%'

union all
-- the documented call matrix
select 'matrix', f.sig,
    format('granted to {%s}, documented for {%s}',
        array_to_string(g.granted, ','), array_to_string(coalesce(m.roles, '{}'), ','))
from fns as f
left join andal_audit_matrix as m on m.fn = f.fn
cross join lateral (
    select coalesce(array_agg(x.grantee::regrole::text order by x.grantee::regrole::text),
        '{}') as granted
    from (select distinct g.grantee from fn_grants as g
          where g.sig = f.sig and g.privilege_type = 'EXECUTE' and g.grantee <> 0) as x
) as g
where g.granted is distinct from
    coalesce(array(select r from unnest(m.roles) as r order by 1), '{}')

union all
select 'unknown_function', f.sig, 'public function missing from the documented matrix'
from fns as f
where f.proname not like '\_%'
  and not exists (select from andal_audit_matrix as m where m.fn = f.fn)
  and not exists (select from pg_catalog.pg_trigger as t where t.tgfoid = f.oid)

union all
-- the roles
select 'role', r.rolname,
    concat_ws(', ',
        case when r.rolcanlogin then 'can log in' end,
        case when r.rolsuper then 'superuser' end,
        case when r.rolcreaterole then 'createrole' end,
        case when r.rolcreatedb then 'createdb' end,
        case when r.rolbypassrls then 'bypassrls' end)
from pg_catalog.pg_roles as r
where r.rolname in ('andal_producer', 'andal_worker', 'andal_admin', 'andal_monitor')
  and (r.rolcanlogin or r.rolsuper or r.rolcreaterole or r.rolcreatedb or r.rolbypassrls)

union all
select 'role', x.rolname, 'missing'
from (values ('andal_producer'), ('andal_worker'), ('andal_admin'), ('andal_monitor')) as x (rolname)
where not exists (select from pg_catalog.pg_roles as r where r.rolname = x.rolname)

union all
-- schemas: CREATE for anyone but the owner, anything for PUBLIC
select 'schema', s.nspname,
    format('%s has %s', case when a.grantee = 0 then 'PUBLIC' else a.grantee::regrole::text end,
        a.privilege_type)
from schemas as s,
    pg_catalog.aclexplode(coalesce(s.nspacl, pg_catalog.acldefault('n', s.nspowner))) as a
where a.grantee <> s.nspowner and (a.grantee = 0 or a.privilege_type = 'CREATE')

union all
-- tables, views, sequences: nobody but the owner
select 'table', r.rel,
    format('%s has %s', case when a.grantee = 0 then 'PUBLIC' else a.grantee::regrole::text end,
        a.privilege_type)
from rels as r, pg_catalog.aclexplode(r.acl) as a
where a.grantee <> r.relowner

union all
-- default privileges in the schemas
select 'default_acl', s.nspname,
    format('default %s privilege %s for %s',
        case d.defaclobjtype when 'f' then 'function' when 'r' then 'table'
            when 'S' then 'sequence' else d.defaclobjtype::text end,
        a.privilege_type,
        case when a.grantee = 0 then 'PUBLIC' else a.grantee::regrole::text end)
from pg_catalog.pg_default_acl as d
join schemas as s on s.oid = d.defaclnamespace
cross join pg_catalog.aclexplode(d.defaclacl) as a
where a.grantee <> d.defaclrole

union all
-- objects of another owner inside the schemas
select 'foreign_owner', o.object, 'owned by ' || o.owner::regrole::text
from (
    select f.sig as object, f.proowner as owner, s.nspowner
    from fns as f join pg_catalog.pg_proc as p on p.oid = f.oid
    join schemas as s on s.oid = p.pronamespace
    union all
    select r.rel, r.relowner, s.nspowner
    from rels as r join pg_catalog.pg_class as c on c.oid = r.oid
    join schemas as s on s.oid = c.relnamespace
    union all
    select s.nspname || '.' || t.typname, t.typowner, s.nspowner
    from pg_catalog.pg_type as t join schemas as s on s.oid = t.typnamespace
    union all
    select s.nspname || '.' || o.oprname, o.oprowner, s.nspowner
    from pg_catalog.pg_operator as o join schemas as s on s.oid = o.oprnamespace
) as o
where o.owner <> o.nspowner

union all
-- triggers on andal tables that run a function from elsewhere
select 'foreign_trigger', c.relname || '.' || t.tgname, 'runs ' || p.oid::regprocedure::text
from pg_catalog.pg_trigger as t
join pg_catalog.pg_class as c on c.oid = t.tgrelid
join schemas as s on s.oid = c.relnamespace
join pg_catalog.pg_proc as p on p.oid = t.tgfoid
where not t.tgisinternal and p.pronamespace not in (select oid from schemas);

select * from andal_audit order by 1, 2;

do $$
declare
    v_n int;
begin
    select count(*) into v_n from andal_audit;
    if v_n > 0 then
        raise exception 'andal audit: % finding(s)', v_n;
    end if;
    raise notice 'andal audit: clean';
end
$$;
