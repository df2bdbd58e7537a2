-- andal's roles exist and cannot log in: they are granted to the application's login roles.
begin;
\ir ../_fixtures.psql
select plan(1);

select is(
    (select string_agg(rolname || ':' || rolcanlogin, ' ' order by rolname) from pg_roles
     where rolname in ('andal_producer', 'andal_worker', 'andal_admin', 'andal_monitor')),
    'andal_admin:false andal_monitor:false andal_producer:false andal_worker:false',
    'the four roles exist, NOLOGIN');

select * from finish();
rollback;
