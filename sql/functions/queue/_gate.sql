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
-- primary key). Every path that ends or gives back a gated job's attempt calls it.
create or replace function queue._free_slots(job_ids bigint[]) returns void
language plpgsql
set search_path = pg_catalog, pg_temp
set enable_seqscan = off
as $$
begin
    delete from queue.worker_locks as w where w.job_id = any (_free_slots.job_ids);
end
$$;

-- _full_categories: the categories a claim at `at` (the database's current time) cannot take
-- a job of: paused ones (max_running 0), and those with as many live slots as their limit.
-- A slot whose job's lease expired is not live: it never holds its category against claims
-- of other queues until its own queue is reaped. Only categories whose slot rows reach the
-- limit are checked against the leases (a probe per slot), so the common case reads the
-- slot counts alone.
create or replace function queue._full_categories(at timestamptz) returns text []
language sql stable
set search_path = pg_catalog, pg_temp
as $$
    select coalesce(array_agg(f.category), '{}')
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
    ) as f
$$;

revoke all on function queue._category_id(text) from public;
revoke all on function queue._free_slots(bigint[]) from public;
revoke all on function queue._full_categories(timestamptz) from public;
