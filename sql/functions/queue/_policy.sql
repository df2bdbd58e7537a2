-- A queue's policy: the defaults a queue without a row has, read from the column defaults of
-- queue.queues (so a setting added by a migration is a default here with no second list),
-- and whether a row says nothing but them (queue._forget_unused may then drop it).

-- _queue_defaults: the row a queue never configured has: every column's default (null for
-- the name, which has none), evaluated now.
create or replace function queue._queue_defaults() returns queue.queues
language plpgsql stable
set search_path = pg_catalog, pg_temp
as $$
declare
    v_defaults jsonb;
    v_sql text;
begin
    select 'select jsonb_build_object(' || string_agg(format('%L, (%s)::%s', a.attname,
            coalesce(pg_get_expr(d.adbin, d.adrelid), 'null'),
            format_type(a.atttypid, a.atttypmod)), ', ' order by a.attnum) || ')'
    into v_sql
    from pg_attribute as a
    left join pg_attrdef as d on d.adrelid = a.attrelid and d.adnum = a.attnum
    where a.attrelid = 'queue.queues'::regclass and a.attnum > 0 and not a.attisdropped;
    execute v_sql into v_defaults;  -- the catalog's own default expressions, no caller's text
    return jsonb_populate_record(null::queue.queues, v_defaults);
end
$$;

-- _says_nothing: whether a queue row holds only the defaults (its name and updated_at
-- aside), whatever columns queue.queues has.
create or replace function queue._says_nothing(q queue.queues, defaults queue.queues)
returns boolean
language sql immutable
set search_path = pg_catalog, pg_temp
as $$
    select to_jsonb(q) - 'queue' - 'updated_at' = to_jsonb(defaults) - 'queue' - 'updated_at'
$$;

comment on function queue._queue_defaults() is
'Private: the policy of a queue never configured (the column defaults of queue.queues).';
comment on function queue._says_nothing(queue.queues, queue.queues) is
'Private: whether a queue row holds only the defaults.';
revoke all on function queue._queue_defaults() from public;
revoke all on function queue._says_nothing(queue.queues, queue.queues) from public;
