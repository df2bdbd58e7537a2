-- Cron expressions against their expected next fire times: month ends, leap days, names,
-- steps, the day-of-month/day-of-week rule, and daylight-saving changes in Europe/Berlin
-- (2026-03-29 02:00 -> 03:00, 2026-10-25 03:00 -> 02:00) and America/New_York
-- (2026-03-08 02:00 -> 03:00, 2026-11-01 02:00 -> 01:00).
begin;
\ir ../_fixtures.psql

create temporary table cases (expr text, tz text, after timestamptz, expected timestamptz,
    what text);
insert into cases values
('*/5 * * * *', 'UTC', '2026-01-31 23:58+00', '2026-02-01 00:00+00', 'step across a month end'),
('0 0 31 * *', 'UTC', '2026-04-01 00:00+00', '2026-05-31 00:00+00', '31st skips April'),
('0 0 29 2 *', 'UTC', '2026-01-01 00:00+00', '2028-02-29 00:00+00', 'leap day'),
('0 0 29 2 *', 'UTC', '2028-02-29 00:00+00', '2032-02-29 00:00+00', 'next leap day'),
('0 0 28-31 2 *', 'UTC', '2027-02-28 00:00+00', '2028-02-28 00:00+00', 'February end'),
('59 23 31 12 *', 'UTC', '2026-12-31 23:59+00', '2027-12-31 23:59+00', 'year end'),
('10-40/15 * * * *', 'UTC', '2026-01-01 00:40+00', '2026-01-01 01:10+00', 'range with step'),
('0 0 * * 7', 'UTC', '2026-01-01 00:00+00', '2026-01-04 00:00+00', '7 is Sunday'),
('0 0 * jan,jul sun', 'UTC', '2026-01-31 00:00+00', '2026-07-05 00:00+00', 'names'),
('0 0 1 * mon', 'UTC', '2026-06-02 00:00+00', '2026-06-08 00:00+00',
    'day of month or day of week'),
('0 0 1 * *', 'UTC', '2026-06-02 00:00+00', '2026-07-01 00:00+00', 'day of month alone'),
('@monthly', 'UTC', '2026-12-15 00:00+00', '2027-01-01 00:00+00', '@monthly'),
('0 0 1 * *', 'Europe/Berlin', '2026-06-15 00:00+00', '2026-06-30 22:00+00',
    'midnight in Berlin summer time'),
('30 2 * * *', 'Europe/Berlin', '2026-03-28 12:00+00', '2026-03-29 01:30+00',
    'Berlin: a skipped 02:30 fires at 03:30 summer time'),
('0 * * * *', 'Europe/Berlin', '2026-03-29 00:30+00', '2026-03-29 01:00+00',
    'Berlin: hourly across the skipped hour'),
('0 3 * * *', 'Europe/Berlin', '2026-03-28 12:00+00', '2026-03-29 01:00+00',
    'Berlin: 03:00 on the spring-forward day'),
('30 2 * * *', 'Europe/Berlin', '2026-10-24 12:00+00', '2026-10-25 00:30+00',
    'Berlin: a repeated 02:30 fires at its first occurrence'),
('30 2 * * *', 'Europe/Berlin', '2026-10-25 00:30+00', '2026-10-26 01:30+00',
    'Berlin: ... and only once'),
('*/30 * * * *', 'Europe/Berlin', '2026-10-25 00:30+00', '2026-10-25 01:00+00',
    'Berlin: every 30 minutes runs through both passes of the repeated hour'),
('0 12 * * *', 'Europe/Berlin', '2026-10-25 00:00+00', '2026-10-25 11:00+00',
    'Berlin: noon in winter time after the change'),
('30 2 * * *', 'America/New_York', '2026-03-07 12:00+00', '2026-03-08 07:30+00',
    'New York: a skipped 02:30 fires at 03:30 daylight time'),
('0 9 * * mon-fri', 'America/New_York', '2026-03-06 15:00+00', '2026-03-09 13:00+00',
    'New York: weekdays at 9 after the change'),
('30 1 * * *', 'America/New_York', '2026-10-31 12:00+00', '2026-11-01 05:30+00',
    'New York: a repeated 01:30 fires at its first occurrence'),
('30 1 * * *', 'America/New_York', '2026-11-01 05:30+00', '2026-11-02 06:30+00',
    'New York: ... and only once'),
('*/20 * * * *', 'America/New_York', '2026-11-01 05:50+00', '2026-11-01 06:00+00',
    'New York: every 20 minutes into the repeated hour');

select plan((select count(*)::int from cases));
select is(queue._cron_next(c.expr, c.after, c.tz), c.expected,
    format('%s (%s in %s after %s)', c.what, c.expr, c.tz, c.after))
from cases as c;

select * from finish();
rollback;
