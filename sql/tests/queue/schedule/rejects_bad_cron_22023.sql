-- Bad cron expressions, periods and time zones are refused with their SQLSTATE and create
-- nothing.
begin;
\ir ../_fixtures.psql
select plan(23);

create temporary table before as select count(*) as n from queue.schedules;

select throws_ok(format('select queue.schedule(name => %L, queue => %L, cron => %L)',
        's', 'q', c.expr), '22023', null, format('cron %L is refused', c.expr))
from unnest(array[
    '60 * * * *', '* 24 * * *', '* * 0 * *', '* * 32 * *', '* * * 13 *', '* * * * 8',
    '* * * *', '* * * * * *', '', '*/0 * * * *', '5-1 * * * *', '1,,2 * * * *',
    '0 0 * foo *', '0 0 * * sunday', 'a b c d e', '0 0 30 2 *', '0 0 31 4,6,9,11 *'
]) as c (expr);
select throws_ok($$select queue.schedule(name => 's', queue => 'q', cron => null)$$,
    '22023', null, 'neither cron nor every');
select throws_ok(
    $$select queue.schedule(name => 's', queue => 'q', cron => '* * * * *', every => '1 minute')$$,
    '22023', null, 'both cron and every');
select throws_ok($$select queue.schedule(name => 's', queue => 'q', every => '1.5 seconds')$$,
    '22023', null, 'every of a fraction of a second');
select throws_ok($$select queue.schedule(name => 's', queue => 'q', every => '1 month')$$,
    '22023', null, 'every with months');
select throws_ok(
    $$select queue.schedule(name => 's', queue => 'q', cron => '* * * * *', timezone => 'Mars/Base')$$,
    '22023', null, 'an unknown time zone');
select is((select count(*) from queue.schedules), (select n from before),
    'no schedule was made');

select * from finish();
rollback;
