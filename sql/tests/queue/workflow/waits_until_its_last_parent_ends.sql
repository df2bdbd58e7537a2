-- A job enqueued with after waits (state waiting, never claimed) until every parent has
-- ended, and is claimable in the transaction that ends the last one: a chain and a fan-in,
-- ended by complete and by complete_many.
begin;
\ir ../_fixtures.psql
select plan(9);

select queue.enqueue('{"n": 1}', queue => 'wp') as a \gset
select queue.enqueue('{"n": 2}', queue => 'wp') as b \gset
select queue.enqueue('{"fan": "in"}', after => array[:a, :b]::bigint[], queue => 'wc') as c \gset
select queue.enqueue('{"chain": 2}', after => array[:c]::bigint[], queue => 'wc') as d \gset
select is((select state from queue.job(:c)), 'waiting', 'a child is waiting');
select is((select count(*) from queue.claim('w', queues => '{wc}', batch => 10)), 0::bigint,
    'a waiting job is never claimed');

select array_agg(job_id order by job_id) as ids, array_agg(token order by job_id) as toks
from queue.claim('w', queues => '{wp}', batch => 2) \gset
select queue.complete(:a, (:'toks'::uuid[])[1]);
select is((select state from queue.job(:c)), 'waiting', 'one parent of two ended: still waiting');
select is((select waiting_on from queue.jobs where id = :c), 1, 'it counts the parent left');
select is((select bool_and(completed) from queue.complete_many(array[:b, :b]::bigint[],
    array[(:'toks'::uuid[])[2], (:'toks'::uuid[])[2]])), true, 'the last parent completes');
select is((select state from queue.job(:c)), 'pending', 'the child is pending now');
select is((select state from queue.job(:d)), 'waiting', 'its own child still waits');
select job_id as cj, token as ct from queue.claim('w', queues => '{wc}', batch => 10) \gset
select is(:cj::bigint, :c::bigint, 'the claim takes the released child, only it');
select queue.complete(:cj, :'ct');
select is((select state from queue.job(:d)), 'pending', 'the chain goes on');

select * from finish();
rollback;
