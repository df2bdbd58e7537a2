-- cache._enqueue_refresh: make sure one refresh job for `key` is live in queue `queue_name`
-- (payload {"key": key}, dedup_key = key). Deduplicated by the queue across all workers: a
-- pending or running refresh of the key makes this a no-op, so a stampede of readers of one
-- missing or expired key yields one job. Returns the live job's id.
create or replace function cache._enqueue_refresh(key text, queue_name text) returns bigint
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_id bigint;
begin
    -- Read first: once the job exists, readers do not write at all.
    select j.id into v_id from queue.jobs as j
    where j.queue = queue_name and j.dedup_key = _enqueue_refresh.key;
    if v_id is null then
        v_id := queue.enqueue(payload => jsonb_build_object('key', _enqueue_refresh.key),
            queue => queue_name, dedup_key => _enqueue_refresh.key);
    end if;
    return v_id;
end
$$;

comment on function cache._enqueue_refresh(text, text) is
'Enqueue one refresh job for a key, deduplicated by key in the given queue.';
revoke all on function cache._enqueue_refresh(text, text) from public;
