-- The claim's direct path (every queue or one queue, in one statement: queue._claim_direct)
-- keeps a copy of the lease formula of queue._lease_taken (the general path's). Both give
-- the same lease for the claim's lease, the queue's, the default, and a timeout that caps it.
begin;
\ir ../_fixtures.psql
select plan(12);

select queue.configure_queue(queue => 'kept', lease => interval '45 seconds') \g /dev/null

create function andal_test.lease_of(queues text[], queue_name text, lease interval,
    timeout interval) returns interval
language plpgsql as $$
declare
    v_id bigint;
begin
    perform queue.enqueue('{}', queue => queue_name, timeout => timeout);
    select c.job_id into v_id
    from queue.claim(worker => 'w', queues => queues, lease => lease) as c;
    return (select j.lease_expires_at - j.claimed_at from queue.jobs as j where j.id = v_id);
end
$$;

select is(andal_test.lease_of(array[q], q, l, t), want,
        format('direct path, one queue: %s', what))
from (values
    ('free', interval '30 seconds', null::interval, interval '30 seconds', 'the claim''s lease'),
    ('kept', null, null, interval '45 seconds', 'the queue''s lease'),
    ('free', null, null, interval '60 seconds', 'the default'),
    ('kept', interval '30 seconds', interval '10 seconds', interval '10 seconds',
        'capped by the timeout')
) as v (q, l, t, want, what);
select is(andal_test.lease_of(null, q, l, t), want,
        format('direct path, every queue: %s', what))
from (values
    ('free', interval '30 seconds', null::interval, interval '30 seconds', 'the claim''s lease'),
    ('kept', null, null, interval '45 seconds', 'the queue''s lease'),
    ('free', null, null, interval '60 seconds', 'the default'),
    ('kept', interval '30 seconds', interval '10 seconds', interval '10 seconds',
        'capped by the timeout')
) as v (q, l, t, want, what);
select is(andal_test.lease_of(array[q, 'none'], q, l, t), want,
        format('general path (two queues): %s', what))
from (values
    ('free', interval '30 seconds', null::interval, interval '30 seconds', 'the claim''s lease'),
    ('kept', null, null, interval '45 seconds', 'the queue''s lease'),
    ('free', null, null, interval '60 seconds', 'the default'),
    ('kept', interval '30 seconds', interval '10 seconds', interval '10 seconds',
        'capped by the timeout')
) as v (q, l, t, want, what);

select * from finish();
rollback;
