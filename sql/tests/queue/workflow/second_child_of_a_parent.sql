-- A parent's first child is read from the parent's row at its completion, a second child
-- from the edges: both are released, by complete and by complete_many, each exactly once;
-- a chain's links (each the only child of the one before) too.
begin;
\ir ../_fixtures.psql
select plan(6);

select queue.enqueue('{}', queue => 'wp') as p \gset
select queue.enqueue('{}', after => array[:p]::bigint[], queue => 'wc') as c1 \gset
select is((select only_child from queue.jobs where id = :p), :c1::bigint,
    'the first child is the parent''s only child');
select queue.enqueue('{}', after => array[:p]::bigint[], queue => 'wc') as c2 \gset
select is((select only_child from queue.jobs where id = :p), null::bigint,
    'a second one makes it read its edges');
select job_id as pj, token as pt from queue.claim('w', queues => '{wp}') \gset
select queue.complete(:pj, :'pt');
select is((select array_agg(state order by job_id) from queue.jobs_by(queue => 'wc')),
    array['pending', 'pending'], 'both children are released');

select queue.enqueue('{}', queue => 'wq') as a \gset
select queue.enqueue('{}', queue => 'wq') as b \gset
select queue.enqueue('{}', after => array[:a, :b]::bigint[], queue => 'wd') as d \gset
select queue.enqueue('{}', after => array[:a]::bigint[], queue => 'wd') as e \gset
select array_agg(job_id) as ids, array_agg(token) as toks
from queue.claim('w', queues => '{wq}', batch => 2) \gset
select is((select count(*) filter (where completed) from queue.complete_many(:'ids'::bigint[],
    :'toks'::uuid[])), 2::bigint, 'complete_many ends both parents');
select is((select array[waiting_on] from queue.jobs where id = :d), array[0],
    'the child of both is counted down twice, once per parent');
select is((select array_agg(state order by job_id) from queue.jobs_by(queue => 'wd')),
    array['pending', 'pending'], 'the parent''s only child and the shared child are released');

select * from finish();
rollback;
