-- queue.roles names the install's four roles from its recorded prefix, in the order
-- producer, worker, admin, monitor; each of them may call it, PUBLIC may not; it writes
-- nothing.
begin;
\ir ../_fixtures.psql
select plan(5);

select andal_test.state() as before \gset
select results_eq(
    $$ select kind, role_name from queue.roles() $$,
    $$ select k, (select role_prefix from queue.install_state) || '_' || k
       from unnest(array['producer', 'worker', 'admin', 'monitor']) as k $$,
    'one row per kind, named by the recorded prefix, in a fixed order');
select is((select count(*) from queue.roles() as r join pg_roles as p on p.rolname = r.role_name),
    4::bigint, 'every role it names exists');
select ok((select bool_and(has_function_privilege(r.role_name, 'queue.roles()', 'execute'))
    from queue.roles() as r), 'each of the four roles may call it');
select ok(not exists (select from aclexplode((select proacl from pg_proc
    where oid = 'queue.roles()'::regprocedure)) as a where a.grantee = 0),
    'PUBLIC may not');
select is(andal_test.state(), :'before', 'naming the roles writes nothing');

select * from finish();
rollback;
