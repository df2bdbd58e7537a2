-- The category gate's private pieces: category ids, the slot of a job, and which
-- categories are full. queue.claim takes the gate's row lock and fills the slots.
-- Private: granted to nobody.

-- _category_id: the id of a category, created (limit 1) on first use. By its unique index
-- whatever the statistics say: after the table was vacuumed empty, a sequential scan looks
-- cheapest, and thousands of new names in one transaction made each lookup read them all.
create or replace function queue._category_id(category_name text) returns bigint
language plpgsql
set search_path = pg_catalog, pg_temp
set enable_seqscan = off
as $$
declare
    v_id bigint;
begin
    select c.id into v_id from queue.categories as c where c.category = category_name;
    if v_id is null then
        insert into queue.categories as c (category) values (category_name)
        on conflict (category) do nothing;
        select c.id into v_id from queue.categories as c where c.category = category_name;
    end if;
    return v_id;
end
$$;

-- The category gate locks the category's row now (see queue.claim); the advisory key that
-- any role could take is gone.
drop function if exists queue._gate_key(bigint);
revoke all on function queue._category_id(text) from public;
