-- PUBLIC has no privilege on andal's schemas, tables or sequences.
begin;
\ir ../_fixtures.psql
select plan(4);

select is_empty(
    $$ select c.oid::regclass::text || ' ' || a.privilege_type
       from pg_class as c, aclexplode(c.relacl) as a
       where c.relnamespace in ('queue'::regnamespace, 'cache'::regnamespace)
         and a.grantee = 0 $$,
    'no table, view or sequence of queue or cache grants anything to PUBLIC');
select is_empty(
    $$ select n.nspname || ' ' || a.privilege_type
       from pg_namespace as n, aclexplode(n.nspacl) as a
       where n.nspname in ('queue', 'cache') and a.grantee = 0 $$,
    'PUBLIC has no usage or create on the schemas');

create role andal_test_nobody nologin;
select throws_ok(
    $$ set local role andal_test_nobody; select count(*) from queue.jobs $$, '42501', null,
    'a role with only PUBLIC rights cannot read queue.jobs');
select throws_ok(
    $$ set local role andal_test_nobody;
       insert into queue.dead_letters (job_id, queue, priority, payload, attempt, max_attempts,
           enqueued_at, reason) values (1, 'q', 0, '{}', 1, 1, now(), 'cancelled') $$,
    '42501', null, 'nor write queue.dead_letters');

select * from finish();
rollback;
