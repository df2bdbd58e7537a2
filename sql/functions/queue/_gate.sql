-- The category gate's private pieces: category ids, the slot of a job, and which
-- categories are full. queue.claim takes the gate's row lock and fills the slots.
-- Private: granted to nobody.

-- _category_id: the id of a category, created (limit 1) on first use. By its unique index
-- whatever the statistics say: after the table was vacuumed empty, a sequential scan looks
-- cheapest, and thousands of new names in one transaction made each lookup read them all.
create or replace function queue._category_id(category_name text) returns bigint
language plpgsql
set search_path = pg_catalog, pg_temp
set enable_seqscan = off
as $$
declare
    v_id bigint;
begin
    select c.id into v_id from queue.categories as c where c.category = category_name;
    if v_id is null then
        insert into queue.categories as c (category) values (category_name)
        on conflict (category) do nothing;
        select c.id into v_id from queue.categories as c where c.category = category_name;
    end if;
    return v_id;
end
$$;

-- The category gate locks the category's row now (see queue.claim); the advisory key that
-- any role could take is gone.
drop function if exists queue._gate_key(bigint);
-- _free_slots: free the category slots of job_ids (their rows in queue.worker_locks; by
-- primary key; queues[i] is the queue of job_ids[i]). Every path that ends or gives back a
-- gated job's attempt calls it. When a category was full before this free (claimers of it
-- were turned away), the queue of each freed job gets the ready hint (queue._notify_ready),
-- so its workers need not wait for their poll; a hint, as every notification: a listener
-- claims and may find nothing. A queue that shares the category but had no slot freed here
-- learns by its own poll or queue.next_available. The one-job form (complete, fail,
-- release, cancel, take-back) is three primary-key or index probes, so the hint costs a
-- gated completion next to nothing (a pgbench drain of 1,000 categories of limit 1 ran
-- within the noise of a plain delete).
drop function if exists queue._free_slots(bigint[]);
create or replace function queue._free_slots(job_ids bigint[], queues text[]) returns void
language plpgsql
set search_path = pg_catalog, pg_temp
set enable_seqscan = off
as $$
declare
    v_cat bigint;
    v_max int;
    v_queue text;
begin
    if cardinality(_free_slots.job_ids) = 1 then
        delete from queue.worker_locks as w where w.job_id = _free_slots.job_ids[1]
        returning w.category_id into v_cat;
        if v_cat is not null then
            select c.max_running into v_max from queue.categories as c where c.id = v_cat;
            -- full before this free: the slots left, and the one just freed
            if v_max > 0 and (select count(*) from queue.worker_locks as w
                              where w.category_id = v_cat) + 1 >= v_max then
                perform queue._notify_ready(_free_slots.queues[1]);
            end if;
        end if;
        return;
    end if;
    for v_queue in
        with freed as (
            delete from queue.worker_locks as w where w.job_id = any (_free_slots.job_ids)
            -- each freed slot's limit by primary key (a join let the planner hash every
            -- category: a read that grew with the number of categories)
            returning w.job_id, w.category_id, (
                select c.max_running from queue.categories as c where c.id = w.category_id
            ) as max_running
        )
        select distinct q.queue
        from freed as f
        join unnest(_free_slots.job_ids, _free_slots.queues) as q (job_id, queue)
            on q.job_id = f.job_id
        where f.max_running > 0
            -- full before this free: the statement's snapshot still holds the freed slots
            and (select count(*) from queue.worker_locks as w
                 where w.category_id = f.category_id) >= f.max_running
    loop
        perform queue._notify_ready(v_queue);
    end loop;
end
$$;

-- _full_categories: the categories a claim at `at` (the database's current time) cannot take
-- a job of: paused ones (max_running 0), and those with as many live slots as their limit.
-- A slot whose job's lease expired is not live: it never holds its category against claims
-- of other queues until its own queue is reaped. Only categories whose slot rows reach the
-- limit are checked against the leases (a probe per slot), so the common case reads the
-- slot counts alone. PL/pgSQL, not SQL: a SQL function with a SET clause is never inlined, and
-- its plan, kept by the calling expression for the transaction, would not see
-- queue.set_shards replace the partitions.
create or replace function queue._full_categories(at timestamptz) returns text []
language plpgsql stable
set search_path = pg_catalog, pg_temp
as $$
begin
    return (select coalesce(array_agg(f.category), '{}')
    from (
        select c.category from queue.categories as c where c.max_running = 0
        union all
        select c.category
        from (select w.category_id, count(*) as n from queue.worker_locks as w group by 1) as r
        join queue.categories as c on c.id = r.category_id
        where r.n >= c.max_running and c.max_running > 0
          and (select count(*) from queue.worker_locks as w
               join queue.jobs as j on j.id = w.job_id
               where w.category_id = c.id and j.lease_expires_at > _full_categories.at)
              >= c.max_running
    ) as f);
end
$$;

revoke all on function queue._category_id(text) from public;
revoke all on function queue._free_slots(bigint[], text[]) from public;
revoke all on function queue._full_categories(timestamptz) from public;
