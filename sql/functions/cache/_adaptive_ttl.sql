-- Adaptive TTL: keys that change often get shorter TTLs, computed from what was seen.
--
-- cache._adaptive_ttl(mean_interval, changed_at): with m the EWMA of the gaps between a
-- key's changes (seconds; weight cache.config.ewma_alpha on the newest gap) and a the time
-- since its last change,
--     ttl = clamp(ttl_factor * max(m, a), min_ttl, max_ttl)
-- and default_ttl (clamped the same way) while fewer than two changes were seen (m null).
-- max(m, a) lets a key that stopped changing earn its long TTL back. A "change" is an
-- invalidation, or a put that replaces a fresh value with a different one (by checksum);
-- refilling an invalidated or missing key is not a change.
-- Raises nothing.
create or replace function cache._adaptive_ttl(
    mean_interval double precision, changed_at timestamptz
) returns interval
language sql stable
set search_path = pg_catalog, pg_temp
as $$
    select least(c.max_ttl, greatest(c.min_ttl,
        case
            when mean_interval is null then c.default_ttl
            else make_interval(secs => c.ttl_factor * greatest(mean_interval,
                coalesce(extract(epoch from now() - changed_at)::double precision, 0)))
        end))
    from cache.config as c
$$;

-- cache.ttl_for(key): the TTL a put of `key` without an explicit ttl would get now.
-- Raises 22004 null key, 22023 bad key.
create or replace function cache.ttl_for(key text) returns interval
language plpgsql stable
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_mean double precision;
    v_changed timestamptz;
begin
    perform cache._primary_only('cache.ttl_for');
    perform cache._check_key(ttl_for.key);
    select e.mean_interval, e.changed_at into v_mean, v_changed
    from cache.entries as e where e.key = ttl_for.key;
    return cache._adaptive_ttl(v_mean, v_changed);
end
$$;

comment on function cache._adaptive_ttl(double precision, timestamptz) is
'clamp(ttl_factor * max(EWMA gap, time since last change), min_ttl, max_ttl); default_ttl before two changes.';
comment on function cache.ttl_for(text) is
'The adaptive TTL a put of this key without ttl would get now.';
revoke all on function cache._adaptive_ttl(double precision, timestamptz) from public;
revoke all on function cache.ttl_for(text) from public;
grant execute on function cache.ttl_for(text) to andal_worker, andal_admin;
