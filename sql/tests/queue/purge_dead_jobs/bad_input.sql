-- purge_dead_jobs refuses null, a null id and too many ids, and deletes nothing then.
begin;
\ir ../_fixtures.psql
select plan(4);

select queue.enqueue('{}') as a \gset
select queue.cancel(:a) \g /dev/null
select andal_test.state() as before \gset

select throws_ok($$ select queue.purge_dead_jobs(job_ids => null) $$, '22004',
    'job_ids must not be null nor hold a null', 'null array: 22004');
select throws_ok(format('select queue.purge_dead_jobs(job_ids => array[%s, null]::bigint[])', :a),
    '22004', 'job_ids must not be null nor hold a null', 'a null id: 22004 (nothing deleted)');
select throws_ok(
    $$ select queue.purge_dead_jobs(job_ids => array(select generate_series(1, 10001))::bigint[]) $$,
    '22023', 'at most 10000 job_ids per call (got 10001)', 'too many ids: 22023');
select is(andal_test.state(), :'before', 'nothing changed');

select * from finish();
rollback;
