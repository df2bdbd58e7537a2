-- requeue_dead of a failed parent leaves its cancelled children dead letters, unless asked:
-- with_children => true brings them (and theirs) back, waiting for the parent again.
begin;
\ir ../_fixtures.psql
select plan(6);

select queue.enqueue('{}', queue => 'wp') as p \gset
select queue.enqueue('{}', queue => 'wp') as p2 \gset
select queue.enqueue('{}', after => array[:p]::bigint[], queue => 'wc') as c \gset
select queue.enqueue('{}', after => array[:c]::bigint[], queue => 'wc') as g \gset
select queue.enqueue('{}', after => array[:p2]::bigint[], queue => 'wc') as c2 \gset
select queue.cancel(:p);
select queue.cancel(:p2);
select queue.requeue_dead(:p2);
select is((select state from queue.job(:c2)), 'cancelled', 'requeue_dead alone: the child stays cancelled');

select queue.requeue_dead(:p, with_children => true);
select is((select state from queue.job(:c)), 'waiting', 'with_children: the child waits again');
select is((select state from queue.job(:g)), 'waiting', 'and the grandchild');
select job_id as pj, token as pt from queue.claim('w', queues => '{wp}', batch => 1) \gset
select queue.complete(:pj, :'pt');
select queue.complete(job_id, token) from queue.claim('w', queues => '{wp}', batch => 1);
select is((select state from queue.job(:c)), 'pending', 'the requeued parent releases it');
select is((select state from queue.job(:g)), 'waiting', 'the grandchild waits for it');
select is((select count(*) from queue.dead_letters), 1::bigint, 'only the child of the other is dead');

select * from finish();
rollback;
