-- dead_letters_by lists the dead letters matching queue and reason, newest first, a page at a
-- time, without payloads; it refuses a bad filter or page size.
begin;
\ir ../_fixtures.psql
select plan(6);

select queue.enqueue('{"secret": 1}', queue => 'da') as a1 \gset
select queue.enqueue('{}', queue => 'da', max_attempts => 1) as a2 \gset
select queue.enqueue('{}', queue => 'db') as b1 \gset
select queue.cancel(:a1) \g /dev/null
select queue.cancel(:b1) \g /dev/null
select job_id, token from queue.claim(worker => 'w', queues => '{da}') \gset c_
select queue.fail(job_id => :c_job_id, token => :'c_token', error => 'boom') \g /dev/null

select results_eq($$ select job_id, reason, last_error from queue.dead_letters_by(queue => 'da') $$,
    format($$ values (%s::bigint, 'exhausted'::text, 'boom'::text),
                     (%s::bigint, 'cancelled'::text, 'cancelled'::text) $$, :a2, :a1),
    'one queue, newest first, with reason and last error');
select results_eq($$ select job_id from queue.dead_letters_by(reason => 'cancelled') $$,
    format('values (%s::bigint), (%s::bigint)', :b1, :a1), 'by reason');
select results_eq(format('select job_id from queue.dead_letters_by(before => %s, lim => 1)', :b1),
    format('values (%s::bigint)', :a2), 'keyset paging: before and lim');
select throws_ok($$ select * from queue.dead_letters_by(reason => 'lost') $$, '22023', null,
    'unknown reason: 22023');
select throws_ok($$ select * from queue.dead_letters_by(lim => 1001) $$, '22023', null,
    'lim over 1000: 22023');
select ok(has_function_privilege('andal_monitor',
    'queue.dead_letters_by(text, text, bigint, int)', 'execute'), 'the monitor role may read it');

select * from finish();
rollback;
