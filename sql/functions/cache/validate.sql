-- cache.validate: batched read-repair. A caller presents the versions it holds (and
-- optionally their checksums, or the values its primary store returns now) and gets back
-- only the keys that differ; keys that still match return nothing.
--
-- A key is returned when: it has no entry but the caller holds a version other than 0; its
-- entry's version is not versions[i]; the entry is stale (invalidated or expired); the
-- caller's checksums[i] is not the entry's checksum; or loaded[i] (the primary store's value)
-- does not match the entry's checksum. In that last case the entry is invalidated first
-- (reason 'read-repair', a logged change every local cache sees) and repaired is true: the
-- caller then refreshes it, e.g. cache.put(key, loaded, if_version => version).
-- Returned columns: key, the entry's current version (0 when it has none), checksum, stale,
-- repaired. A null in checksums or loaded skips that check for that key.
-- Raises: 22004 null keys or versions, or a null element in them; 22023 arrays of
-- different lengths, more than 10000 keys, a bad key.
create or replace function cache.validate(
    keys text[], versions bigint[], checksums text[] default null, loaded jsonb[] default null
) returns table (key text, version bigint, checksum text, stale boolean, repaired boolean)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_n int;
    v_r record;
    v_stale boolean;
begin
    perform cache._primary_only('cache.validate');
    if validate.keys is null or validate.versions is null then
        raise exception 'keys and versions must not be null' using errcode = '22004';
    end if;
    v_n := cardinality(validate.keys);
    if v_n > 10000 then
        raise exception 'keys must hold at most 10000 keys (got %)', v_n using errcode = '22023';
    end if;
    if cardinality(validate.versions) <> v_n
        or (validate.checksums is not null and cardinality(validate.checksums) <> v_n)
        or (validate.loaded is not null and cardinality(validate.loaded) <> v_n) then
        raise exception 'keys, versions, checksums and loaded must have the same length'
            using errcode = '22023';
    end if;
    if array_position(validate.versions, null) is not null then
        raise exception 'versions must not contain null' using errcode = '22004';
    end if;

    for v_r in
        select k.key as k_key, k.ver, validate.checksums[k.n] as cs, validate.loaded[k.n] as val,
            e.key as e_key, e.version as e_version, e.checksum as e_checksum, e.value is null as e_empty,
            e.stale or coalesce(e.expires_at <= now(), false) as e_stale
        from unnest(validate.keys, validate.versions) with ordinality as k (key, ver, n)
        left join cache.entries as e on e.key = k.key
        order by k.n
    loop
        perform cache._check_key(v_r.k_key, 'keys element');
        if v_r.e_key is null then
            if v_r.ver <> 0 then
                return query select v_r.k_key, 0::bigint, null::text, true, false;
            end if;
            continue;
        end if;
        v_stale := v_r.e_stale or v_r.e_empty;
        if v_r.val is not null and not v_stale
            and md5(v_r.val::text) is distinct from v_r.e_checksum then
            return query select v_r.k_key,
                cache._apply(v_r.k_key, 'invalidate', null, null, 'read-repair'),
                v_r.e_checksum, true, true;
        elsif v_r.e_version <> v_r.ver or v_stale
            or (v_r.cs is not null and v_r.cs is distinct from v_r.e_checksum) then
            return query select v_r.k_key, v_r.e_version, v_r.e_checksum, v_stale, false;
        end if;
    end loop;
end
$$;

comment on function cache.validate(text[], bigint[], text[], jsonb[]) is
'Batched read-repair: the keys whose version or checksum differs (mismatches against loaded values are invalidated).';
revoke all on function cache.validate(text[], bigint[], text[], jsonb[]) from public;
grant execute on function cache.validate(text[], bigint[], text[], jsonb[])
to andal_worker, andal_admin;
