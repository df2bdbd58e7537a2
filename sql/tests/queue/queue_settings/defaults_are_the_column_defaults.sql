-- The policy of a queue never configured is the column defaults of queue.queues, read from
-- the catalog: a default changed (or a setting added) by a migration is what queue_settings
-- answers and what queue.maintain() compares with when it forgets rows that say nothing.
begin;
\ir ../_fixtures.psql
select plan(5);

select is((select max_attempts from queue.queue_settings('never')), 5, 'the default today');
insert into queue.queues (queue) values ('fresh');
select is((select to_jsonb(s) - 'configured' - 'updated_at' from queue.queue_settings('never') as s),
    (select to_jsonb(s) - 'configured' - 'updated_at' from queue.queue_settings('fresh') as s),
    'a queue without a row answers as a row just inserted');

alter table queue.queues alter column max_attempts set default 7;
select is((select max_attempts from queue.queue_settings('never')), 7,
    'a changed column default is the default at once');

insert into queue.queues (queue, max_attempts) values ('seven', 7), ('five', 5);
delete from queue.wal_samples;
select queue.maintain() \g /dev/null
select ok(not exists (select from queue.queues where queue = 'seven'),
    'a row equal to the new defaults says nothing and is forgotten');
select ok(exists (select from queue.queues where queue = 'five'),
    'a row that differs from them is kept');

select * from finish();
rollback;
