-- queue.version: the andal release these functions belong to. This literal is the one place
-- the version is written: the Python package reads it from this file (andal.__version__,
-- `andal --version` and the package metadata), so they cannot disagree. A release bumps it
-- here and adds its CHANGELOG section.
create or replace function queue.version() returns text
language sql immutable
security definer
set search_path = pg_catalog, pg_temp
as $$ select '0.2.0'::text $$;

comment on function queue.version() is 'The installed andal release.';
revoke all on function queue.version() from public;
grant execute on function queue.version() to andal_producer, andal_worker, andal_admin, andal_monitor;
