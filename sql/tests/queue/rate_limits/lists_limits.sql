-- rate_limits lists the rate-limited categories only, with their window, the starts inside
-- the current window, and their concurrency limit.
begin;
\ir ../_fixtures.psql
select plan(3);

select queue.set_category_limit(category => 'api', max_running => 5);
select queue.set_rate_limit(category => 'api', starts => 3, per => '1 minute');
select queue.set_rate_limit(category => 'sms', starts => 10, per => '1 second');
select queue.set_category_limit(category => 'plain', max_running => 2);
update queue.categories set rate_log = array[now(), now() - interval '10 seconds',
    now() - interval '2 minutes'] where category = 'api';

select results_eq(
    $$ select category, starts, per, started_in_window, max_running from queue.rate_limits() $$,
    $$ values ('api', 3, interval '1 minute', 2, 5), ('sms', 10, interval '1 second', 0, 1) $$,
    'each rate-limited category, the starts in its window counted');
select queue.set_rate_limit(category => 'sms', starts => null, per => null);
select is((select count(*) from queue.rate_limits() where category = 'sms'), 0::bigint,
    'a removed limit is gone');
set local role andal_monitor;
select is((select count(*) from queue.rate_limits()), 1::bigint, 'the read-only role may read it');
reset role;

select * from finish();
rollback;
