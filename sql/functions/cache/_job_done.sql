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
        perform cache._apply(_job_done.key, 'put', result, null, reason);
    elsif policy in ('invalidate', 'rewrite') then
        perform cache._apply(_job_done.key, 'invalidate', null, null, reason);
    else
        raise exception 'policy must be invalidate, rewrite or none (got %)', policy
            using errcode = '22023';
    end if;
end
$$;

comment on function cache._job_done(text, text, jsonb, text) is
'Queue coupling: invalidate (or rewrite with the result) a finished job''s cache key.';
revoke all on function cache._job_done(text, text, jsonb, text) from public;
