-- queue.parent_results: each parent's id, state and result; a completed parent's result is
-- kept for its children whatever its queue's keep_results (here off), and dropped when the
-- last child ends.
begin;
\ir ../_fixtures.psql
select plan(6);

select queue.enqueue('{}', queue => 'wp') as a \gset
select queue.enqueue('{}', queue => 'wp') as b \gset
select queue.enqueue('{}', after => array[:b, :a]::bigint[], queue => 'wc') as c \gset
select results_eq(format('select parent_id, state, result from queue.parent_results(%s)', :c),
    format('values (%s::bigint, %L::text, null::jsonb), (%s, %L, null)', :a, 'pending', :b,
        'pending'), 'live parents: their state, in id order');
select job_id as aj, token as at from queue.claim('w', queues => '{wp}') \gset
select queue.complete(:aj, :'at', '{"rows": 10}');
select job_id as bj, token as bt from queue.claim('w', queues => '{wp}') \gset
select queue.complete(:bj, :'bt', '{"rows": 20}');
select is((select count(*) from queue.results), 0::bigint, 'the queue keeps no results');
select results_eq(format('select parent_id, state, result from queue.parent_results(%s)', :c),
    format('values (%s::bigint, %L::text, %L::jsonb), (%s, %L, %L)', :a, 'completed',
        '{"rows": 10}', :b, 'completed', '{"rows": 20}'),
    'yet the child reads both results');
select results_eq(format('select child_id, state, open from queue.child_jobs(%s)', :a),
    format('values (%s::bigint, %L::text, false)', :c, 'pending'), 'child_jobs of a parent');
select job_id as cj, token as ct from queue.claim('w', queues => '{wc}') \gset
select queue.complete(:cj, :'ct');
select is((select count(*) from queue.workflow_results where job_id in (:a, :b)), 0::bigint,
    'the kept results go with the last child');
select throws_ok('select * from queue.parent_results(null)', '22004', null, 'null job_id');

select * from finish();
rollback;
