-- queue.schedules: every schedule, andal's own housekeeping (builtin) included, with its
-- last fired tick and its next fire time (null when disabled), in name order. payload is
-- shown only to a caller that may claim or schedule (worker, admin): a monitor (a dashboard)
-- sees null, as it sees no job's payload.
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
declare
    v_payloads boolean := exists (
        select from pg_catalog.pg_proc as p
        where p.pronamespace = 'queue'::regnamespace and p.proname in ('claim', 'schedule')
            and pg_catalog.has_function_privilege(queue._caller(), p.oid, 'EXECUTE'));
begin
    return query
    select s.name, s.queue, s.cron, s.every, s.timezone,
        case when v_payloads then s.payload end, s.category, s.priority,
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
