-- Every function of schema cache pins its search_path; PUBLIC may execute none;
-- the public API runs as SECURITY DEFINER; private helpers (_name) are granted to nobody.
begin;
select plan(4);

select is_empty($$
    select p.oid::regprocedure::text from pg_proc as p
    where p.pronamespace = 'cache'::regnamespace
      and not coalesce(p.proconfig @> array['search_path=pg_catalog, pg_temp'], false)
$$, 'every function pins search_path = pg_catalog, pg_temp');

select is_empty($$
    select p.oid::regprocedure::text from pg_proc as p
    where p.pronamespace = 'cache'::regnamespace and has_function_privilege('public', p.oid, 'execute')
$$, 'PUBLIC executes nothing');

select is_empty($$
    select p.oid::regprocedure::text from pg_proc as p
    where p.pronamespace = 'cache'::regnamespace and p.proname !~ '^_' and not p.prosecdef
$$, 'the public API is SECURITY DEFINER');

select is_empty($$
    select p.oid::regprocedure::text || ' ' || r.rolname from pg_proc as p
    cross join pg_roles as r
    where p.pronamespace = 'cache'::regnamespace and p.proname ~ '^_'
      and r.rolname in ('andal_producer', 'andal_worker', 'andal_admin')
      and has_function_privilege(r.oid, p.oid, 'execute')
$$, 'helpers are granted to no andal role');

select * from finish();
rollback;
