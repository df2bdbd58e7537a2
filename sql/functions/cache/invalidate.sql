-- cache.invalidate: mark `key` stale; returns its new version.
--
-- The old value is kept, flagged stale (readers that accept stale data may be served it
-- while one refresh runs); a key with no entry gets a tombstone, so its version and
-- change statistics survive. Appends to the log and sends the NOTIFY hint in the caller's
-- transaction; counts as a change for the adaptive TTL.
-- With job_id and token (on behalf of a running job) the write is fenced as cache.put's.
-- Raises: 22004 null key (or a null job_id or token in the fenced form); 22023 bad key;
-- AN001 lease lost (the fenced form).
create or replace function cache._invalidate(
    key text, reason text, job_id bigint, token uuid, fenced boolean
) returns bigint
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
begin
    perform cache._primary_only('cache.invalidate');
    perform cache._check_key(_invalidate.key);
    if fenced then
        perform queue._check_fence(_invalidate.job_id, _invalidate.token);
    end if;
    return cache._apply(_invalidate.key, 'invalidate', null, null, _invalidate.reason);
end
$$;

create or replace function cache.invalidate(key text, reason text default null)
returns bigint
language sql
security definer
set search_path = pg_catalog, pg_temp
as $$
    select cache._invalidate(key, reason, null, null, false)
$$;

create or replace function cache.invalidate(
    key text, job_id bigint, token uuid, reason text default null
) returns bigint
language sql
security definer
set search_path = pg_catalog, pg_temp
as $$
    select cache._invalidate(key, reason, job_id, token, true)
$$;

comment on function cache.invalidate(text, text) is
'Mark a key stale (logged, notified); returns its new version.';
revoke all on function cache.invalidate(text, text) from public;
grant execute on function cache.invalidate(text, text) to andal_worker, andal_admin;
comment on function cache.invalidate(text, bigint, uuid, text) is
'Mark a key stale on behalf of a running job: refused (AN001) once its token is stale.';
comment on function cache._invalidate(text, text, bigint, uuid, boolean) is
'Private: the body of both cache.invalidate forms.';
revoke all on function cache._invalidate(text, text, bigint, uuid, boolean) from public;
revoke all on function cache.invalidate(text, bigint, uuid, text) from public;
grant execute on function cache.invalidate(text, bigint, uuid, text) to andal_worker, andal_admin;
