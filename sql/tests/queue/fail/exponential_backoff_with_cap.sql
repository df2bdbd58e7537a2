-- A queue with exponential backoff waits base * 2^(attempt - 1), capped at backoff_cap;
-- jitter only ever shortens the delay, by at most the jitter fraction.
begin;
\ir ../_fixtures.psql
select plan(6);

select queue.configure_queue('exp', backoff => 'exponential', backoff_base => interval '2 s',
    backoff_cap => interval '10 s', max_attempts => 10) \g /dev/null
select queue.enqueue('{}', queue => 'exp') as j \gset

create temp table delays (attempt int, delay interval);
do $$
declare
    v_tok uuid;
    v_id bigint;
begin
    for i in 1 .. 5 loop
        update queue.jobs set available_at = now() where queue = 'exp';
        select c.job_id, c.token into v_id, v_tok from queue.claim('w', queues => '{exp}') as c;
        perform queue.fail(v_id, v_tok, 'boom');
        insert into delays
        select i, j.available_at - now() from queue.jobs as j where j.id = v_id;
    end loop;
end
$$;

select is((select delay from delays where attempt = 1), interval '2 s', 'attempt 1: base');
select is((select delay from delays where attempt = 2), interval '4 s', 'attempt 2: 2 x base');
select is((select delay from delays where attempt = 3), interval '8 s', 'attempt 3: 4 x base');
select is((select delay from delays where attempt = 4), interval '10 s', 'attempt 4: the cap');
select is((select delay from delays where attempt = 5), interval '10 s', 'attempt 5: the cap');

select queue.configure_queue('jit', backoff_base => interval '100 s', jitter => 0.5,
    max_attempts => 100) \g /dev/null
select queue.enqueue('{}', queue => 'jit') \g /dev/null
do $$
declare
    v_tok uuid;
    v_id bigint;
begin
    truncate delays;
    for i in 1 .. 30 loop
        update queue.jobs set available_at = now(), attempt = 0 where queue = 'jit';
        select c.job_id, c.token into v_id, v_tok from queue.claim('w', queues => '{jit}') as c;
        perform queue.fail(v_id, v_tok, 'boom');
        insert into delays
        select i, j.available_at - now() from queue.jobs as j where j.id = v_id;
    end loop;
end
$$;
select ok(
    (select bool_and(delay > interval '50 s' and delay <= interval '100 s')
     and count(distinct delay) > 1 from delays),
    'jitter 0.5 on 100 s: delays within (50 s, 100 s], and they vary');

select * from finish();
rollback;
