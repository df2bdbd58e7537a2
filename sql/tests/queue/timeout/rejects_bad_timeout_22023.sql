-- A timeout must be positive and at most queue.config.max_lease (a queue's may be 0: none);
-- a refused call writes nothing. Calls without timeout resolve as before.
begin;
\ir ../_fixtures.psql
select plan(10);
create temporary table s0 as select andal_test.state() as s;

select throws_ok($$select queue.enqueue('{}', queue => 'q', timeout => '0')$$, '22023', null,
    'a zero timeout');
select throws_ok($$select queue.enqueue('{}', queue => 'q', timeout => '-1 second')$$, '22023',
    null, 'a negative timeout');
select throws_ok($$select queue.enqueue('{}', queue => 'q', timeout => '2 days')$$, '22023',
    null, 'a timeout over max_lease');
select throws_ok($$select queue.enqueue_many(array['{}'::jsonb], queue => 'q',
    timeout => '0')$$, '22023', null, 'enqueue_many: a zero timeout');
select throws_ok($$select queue.configure_queue('q', timeout => '-1 second')$$, '22023', null,
    'configure_queue: a negative timeout');
select throws_ok($$select queue.configure_queue('q', timeout => '1 mon -31 days')$$, '22023',
    'timeout must be positive (got 1 mon -31 days)',
    'configure_queue: a timeout of no effect that is not ''0''');
select throws_ok($$select queue.configure_queue('q', timeout => null,
    results_retention => '0')$$, '22023', null, 'configure_queue: a zero retention');
select is(andal_test.state(), (select s from s0), 'nothing was written');
select lives_ok($$select queue.configure_queue('q', timeout => '1 day -24 hours')$$,
    'configure_queue: a timeout equal to ''0'' removes it');
select is((select count(*) from (select queue.enqueue('{}', 'q')) as e), 1::bigint,
    'a positional call without timeout still resolves');

select * from finish();
rollback;
