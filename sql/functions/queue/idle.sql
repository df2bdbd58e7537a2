-- queue.idle and queue.busy: a listening session says when it sleeps, so producers send the
-- hint on andal_jobs only when it can wake someone (see queue/_notify.sql).
--
-- queue.idle(queues): call it on the LISTEN session, outside a transaction, when a claim of
-- queues found nothing and before waiting; then claim once more (a job made claimable before
-- the idle took effect sent no hint), and wait for a notification or the poll interval.
-- queues null: every queue. Until this session's next queue.busy, every change that makes a
-- job of those queues claimable hints (at least one per sleep). Idempotent; a later call
-- replaces the queues of an earlier one.
-- queue.busy(): call it when woken (a notification, or the poll interval), before claiming:
-- producers then stop hinting for this session while it works. Idempotent.
-- A session that called queue.idle once counts as a user of its queues until it ends:
-- while none of a queue's users sleeps, changes of that queue send no hint. A queue no
-- session called queue.idle for is hinted on every change, as before.
-- Raises: 22004 a null element of queues; 22023 an empty queues array, a bad queue name.
create or replace function queue.idle(queues text []) returns void
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_queue text;
begin
    if idle.queues is not null then
        if cardinality(idle.queues) = 0 then
            raise exception 'queues must not be empty (null means every queue)'
                using errcode = '22023';
        end if;
        foreach v_queue in array idle.queues loop
            perform queue._check_name(v_queue, 'queue');
        end loop;
    end if;
    perform queue._sleep(coalesce(
        (select array_agg(queue._hint_key(q.queue)) from unnest(idle.queues) as q (queue)),
        array[queue._hint_key(null)]));
end
$$;

create or replace function queue.busy() returns void
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
begin
    perform queue._sleep(null);
end
$$;

comment on function queue.idle(text []) is
'Say that this (listening) session sleeps on queues: their changes hint it until queue.busy.';
comment on function queue.busy() is
'Say that this session no longer sleeps: producers stop hinting for it while it works.';
revoke all on function queue.idle(text []) from public;
revoke all on function queue.busy() from public;
grant execute on function queue.idle(text []) to andal_worker, andal_admin;
grant execute on function queue.busy() to andal_worker, andal_admin;
