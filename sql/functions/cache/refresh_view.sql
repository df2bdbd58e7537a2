-- cache.refresh_view: the body of a refresh job (queue 'andal.refresh'): refresh a
-- registered materialized view and record it. Returns how long the refresh took.
-- Uses REFRESH MATERIALIZED VIEW CONCURRENTLY (readers are never blocked; allowed
-- inside a transaction block), or a plain REFRESH the first time, while the view has never
-- been populated (nobody can read it then anyway). The sources' change count is read before
-- the refresh takes its snapshot (READ COMMITTED: each statement takes a new one), so a
-- change the refresh may have missed still counts as pending afterwards (at worst one
-- refresh too many, never one too few).
-- Raises: 22004 null view; 42704 view not registered; 55000 not at READ COMMITTED.
create or replace function cache.refresh_view(view regclass) returns interval
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_seen bigint;
    v_start timestamptz;
    v_populated boolean;
begin
    if refresh_view.view is null then
        raise exception 'view must not be null' using errcode = '22004';
    end if;
    if not exists (select from cache.views as v where v.view = refresh_view.view) then
        raise exception 'view % is not registered', refresh_view.view using errcode = '42704',
            hint = 'Call cache.register_view first.';
    end if;
    if current_setting('transaction_isolation') <> 'read committed' then
        raise exception 'cache.refresh_view must run at READ COMMITTED isolation (not %)',
            current_setting('transaction_isolation')
            using errcode = '55000',
            hint = 'The refresh must take its snapshot after the change count is read.';
    end if;
    select c.relispopulated into v_populated
    from pg_catalog.pg_class as c where c.oid = refresh_view.view;
    v_seen := cache._view_changes(refresh_view.view);
    v_start := clock_timestamp();
    if v_populated then
        execute format('refresh materialized view concurrently %s', refresh_view.view::text);
    else
        execute format('refresh materialized view %s', refresh_view.view::text);
    end if;
    update cache.views as v
    set seen_changes = v_seen, refreshed_at = v_start,
        last_duration = clock_timestamp() - v_start, refreshes = v.refreshes + 1
    where v.view = refresh_view.view;
    return clock_timestamp() - v_start;
end
$$;

comment on function cache.refresh_view(regclass) is
'Refresh job body: REFRESH MATERIALIZED VIEW CONCURRENTLY a registered view.';
revoke all on function cache.refresh_view(regclass) from public;
grant execute on function cache.refresh_view(regclass) to andal_worker, andal_admin;
