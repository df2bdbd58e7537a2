-- andal_reader, the dashboards' role, exists NOLOGIN and may execute the read functions only:
-- nothing that enqueues, claims, ends, cancels, requeues, purges or configures.
begin;
\ir ../_fixtures.psql
select plan(3);

select is((select rolcanlogin from pg_roles where rolname = 'andal_reader'), false,
    'andal_reader exists, NOLOGIN');

create temp table reads (fn text);
insert into reads values
    ('queue.stats()'), ('queue.metrics()'), ('queue.workers()'), ('queue.status()'),
    ('queue.version()'), ('queue.list_dead(text,integer)'),
    ('queue.stats_by_minute(interval)'), ('cache.stats(interval)');

select is_empty(
    $$ select p.oid::regprocedure::text from pg_proc as p
       where p.pronamespace in ('queue'::regnamespace, 'cache'::regnamespace)
         and has_function_privilege('andal_reader', p.oid, 'execute')
         and p.oid::regprocedure::text not in (select fn from reads) $$,
    'andal_reader can execute no function outside the read list');
select is_empty(
    $$ select fn from reads where not has_function_privilege('andal_reader', fn, 'execute') $$,
    'andal_reader can execute every read function');

select * from finish();
rollback;
