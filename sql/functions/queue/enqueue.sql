-- queue.enqueue: add one job; returns its id.
--
-- Guarantees: the job is visible to claimers when the caller's transaction commits (so a
-- rolled-back enqueue never runs). A dedup_key equal to that of a live (pending or running)
-- job of the same queue returns that job's id and inserts nothing, also under concurrent
-- enqueues. One NOTIFY on channel andal_jobs (payload: the queue name) per transaction and
-- queue, unless the queue's notify is off or the job is delayed. With cache_key and
-- cache_value the value is written through to the shared cache in the same transaction (C7);
-- the job then carries the cache version it needs (cache_version).
-- Raises: 22004 null payload or queue; 22023 non-object payload, a delay or priority out of
-- bounds (queue.config), max_attempts < 1, empty or over-long names, JSON null cache_value;
-- 54000 payload over the queue's limit, cache_value over the cache's.
create or replace function queue.enqueue(
    payload jsonb,
    queue text default 'default',
    category text default null,
    priority int default 0,
    delay interval default '0',
    max_attempts int default null,
    dedup_key text default null,
    cache_key text default null,
    cache_value jsonb default null
) returns bigint
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_cfg queue.queues;
    v_id bigint;
    v_inserted boolean := false;
    v_version bigint;
begin
    perform queue._check_name(enqueue.queue, 'queue');
    perform queue._check_name(enqueue.category, 'category', false);
    perform queue._check_name(enqueue.dedup_key, 'dedup_key', false, 512);
    perform queue._check_name(enqueue.cache_key, 'cache_key', false, 512);
    perform queue._check_interval(enqueue.delay, 'delay', bound => 'delay');
    if enqueue.priority is null or enqueue.priority <> 0 then
        perform queue._check_priority(enqueue.priority);  -- 0 is always allowed
    end if;
    if enqueue.max_attempts is not null and enqueue.max_attempts < 1 then
        raise exception 'max_attempts must be at least 1 (got %)', enqueue.max_attempts
            using errcode = '22023';
    end if;
    if enqueue.cache_value is not null and enqueue.cache_key is null then
        raise exception 'cache_value needs a cache_key' using errcode = '22023';
    end if;
    if enqueue.payload is null then
        raise exception 'payload must not be null' using errcode = '22004';
    end if;
    -- every argument is checked before anything is written (no sequence advances for a
    -- rejected call), and a cache_value also when a live job already holds the dedup key
    if enqueue.cache_value is not null then
        perform cache._check_value(enqueue.cache_value, 'cache_value');
    end if;
    v_cfg := queue._config(enqueue.queue);
    perform queue._check_payload(enqueue.payload, 'payload', v_cfg.payload_limit);
    if enqueue.category is not null then
        perform queue._category_id(enqueue.category);
    end if;

    loop
        insert into queue.jobs as j (
            queue, category, priority, payload, max_attempts, available_at, dedup_key,
            cache_key
        ) values (
            enqueue.queue, enqueue.category, enqueue.priority, enqueue.payload,
            coalesce(enqueue.max_attempts, v_cfg.max_attempts), now() + enqueue.delay,
            enqueue.dedup_key, enqueue.cache_key
        )
        on conflict (queue, dedup_key) where dedup_key is not null do nothing
        returning j.id into v_id;
        if v_id is not null then
            v_inserted := true;
            exit;
        end if;
        -- A live job holds the key; it may finish between the conflict and this read: retry.
        select j.id into v_id from queue.jobs as j
        where j.queue = enqueue.queue and j.dedup_key = enqueue.dedup_key;
        exit when v_id is not null;
    end loop;

    if v_inserted then
        if enqueue.cache_key is not null then
            if enqueue.cache_value is not null then
                v_version := cache._write_through(enqueue.cache_key, enqueue.cache_value);
            else
                v_version := cache._current_version(enqueue.cache_key);
            end if;
            update queue.jobs as j set cache_version = v_version where j.id = v_id;
        end if;
        if v_cfg.notify and enqueue.delay <= interval '0' then
            perform pg_notify('andal_jobs',
                case when coalesce(current_setting('andal.notify_names', true), '') <> 'off'
                    then enqueue.queue else '' end);
        end if;
    end if;
    return v_id;
end
$$;

comment on function queue.enqueue(jsonb, text, text, int, interval, int, text, text, jsonb) is
'Add a job; returns its id (or the id of the live job with the same dedup_key).';
revoke all on function queue.enqueue(jsonb, text, text, int, interval, int, text, text, jsonb)
from public;
grant execute on function queue.enqueue(jsonb, text, text, int, interval, int, text, text, jsonb)
to andal_producer, andal_admin;
