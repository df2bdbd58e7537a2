-- enqueue stores queue, category, priority and max_attempts as given; a queue's configured
-- max_attempts is the default for its jobs; a new category starts with a limit of 1.
begin;
\ir ../_fixtures.psql
select plan(7);

select queue.configure_queue('mail', max_attempts => 9) \g /dev/null
select queue.enqueue('{}', queue => 'mail', category => 'smtp', priority => 7,
    max_attempts => 2) as j1 \gset
select queue.enqueue('{}', queue => 'mail') as j2 \gset

select is((select queue from queue.jobs where id = :j1), 'mail', 'queue stored');
select is((select category from queue.jobs where id = :j1), 'smtp', 'category stored');
select is((select priority from queue.jobs where id = :j1), 7, 'priority stored');
select is((select max_attempts from queue.jobs where id = :j1), 2, 'max_attempts stored');
select is((select max_attempts from queue.jobs where id = :j2), 9,
    'max_attempts defaults to the queue''s configured value');
select is((select max_running from queue.categories where category = 'smtp'), 1,
    'a category seen first at enqueue gets the default limit 1');
select is((select count(*) from queue.categories), 1::bigint, 'exactly one category row');

select * from finish();
rollback;
