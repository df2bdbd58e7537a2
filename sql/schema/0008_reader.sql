-- 0008: the read-only role andal_reader, for dashboards (`andal web`) and anything else that
-- only looks. Run once, never edited after release (add a new number instead).
--
-- andal_reader may execute the read functions (statistics, workers, dead letters, the cache's
-- figures) and nothing that changes a job: each function file grants it. It is NOLOGIN like
-- the other andal roles: grant it to a login role.

-- Roles are cluster-wide: create it once; an owner without CREATEROLE needs it made first.
do $role$
begin
    if not exists (select from pg_catalog.pg_roles where rolname = 'andal_reader') then
        begin
            create role andal_reader nologin;
        exception when insufficient_privilege then
            raise exception 'andal needs the role andal_reader and may not create it'
                using errcode = '42501',
                hint = 'Have a superuser run: create role andal_reader nologin; '
                'or grant CREATEROLE to the installing role.';
        end;
    end if;
end
$role$;

grant usage on schema queue to andal_reader;
grant usage on schema cache to andal_reader;
