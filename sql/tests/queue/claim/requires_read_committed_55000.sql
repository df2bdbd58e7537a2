-- claim refuses to run above READ COMMITTED (its gate recounts after taking its lock):
-- 55000, nothing claimed.
begin isolation level repeatable read;
\ir ../_fixtures.psql
select plan(2);

select queue.enqueue('{}') \g /dev/null
select andal_test.state() as before \gset
select throws_ok($$ select * from queue.claim('w') $$, '55000',
    'queue.claim must run at READ COMMITTED isolation (not repeatable read)',
    'repeatable read: 55000');
select is(andal_test.state(), :'before', 'nothing was claimed');

select * from finish();
rollback;
