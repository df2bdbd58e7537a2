-- cache.track: count the changes of table `source` toward the refresh of `view`.
-- Row changes (inserted, updated, deleted) are read from PostgreSQL's cumulative statistics
-- (cache._view_changes): the writers of the table pay nothing for the tracking. TRUNCATE,
-- which the statistics do not count, gets one statement-level trigger (installed once per
-- table, shared by every view that tracks it) that counts it in cache.source_changes.
-- Tracking a table twice is a no-op.
-- The caller needs the TRIGGER privilege on the table. andal touches only the trigger it made.
-- Raises: 22004 null argument; 42704 view not registered; 22023 source not a table;
-- 42501 the caller may not create triggers on the table; 42710 the table has a trigger of
-- andal's name that andal did not make; 55000 track_counts is off (the statistics would not
-- count anything).
create or replace function cache.track(view regclass, source regclass) returns void
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_kind "char";
    v_foid oid;
begin
    if track.view is null or track.source is null then
        raise exception 'view and source must not be null' using errcode = '22004';
    end if;
    if not exists (select from cache.views as v where v.view = track.view) then
        raise exception 'view % is not registered', track.view using errcode = '42704',
            hint = 'Call cache.register_view first.';
    end if;
    if current_setting('track_counts') <> 'on' then
        raise exception 'track_counts is off: changes of % would not be counted', track.source
            using errcode = '55000', hint = 'Turn track_counts on (the default).';
    end if;
    select c.relkind into v_kind from pg_catalog.pg_class as c where c.oid = track.source;
    if v_kind is null or v_kind not in ('r', 'p') then
        raise exception 'source must be a table (% is not)', track.source
            using errcode = '22023';
    end if;
    -- The caller's own right (inside this function current_user is andal's owner): tracking
    -- puts a trigger on the table, which needs the TRIGGER privilege on it.
    if not pg_catalog.has_table_privilege(queue._caller(), track.source, 'TRIGGER') then
        raise exception 'role % may not create triggers on %', queue._caller(), track.source
            using errcode = '42501',
            hint = 'Track the table as a role with the TRIGGER privilege on it.';
    end if;
    select t.tgfoid into v_foid from pg_catalog.pg_trigger as t
    where t.tgrelid = track.source and t.tgname = 'andal_track_truncate';
    if found and v_foid <> 'cache._track_changes()'::regprocedure then
        raise exception 'table % has a trigger andal_track_truncate that andal did not make',
            track.source
            using errcode = '42710',
            hint = 'Rename that trigger; andal manages only its own.';
    end if;
    insert into cache.view_sources as s (view, source) values (track.view, track.source)
    on conflict do nothing;
    if v_foid is null then
        execute format(
            'create trigger andal_track_truncate after truncate on %s for each statement'
            ' execute function cache._track_changes()',
            track.source::text);
    end if;
end
$$;

-- cache.untrack: stop counting `source` toward `view`; the TRUNCATE trigger goes when no view
-- tracks the table any more (only andal's own trigger; nothing to drop when the table is
-- gone). Raises: 22004 null argument; 42704 not tracked.
create or replace function cache.untrack(view regclass, source regclass) returns void
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_schema name;
    v_table name;
begin
    if untrack.view is null or untrack.source is null then
        raise exception 'view and source must not be null' using errcode = '22004';
    end if;
    delete from cache.view_sources as s
    where s.view = untrack.view and s.source = untrack.source;
    if not found then
        raise exception '% does not track %', untrack.view, untrack.source
            using errcode = '42704';
    end if;
    if not exists (select from cache.view_sources as s where s.source = untrack.source) then
        -- Only andal's own trigger (by its function), and only while the table exists (a
        -- dropped table took its triggers with it).
        select n.nspname, c.relname into v_schema, v_table
        from pg_catalog.pg_trigger as t
        join pg_catalog.pg_class as c on c.oid = t.tgrelid
        join pg_catalog.pg_namespace as n on n.oid = c.relnamespace
        where t.tgrelid = untrack.source and t.tgname = 'andal_track_truncate'
          and t.tgfoid = 'cache._track_changes()'::regprocedure;
        if found then
            execute format('drop trigger andal_track_truncate on %I.%I', v_schema, v_table);
        end if;
        delete from cache.source_changes as c where c.source = untrack.source::oid;
    end if;
end
$$;

comment on function cache.track(regclass, regclass) is
'Count the changes of a source table toward the refresh of a registered view.';
comment on function cache.untrack(regclass, regclass) is
'Stop counting a source table toward a view.';
revoke all on function cache.track(regclass, regclass) from public;
revoke all on function cache.untrack(regclass, regclass) from public;
grant execute on function cache.track(regclass, regclass) to andal_admin;
grant execute on function cache.untrack(regclass, regclass) to andal_admin;
