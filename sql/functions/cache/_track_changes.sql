-- cache._track_changes: the statement-level TRUNCATE trigger cache.track installs on a
-- source table (row changes are counted by PostgreSQL's statistics, which TRUNCATE does not
-- feed). Adds 1 to the table's counter of the current backend in cache.source_changes, in
-- the truncating transaction. Rows are per backend: no two sessions share a counter row.
create or replace function cache._track_changes() returns trigger
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
begin
    insert into cache.source_changes as c (source, backend, changes, last_change_at)
    values (tg_relid, pg_backend_pid(), 1, now())
    on conflict (source, backend) do update
    set changes = c.changes + 1, last_change_at = excluded.last_change_at;
    return null;
end
$$;

comment on function cache._track_changes() is
'Trigger: count a TRUNCATE of a tracked table (row changes come from the statistics).';
revoke all on function cache._track_changes() from public;
