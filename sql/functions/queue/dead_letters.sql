-- Dead-letter administration: requeue_dead, purge_dead, list_dead.

-- queue.requeue_dead: bring a dead job back as pending, ready now, with a fresh attempt count
-- (its error history is kept). Returns the job id (unchanged).
-- Raises: 22004 null job_id; 42704 no dead job with that id; 55000 the job is live, or a live
-- job holds its dedup_key (also one enqueued by a transaction that commits meanwhile).
create or replace function queue.requeue_dead(job_id bigint) returns bigint
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_dead queue.dead_letters;
begin
    if requeue_dead.job_id is null then
        raise exception 'job_id must not be null' using errcode = '22004';
    end if;
    delete from queue.dead_letters as d where d.job_id = requeue_dead.job_id returning d.* into v_dead;
    if v_dead.job_id is null then
        if exists (select from queue.jobs as j where j.id = requeue_dead.job_id) then
            raise exception 'job % is live, not dead', requeue_dead.job_id using errcode = '55000';
        end if;
        raise exception 'no dead job with id %', requeue_dead.job_id using errcode = '42704';
    end if;
    if v_dead.dedup_key is not null and exists (
        select from queue.jobs as j where j.queue = v_dead.queue and j.dedup_key = v_dead.dedup_key
    ) then
        raise exception 'a live job of queue % already holds dedup_key %',
            v_dead.queue, v_dead.dedup_key using errcode = '55000';
    end if;
    -- The check above cannot see an enqueue of the same key that has not committed yet: the
    -- insert waits for it and, when it commits, finds the key held (55000, not 23505).
    insert into queue.jobs as j (
        id, queue, category, priority, payload, attempt, max_attempts, enqueued_at,
        dedup_key, errors, cache_key
    ) overriding system value values (
        v_dead.job_id, v_dead.queue, v_dead.category, v_dead.priority, v_dead.payload, 0,
        v_dead.max_attempts, v_dead.enqueued_at, v_dead.dedup_key, v_dead.errors,
        v_dead.cache_key
    )
    on conflict (queue, dedup_key) where dedup_key is not null do nothing;
    if not found then
        raise exception 'a live job of queue % already holds dedup_key %',
            v_dead.queue, v_dead.dedup_key using errcode = '55000';
    end if;
    if v_dead.category is not null then
        perform queue._category_id(v_dead.category);
    end if;
    perform queue._notify_ready(v_dead.queue, (queue._config(v_dead.queue)).notify);
    return v_dead.job_id;
end
$$;

-- queue.purge_dead: delete dead letters that died more than older_than ago; returns how many.
-- Raises: 22004 null; 22023 negative interval.
create or replace function queue.purge_dead(older_than interval) returns bigint
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_count bigint;
begin
    perform queue._check_interval(purge_dead.older_than, 'older_than');
    delete from queue.dead_letters as d where d.died_at < now() - purge_dead.older_than;
    get diagnostics v_count = row_count;
    return v_count;
end
$$;

-- queue.list_dead: the newest dead letters, optionally of one queue.
create or replace function queue.list_dead(queue text default null, lim int default 100)
returns setof queue.dead_letters
language plpgsql stable
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
begin
    if list_dead.lim is null or list_dead.lim < 1 then
        raise exception 'lim must be at least 1 (got %)', list_dead.lim using errcode = '22023';
    end if;
    return query
    select d.* from queue.dead_letters as d
    where list_dead.queue is null or d.queue = list_dead.queue
    order by d.died_at desc, d.job_id desc
    limit list_dead.lim;
end
$$;

comment on function queue.requeue_dead(bigint) is
'Bring a dead job back as pending with a fresh attempt count.';
comment on function queue.purge_dead(interval) is 'Delete dead letters older than an interval.';
comment on function queue.list_dead(text, int) is 'The newest dead letters.';
revoke all on function queue.requeue_dead(bigint) from public;
revoke all on function queue.purge_dead(interval) from public;
revoke all on function queue.list_dead(text, int) from public;
grant execute on function queue.requeue_dead(bigint) to andal_admin;
grant execute on function queue.purge_dead(interval) to andal_admin;
grant execute on function queue.list_dead(text, int) to andal_admin;

-- queue.requeue_dead with children: requeue_dead, and with with_children true also the jobs
-- cancelled because this one failed (dead letters with reason parent_failed, children of a
-- workflow), recursively: each waits again for its parents still live. with_children false
-- (or null) is requeue_dead alone: the cancelled children stay dead letters. Returns the
-- job id (unchanged). Raises as requeue_dead.
create or replace function queue.requeue_dead(job_id bigint, with_children boolean)
returns bigint
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_id bigint := queue.requeue_dead(job_id => requeue_dead.job_id);
begin
    if coalesce(with_children, false) then
        perform queue._workflow_requeue(v_id);
    end if;
    return v_id;
end
$$;

comment on function queue.requeue_dead(bigint, boolean) is
'Bring a dead job back, and (with_children) the children cancelled because it failed.';
revoke all on function queue.requeue_dead(bigint, boolean) from public;
grant execute on function queue.requeue_dead(bigint, boolean) to andal_admin;
