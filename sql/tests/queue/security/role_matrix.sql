-- Who may execute what: andal_producer enqueues, andal_worker runs jobs, andal_admin does
-- everything; private helpers (queue._*) are executable by none of them. Every public
-- function of the queue schema must appear in the matrix.
begin;
\ir ../_fixtures.psql
select plan(4);

create temp table matrix (fn text, producer boolean, worker boolean, admin boolean);
insert into matrix values
    ('queue.enqueue(jsonb,text,text,integer,interval,integer,text,text,jsonb)', true, false, true),
    ('queue.enqueue_many(jsonb[],text,text,integer,interval,integer,text[])', true, false, true),
    ('queue.enqueue(jsonb,jsonb,text,text,integer,interval,integer,text,text,jsonb,interval)',
        true, false, true),
    ('queue.trace_contexts(bigint[])', false, true, true),
    ('queue.enqueue(jsonb,interval,text,text,integer,interval,integer,text,text,jsonb)', true,
        false, true),
    ('queue.enqueue_many(jsonb[],interval,text,text,integer,interval,integer,text[])', true,
        false, true),
    ('queue.claim(text,text[],integer,interval,boolean)', false, true, true),
    ('queue.configure_queue(text,interval,integer,interval,text,interval,interval,real,'
        'boolean,integer,boolean,text,interval,interval)', false, false, true),
    ('queue.schedule(text,text,text,interval,jsonb,text,text,integer,integer,text,integer,'
        'boolean)', false, false, true),
    ('queue.unschedule(text)', false, false, true),
    ('queue.set_rate_limit(text,integer,interval)', false, false, true),
    ('queue.schedules()', false, true, true),
    ('queue.claim(text,text[],integer,interval)', false, true, true),
    ('queue.complete(bigint,uuid,jsonb)', false, true, true),
    ('queue.complete_many(bigint[],uuid[],jsonb[])', false, true, true),
    ('queue.complete_many_outcomes(bigint[],uuid[],jsonb[])', false, true, true),
    ('queue.refusals(bigint[],uuid[])', false, true, true),
    ('queue.vacuum_due(interval)', false, true, true),
    ('queue.fail(bigint,uuid,text,interval,boolean)', false, true, true),
    ('queue.fail_outcome(bigint,uuid,text,interval,boolean)', false, true, true),
    ('queue.complete_many_then_claim(bigint[],uuid[],jsonb[],text,text[],integer,interval)',
        false, true, true),
    ('queue.heartbeat(bigint,uuid,interval)', false, true, true),
    ('queue.heartbeat_many(bigint[],uuid[],interval)', false, true, true),
    ('queue.release(bigint,uuid,interval)', false, true, true),
    ('queue.maintain()', false, true, true),
    ('queue.status()', false, true, true),
    ('queue.stats()', false, true, true),
    ('queue.metrics()', false, true, true),
    ('queue.workers()', false, true, true),
    ('queue.next_available(text[])', false, true, true),
    ('queue.registered_workers()', false, true, true),
    ('queue.unserved_queues()', false, true, true),
    ('queue.register_worker(text,text,integer,text[],integer,text,interval)', false, true, true),
    ('queue.unregister_worker(text)', false, true, true),
    ('queue.stats_by_minute(interval)', false, true, true),
    ('queue.category_limits()', false, true, true),
    ('queue.queue_settings(text)', false, true, true),
    ('queue.rate_limits()', false, true, true),
    ('queue.version()', true, true, true),
    ('queue.roles()', true, true, true),
    ('queue.states()', true, true, true),
    ('queue.cancel(bigint)', false, false, true),
    ('queue.requeue_dead(bigint)', false, false, true),
    ('queue.purge_dead(interval)', false, false, true),
    ('queue.purge_dead_jobs(bigint[])', false, false, true),
    ('queue.purge_dead_matching(text,text,interval,integer)', false, false, true),
    ('queue.dead_letters_by(text,text,bigint,integer)', false, false, true),
    ('queue.requeue_dead_matching(text,text,interval,integer)', false, false, true),
    ('queue.list_dead(text,integer)', false, false, true),
    ('queue.configure_queue(text,integer,interval,text,interval,interval,real,boolean,integer,'
        'boolean,text)', false, false, true),
    ('queue.set_category_limit(text,integer)', false, false, true),
    ('queue.shards()', false, false, true),
    ('queue.shard_of(text)', true, true, true),
    ('queue.set_shards(integer)', false, false, true),
    ('queue.job(bigint)', true, true, true),
    ('queue.jobs_by(text,text,bigint,integer)', true, true, true),
    ('queue.job_payload(bigint)', false, false, true),
    ('queue.job_origin(bigint)', true, true, true),
    ('queue.pause(text)', false, false, true),
    ('queue.resume(text)', false, false, true),
    ('queue.heartbeat(bigint,uuid,boolean,interval)', false, true, true),
    ('queue.heartbeat_many(bigint[],uuid[],boolean,interval)', false, true, true),
    ('queue.idle(text[])', false, true, true),
    ('queue.busy()', false, true, true),
    ('queue.set_history(text,interval)', false, false, true),
    ('queue.configure_history(interval)', false, false, true),
    ('queue.watch(bigint)', true, true, true),
    ('queue.enqueue(jsonb,bigint[],text,text,integer,interval,integer,text,jsonb,interval,'
        'jsonb,text)', true, false, true),
    ('queue.enqueue_many(jsonb[],bigint[],text,text,integer,interval,integer,interval,text)',
        true, false, true),
    ('queue.parent_results(bigint)', true, true, true),
    ('queue.child_jobs(bigint)', true, true, true),
    ('queue.requeue_dead(bigint,boolean)', false, false, true);

-- andal_monitor only reads: statistics, workers and job lookups, nothing that writes.
create temp table monitor_may (fn text);
insert into monitor_may values
    ('queue.status()'), ('queue.stats()'), ('queue.metrics()'), ('queue.workers()'),
    ('queue.next_available(text[])'), ('queue.registered_workers()'),
    ('queue.version()'), ('queue.roles()'), ('queue.states()'), ('queue.job(bigint)'), ('queue.jobs_by(text,text,bigint,integer)'),
    ('queue.stats_by_minute(interval)'), ('queue.category_limits()'), ('queue.schedules()'),
    ('queue.queue_settings(text)'), ('queue.rate_limits()'), ('cache.stats(interval)'),
    ('queue.dead_letters_by(text,text,bigint,integer)'),
    ('queue.parent_results(bigint)'), ('queue.child_jobs(bigint)'),
    ('queue.job_origin(bigint)'), ('queue.unserved_queues()');

select is_empty(
    $$ select p.oid::regprocedure::text from pg_proc as p
       where p.pronamespace = 'queue'::regnamespace and p.proname not like '\_%'
         and p.oid::regprocedure::text not in (select fn from matrix) $$,
    'every public queue function is in the matrix');
select is_empty(
    $$ select m.fn, r.role, has_function_privilege(r.role, m.fn, 'execute') as has,
           r.expected
       from matrix as m
       cross join lateral (values ('andal_producer', m.producer), ('andal_worker', m.worker),
                                  ('andal_admin', m.admin)) as r (role, expected)
       where has_function_privilege(r.role, m.fn, 'execute') <> r.expected $$,
    'each role can execute exactly its functions');
select is_empty(
    $$ select p.oid::regprocedure::text, r.role from pg_proc as p
       cross join (values ('andal_producer'), ('andal_worker'), ('andal_admin')) as r (role)
       where p.pronamespace in ('queue'::regnamespace, 'cache'::regnamespace)
         and p.proname like '\_%'
         and has_function_privilege(r.role, p.oid, 'execute') $$,
    'no role can execute a private helper');
select is_empty(
    $$ select p.oid::regprocedure::text from pg_proc as p
       where p.pronamespace in ('queue'::regnamespace, 'cache'::regnamespace)
         and has_function_privilege('andal_monitor', p.oid, 'execute')
             <> (p.oid::regprocedure::text in (select fn from monitor_may)) $$,
    'andal_monitor can execute exactly the reading functions');

select * from finish();
rollback;
