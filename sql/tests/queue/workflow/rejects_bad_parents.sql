-- The arguments of after are checked before anything is written: an id andal never issued
-- (so a child can only name jobs created before it: no cycle), a null element, an unknown
-- failure policy.
begin;
\ir ../_fixtures.psql
select plan(8);

select queue.enqueue('{}', queue => 'wp') as a \gset
select andal_test.state() as before \gset
select throws_ok(format('select queue.enqueue(%L, after => array[%s]::bigint[])', '{}', :a + 1000),
    '22023', null, 'an id never issued is refused');
select throws_ok('select queue.enqueue(''{}'', after => array[0]::bigint[])', '22023', null,
    'an id below 1 is refused');
select throws_ok(format('select queue.enqueue(%L, after => array[%s, null]::bigint[])', '{}', :a),
    '22004', null, 'a null parent is refused');
select throws_ok(format('select queue.enqueue(%L, after => array[%s]::bigint[], '
    'on_parent_failure => %L)', '{}', :a, 'ignore'), '22023', null,
    'an unknown policy is refused');
select throws_ok(format('select queue.enqueue_many(array[%L]::jsonb[], after => array[%s]::bigint[])',
    '{}', :a + 1000), '22023', null, 'enqueue_many checks after as well');
select throws_ok(format('select queue.enqueue(%L, after => array[%s]::bigint[], queue => null)',
    '{}', :a), '22004', null, 'the other arguments are checked as enqueue checks them');
select is(andal_test.state(), :'before', 'nothing was written');
select queue.enqueue('{}', after => '{}'::bigint[], queue => 'wc') as plain \gset
select is((select state from queue.job(:plain)), 'pending', 'an empty after makes a plain job');

select * from finish();
rollback;
