-- cache.register_view: keep a materialized view as a precomputed cache, refreshed
-- as queue work by cache.refresh_due() when it is more than max_lag behind a change or more
-- than max_changes row changes of its tracked sources (cache.track) behind. Registering again
-- updates the two limits.
-- The view must be a populated-or-not materialized view with a unique index on plain
-- columns and no WHERE clause, so REFRESH ... CONCURRENTLY can run (readers are never
-- blocked); the caller and andal's owning role must both be able to refresh it (be
-- members of its owner).
-- Raises: 22004 null argument; 22023 not a materialized view, max_lag <= 0,
-- max_changes < 1; 42704 unknown relation; 55000 no usable unique index; 42501 the caller
-- or andal's owner may not refresh the view.
create or replace function cache.register_view(view regclass, max_lag interval, max_changes bigint)
returns void
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_kind "char";
    v_owner oid;
begin
    if register_view.view is null then
        raise exception 'view must not be null' using errcode = '22004';
    end if;
    if register_view.max_lag is null then
        raise exception 'max_lag must not be null' using errcode = '22004';
    end if;
    if register_view.max_changes is null then
        raise exception 'max_changes must not be null' using errcode = '22004';
    end if;
    perform queue._check_interval(register_view.max_lag, 'max_lag', true, false);
    if register_view.max_changes < 1 then
        raise exception using errcode = '22023',
            message = format('max_changes must be at least 1 (got %s)', register_view.max_changes);
    end if;
    select c.relkind, c.relowner into v_kind, v_owner
    from pg_catalog.pg_class as c where c.oid = register_view.view;
    if v_kind is null then
        raise exception 'view % does not exist', register_view.view::oid using errcode = '42704';
    end if;
    if v_kind <> 'm' then
        raise exception using errcode = '22023',
            message = format('view must be a materialized view (%s is not)', register_view.view);
    end if;
    if not exists (
        select from pg_catalog.pg_index as i
        where i.indrelid = register_view.view and i.indisunique and i.indisvalid
          and i.indpred is null and i.indexprs is null
    ) then
        raise exception 'view % has no unique index on plain columns', register_view.view
            using errcode = '55000',
            hint = 'REFRESH MATERIALIZED VIEW CONCURRENTLY needs one: create unique index '
                'on the view (its key columns), without WHERE or expressions.';
    end if;
    -- The caller's own right first (inside this function current_user is andal's owner):
    -- refreshing a materialized view is its owner's right, so only a member of the owner
    -- may have andal refresh it.
    if not pg_catalog.pg_has_role(queue._caller(), v_owner, 'USAGE') then
        raise exception 'role % may not refresh view % (only its owner may)', queue._caller(),
            register_view.view
            using errcode = '42501',
            hint = 'Register the view as (a member of) its owner.';
    end if;
    if not pg_catalog.pg_has_role(current_user, v_owner, 'USAGE') then
        raise exception 'andal''s owner % may not refresh view %', current_user,
            register_view.view
            using errcode = '42501',
            hint = 'Make the view''s owner a role andal''s owner is a member of.';
    end if;
    insert into cache.views as v (view, max_lag, max_changes)
    values (register_view.view, register_view.max_lag, register_view.max_changes)
    on conflict (view) do update
    set max_lag = excluded.max_lag, max_changes = excluded.max_changes;
end
$$;

-- cache.unregister_view: forget a view; drops the tracking triggers of sources no other view
-- tracks. Raises: 22004 null view; 42704 view not registered.
create or replace function cache.unregister_view(view regclass) returns void
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_source regclass;
begin
    if unregister_view.view is null then
        raise exception 'view must not be null' using errcode = '22004';
    end if;
    if not exists (select from cache.views as v where v.view = unregister_view.view) then
        raise exception 'view % is not registered', unregister_view.view using errcode = '42704';
    end if;
    for v_source in
        select s.source from cache.view_sources as s where s.view = unregister_view.view
    loop
        perform cache.untrack(unregister_view.view, v_source);
    end loop;
    delete from cache.views as v where v.view = unregister_view.view;
end
$$;

comment on function cache.register_view(regclass, interval, bigint) is
'Keep a materialized view fresh as queue work: refresh past max_lag or max_changes.';
comment on function cache.unregister_view(regclass) is
'Forget a registered view (and the tracking of sources no other view needs).';
revoke all on function cache.register_view(regclass, interval, bigint) from public;
revoke all on function cache.unregister_view(regclass) from public;
grant execute on function cache.register_view(regclass, interval, bigint) to andal_admin;
grant execute on function cache.unregister_view(regclass) to andal_admin;
