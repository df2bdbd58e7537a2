-- Rule 9, 55000: cancelling a running or an already dead job is an illegal transition; the
-- job is left as it was.
begin;
\ir ../_fixtures.psql
select plan(4);

select queue.enqueue('{}') as running \gset
select queue.claim('w') \g /dev/null
select queue.enqueue('{}') as dead \gset
select queue.cancel(:dead) \g /dev/null
select andal_test.state() as before \gset

select throws_ok(format('select queue.cancel(%s)', :running), '55000',
    format('job %s is running and cannot be cancelled', :running), 'cancel running: 55000');
select throws_ok(format('select queue.cancel(%s)', :dead), '55000',
    format('job %s is already dead', :dead), 'cancel dead: 55000');
select is(andal_test.state(), :'before', 'nothing changed');
select is((select status from queue.jobs where id = :running), 'running', 'still running');

select * from finish();
rollback;
