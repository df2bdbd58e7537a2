-- Fan-in: a child of 2,000 parents completed by complete_many in batches is released once,
-- by the batch that ends the last of them. Fan-out: 2,000 children of one parent are all
-- released by the parent's complete.
begin;
\ir ../_fixtures.psql
select plan(6);

select array_agg(id) as parents from queue.enqueue_many(
    array(select '{}'::jsonb from generate_series(1, 2000)), queue => 'wp') as id \gset
select queue.enqueue('{"fan": "in"}', after => :'parents'::bigint[], queue => 'wc') as c \gset
select is((select waiting_on from queue.jobs where id = :c), 2000, 'it waits for 2,000 parents');
create temp table done (ord serial, completed boolean, child text);
do $$
declare
    v_ids bigint[];
    v_toks uuid[];
begin
    for v_b in 1 .. 4 loop
        select array_agg(k.job_id), array_agg(k.token) into v_ids, v_toks
        from queue.claim('w', queues => '{wp}', batch => 500) as k;
        insert into done (completed) select c.completed from queue.complete_many(v_ids, v_toks) as c;
        insert into done (child) select j.state from queue.job(
            (select max(e.child_id) from queue.job_edges as e where e.parent_id = v_ids[1])) as j;
    end loop;
end
$$;
select is((select count(*) filter (where completed) from done), 2000::bigint,
    'every parent completed');
select is((select array_agg(child order by ord) from done where child is not null),
    array['waiting', 'waiting', 'waiting', 'pending'],
    'the child waited until the last batch');
select is((select state from queue.job(:c)), 'pending', 'the child is released, once');

select queue.enqueue('{}', queue => 'wp') as p \gset
select array_agg(id) as kids from queue.enqueue_many(
    array(select '{}'::jsonb from generate_series(1, 2000)), after => array[:p]::bigint[],
    queue => 'wk') as id \gset
select is((select count(*) from queue.jobs where status = 'waiting' and queue = 'wk'),
    2000::bigint, '2,000 children wait');
select job_id as pj, token as pt from queue.claim('w', queues => '{wp}') \gset
select queue.complete(:pj, :'pt');
select is((select count(*) from queue.jobs where status = 'pending' and queue = 'wk'),
    2000::bigint, 'the parent''s complete releases all of them');

select * from finish();
rollback;
