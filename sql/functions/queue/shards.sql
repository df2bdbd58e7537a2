-- Sharding of the live table: queue.jobs hash-partitioned by queue.
--
-- An install is unsharded (a plain table) until queue.set_shards(shards => n) with n > 1
-- turns queue.jobs into a table partitioned by hash (queue) into n partitions
-- queue.jobs_p0 … queue.jobs_p<n-1>. The same function re-shards (n to m) or unshards (n to 1)
-- in place. Every job of a queue lives in one shard, so a claim of listed queues reads only
-- their shards (PostgreSQL prunes the others), dedup stays one unique index per shard, and
-- claim order holds within each shard and, merged, across them.

-- queue.shards: the layout, one row per shard (one row, shard 0, when unsharded).
create or replace function queue.shards()
returns table (shard int, relation text, live_jobs bigint)
language plpgsql
stable
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_part record;
    v_n bigint;
begin
    if not exists (select from pg_partitioned_table where partrelid = 'queue.jobs'::regclass) then
        return query select 0, 'queue.jobs'::text, (select count(*) from queue.jobs);
        return;
    end if;
    for v_part in
        select c.oid, format('%I.%I', n.nspname, c.relname) as name,
            (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'remainder (\d+)'))[1]::int as r
        from pg_inherits as i
        join pg_class as c on c.oid = i.inhrelid
        join pg_namespace as n on n.oid = c.relnamespace
        where i.inhparent = 'queue.jobs'::regclass
        order by 3
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

-- queue.set_shards: partition queue.jobs by hash (queue) into `shards` partitions (1: a plain
-- table again), in place, in the caller's transaction. Every live job keeps its id, token,
-- lease and attempt count, so running workers complete their jobs afterwards as before;
-- dead letters, results and category slots are not touched. Takes an ACCESS EXCLUSIVE lock
-- on queue.jobs for the copy: claims, enqueues and completions wait until it commits (about
-- a second per 100,000 live jobs here). Returns the number of jobs moved; 0 and no change
-- when the table already has that many shards.
-- Raises: 22004 null shards; 22023 shards outside 1..64; 55000 when a unique index of
-- queue.jobs does not include the queue column (it could not be enforced per shard).
create or replace function queue.set_shards(shards int)
returns bigint
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_old oid;
    v_current int;
    v_seq text;
    v_next bigint;
    v_moved bigint;
    v_idx record;
    v_names text[] := '{}'::text[];
    v_fn regprocedure;
    v_opts text;
begin
    if set_shards.shards is null then
        raise exception 'shards must not be null' using errcode = '22004';
    end if;
    if set_shards.shards not between 1 and 64 then
        raise exception 'shards must be between 1 and 64 (got %)', set_shards.shards
            using errcode = '22023';
    end if;
    lock table queue.jobs in access exclusive mode;
    v_old := 'queue.jobs'::regclass;
    select greatest(count(*), 1) into v_current from pg_inherits where inhparent = v_old;
    if v_current = set_shards.shards then
        return 0;
    end if;
    if exists (
        select from pg_index as x
        where x.indrelid = v_old and x.indisunique and not x.indisprimary
          and not exists (
              select from pg_attribute as a
              where a.attrelid = v_old and a.attname = 'queue' and a.attnum = any (x.indkey)
          )
    ) then
        raise exception 'a unique index of queue.jobs does not include the queue column'
            using errcode = '55000',
            hint = 'Each shard enforces unique indexes on its own; include queue in the index.';
    end if;

    -- The new table: same columns, defaults, checks and identity (a new sequence).
    -- (Statements naming queue.jobs_next are dynamic: the table exists only during the call.)
    execute 'create table queue.jobs_next (like queue.jobs including all excluding indexes)'
        || case when set_shards.shards > 1 then ' partition by hash (queue)' else '' end;
    select array_to_string(c.reloptions, ', ') into v_opts
    from pg_class as c
    where c.oid = coalesce(
        (select i.inhrelid from pg_inherits as i where i.inhparent = v_old limit 1), v_old);
    if set_shards.shards = 1 then
        if v_opts is not null then
            execute format('alter table queue.jobs_next set (%s)', v_opts);
        end if;
    else
        for v_r in 0 .. set_shards.shards - 1 loop
            execute format(
                'create table queue.%I partition of queue.jobs_next'
                ' for values with (modulus %s, remainder %s)%s',
                'jobs_next_p' || v_r, set_shards.shards, v_r,
                case when v_opts is not null then format(' with (%s)', v_opts) else '' end);
        end loop;
    end if;

    -- The same indexes, under temporary names; the primary key gains the partition key.
    execute 'alter table queue.jobs_next add constraint jobs_next_pkey primary key '
        || case when set_shards.shards > 1 then '(id, queue)' else '(id)' end;
    for v_idx in
        select c.relname, pg_get_indexdef(x.indexrelid) as def
        from pg_index as x
        join pg_class as c on c.oid = x.indexrelid
        where x.indrelid = v_old and not x.indisprimary
        order by c.relname
    loop
        execute regexp_replace(
            v_idx.def,
            '^CREATE (UNIQUE )?INDEX \S+ ON (ONLY )?queue\.jobs ',
            format('CREATE \1INDEX %I ON queue.jobs_next ', v_idx.relname || '_next'));
        v_names := array_append(v_names, v_idx.relname::text);
    end loop;

    -- Move the live jobs, keeping their ids; the new sequence continues the old one.
    execute format('insert into queue.%I overriding system value select * from queue.jobs',
        'jobs_next');
    get diagnostics v_moved = row_count;
    v_seq := pg_get_serial_sequence('queue.jobs', 'id');
    execute format('select last_value + 1 from %s', v_seq) into v_next;
    perform setval(pg_get_serial_sequence('queue.jobs_next', 'id'),
        greatest(v_next, (select coalesce(max(j.id), 0) + 1 from queue.jobs as j)), false);

    -- Swap, and give the new objects the old names.
    drop table queue.jobs;
    execute format('alter table queue.%I rename to jobs', 'jobs_next');
    alter table queue.jobs rename constraint jobs_next_pkey to jobs_pkey;
    execute format('alter sequence %s rename to jobs_id_seq',
        pg_get_serial_sequence('queue.jobs', 'id'));
    for i in 1 .. coalesce(cardinality(v_names), 0) loop
        execute format('alter index queue.%I rename to %I', v_names[i] || '_next', v_names[i]);
    end loop;
    for v_r in 0 .. set_shards.shards - 1 loop
        exit when set_shards.shards = 1;
        execute format('alter table queue.%I rename to %I', 'jobs_next_p' || v_r, 'jobs_p' || v_r);
    end loop;
    revoke all on queue.jobs from public;
    comment on table queue.jobs is
    'Live jobs (pending and running); partitioned by hash (queue) when sharded.';

    -- Compiled PL/pgSQL functions in other sessions hold the old table's row type: rewrite
    -- each function's catalog row (same cost) so every session recompiles it on next call.
    for v_fn in
        select p.oid::regprocedure from pg_proc as p
        where p.pronamespace in ('queue'::regnamespace, 'cache'::regnamespace)
          and p.prokind = 'f'
    loop
        execute format('alter function %s cost %s', v_fn,
            (select p.procost from pg_proc as p where p.oid = v_fn));
    end loop;
    analyze queue.jobs;
    return v_moved;
end
$$;

comment on function queue.shards() is
'The live table''s shards: one row per partition with its live job count.';
comment on function queue.shard_of(text) is
'The shard (hash partition of queue.jobs) that holds a queue''s jobs; 0 when unsharded.';
comment on function queue.set_shards(int) is
'Partition queue.jobs by hash (queue) into n shards (1: unsharded), in place, keeping every job.';
revoke all on function queue.shards() from public;
revoke all on function queue.shard_of(text) from public;
revoke all on function queue.set_shards(int) from public;
grant execute on function queue.shards() to andal_admin;
grant execute on function queue.shard_of(text) to andal_producer, andal_worker, andal_admin;
grant execute on function queue.set_shards(int) to andal_admin;
