-- cache._job_done: queue coupling, called by queue.complete / complete_many (reason
-- 'completed'), queue.fail (reason 'retry' or 'dead'), lease expiry and cancel, in the same
-- transaction as the job's state change.
-- policy (the queue's cache_policy):
--   'invalidate' - invalidate the key;
--   'rewrite'    - on completion with a non-null result, store the result as the key's new
--                  value; on any other state change (or without a result, or with one over
--                  cache.config.max_value_bytes or with a number too long for
--                  cache.put: the job still completes) invalidate;
--   'none'       - leave the cache alone.
-- A key a producer is writing in a transaction still open (cache._hold_key) is not waited
-- for: the write is recorded in cache.deferred_writes and queue.maintain applies it once
-- the producer's transaction has ended (cache._apply_deferred), so no producer stalls a
-- worker's completion, failure or take-back.
-- Raises: 22004 null key; 22023 unknown policy.
create or replace function cache._job_done(key text, policy text, result jsonb, reason text)
returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
begin
    perform cache._check_key(_job_done.key, 'cache_key');
    if policy = 'none' then
        return;
    elsif policy = 'rewrite' and reason = 'completed' and result is not null
        and jsonb_typeof(result) <> 'null'
        and queue._json_fits(result,
            coalesce((select c.max_value_bytes from cache.config as c), 1048576)) then
        perform cache._apply_or_defer(_job_done.key, 'put', result, reason);
    elsif policy in ('invalidate', 'rewrite') then
        perform cache._apply_or_defer(_job_done.key, 'invalidate', null, reason);
    else
        raise exception 'policy must be invalidate, rewrite or none (got %)', policy
            using errcode = '22023';
    end if;
end
$$;

-- cache._hold_key: mark `key` as written by a producer's transaction (an advisory lock, held
-- to its end), taken by the writes a producer can make (cache.put, an enqueue's
-- cache_value) before they lock the key's row, when the session's user is neither a worker
-- nor an admin of this install (session_user: a producer application's login). Two such
-- writers of one key wait for each other on it as they would on the key's row; a job's end
-- only tries it in share mode (jobs' ends never conflict with each other on it) and never
-- waits (cache._apply_or_defer). Workers' and admins' writes (a worker's refill) take no
-- mark: a job's end waits for them as before, keeping its cache write in its transaction.
create or replace function cache._hold_key(key text) returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
begin
    if not exists (
        select from queue.install_state as s
        where pg_has_role(session_user, s.role_prefix || '_worker', 'usage')
           or pg_has_role(session_user, s.role_prefix || '_admin', 'usage')
    ) then
        perform pg_advisory_xact_lock(1634628716, hashtext(_hold_key.key));
    end if;
end
$$;

-- cache._apply_or_defer: cache._apply(key, op, value) now when no other open transaction
-- holds the key (cache._hold_key), else recorded in cache.deferred_writes (never waits).
create or replace function cache._apply_or_defer(key text, op text, value jsonb, reason text)
returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
begin
    if pg_try_advisory_xact_lock_shared(1634628716, hashtext(_apply_or_defer.key)) then
        perform cache._apply(_apply_or_defer.key, op, value, null, reason);
    else
        insert into cache.deferred_writes (key, op, value, reason)
        values (_apply_or_defer.key, op, value, reason);
    end if;
end
$$;

-- cache._apply_deferred: apply the deferred writes (cache._apply_or_defer) whose key no open
-- transaction holds any more, oldest first, at most `max_writes`; the others stay for the
-- next call. Returns how many were applied. Called by queue.maintain.
create or replace function cache._apply_deferred(max_writes int) returns int
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
    v_row record;
    v_n int := 0;
begin
    for v_row in
        select d.* from cache.deferred_writes as d order by d.id
        limit _apply_deferred.max_writes for update skip locked
    loop
        if pg_try_advisory_xact_lock_shared(1634628716, hashtext(v_row.key)) then
            perform cache._apply(v_row.key, v_row.op, v_row.value, null, v_row.reason);
            delete from cache.deferred_writes as d where d.id = v_row.id;
            v_n := v_n + 1;
        end if;
    end loop;
    return v_n;
end
$$;

revoke all on function cache._hold_key(text) from public;
revoke all on function cache._apply_or_defer(text, text, jsonb, text) from public;
revoke all on function cache._apply_deferred(int) from public;

comment on function cache._job_done(text, text, jsonb, text) is
'Queue coupling: invalidate (or rewrite with the result) a finished job''s cache key.';
revoke all on function cache._job_done(text, text, jsonb, text) from public;
