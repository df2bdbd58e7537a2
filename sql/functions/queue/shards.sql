-- Sharding of the live table: queue.jobs is partitioned by hash (queue) (migration 0011
-- declares it, with its indexes, once, on the partitioned table), and its partitions are the
-- shards: queue.jobs_p0 alone on an unsharded install, queue.jobs_p0 … queue.jobs_p<n-1> with
-- n shards. queue.set_shards(shards => n) changes the count in place. Every job of a queue
-- lives in one shard, so a claim of listed queues reads only their shards (PostgreSQL prunes
-- the others), dedup stays one unique index per shard, and claim order holds within each
-- shard and, merged, across them.

-- queue.shards: the layout, one row per shard (one row, shard 0, when unsharded).
-- Consistent with a concurrent queue.set_shards: it takes queue.jobs in ACCESS SHARE mode
-- first (so it waits for a move in progress), then reads the partitions in a snapshot taken
-- after the lock (volatile, not stable: each statement sees what committed before it), so
-- it reports the layout either before or after the move, never a dropped partition.
create or replace function queue.shards()
returns table (shard int, relation text, live_jobs bigint)
language plpgsql
volatile
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_part record;
    v_n bigint;
begin
    lock table queue.jobs in access share mode;
    for v_part in
        select format('%I.%I', n.nspname, c.relname) as name,
            (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'remainder (\d+)'))[1]::int as r
        from pg_inherits as i
        join pg_class as c on c.oid = i.inhrelid
        join pg_namespace as n on n.oid = c.relnamespace
        where i.inhparent = 'queue.jobs'::regclass
        order by 2
    loop
        execute format('select count(*) from %s', v_part.name) into v_n;
        shard := v_part.r;
        relation := v_part.name;
        live_jobs := v_n;
        return next;
    end loop;
end
$$;

-- queue.shard_of: the shard a queue's jobs live in (0 when unsharded).
create or replace function queue.shard_of(queue text)
returns int
language plpgsql
stable
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_n int;
begin
    perform queue._check_name(shard_of.queue, 'queue');
    select count(*) into v_n from pg_inherits where inhparent = 'queue.jobs'::regclass;
    if v_n = 0 then
        return 0;
    end if;
    for v_r in 0 .. v_n - 1 loop
        if satisfies_hash_partition('queue.jobs'::regclass, v_n, v_r, shard_of.queue) then
            return v_r;
        end if;
    end loop;
    return null;
end
$$;

-- queue.set_shards: spread queue.jobs over `shards` partitions (1: unsharded), in place, in
-- the caller's transaction. Every live job keeps its id, token, lease and attempt count, so
-- running workers complete their jobs afterwards as before; dead letters, results and
-- category slots are not touched. queue.jobs itself stays (only its partitions are
-- replaced, and they get the indexes declared on it), so nothing compiled against it goes
-- stale. Takes an ACCESS EXCLUSIVE lock on queue.jobs for the move: claims, enqueues and
-- completions wait until it commits (about a second per 100,000 live jobs here). Returns
-- the number of jobs moved; 0 and no change when the table already has that many shards.
-- Raises: 22004 null shards; 22023 shards outside 1..64.
create or replace function queue.set_shards(shards int)
returns bigint
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_current int;
    v_options text;
    v_part text;
    v_moved bigint;
begin
    if set_shards.shards is null then
        raise exception 'shards must not be null' using errcode = '22004';
    end if;
    if set_shards.shards not between 1 and 64 then
        raise exception 'shards must be between 1 and 64 (got %)', set_shards.shards
            using errcode = '22023';
    end if;
    lock table queue.jobs in access exclusive mode;
    select count(*) into v_current from pg_inherits where inhparent = 'queue.jobs'::regclass;
    if v_current = set_shards.shards then
        return 0;
    end if;
    -- the storage options migration 0011 gave the partitions, for the new ones
    select array_to_string(c.reloptions, ', ') into v_options
    from pg_inherits as i
    join pg_class as c on c.oid = i.inhrelid
    where i.inhparent = 'queue.jobs'::regclass
    order by c.relname
    limit 1;

    -- The live jobs aside, the old partitions dropped, the new ones created (with the
    -- indexes of queue.jobs), the jobs back with their ids.
    -- (statements naming queue.jobs_resharding are dynamic: it exists only during the call)
    execute format('create unlogged table queue.%I as select * from queue.jobs', 'jobs_resharding');
    get diagnostics v_moved = row_count;
    for v_part in
        select i.inhrelid::regclass::text from pg_inherits as i
        where i.inhparent = 'queue.jobs'::regclass
    loop
        execute format('drop table %s', v_part);
    end loop;
    for v_r in 0 .. set_shards.shards - 1 loop
        execute format(
            'create table queue.%I partition of queue.jobs'
            ' for values with (modulus %s, remainder %s)%s',
            'jobs_p' || v_r, set_shards.shards, v_r,
            case when v_options is not null then format(' with (%s)', v_options) else '' end);
    end loop;
    execute format('insert into queue.jobs overriding system value select * from queue.%I',
        'jobs_resharding');
    execute format('drop table queue.%I', 'jobs_resharding');
    analyze queue.jobs;
    return v_moved;
end
$$;

comment on function queue.shards() is
'The live table''s shards: one row per partition with its live job count.';
comment on function queue.shard_of(text) is
'The shard (hash partition of queue.jobs) that holds a queue''s jobs; 0 when unsharded.';
comment on function queue.set_shards(int) is
'Spread queue.jobs over n hash partitions by queue (1: unsharded), in place, keeping every job.';
revoke all on function queue.shards() from public;
revoke all on function queue.shard_of(text) from public;
revoke all on function queue.set_shards(int) from public;
grant execute on function queue.shards() to andal_admin;
grant execute on function queue.shard_of(text) to andal_producer, andal_worker, andal_admin;
grant execute on function queue.set_shards(int) to andal_admin;
