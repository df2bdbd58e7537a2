-- cache.put: store `value` under `key`; returns the key's new version.
--
-- The entry is fresh until now() + ttl; without a ttl the key's adaptive TTL is used
-- (cache.ttl_for). The write, its log row and one NOTIFY hint per transaction commit with the
-- caller's transaction. With if_version (the version the caller read; 0 when the key had no
-- entry) the value is stored only if the key is still at that version, and null is returned
-- otherwise: use it to refill after a miss without overwriting a concurrent newer write.
-- Raises: 22004 null key or value; 22023 bad key, JSON null value, ttl <= 0, negative
-- if_version; 54000 value over cache.config.max_value_bytes.
create or replace function cache.put(
    key text, value jsonb, ttl interval default null, if_version bigint default null
) returns bigint
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
begin
    perform cache._check_key(put.key);
    perform cache._check_value(put.value);
    perform queue._check_interval(put.ttl, 'ttl', true, false);
    if put.if_version is not null and put.if_version < 0 then
        raise exception 'if_version must not be negative (got %)', put.if_version
            using errcode = '22023';
    end if;
    return cache._apply(put.key, 'put', put.value, put.ttl, null, put.if_version);
end
$$;

comment on function cache.put(text, jsonb, interval, bigint) is
'Store a value; returns the new version (null when if_version no longer matches).';
revoke all on function cache.put(text, jsonb, interval, bigint) from public;
grant execute on function cache.put(text, jsonb, interval, bigint)
to andal_producer, andal_worker, andal_admin;
