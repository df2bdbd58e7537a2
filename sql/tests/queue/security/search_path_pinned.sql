-- Every function in andal's schemas pins its search_path (pg_catalog and pg_temp only, or
-- empty), so no object a caller can create on their own path is ever resolved by it.
begin;
\ir ../_fixtures.psql
select plan(3);

select cmp_ok(
    (select count(*)::int from pg_proc where pronamespace = 'queue'::regnamespace), '>=', 20,
    'the queue schema holds the API');
select is_empty(
    $$ select p.oid::regprocedure::text from pg_proc as p
       where p.pronamespace in ('queue'::regnamespace, 'cache'::regnamespace)
         and not exists (select from unnest(p.proconfig) as c where c like 'search_path=%') $$,
    'no function of queue or cache lacks a search_path setting');
select is_empty(
    $$ select p.oid::regprocedure::text || ': ' || c from pg_proc as p, unnest(p.proconfig) as c
       where p.pronamespace in ('queue'::regnamespace, 'cache'::regnamespace)
         and c like 'search_path=%'
         and exists (
             select from regexp_split_to_table(substr(c, 13), ',\s*') as e
             where e not in ('pg_catalog', 'pg_temp', '""', '')) $$,
    'every pinned search_path names only pg_catalog and pg_temp');

select * from finish();
rollback;
