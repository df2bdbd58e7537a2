-- complete removes the job from the live table; no result is kept unless the queue asks.
begin;
\ir ../_fixtures.psql
select plan(4);

select queue.enqueue('{}') as j \gset
select queue.enqueue('{}') as other \gset
select token as t from queue.claim('w') \gset

select lives_ok(format('select queue.complete(%s, %L, %L)', :j, :'t', '{"ok": true}'),
    'complete with the current token');
select is((select count(*) from queue.jobs where id = :j), 0::bigint, 'the job is gone');
select is((select count(*) from queue.results), 0::bigint, 'no result kept by default');
select is((select status from queue.jobs where id = :other), 'pending',
    'other jobs are untouched');

select * from finish();
rollback;
