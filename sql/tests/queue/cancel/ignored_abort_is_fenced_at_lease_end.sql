-- A worker that ignores an abort request is fenced when its lease runs out: the job is taken
-- back as cancelled (not retried, whatever attempts are left) and the worker's late complete
-- gets AN001. release by an aborted worker also ends the job cancelled.
begin;
\ir ../_fixtures.psql
select plan(6);

select queue.enqueue('{}', queue => 'q') as j \gset
select token as t from queue.claim('w1', queues => '{q}') \gset
select queue.cancel(:j) \g /dev/null
select andal_test.expire(:j);
select is(queue.maintain(), 1, 'the expired lease is taken back');
select is((select state from queue.job(:j)), 'cancelled', 'as cancelled, not retried');
select is((select count(*) from queue.jobs where id = :j), 0::bigint, 'it left the live table');
select throws_ok(format('select queue.complete(%s, %L)', :j, :'t'), 'AN001', null,
    'the late complete gets lease lost');

select queue.enqueue('{}', queue => 'q') as k \gset
select token as t2 from queue.claim('w1', queues => '{q}') \gset
select queue.cancel(:k) \g /dev/null
select queue.release(:k, :'t2') \g /dev/null
select is((select state from queue.job(:k)), 'cancelled', 'release of an aborted job cancels it');
select is((select count(*) from queue.claim('w2', queues => '{q}')), 0::bigint,
    'and it is not claimed again');

select * from finish();
rollback;
