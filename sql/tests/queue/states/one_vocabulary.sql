-- queue.states() lists the job states in a job's order of life, with the name queue.job
-- gives each (pending for ready); queue.job, queue.jobs_by, queue.status and queue.stats
-- agree with it on a job in each live state.
begin;
\ir ../_fixtures.psql
select plan(9);

select results_eq(
    $$ select state, live, job_state from queue.states() $$,
    $$ values ('waiting', true, 'waiting'), ('scheduled', true, 'scheduled'),
              ('ready', true, 'pending'), ('running', true, 'running'),
              ('failed', true, 'failed'), ('completed', false, 'completed'),
              ('dead', false, 'dead'), ('cancelled', false, 'cancelled') $$,
    'the vocabulary, in a job''s order of life, and the names queue.job gives it');
select is((select count(*) from queue.states() where meaning is null or meaning = ''), 0::bigint,
    'every state says what it means');

select queue.enqueue('{}', queue => 'sv', delay => '1 hour') as sched \gset
select queue.enqueue('{}', queue => 'sv') as failing \gset
select token as t from queue.claim('w', queues => '{sv}') \gset
select queue.fail(:failing, :'t', 'boom', retry_in => '1 hour') \g /dev/null
select queue.enqueue('{}', queue => 'sv') as running \gset
select queue.claim('w', queues => '{sv}') \g /dev/null
select queue.enqueue('{}', queue => 'sv') as ready \gset
select queue.enqueue('{}', queue => 'sv', after => array[:running]::bigint[]) as waiting \gset

select results_eq(
    format($$ select j.state, s.state from unnest(array[%s, %s, %s, %s, %s]) with ordinality
              as u (id, n) cross join lateral queue.job(u.id) as j
              join queue.states() as s on s.job_state = j.state order by u.n $$,
           :sched, :failing, :running, :ready, :waiting),
    $$ values ('scheduled', 'scheduled'), ('failed', 'failed'), ('running', 'running'),
              ('pending', 'ready'), ('waiting', 'waiting') $$,
    'queue.job names each live state as queue.states() says');
select is((select count(*) from queue.jobs_by(queue => 'sv', state => 'pending')), 1::bigint,
    'queue.jobs_by takes the names queue.job gives');
select throws_ok($$ select * from queue.jobs_by(state => 'bogus') $$, '22023', null,
    'and refuses a state queue.states() does not name');
select row_eq($$ select ready, scheduled, running from queue.status() where queue = 'sv' $$,
    row(1::bigint, 2::bigint, 1::bigint),
    'queue.status counts ready, not yet due (scheduled and failed) and running');
select row_eq(
    $$ select ready, scheduled, running, waiting from queue.stats()
       where queue = 'sv' and category is null $$,
    row(1::bigint, 2::bigint, 1::bigint, 1::bigint),
    'queue.stats counts the same, and the waiting');

select queue.cancel(:sched) \g /dev/null
select is((select state from queue.job(:sched)), 'cancelled', 'a cancelled dead letter');
select is(queue._ended_state('exhausted'), 'dead', 'another reason is dead');

select * from finish();
rollback;
