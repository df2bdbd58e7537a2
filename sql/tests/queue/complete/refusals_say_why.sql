-- A completion refused says why, in one word (queue.refusals, queue.complete_many_outcomes):
-- gone, retry_pending, pending_again, claimed_again, aborted, timed_out, expired; null where
-- the token holds. complete_many_outcomes completes what complete_many completes, and the
-- AN001 queue.complete raises for the same pair says the same in words.
begin;
\ir ../_fixtures.psql
select plan(13);

create function andal_test.an001_detail(job_id bigint, token uuid) returns text
language plpgsql as $$
declare
    v_detail text;
begin
    perform queue.complete(job_id => an001_detail.job_id, token => an001_detail.token);
    return 'completed';
exception when sqlstate 'AN001' then
    get stacked diagnostics v_detail = pg_exception_detail;
    return v_detail;
end
$$;

-- jobs 1..8 (k): 4 in queue a, 8 in queue t (with a timeout), the others in r
select queue.enqueue('{}', queue => 'r') from generate_series(1, 3) \g /dev/null
select queue.enqueue('{}', queue => 'a') \g /dev/null
select queue.enqueue('{}', queue => 'r') from generate_series(1, 3) \g /dev/null
select queue.enqueue('{}', queue => 't', timeout => interval '1 second') \g /dev/null
create temp table c on commit drop as
select row_number() over (order by c.job_id) as k, c.job_id, c.token
from queue.claim(worker => 'w', queues => array['r', 'a', 't'], batch => 8) as c;

-- 1 gone (completed), 2 retry_pending (failed, retried in an hour), 3 pending_again
-- (released), 4 claimed_again (taken back and claimed by w2), 5 aborted (cancel of a running
-- job), 6 expired, 7 holds, 8 timed_out (its lease ran to the attempt's deadline)
select queue.complete(job_id => job_id, token => token) from c where k = 1 \g /dev/null
select queue.fail(job_id => job_id, token => token, error => 'x', retry_in => interval '1 hour')
from c where k = 2 \g /dev/null
select queue.release(job_id => job_id, token => token) from c where k = 3 \g /dev/null
select andal_test.expire(job_id) from c where k = 4 \g /dev/null
select queue._reap() \g /dev/null
select queue.claim(worker => 'w2', queues => array['a'], batch => 1) \g /dev/null
select queue.cancel(job_id => job_id) from c where k = 5 \g /dev/null
select andal_test.expire(job_id) from c where k in (6, 8) \g /dev/null
update queue.jobs as j set claimed_at = j.lease_expires_at - j.timeout
from c where c.k = 8 and j.id = c.job_id;

select results_eq($$
    select r.refused from queue.refusals(job_ids => array(select job_id from c order by k),
        tokens => array(select token from c order by k)) as r $$,
    array['gone', 'retry_pending', 'pending_again', 'claimed_again', 'aborted', 'expired', null,
        'timed_out'],
    'queue.refusals: one word per pair, in input order, null where the token holds');
select results_eq($$
    select r.refused from queue.refusals(job_ids => array[null, 1]::bigint[],
        tokens => array[gen_random_uuid(), null]) as r $$,
    array[null, null]::text[], 'a pair with a null id or token answers null');
select throws_ok($$ select queue.refusals(job_ids => null, tokens => array[]::uuid[]) $$,
    '22004', null, 'null arrays: 22004');
select throws_ok(
    $$ select queue.refusals(job_ids => array[1]::bigint[], tokens => array[]::uuid[]) $$,
    '22023', null, 'arrays of different lengths: 22023');

-- queue.complete's AN001 says the same in words
select matches(andal_test.an001_detail(c.job_id, c.token), v.words,
    format('AN001 of job %s (%s) says %s', c.k, v.word, v.words))
from c join (values (1, 'gone', 'no longer live'), (2, 'retry_pending', 'waits for its retry'),
    (3, 'pending_again', 'pending again \(its lease'), (4, 'claimed_again', 'claimed again'),
    (5, 'aborted', 'abort of job'), (6, 'expired', 'expired at'),
    (8, 'timed_out', 'past its timeout')) as v (k, word, words) on v.k = c.k
order by c.k;

select results_eq($$
    select o.job_id, o.completed, o.refused from queue.complete_many_outcomes(
        job_ids => array(select job_id from c where k in (5, 6, 7) order by k desc),
        tokens => array(select token from c where k in (5, 6, 7) order by k desc)) as o $$,
    $$ select job_id, k = 7, case k when 5 then 'aborted' when 6 then 'expired' end
       from c where k in (5, 6, 7) order by k desc $$,
    'complete_many_outcomes: completed, or the word why not, in input order');
select is((select count(*) from queue.jobs as j join c on c.job_id = j.id where c.k = 7),
    0::bigint, 'the job whose token held is completed');

select * from finish();
rollback;
