-- cache.refresh_due enqueues one refresh job per view past its change budget (queue
-- andal.refresh, payload {"view": ...}, category 'refresh:<view>', dedup by view): asking
-- again while it is live returns the same job; views within budget and lag get none.
-- (Pending changes are simulated by moving seen_changes: the statistics that count row
-- changes only see committed transactions.)
begin;
\ir ../_fixtures.psql
select plan(8);

create table andal_cache_test.t (id int primary key, v int);
create materialized view andal_cache_test.mv as select id, v from andal_cache_test.t;
create unique index on andal_cache_test.mv (id);
create materialized view andal_cache_test.calm as select id from andal_cache_test.t;
create unique index on andal_cache_test.calm (id);
select cache.register_view('andal_cache_test.mv', '1 hour', 3);
select cache.register_view('andal_cache_test.calm', '1 hour', 1000);
select cache.track('andal_cache_test.mv', 'andal_cache_test.t');
select cache.track('andal_cache_test.calm', 'andal_cache_test.t');

select is_empty($$ select * from cache.refresh_due() $$, 'no change: nothing due');
update cache.views set seen_changes = seen_changes - 2;
select is_empty($$ select * from cache.refresh_due() $$, 'two changes: within budget');

update cache.views set seen_changes = seen_changes - 1
where view = 'andal_cache_test.mv'::regclass;
select * from cache.refresh_due() \gset due_
select is(:'due_view'::text, 'andal_cache_test.mv', 'three changes: the view is due');
select is(:due_pending::bigint, 3::bigint, 'with its pending changes');
select results_eq($$ select queue, payload, category, dedup_key from queue.jobs $$,
    $$ values ('andal.refresh', '{"view": "andal_cache_test.mv"}'::jsonb,
        'refresh:andal_cache_test.mv', 'andal_cache_test.mv') $$,
    'one refresh job, gated and deduplicated by view');

update cache.views set seen_changes = seen_changes - 1
where view = 'andal_cache_test.mv'::regclass;
select is((select job_id from cache.refresh_due() where view = 'andal_cache_test.mv'::regclass),
    :due_job_id::bigint,
    'asking again returns the live job');
select is((select count(*) from queue.jobs), 1::bigint, 'and adds none');

-- The lag rule: a view with any pending change is due once its data is max_lag old.
update cache.views set registered_at = now() - interval '2 hours'
where view = 'andal_cache_test.calm'::regclass;
select is((select count(*) from cache.refresh_due() where view = 'andal_cache_test.calm'::regclass),
    1::bigint, 'past max_lag: due with one change');

select * from finish();
rollback;
