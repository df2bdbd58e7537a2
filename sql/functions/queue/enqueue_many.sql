-- queue.enqueue_many: add many jobs of one queue in one statement; returns their ids in input
-- order.
--
-- Guarantees: all or nothing (one bad payload rejects the whole call and writes nothing); one
-- NOTIFY for the call. dedup_keys, when given, is parallel to payloads (null elements mean no
-- key); a key already held by a live job, or repeated in the call, yields that job's id.
-- No deadlock: the keys are inserted in one order (sorted), whatever their order in the call,
-- so two calls with overlapping keys never wait on each other in a cycle; the ids still
-- follow the input order (and so does the claim order of jobs of equal priority).
-- A null optional argument means its default (priority 0, no delay, the queue's
-- max_attempts and timeout). Isolation: any level without dedup_keys; with them READ
-- COMMITTED (checked up front, 55000 otherwise), as for queue.enqueue's dedup_key.
-- Raises: 22004 null array or null element; 22023 non-object payload, arrays of different
-- lengths, of more than one dimension or not starting at 1, bad names, a delay or priority
-- out of bounds, max_attempts < 1; 54000 a payload over the limit; 55000 dedup_keys outside
-- READ COMMITTED.
-- The body of both forms of queue.enqueue_many (private); timeout null: the queue's. Its steps:
-- the arguments' checks (queue._enqueue_many_check), those of the jobs against the queue's
-- policy (queue._enqueue_many_check_jobs), then one set-based insert, or the keyed inserts
-- (queue._enqueue_many_keyed), and the hint.
create or replace function queue._enqueue_many(
    payloads jsonb[],
    queue text,
    category text,
    priority int,
    delay interval,
    max_attempts int,
    dedup_keys text[],
    timeout interval
) returns setof bigint
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_cfg queue.queues;
    v_keyed record;  -- the ids and whether one was inserted (queue._enqueue_many_keyed)
    v_inserted boolean := false;
    -- null means the default, as for max_attempts and timeout
    v_priority int := coalesce(_enqueue_many.priority, 0);
    v_delay interval := coalesce(_enqueue_many.delay, interval '0');
begin
    if queue._enqueue_many_check(_enqueue_many.payloads, _enqueue_many.queue,
            _enqueue_many.category, v_priority, v_delay, _enqueue_many.max_attempts,
            _enqueue_many.dedup_keys, _enqueue_many.timeout) = 0 then
        return;
    end if;
    v_cfg := queue._enqueue_many_check_jobs(_enqueue_many.payloads, _enqueue_many.queue,
        _enqueue_many.dedup_keys);
    if _enqueue_many.category is not null then
        perform queue._category_id(_enqueue_many.category);
    end if;

    if _enqueue_many.dedup_keys is null then
        -- One set-based insert; identity values follow the ordered input.
        return query
        insert into queue.jobs as j (
            queue, category, priority, payload, max_attempts, available_at, timeout
        )
        select _enqueue_many.queue, _enqueue_many.category, v_priority, p.payload,
            coalesce(_enqueue_many.max_attempts, v_cfg.max_attempts), now() + v_delay,
            coalesce(_enqueue_many.timeout, v_cfg.timeout)
        from unnest(_enqueue_many.payloads) with ordinality as p (payload, n)
        order by p.n
        returning j.id;
        v_inserted := true;
    else
        v_keyed := queue._enqueue_many_keyed(_enqueue_many.payloads, _enqueue_many.queue,
            _enqueue_many.category, v_priority, now() + v_delay,
            coalesce(_enqueue_many.max_attempts, v_cfg.max_attempts), _enqueue_many.dedup_keys,
            coalesce(_enqueue_many.timeout, v_cfg.timeout));
        v_inserted := v_keyed.inserted;
        return query select u.id from unnest(v_keyed.ids) with ordinality as u (id, n) order by u.n;
    end if;

    if v_inserted and v_cfg.notify and v_delay <= interval '0' then
        perform queue._notify_ready(_enqueue_many.queue, true);
    end if;
end
$$;

-- _enqueue_many_check: the checks of queue._enqueue_many's arguments that hold for a call of
-- no jobs too (the names, the delay, priority, timeout and max_attempts, the arrays' shape),
-- in queue.enqueue_many's order of errors; priority and delay with their defaults applied.
-- Returns the number of payloads (0: nothing to enqueue, nothing more to check). Used by
-- queue._enqueue_many.
create or replace function queue._enqueue_many_check(
    payloads jsonb[],
    queue text,
    category text,
    priority int,
    delay interval,
    max_attempts int,
    dedup_keys text[],
    timeout interval
) returns int
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
begin
    if _enqueue_many_check.payloads is null then
        raise exception 'payloads must not be null' using errcode = '22004';
    end if;
    perform queue._check_name(_enqueue_many_check.queue, 'queue');
    -- (a helper is called only when it has something to check: a null category or timeout
    -- passes, so does a delay of 0 in effect, tested as in queue.enqueue)
    if _enqueue_many_check.category is not null then
        perform queue._check_name(_enqueue_many_check.category, 'category', false);
    end if;
    if not (_enqueue_many_check.delay = interval '0'
            and abs(extract(epoch from _enqueue_many_check.delay)) < 1e9
            and now() + _enqueue_many_check.delay = now()) then
        perform queue._check_interval(_enqueue_many_check.delay, 'delay', bound => 'delay');
    end if;
    if _enqueue_many_check.priority <> 0 then
        perform queue._check_priority(_enqueue_many_check.priority);  -- 0 is always allowed
    end if;
    if _enqueue_many_check.timeout is not null then
        perform queue._check_interval(_enqueue_many_check.timeout, 'timeout', true, false,
            'lease');
    end if;
    if _enqueue_many_check.max_attempts is not null and _enqueue_many_check.max_attempts < 1 then
        raise exception 'max_attempts must be at least 1 (got %)',
            _enqueue_many_check.max_attempts using errcode = '22023';
    end if;
    -- one-dimensional and starting at 1, or elements would be read wrongly or not at all
    if array_ndims(_enqueue_many_check.payloads) > 1
        or array_lower(_enqueue_many_check.payloads, 1) <> 1 then
        raise exception 'payloads must be a one-dimensional array starting at index 1'
            using errcode = '22023';
    end if;
    if array_ndims(_enqueue_many_check.dedup_keys) > 1
        or array_lower(_enqueue_many_check.dedup_keys, 1) <> 1 then
        raise exception 'dedup_keys must be a one-dimensional array starting at index 1'
            using errcode = '22023';
    end if;
    return coalesce(array_length(_enqueue_many_check.payloads, 1), 0);
end
$$;

-- _enqueue_many_check_jobs: the checks of the jobs of a queue._enqueue_many call that has
-- some (one dedup key per payload, READ COMMITTED with keys, then each payload and key), in
-- queue.enqueue_many's order of errors after queue._enqueue_many_check's; reads the queue's
-- policy (queue._config) for the payloads' limit and returns it. Used by
-- queue._enqueue_many.
create or replace function queue._enqueue_many_check_jobs(
    payloads jsonb[], queue text, dedup_keys text[]
) returns queue.queues
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
    v_n int := array_length(_enqueue_many_check_jobs.payloads, 1);
    v_cfg queue.queues;
    v_i int;
begin
    if _enqueue_many_check_jobs.dedup_keys is not null
        and coalesce(array_length(_enqueue_many_check_jobs.dedup_keys, 1), 0) <> v_n then
        raise exception 'dedup_keys must have one element per payload (% payloads, % keys)',
            v_n, coalesce(array_length(_enqueue_many_check_jobs.dedup_keys, 1), 0)
            using errcode = '22023';
    end if;
    -- A dedup key answers with the live job of another transaction: it needs the newest
    -- committed rows, which a REPEATABLE READ or SERIALIZABLE snapshot hides (it would fail
    -- with 40001 on a race).
    if _enqueue_many_check_jobs.dedup_keys is not null
        and current_setting('transaction_isolation') <> 'read committed' then
        raise exception 'queue.enqueue_many with dedup_keys must run at READ COMMITTED '
            'isolation (not %)', current_setting('transaction_isolation')
            using errcode = '55000',
            hint = 'Enqueue without dedup_keys, or in a READ COMMITTED transaction.';
    end if;
    v_cfg := queue._config(_enqueue_many_check_jobs.queue);
    -- The elements are checked by one statement, not one call per job: it finds the first
    -- position whose payload (or dedup key) breaks a rule, and the checks then raise that
    -- element's error, the one a check of every element in order would raise first.
    select e.n::int into v_i
    from unnest(_enqueue_many_check_jobs.payloads, _enqueue_many_check_jobs.dedup_keys)
        with ordinality as e (payload, key, n)
    where e.payload is null or jsonb_typeof(e.payload) <> 'object'
       -- queue._json_size's first step inline (a small payload printing as at most 1000
       -- bytes within the limit passes); anything else is measured whole at bounded cost
       or (pg_column_size(e.payload) > 1024
           or octet_length(e.payload::text) > least(1000, v_cfg.payload_limit))
       and not queue._json_fits(e.payload, v_cfg.payload_limit)
       or length(e.key) not between 1 and 512
    order by e.n
    limit 1;
    if v_i is not null then
        perform queue._check_payload(_enqueue_many_check_jobs.payloads[v_i],
            format('payloads[%s]', v_i), v_cfg.payload_limit);
        perform queue._check_name(_enqueue_many_check_jobs.dedup_keys[v_i],
            format('dedup_keys[%s]', v_i), false, 512);
    end if;
    return v_cfg;
end
$$;

-- _enqueue_many_keyed: queue._enqueue_many's inserts of jobs with dedup keys (payloads[i]
-- with dedup_keys[i], the other columns alike, max_attempts and timeout already the
-- queue's when the call gave none). Returns the ids in input order (a key held by a live
-- job, or repeated in the call, gives that job's id) and whether a job was inserted. Used
-- by queue._enqueue_many.
create or replace function queue._enqueue_many_keyed(
    payloads jsonb[], queue text, category text, priority int, available_at timestamptz,
    max_attempts int, dedup_keys text[], timeout interval,
    out ids bigint[], out inserted boolean
)
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_seq text := pg_get_serial_sequence('queue.jobs', 'id');
    v_id bigint;
    v_i int;
begin
    inserted := false;
    -- Keys are inserted in one canonical order (by key, then position), so two calls whose
    -- keys overlap in different orders wait on each other at most once, never in a cycle (no
    -- deadlock). The ids are drawn first, in input order, so a batch is still claimed in
    -- input order (same availability and priority: by id).
    ids := '{}'::bigint[];
    for v_i in 1 .. cardinality(_enqueue_many_keyed.payloads) loop
        ids := ids || nextval(v_seq);
    end loop;
    for v_i in
        select k.n::int from unnest(_enqueue_many_keyed.dedup_keys) with ordinality as k (key, n)
        order by k.key collate "C" nulls last, k.n
    loop
        loop
            insert into queue.jobs as j (
                id, queue, category, priority, payload, max_attempts, available_at,
                dedup_key, timeout
            ) overriding system value values (
                ids[v_i], _enqueue_many_keyed.queue, _enqueue_many_keyed.category,
                _enqueue_many_keyed.priority, _enqueue_many_keyed.payloads[v_i],
                _enqueue_many_keyed.max_attempts, _enqueue_many_keyed.available_at,
                _enqueue_many_keyed.dedup_keys[v_i], _enqueue_many_keyed.timeout
            )
            on conflict (queue, dedup_key) where dedup_key is not null do nothing
            returning j.id into v_id;
            if v_id is not null then
                inserted := true;
                exit;
            end if;
            select j.id into v_id from queue.jobs as j
            where j.queue = _enqueue_many_keyed.queue
              and j.dedup_key = _enqueue_many_keyed.dedup_keys[v_i];
            exit when v_id is not null;
        end loop;
        ids[v_i] := v_id;
    end loop;
end
$$;

create or replace function queue.enqueue_many(
    payloads jsonb[],
    queue text default 'default',
    category text default null,
    priority int default 0,
    delay interval default '0',
    max_attempts int default null,
    dedup_keys text[] default null
) returns setof bigint
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
begin
    return query select queue._enqueue_many(payloads, queue, category, priority, delay,
        max_attempts, dedup_keys, null);
end
$$;

-- queue.enqueue_many with a timeout for every job (see queue.enqueue's timeout form).
-- Raises as queue.enqueue_many, and 22023 for a timeout <= 0 or over queue.config.max_lease.
create or replace function queue.enqueue_many(
    payloads jsonb[],
    timeout interval,
    queue text default 'default',
    category text default null,
    priority int default 0,
    delay interval default '0',
    max_attempts int default null,
    dedup_keys text[] default null
) returns setof bigint
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
begin
    return query select queue._enqueue_many(payloads, queue, category, priority, delay,
        max_attempts, dedup_keys, timeout);
end
$$;

revoke all on function queue._enqueue_many(jsonb[], text, text, int, interval, int, text[], interval)
from public;
revoke all on function queue._enqueue_many_check(
    jsonb[], text, text, int, interval, int, text[], interval
) from public;
revoke all on function queue._enqueue_many_check_jobs(jsonb[], text, text[]) from public;
revoke all on function queue._enqueue_many_keyed(
    jsonb[], text, text, int, timestamptz, int, text[], interval
) from public;
comment on function queue.enqueue_many(jsonb[], interval, text, text, int, interval, int, text[])
is 'Add many jobs of one queue with a timeout each; returns their ids in input order.';
revoke all on function queue.enqueue_many(jsonb[], interval, text, text, int, interval, int, text[])
from public;
grant execute on function queue.enqueue_many(
    jsonb[], interval, text, text, int, interval, int, text[]
) to andal_producer, andal_admin;
comment on function queue.enqueue_many(jsonb[], text, text, int, interval, int, text[]) is
'Add many jobs of one queue in one statement; returns their ids in input order.';
revoke all on function queue.enqueue_many(jsonb[], text, text, int, interval, int, text[])
from public;
grant execute on function queue.enqueue_many(jsonb[], text, text, int, interval, int, text[])
to andal_producer, andal_admin;

-- queue.enqueue_many with parents: every job of the call waits for every job of `after`, as
-- queue.enqueue's form with `after` (a fan-out: many children of one parent, released
-- together by one statement when it ends). No dedup_keys.
-- Raises as queue.enqueue_many, and as queue.enqueue's form with `after`.
create or replace function queue.enqueue_many(
    payloads jsonb[],
    after bigint[],
    queue text default 'default',
    category text default null,
    priority int default 0,
    delay interval default '0',
    max_attempts int default null,
    timeout interval default null,
    on_parent_failure text default 'cancel'
) returns setof bigint
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_policy text := coalesce(on_parent_failure, 'cancel');
    v_parents bigint[] := queue._workflow_check(coalesce(after, '{}'), v_policy);
    v_ids bigint[];
begin
    v_ids := array(select queue._enqueue_many(payloads, queue, category, priority, delay,
        max_attempts, null, timeout));
    perform queue._workflow_wait(v_ids, queue, v_parents, v_policy);
    return query select u.id from unnest(v_ids) with ordinality as u (id, n) order by u.n;
end
$$;

comment on function queue.enqueue_many(
    jsonb[], bigint[], text, text, int, interval, int, interval, text
) is 'Add many jobs of one queue that wait for the jobs of after; returns their ids in order.';
revoke all on function queue.enqueue_many(
    jsonb[], bigint[], text, text, int, interval, int, interval, text
) from public;
grant execute on function queue.enqueue_many(
    jsonb[], bigint[], text, text, int, interval, int, interval, text
) to andal_producer, andal_admin;
