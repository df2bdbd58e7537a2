-- fail with attempts left: the job is pending again, its available_at moved by the default
-- linear backoff attempt * 5 s on the database clock, and the error recorded.
begin;
\ir ../_fixtures.psql
select plan(8);

select queue.enqueue('{}') as j \gset
select token as t from queue.claim('w1') \gset
select is(queue.fail(:j, :'t', 'first'), 'pending', 'fail returns pending');
select is(
    (select row(status, attempt, token, worker, lease_expires_at)::text
     from queue.jobs where id = :j),
    '(pending,1,,,)', 'pending, attempt spent, lease dropped');
select is((select available_at from queue.jobs where id = :j), now() + interval '5 seconds',
    'after attempt 1: available in 5 s');

update queue.jobs set available_at = now() where id = :j;
select token as t from queue.claim('w2') \gset
select queue.fail(:j, :'t', 'second') \g /dev/null
select is((select available_at from queue.jobs where id = :j), now() + interval '10 seconds',
    'after attempt 2: available in 10 s');

update queue.jobs set available_at = now() where id = :j;
select token as t from queue.claim('w3') \gset
select queue.fail(:j, :'t', 'third') \g /dev/null
select is((select available_at from queue.jobs where id = :j), now() + interval '15 seconds',
    'after attempt 3: available in 15 s');

select is(
    (select jsonb_agg(e - 'at' order by (e ->> 'attempt')::int)
     from queue.jobs, jsonb_array_elements(errors) as e where id = :j),
    '[{"attempt": 1, "error": "first", "worker": "w1", "retry_in": "00:00:05"},
      {"attempt": 2, "error": "second", "worker": "w2", "retry_in": "00:00:10"},
      {"attempt": 3, "error": "third", "worker": "w3", "retry_in": "00:00:15"}]'::jsonb,
    'each attempt''s error, worker and delay are in the history');
select is(
    (select count(*) from queue.jobs, jsonb_array_elements(errors) as e
     where id = :j and (e ->> 'at')::timestamptz = now()),
    3::bigint, 'each with its time');
select is_empty($$ select * from queue.claim('w4') $$, 'not claimable before its time');

select * from finish();
rollback;
