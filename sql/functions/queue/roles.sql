-- queue.roles: the names of this install's four roles (kind producer, worker, admin,
-- monitor), as the installer recorded them. PostgreSQL's roles are cluster-wide, so each
-- database's install has a role prefix: `andal` for the only andal database of a cluster, a
-- prefix derived from the database's name for the next ones, or one given at install
-- (docs/multi-db.md). Grant these, not a guess, to the application's login roles. Reads
-- only; raises nothing.
create or replace function queue.roles()
returns table (kind text, role_name text)
language sql stable
security definer
set search_path = pg_catalog, pg_temp
as $$
    select k.kind, s.role_prefix || '_' || k.kind
    from queue.install_state as s
    cross join unnest(array['producer', 'worker', 'admin', 'monitor'])
        with ordinality as k (kind, n)
    order by k.n
$$;

comment on function queue.roles() is
'The names of this install''s producer, worker, admin and monitor roles.';
revoke all on function queue.roles() from public;
grant execute on function queue.roles() to andal_producer, andal_worker, andal_admin, andal_monitor;
