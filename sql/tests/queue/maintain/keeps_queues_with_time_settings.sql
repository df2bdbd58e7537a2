-- The forget step of queue.maintain keeps a queue row that holds a timeout or a retention
-- other than the defaults (forgetting it would silently drop the setting).
begin;
\ir ../_fixtures.psql
select plan(2);
truncate queue.wal_samples;

select queue.configure_queue('timed', timeout => '1 minute') \g /dev/null
select queue.configure_queue('kept', timeout => null, dead_retention => '1 year') \g /dev/null
select queue.configure_queue('plain', timeout => null) \g /dev/null
select queue.maintain() \g /dev/null
select is(array(select queue from queue.queues order by 1), array['kept', 'timed'],
    'queues with a timeout or a retention stay, a queue of defaults goes');
select is((select timeout from queue.queues where queue = 'timed'), interval '1 minute',
    'with their setting');

select * from finish();
rollback;
