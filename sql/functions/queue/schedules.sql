-- queue.schedules: every schedule, andal's own housekeeping (builtin) included, with its
-- last fired tick and its next fire time (null when disabled), in name order.
create or replace function queue.schedules()
returns table (
    name text,
    queue text,
    cron text,
    every interval,
    timezone text,
    payload jsonb,
    category text,
    priority int,
    missed text,
    catch_up int,
    enabled boolean,
    builtin boolean,
    last_tick timestamptz,
    last_fired_at timestamptz,
    last_job_id bigint,
    next_at timestamptz,
    last_error text
)
language plpgsql stable
security definer
set search_path = pg_catalog, pg_temp
as $$
begin
    return query
    select s.name, s.queue, s.cron, s.every, s.timezone, s.payload, s.category, s.priority,
        s.missed, s.catch_up, s.enabled, s.task is not null, s.last_tick, s.last_fired_at,
        s.last_job_id, s.next_at, s.last_error
    from queue.schedules as s
    order by s.name;
end
$$;

comment on function queue.schedules() is
'Every schedule (housekeeping included) with its last tick and next fire time.';
revoke all on function queue.schedules() from public;
grant execute on function queue.schedules() to andal_admin, andal_worker, andal_monitor;
