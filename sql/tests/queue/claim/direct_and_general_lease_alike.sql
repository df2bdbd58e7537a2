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

-- the four cases, each claimed by each path: one queue and every queue take the direct path,
-- two queues the general one
create temp table cases (n int, q text, l interval, t interval, want interval, what text);
insert into cases values
    (1, 'free', interval '30 seconds', null, interval '30 seconds', 'the claim''s lease'),
    (2, 'kept', null, null, interval '45 seconds', 'the queue''s lease'),
    (3, 'free', null, null, interval '60 seconds', 'the default'),
    (4, 'kept', interval '30 seconds', interval '10 seconds', interval '10 seconds',
        'capped by the timeout');
select is(andal_test.lease_of(case p.k when 1 then array[c.q] when 3 then array[c.q, 'none'] end,
        c.q, c.l, c.t), c.want, format('%s: %s', p.path, c.what))
from (values (1, 'direct path, one queue'), (2, 'direct path, every queue'),
    (3, 'general path (two queues)')) as p (k, path)
cross join cases as c
order by p.k, c.n;

select * from finish();
rollback;
