-- cache.put: store `value` under `key`; returns the key's new version.
--
-- The entry is fresh until now() + ttl; without a ttl the key's adaptive TTL is used
-- (cache.ttl_for). The write, its log row and one NOTIFY hint per transaction commit with the
-- caller's transaction. With if_version (the version the caller read; 0 when the key had no
-- entry) the value is stored only if the key is still at that version, and null is returned
-- otherwise: use it to refill after a miss without overwriting a concurrent newer write.
-- While the cache is full (its values over cache.config.max_total_bytes, until the
-- housekeeping has evicted) nothing is stored and null is returned too.
-- With job_id and token (a write on behalf of a running job) the write is fenced: refused
-- with AN001 unless that job is running under that token with an unexpired lease, and the
-- job's row is share-locked until the caller's transaction ends (a takeover waits for it).
-- Raises: 22004 null key or value (or a null job_id or token in the fenced form); 22023 bad
-- key, JSON null value, ttl <= 0, negative if_version; 54000 value over
-- cache.config.max_value_bytes; AN001 lease lost (the fenced form).
create or replace function cache._put(
    key text, value jsonb, ttl interval, if_version bigint, job_id bigint, token uuid,
    fenced boolean
) returns bigint
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
begin
    perform cache._primary_only('cache.put');
    perform cache._check_key(_put.key);
    perform cache._check_value(_put.value);
    perform queue._check_interval(_put.ttl, 'ttl', true, false);
    if _put.if_version is not null and _put.if_version < 0 then
        raise exception 'if_version must not be negative (got %)', _put.if_version
            using errcode = '22023';
    end if;
    if fenced then
        perform queue._check_fence(_put.job_id, _put.token);
    end if;
    perform cache._hold_key(_put.key);  -- a job's end does not wait for this write
    return cache._apply(_put.key, 'put', _put.value, _put.ttl, null, _put.if_version);
end
$$;

create or replace function cache.put(
    key text, value jsonb, ttl interval default null, if_version bigint default null
) returns bigint
language sql
security definer
set search_path = pg_catalog, pg_temp
as $$
    select cache._put(key, value, ttl, if_version, null, null, false)
$$;

create or replace function cache.put(
    key text, value jsonb, job_id bigint, token uuid, ttl interval default null,
    if_version bigint default null
) returns bigint
language sql
security definer
set search_path = pg_catalog, pg_temp
as $$
    select cache._put(key, value, ttl, if_version, job_id, token, true)
$$;

comment on function cache.put(text, jsonb, interval, bigint) is
'Store a value; returns the new version (null: not stored, if_version no longer matches or the cache is full).';
revoke all on function cache.put(text, jsonb, interval, bigint) from public;
grant execute on function cache.put(text, jsonb, interval, bigint)
to andal_producer, andal_worker, andal_admin;
comment on function cache.put(text, jsonb, bigint, uuid, interval, bigint) is
'Store a value on behalf of a running job: refused (AN001) once its token is stale.';
comment on function cache._put(text, jsonb, interval, bigint, bigint, uuid, boolean) is
'Private: the body of both cache.put forms.';
revoke all on function cache._put(text, jsonb, interval, bigint, bigint, uuid, boolean)
from public;
revoke all on function cache.put(text, jsonb, bigint, uuid, interval, bigint) from public;
grant execute on function cache.put(text, jsonb, bigint, uuid, interval, bigint)
to andal_producer, andal_worker, andal_admin;
