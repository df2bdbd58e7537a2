-- A parent that ends dead or cancelled cancels its waiting children (policy cancel, the
-- default: reason parent_failed, state cancelled, recursively, in the same transaction) or
-- counts as ended for them (policy run: the child runs and reads what happened). A parent
-- already dead when the child is enqueued applies the policy at once; one already
-- completed counts as ended.
begin;
\ir ../_fixtures.psql
select plan(11);

select queue.configure_queue(queue => 'wp', max_attempts => 1) is not null as configured \gset
select queue.enqueue('{}', queue => 'wp') as p \gset
select queue.enqueue('{}', after => array[:p]::bigint[], queue => 'wc') as c \gset
select queue.enqueue('{}', after => array[:c]::bigint[], queue => 'wc') as g \gset
select queue.enqueue('{}', after => array[:p]::bigint[], queue => 'wc',
    on_parent_failure => 'run') as r \gset
select job_id as pj, token as pt from queue.claim('w', queues => '{wp}') \gset
select queue.fail(:pj, :'pt', 'boom') \g /dev/null
select is((select state from queue.job(:p)), 'dead', 'the parent is dead');
select is((select state from queue.job(:c)), 'cancelled', 'its child is cancelled');
select is((select reason from queue.dead_letters where job_id = :c), 'parent_failed',
    'with reason parent_failed');
select is((select state from queue.job(:g)), 'cancelled', 'and the grandchild, recursively');
select is((select state from queue.job(:r)), 'pending', 'a child with policy run is released');
select results_eq(format('select parent_id, state from queue.parent_results(%s)', :r),
    format('values (%s::bigint, %L::text)', :p, 'dead'), 'and reads that its parent died');

select queue.enqueue('{}', after => array[:p]::bigint[], queue => 'wc') as late \gset
select is((select state from queue.job(:late)), 'cancelled',
    'a parent already dead cancels a new child at once');
select queue.enqueue('{}', after => array[:p]::bigint[], queue => 'wc',
    on_parent_failure => 'run') as late_run \gset
select is((select state from queue.job(:late_run)), 'pending', 'or lets it run (policy run)');

select queue.enqueue('{}', queue => 'wp') as q \gset
select job_id as qj, token as qt from queue.claim('w', queues => '{wp}') \gset
select queue.complete(:qj, :'qt');
select queue.enqueue('{}', after => array[:q]::bigint[], queue => 'wc') as after_done \gset
select is((select state from queue.job(:after_done)), 'pending',
    'a parent already completed counts as ended');

select queue.enqueue('{}', queue => 'wp') as x \gset
select queue.enqueue('{}', after => array[:x]::bigint[], queue => 'wc') as xc \gset
select queue.cancel(:x);
select is((select state from queue.job(:xc)), 'cancelled', 'cancel of a parent cancels its child');
select is((select count(*) from queue.jobs where status = 'waiting'), 0::bigint,
    'no job is left waiting');

select * from finish();
rollback;
