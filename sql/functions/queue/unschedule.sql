-- queue.unschedule: remove the named schedule and its record of fired ticks; returns
-- whether there was one. Jobs it already enqueued are not touched.
-- Raises: 22004 null name; 55000 for andal's own housekeeping schedules (switch one off
-- with queue.schedule(name => ..., every => ..., enabled => false)).
create or replace function queue.unschedule(name text) returns boolean
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_task text;
begin
    perform queue._check_name(unschedule.name, 'name');
    select s.task into v_task from queue.schedules as s where s.name = unschedule.name;
    if v_task is not null then
        raise exception 'schedule % is andal''s own housekeeping and cannot be removed',
            unschedule.name
            using errcode = '55000',
            hint = 'Switch it off with queue.schedule(name => ..., every => ..., enabled => false).';
    end if;
    delete from queue.schedule_ticks as t where t.schedule = unschedule.name;
    delete from queue.schedules as s where s.name = unschedule.name;
    return found;
end
$$;

comment on function queue.unschedule(text) is 'Remove a named schedule; true when there was one.';
revoke all on function queue.unschedule(text) from public;
grant execute on function queue.unschedule(text) to andal_admin;
