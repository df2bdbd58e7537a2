-- Queue and category policy: configure_queue, set_category_limit.

-- queue.configure_queue: set a queue's policy; arguments left null keep their current value
-- (or the default for a new queue). Returns the resulting policy row.
-- Raises: 22023 max_attempts < 1, lease <= 0, unknown backoff, negative base or cap, jitter
-- outside 0..1, payload_limit < 1, unknown cache_policy, bad queue name; 22004 null queue.
-- The body of both forms (private).
create or replace function queue._configure_queue(
    queue text,
    max_attempts int,
    lease interval,
    backoff text,
    backoff_base interval,
    backoff_cap interval,
    jitter real,
    notify boolean,
    payload_limit int,
    keep_results boolean,
    cache_policy text,
    timeout interval,
    results_retention interval,
    dead_retention interval
) returns setof queue.queues
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
begin
    perform queue._check_name(_configure_queue.queue, 'queue');
    if _configure_queue.max_attempts < 1 then
        raise exception 'max_attempts must be at least 1 (got %)', _configure_queue.max_attempts
            using errcode = '22023';
    end if;
    perform queue._check_interval(_configure_queue.lease, 'lease', true, false, 'lease');
    -- timeout '0' removes the queue's timeout; any other must have a positive effect (one of
    -- none, such as '1 mon -31 days' in December, would time every attempt out at its claim)
    perform queue._check_interval(_configure_queue.timeout, 'timeout',
        coalesce(_configure_queue.timeout <> interval '0', false), false, 'lease');
    perform queue._check_interval(_configure_queue.results_retention, 'results_retention', true,
        false);
    perform queue._check_interval(_configure_queue.dead_retention, 'dead_retention', true,
        false);
    perform queue._check_interval(_configure_queue.backoff_base, 'backoff_base', false, false,
        'delay');
    perform queue._check_interval(_configure_queue.backoff_cap, 'backoff_cap', false, false,
        'delay');
    if _configure_queue.backoff not in ('linear', 'exponential') then
        raise exception 'backoff must be linear or exponential (got %)', _configure_queue.backoff
            using errcode = '22023';
    end if;
    if _configure_queue.jitter < 0 or _configure_queue.jitter > 1 then
        raise exception 'jitter must be between 0 and 1 (got %)', _configure_queue.jitter
            using errcode = '22023';
    end if;
    if _configure_queue.payload_limit < 1 then
        raise exception 'payload_limit must be at least 1 byte (got %)',
            _configure_queue.payload_limit using errcode = '22023';
    end if;
    if _configure_queue.cache_policy not in ('invalidate', 'rewrite', 'none') then
        raise exception 'cache_policy must be invalidate, rewrite or none (got %)',
            _configure_queue.cache_policy using errcode = '22023';
    end if;
    -- queue.maintain() may forget a queue row equal to the defaults between _config and the
    -- update: then the update finds nothing, and the row is made again
    loop
    perform queue._config(_configure_queue.queue);
    return query
    update queue.queues as q set
        max_attempts = coalesce(_configure_queue.max_attempts, q.max_attempts),
        lease = coalesce(_configure_queue.lease, q.lease),
        backoff = coalesce(_configure_queue.backoff, q.backoff),
        backoff_base = coalesce(_configure_queue.backoff_base, q.backoff_base),
        backoff_cap = coalesce(_configure_queue.backoff_cap, q.backoff_cap),
        jitter = coalesce(_configure_queue.jitter, q.jitter),
        notify = coalesce(_configure_queue.notify, q.notify),
        payload_limit = coalesce(_configure_queue.payload_limit, q.payload_limit),
        keep_results = coalesce(_configure_queue.keep_results, q.keep_results),
        cache_policy = coalesce(_configure_queue.cache_policy, q.cache_policy),
        timeout = case
            when _configure_queue.timeout is null then q.timeout
            when _configure_queue.timeout = interval '0' then null
            else _configure_queue.timeout
        end,
        results_retention = coalesce(_configure_queue.results_retention, q.results_retention),
        dead_retention = coalesce(_configure_queue.dead_retention, q.dead_retention),
        updated_at = now()
    where q.queue = _configure_queue.queue
    returning q.*;
    exit when found;
    end loop;
end
$$;

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
begin
    return query select * from queue._configure_queue(queue, max_attempts, lease, backoff,
        backoff_base, backoff_cap, jitter, notify, payload_limit, keep_results, cache_policy,
        null, null, null);
end
$$;

-- queue.configure_queue with a timeout: the default maximum run time of one attempt of
-- the queue's jobs (a job enqueued with its own timeout keeps it; a job takes the queue's
-- timeout when it is enqueued), null to keep the current one, '0' to have none (the
-- default). results_retention (default 7 days) and dead_retention (default 30 days): how
-- long kept results and dead letters stay before the housekeeping schedule andal.retention
-- deletes them; null keeps the current value.
-- Raises as configure_queue, and 22023 for a negative timeout or one over
-- queue.config.max_lease, a retention <= 0.
create or replace function queue.configure_queue(
    queue text,
    timeout interval,
    max_attempts int default null,
    lease interval default null,
    backoff text default null,
    backoff_base interval default null,
    backoff_cap interval default null,
    jitter real default null,
    notify boolean default null,
    payload_limit int default null,
    keep_results boolean default null,
    cache_policy text default null,
    results_retention interval default null,
    dead_retention interval default null
) returns setof queue.queues
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
begin
    return query select * from queue._configure_queue(queue, max_attempts, lease, backoff,
        backoff_base, backoff_cap, jitter, notify, payload_limit, keep_results, cache_policy,
        timeout, results_retention, dead_retention);
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
comment on function queue.configure_queue(
    text, interval, int, interval, text, interval, interval, real, boolean, int, boolean, text,
    interval, interval
) is 'Set a queue''s policy with its job timeout and retention periods.';
revoke all on function queue._configure_queue(
    text, int, interval, text, interval, interval, real, boolean, int, boolean, text,
    interval, interval, interval
) from public;
revoke all on function queue.configure_queue(
    text, interval, int, interval, text, interval, interval, real, boolean, int, boolean, text,
    interval, interval
) from public;
grant execute on function queue.configure_queue(
    text, interval, int, interval, text, interval, interval, real, boolean, int, boolean, text,
    interval, interval
) to andal_admin;
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

-- _config: the policy row of a queue, created with the defaults on first use. By primary
-- key whatever the statistics say (see _category_id).
create or replace function queue._config(queue_name text) returns queue.queues
language plpgsql
set search_path = pg_catalog, pg_temp
set enable_seqscan = off
as $$
declare
    v_cfg queue.queues;
begin
    select q.* into v_cfg from queue.queues as q where q.queue = queue_name;
    if not found then
        insert into queue.queues as q (queue) values (queue_name)
        on conflict (queue) do nothing;
        select q.* into v_cfg from queue.queues as q where q.queue = queue_name;
    end if;
    return v_cfg;
end
$$;

revoke all on function queue._config(text) from public;
