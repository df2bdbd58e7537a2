-- Queue and category policy: configure_queue, set_category_limit.

-- queue.configure_queue: set a queue's policy; arguments left null keep their current value
-- (or the default for a new queue). Returns the resulting policy row.
-- Raises: 22023 max_attempts < 1, lease <= 0, unknown backoff, negative base or cap, jitter
-- outside 0..1, payload_limit < 1, unknown cache_policy, bad queue name; 22004 null queue.
create or replace function queue.configure_queue(
    queue text,
    max_attempts int default null,
    lease interval default null,
    backoff text default null,
    backoff_base interval default null,
    backoff_cap interval default null,
    jitter real default null,
    notify boolean default null,
    payload_limit int default null,
    keep_results boolean default null,
    cache_policy text default null
) returns setof queue.queues
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
begin
    perform queue._check_name(configure_queue.queue, 'queue');
    if configure_queue.max_attempts < 1 then
        raise exception 'max_attempts must be at least 1 (got %)', configure_queue.max_attempts
            using errcode = '22023';
    end if;
    perform queue._check_interval(configure_queue.lease, 'lease', true, false, 'lease');
    perform queue._check_interval(configure_queue.backoff_base, 'backoff_base', false, false,
        'delay');
    perform queue._check_interval(configure_queue.backoff_cap, 'backoff_cap', false, false,
        'delay');
    if configure_queue.backoff not in ('linear', 'exponential') then
        raise exception 'backoff must be linear or exponential (got %)', configure_queue.backoff
            using errcode = '22023';
    end if;
    if configure_queue.jitter < 0 or configure_queue.jitter > 1 then
        raise exception 'jitter must be between 0 and 1 (got %)', configure_queue.jitter
            using errcode = '22023';
    end if;
    if configure_queue.payload_limit < 1 then
        raise exception 'payload_limit must be at least 1 byte (got %)',
            configure_queue.payload_limit using errcode = '22023';
    end if;
    if configure_queue.cache_policy not in ('invalidate', 'rewrite', 'none') then
        raise exception 'cache_policy must be invalidate, rewrite or none (got %)',
            configure_queue.cache_policy using errcode = '22023';
    end if;
    -- queue.maintain() may forget a queue row equal to the defaults between _config and the
    -- update: then the update finds nothing, and the row is made again
    loop
    perform queue._config(configure_queue.queue);
    return query
    update queue.queues as q set
        max_attempts = coalesce(configure_queue.max_attempts, q.max_attempts),
        lease = coalesce(configure_queue.lease, q.lease),
        backoff = coalesce(configure_queue.backoff, q.backoff),
        backoff_base = coalesce(configure_queue.backoff_base, q.backoff_base),
        backoff_cap = coalesce(configure_queue.backoff_cap, q.backoff_cap),
        jitter = coalesce(configure_queue.jitter, q.jitter),
        notify = coalesce(configure_queue.notify, q.notify),
        payload_limit = coalesce(configure_queue.payload_limit, q.payload_limit),
        keep_results = coalesce(configure_queue.keep_results, q.keep_results),
        cache_policy = coalesce(configure_queue.cache_policy, q.cache_policy),
        updated_at = now()
    where q.queue = configure_queue.queue
    returning q.*;
    exit when found;
    end loop;
end
$$;

-- queue.set_category_limit: at most max_running running jobs of a category at once (0
-- pauses the category; running jobs are not interrupted).
-- Raises: 22004 null argument; 22023 bad name or max_running < 0.
create or replace function queue.set_category_limit(category text, max_running int)
returns void
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
begin
    perform queue._check_name(set_category_limit.category, 'category');
    if set_category_limit.max_running is null then
        raise exception 'max_running must not be null' using errcode = '22004';
    end if;
    if set_category_limit.max_running < 0 then
        raise exception 'max_running must be 0 or more (got %)', set_category_limit.max_running
            using errcode = '22023';
    end if;
    insert into queue.categories as c (category, max_running)
    values (set_category_limit.category, set_category_limit.max_running)
    on conflict (category) do update set max_running = excluded.max_running;
end
$$;

comment on function queue.configure_queue(
    text, int, interval, text, interval, interval, real, boolean, int, boolean, text
) is 'Set a queue''s policy (null arguments keep the current value).';
comment on function queue.set_category_limit(text, int) is
'At most max_running running jobs of a category (0 pauses it).';
revoke all on function queue.configure_queue(
    text, int, interval, text, interval, interval, real, boolean, int, boolean, text
) from public;
revoke all on function queue.set_category_limit(text, int) from public;
grant execute on function queue.configure_queue(
    text, int, interval, text, interval, interval, real, boolean, int, boolean, text
) to andal_admin;
grant execute on function queue.set_category_limit(text, int) to andal_admin;
