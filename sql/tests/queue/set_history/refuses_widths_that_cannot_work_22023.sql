-- A history setting that housekeeping could not lay out is refused, and every setting that is
-- accepted works: configure_history refuses a width of months or years (22023: partitions sit
-- on fixed boundaries, a month has no fixed length), and a retention of years, whose 48th part
-- is months, still rolls. A width of months stored earlier no longer stops queue.maintain().
begin;
\ir ../_fixtures.psql
select plan(8);

select throws_ok($$ select queue.configure_history(partition_width => '1 mon') $$, '22023',
    'partition_width must be a length of time without months or years (got 1 mon)',
    'a width of a month is refused');
select throws_ok($$ select queue.configure_history(partition_width => '1 year 2 days') $$,
    '22023', null, 'a width with years is refused');
select is((select partition_width from queue.history_settings), interval '1 hour',
    'the width is unchanged');
select lives_ok($$ select queue.configure_history(partition_width => '30 days') $$,
    'thirty days is a width');

select queue.configure_history(partition_width => '1 hour') \g /dev/null
select lives_ok($$ select queue.set_history(queue => 'long', retention => '5 years') $$,
    'a retention of five years is accepted');
select ok((select count(*) from pg_inherits where inhparent = 'queue.history'::regclass) > 40,
    'and its partitions are made ahead');
select lives_ok($$ select queue.set_history(queue => 'longer', retention => '1000 years') $$,
    'the longest retention too');

-- a width of months written before configure_history refused it: housekeeping still rolls
update queue.history_settings set partition_width = '1 mon';
select lives_ok($$ select queue.maintain() $$, 'maintain runs with a stored width of months');

select * from finish();
rollback;
