-- queue.vacuum_due: only andal's tables, a sharded table as one, `allowed` true for the
-- session's role when it owns the tables (a role that owns none: tests/
-- test_observability_vacuum.py logs in as one); its argument checked.
begin;
\ir ../_fixtures.psql
select plan(5);

select is_empty($$ select * from queue.vacuum_due(every => '0')
    where schema_name not in ('queue', 'cache') $$, 'only the schemas queue and cache');
select is_empty($$ select * from queue.vacuum_due(every => '0')
    where table_name ~ '^jobs_p[0-9]+$' $$, 'a shard of queue.jobs counts as queue.jobs');
select is_empty($$ select * from queue.vacuum_due(every => '0') where not allowed $$,
    'the owner may vacuum every table it lists');
set local role andal_worker;
select lives_ok($$ select * from queue.vacuum_due(every => '0') $$,
    'andal_worker may call it');
reset role;
select throws_ok($$ select queue.vacuum_due(every => null) $$, '22004', null,
    'a null every: 22004');

select * from finish();
rollback;
