-- Errors carry a SQLSTATE, 55000: cancelling an already dead job is an illegal transition; the job is left as
-- it was. (A running job is not refused any more: it gets an abort request, see
-- running_job_gets_an_abort_request.sql.)
begin;
\ir ../_fixtures.psql
select plan(3);

select queue.enqueue('{}') as dead \gset
select queue.cancel(:dead) \g /dev/null
select andal_test.state() as before \gset

select throws_ok(format('select queue.cancel(%s)', :dead), '55000',
    format('job %s is already dead', :dead), 'cancel dead: 55000');
select is(andal_test.state(), :'before', 'nothing changed');
select is((select reason from queue.dead_letters where job_id = :dead), 'cancelled',
    'still cancelled');

select * from finish();
rollback;
