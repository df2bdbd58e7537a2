-- Read-only views of a queue's policy and of the categories' rate limits, for operators and
-- dashboards (andal web's Queue page). They read, never create a row.

-- queue.queue_settings: the policy of one queue as queue.configure_queue, queue.pause and
-- queue.set_history left it: max_attempts, lease, backoff (kind, base, cap, jitter), notify,
-- payload_limit, keep_results, cache_policy, paused, timeout (null: none), the retention of
-- kept results, of dead letters and of the history (null: no history kept). A queue never
-- configured has the defaults (configured = false): one row for every name.
-- Raises: 22004 null queue; 22023 bad queue name.
create or replace function queue.queue_settings(queue text)
returns table (
    configured boolean,
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
    paused boolean,
    timeout interval,
    results_retention interval,
    dead_retention interval,
    history_retention interval,
    updated_at timestamptz
)
language plpgsql stable
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
begin
    perform queue._check_name(queue_settings.queue, 'queue');
    return query
    select true, q.max_attempts, q.lease, q.backoff, q.backoff_base, q.backoff_cap,
        q.jitter, q.notify, q.payload_limit, q.keep_results, q.cache_policy, q.paused,
        q.timeout, q.results_retention, q.dead_retention, q.history_retention, q.updated_at
    from queue.queues as q
    where q.queue = queue_settings.queue;
    if not found then  -- a missing row means the column defaults (queue/_policy.sql)
        return query select false, d.max_attempts, d.lease, d.backoff, d.backoff_base,
            d.backoff_cap, d.jitter, d.notify, d.payload_limit, d.keep_results,
            d.cache_policy, d.paused, d.timeout, d.results_retention, d.dead_retention,
            d.history_retention, null::timestamptz
        from queue._queue_defaults() as d;
    end if;
end
$$;

-- queue.rate_limits: every category with a rate limit (queue.set_rate_limit): at most
-- `starts` starts in any window of `per`, how many of its recorded starts lie within the
-- last `per` now (started_in_window), and its concurrency limit (max_running; 0: paused).
-- In category order. Raises nothing.
create or replace function queue.rate_limits()
returns table (
    category text, starts int, per interval, started_in_window int, max_running int
)
language sql stable
security definer
set search_path = pg_catalog, pg_temp
as $$
    select c.category, c.rate_starts, c.rate_per,
        c.rate_starts - queue._rate_left(c.rate_log, c.rate_starts, c.rate_per, now()),
        c.max_running
    from queue.categories as c
    where c.rate_starts is not null
    order by c.category
$$;

comment on function queue.queue_settings(text) is
'A queue''s policy (the defaults when never configured): attempts, lease, backoff, retention.';
comment on function queue.rate_limits() is
'Every rate-limited category: starts per window, starts in the current window, its limit.';
revoke all on function queue.queue_settings(text) from public;
revoke all on function queue.rate_limits() from public;
grant execute on function queue.queue_settings(text) to andal_admin, andal_worker, andal_monitor;
grant execute on function queue.rate_limits() to andal_admin, andal_worker, andal_monitor;
