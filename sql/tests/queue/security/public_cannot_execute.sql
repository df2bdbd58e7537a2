-- PUBLIC can execute no function in andal's schemas. A null proacl means the default ACL,
-- which grants EXECUTE to PUBLIC, so it counts as a grant.
begin;
\ir ../_fixtures.psql
select plan(3);

select is_empty(
    $$ select p.oid::regprocedure::text from pg_proc as p
       where p.pronamespace in ('queue'::regnamespace, 'cache'::regnamespace)
         and (p.proacl is null
              or exists (select from aclexplode(p.proacl) as a
                         where a.grantee = 0 and a.privilege_type = 'EXECUTE')) $$,
    'no function in queue or cache is executable by PUBLIC');

-- A role with nothing but PUBLIC's rights cannot call the API.
create role andal_test_nobody nologin;
select throws_ok(
    $$ set local role andal_test_nobody; select queue.enqueue('{}') $$, '42501', null,
    'a role with only PUBLIC rights cannot enqueue');
select throws_ok(
    $$ set local role andal_test_nobody; select queue.version() $$, '42501', null,
    'nor call version');

select * from finish();
rollback;
