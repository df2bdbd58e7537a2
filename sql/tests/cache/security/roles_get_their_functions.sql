-- Grants: workers read, write, invalidate, follow the log, validate, run refresh jobs and
-- report and read statistics;
-- producers may only put (both forms: plain, and on behalf of a job) and refill; admins also manage views and maintenance.
begin;
select plan(3);

create function pg_temp.executable(role_name text) returns text[]
language sql stable
as $$
    select array_agg(p.proname::text order by p.proname::text collate "C")
    from pg_proc as p
    where p.pronamespace = 'cache'::regnamespace
      and has_function_privilege(role_name, p.oid, 'execute')
$$;

select is(pg_temp.executable('andal_worker'),
    array['changes_since', 'get', 'get_many', 'invalidate', 'invalidate', 'put', 'put',
        'refill', 'refresh_view', 'report_reads', 'stats', 'ttl_for', 'validate'], 'andal_worker');
select is(pg_temp.executable('andal_producer'), array['put', 'put', 'refill'], 'andal_producer');
select is(pg_temp.executable('andal_admin'),
    array['changes_since', 'get', 'get_many', 'invalidate', 'invalidate', 'prune', 'put', 'put',
        'refill', 'refresh_due',
        'refresh_view', 'register_view', 'report_reads', 'reset', 'stats', 'track', 'ttl_for',
        'unregister_view', 'untrack', 'validate'], 'andal_admin');

select * from finish();
rollback;
