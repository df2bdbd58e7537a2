-- purge_dead_matching and requeue_dead_matching refuse bad filters and bounds, and change
-- nothing then.
begin;
\ir ../_fixtures.psql
select plan(9);

select queue.enqueue('{}') as a \gset
select queue.cancel(:a) \g /dev/null
select andal_test.state() as before \gset

select throws_ok($$ select queue.purge_dead_matching(max_rows => null) $$, '22004',
    'max_rows must not be null', 'null max_rows: 22004');
select throws_ok($$ select queue.purge_dead_matching(max_rows => 0) $$, '22023',
    'max_rows must be 1 to 10000 (got 0)', 'max_rows 0: 22023');
select throws_ok($$ select queue.purge_dead_matching(max_rows => 10001) $$, '22023',
    'max_rows must be 1 to 10000 (got 10001)', 'max_rows over 10000: 22023');
select throws_ok($$ select queue.purge_dead_matching(reason => 'lost') $$, '22023',
    'reason must be exhausted, non_retryable or cancelled (got lost)', 'unknown reason: 22023');
select throws_ok($$ select queue.purge_dead_matching(queue => '') $$, '22023', null,
    'empty queue name: 22023');
select throws_ok($$ select queue.purge_dead_matching(older_than => '-1 day') $$, '22023', null,
    'negative age: 22023');
select throws_ok($$ select * from queue.requeue_dead_matching(max_rows => 0) $$, '22023', null,
    'requeue: max_rows 0: 22023');
select throws_ok($$ select * from queue.requeue_dead_matching(reason => 'x') $$, '22023', null,
    'requeue: unknown reason: 22023');
select is(andal_test.state(), :'before', 'nothing changed');

select * from finish();
rollback;
