-- Errors carry a SQLSTATE, 42704: cancel, requeue_dead of a job that does not exist; nothing written.
begin;
\ir ../_fixtures.psql
select plan(5);

select queue.enqueue('{}') \g /dev/null
select andal_test.state() as before \gset

select throws_ok($$ select queue.cancel(987654321) $$, '42704',
    'job 987654321 does not exist (or has completed)', 'cancel unknown job: 42704');
select throws_ok($$ select queue.requeue_dead(987654321) $$, '42704',
    'no dead job with id 987654321', 'requeue_dead unknown job: 42704');
select throws_ok($$ select queue.cancel(null) $$, '22004', 'job_id must not be null',
    'cancel null: 22004');
select throws_ok($$ select queue.requeue_dead(null) $$, '22004', 'job_id must not be null',
    'requeue_dead null: 22004');
select is(andal_test.state(), :'before', 'nothing was written');

select * from finish();
rollback;
