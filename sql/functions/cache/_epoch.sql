-- cache._epoch: the current epoch of the shared cache.
--
-- cache.epoch is UNLOGGED, like cache.entries: a crash empties both. The first call after
-- that creates a new epoch from a logged sequence, so an epoch value is never reused and
-- every reader that presents the old one to cache.changes_since is told to flush.
-- Raises nothing.
create or replace function cache._epoch() returns bigint
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
    v_epoch bigint;
begin
    select e.epoch into v_epoch from cache.epoch as e;
    if v_epoch is null then
        insert into cache.epoch as e (epoch) values (nextval('cache.epoch_seq'))
        on conflict (id) do nothing;
        select e.epoch into v_epoch from cache.epoch as e;
    end if;
    return v_epoch;
end
$$;

comment on function cache._epoch() is
'The shared cache''s epoch; a new one after a crash emptied the UNLOGGED cache tables.';
revoke all on function cache._epoch() from public;
