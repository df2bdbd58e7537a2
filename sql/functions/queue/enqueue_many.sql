-- queue.enqueue_many: add many jobs of one queue in one statement; returns their ids in input
-- order.
--
-- Guarantees: all or nothing (one bad payload rejects the whole call and writes nothing); one
-- NOTIFY for the call. dedup_keys, when given, is parallel to payloads (null elements mean no
-- key); a key already held by a live job, or repeated in the call, yields that job's id.
-- Raises: 22004 null array or null element; 22023 non-object payload, arrays of different
-- lengths, of more than one dimension or not starting at 1, bad names, a delay or priority
-- out of bounds, max_attempts < 1; 54000 a payload over the limit.
-- The body of both forms of queue.enqueue_many (private); timeout null: the queue's.
create or replace function queue._enqueue_many(
    payloads jsonb[],
    queue text,
    category text,
    priority int,
    delay interval,
    max_attempts int,
    dedup_keys text[],
    timeout interval
) returns setof bigint
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_cfg queue.queues;
    v_n int;
    v_id bigint;
    v_ids bigint[] := '{}'::bigint[];
    v_inserted boolean := false;
begin
    if _enqueue_many.payloads is null then
        raise exception 'payloads must not be null' using errcode = '22004';
    end if;
    perform queue._check_name(_enqueue_many.queue, 'queue');
    perform queue._check_name(_enqueue_many.category, 'category', false);
    perform queue._check_interval(_enqueue_many.delay, 'delay', bound => 'delay');
    if _enqueue_many.priority is null or _enqueue_many.priority <> 0 then
        perform queue._check_priority(_enqueue_many.priority);  -- 0 is always allowed
    end if;
    perform queue._check_interval(_enqueue_many.timeout, 'timeout', true, false, 'lease');
    if _enqueue_many.max_attempts is not null and _enqueue_many.max_attempts < 1 then
        raise exception 'max_attempts must be at least 1 (got %)', _enqueue_many.max_attempts
            using errcode = '22023';
    end if;
    -- one-dimensional and starting at 1, or elements would be read wrongly or not at all
    if array_ndims(_enqueue_many.payloads) > 1
        or array_lower(_enqueue_many.payloads, 1) <> 1 then
        raise exception 'payloads must be a one-dimensional array starting at index 1'
            using errcode = '22023';
    end if;
    if array_ndims(_enqueue_many.dedup_keys) > 1
        or array_lower(_enqueue_many.dedup_keys, 1) <> 1 then
        raise exception 'dedup_keys must be a one-dimensional array starting at index 1'
            using errcode = '22023';
    end if;
    v_n := coalesce(array_length(_enqueue_many.payloads, 1), 0);
    if v_n = 0 then
        return;
    end if;
    if _enqueue_many.dedup_keys is not null
        and coalesce(array_length(_enqueue_many.dedup_keys, 1), 0) <> v_n then
        raise exception 'dedup_keys must have one element per payload (% payloads, % keys)',
            v_n, coalesce(array_length(_enqueue_many.dedup_keys, 1), 0)
            using errcode = '22023';
    end if;
    v_cfg := queue._config(_enqueue_many.queue);
    for v_i in 1 .. v_n loop
        perform queue._check_payload(_enqueue_many.payloads[v_i],
            format('payloads[%s]', v_i), v_cfg.payload_limit);
        if _enqueue_many.dedup_keys is not null then
            perform queue._check_name(_enqueue_many.dedup_keys[v_i],
                format('dedup_keys[%s]', v_i), false, 512);
        end if;
    end loop;
    if _enqueue_many.category is not null then
        perform queue._category_id(_enqueue_many.category);
    end if;

    if _enqueue_many.dedup_keys is null then
        -- One set-based insert; identity values follow the ordered input.
        return query
        insert into queue.jobs as j (
            queue, category, priority, payload, max_attempts, available_at, timeout
        )
        select _enqueue_many.queue, _enqueue_many.category, _enqueue_many.priority, p.payload,
            coalesce(_enqueue_many.max_attempts, v_cfg.max_attempts), now() + _enqueue_many.delay,
            coalesce(_enqueue_many.timeout, v_cfg.timeout)
        from unnest(_enqueue_many.payloads) with ordinality as p (payload, n)
        order by p.n
        returning j.id;
        v_inserted := true;
    else
        for v_i in 1 .. v_n loop
            loop
                insert into queue.jobs as j (
                    queue, category, priority, payload, max_attempts, available_at, dedup_key,
                    timeout
                ) values (
                    _enqueue_many.queue, _enqueue_many.category, _enqueue_many.priority,
                    _enqueue_many.payloads[v_i],
                    coalesce(_enqueue_many.max_attempts, v_cfg.max_attempts),
                    now() + _enqueue_many.delay, _enqueue_many.dedup_keys[v_i],
                    coalesce(_enqueue_many.timeout, v_cfg.timeout)
                )
                on conflict (queue, dedup_key) where dedup_key is not null do nothing
                returning j.id into v_id;
                if v_id is not null then
                    v_inserted := true;
                    exit;
                end if;
                select j.id into v_id from queue.jobs as j
                where j.queue = _enqueue_many.queue and j.dedup_key = _enqueue_many.dedup_keys[v_i];
                exit when v_id is not null;
            end loop;
            v_ids := v_ids || v_id;
        end loop;
        return query select u.id from unnest(v_ids) with ordinality as u (id, n) order by u.n;
    end if;

    if v_inserted and v_cfg.notify and _enqueue_many.delay <= interval '0' then
        perform queue._notify_ready(_enqueue_many.queue, true);
    end if;
end
$$;

create or replace function queue.enqueue_many(
    payloads jsonb[],
    queue text default 'default',
    category text default null,
    priority int default 0,
    delay interval default '0',
    max_attempts int default null,
    dedup_keys text[] default null
) returns setof bigint
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
begin
    return query select queue._enqueue_many(payloads, queue, category, priority, delay,
        max_attempts, dedup_keys, null);
end
$$;

-- queue.enqueue_many with a timeout for every job (see queue.enqueue's timeout form).
-- Raises as queue.enqueue_many, and 22023 for a timeout <= 0 or over queue.config.max_lease.
create or replace function queue.enqueue_many(
    payloads jsonb[],
    timeout interval,
    queue text default 'default',
    category text default null,
    priority int default 0,
    delay interval default '0',
    max_attempts int default null,
    dedup_keys text[] default null
) returns setof bigint
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
begin
    return query select queue._enqueue_many(payloads, queue, category, priority, delay,
        max_attempts, dedup_keys, timeout);
end
$$;

revoke all on function queue._enqueue_many(jsonb[], text, text, int, interval, int, text[], interval)
from public;
comment on function queue.enqueue_many(jsonb[], interval, text, text, int, interval, int, text[])
is 'Add many jobs of one queue with a timeout each; returns their ids in input order.';
revoke all on function queue.enqueue_many(jsonb[], interval, text, text, int, interval, int, text[])
from public;
grant execute on function queue.enqueue_many(
    jsonb[], interval, text, text, int, interval, int, text[]
) to andal_producer, andal_admin;
comment on function queue.enqueue_many(jsonb[], text, text, int, interval, int, text[]) is
'Add many jobs of one queue in one statement; returns their ids in input order.';
revoke all on function queue.enqueue_many(jsonb[], text, text, int, interval, int, text[])
from public;
grant execute on function queue.enqueue_many(jsonb[], text, text, int, interval, int, text[])
to andal_producer, andal_admin;
