-- _set_partition(k, n): new job ids are = k (mod n), above every id in use (live jobs, dead
-- letters, the sequence), so none is reused; _partition() reports (k, n); a second call
-- with the same k and n changes nothing; dead letters keep the job's id.
begin;
\ir ../_fixtures.psql
select plan(9);

select is((select row(k, n)::text from queue._partition()), '(,)', 'not partitioned: nulls');
select queue.enqueue('{}', queue => 'a') as first_id \gset
select queue.fail(c.job_id, c.token, 'boom', retryable => false)
from queue.claim('w', array['a']) as c \g /dev/null
select ok(queue._set_partition(3, 4) > :first_id, 'the next id is above every id in use');
select is((select row(k, n)::text from queue._partition()), '(3,4)', '_partition() says 3 of 4');
select queue.enqueue('{}', queue => 'a') as a_id \gset
select queue.enqueue('{}', queue => 'b') as b_id \gset
select is(:a_id::bigint % 4, 3::bigint, 'a new id is 3 mod 4');
select is(:b_id::bigint - :a_id, 4::bigint, 'ids step by 4');
select ok(:a_id > :first_id, 'no id is reused');
select is(queue._set_partition(3, 4), (:b_id + 4)::bigint, 'again: the same numbering');
select queue.enqueue('{}', queue => 'a') as c_id \gset
select is(:c_id::bigint, (:b_id + 4)::bigint, 'and nothing skipped');
select is((select count(*) from queue.dead_letters where job_id = :first_id), 1::bigint,
    'the dead letter keeps its id');

select * from finish();
rollback;
