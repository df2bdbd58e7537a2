-- attempt counts the runs started: 1 on the first claim, + 1 per claim after a failure or an
-- expired lease; a released job does not spend an attempt.
begin;
\ir ../_fixtures.psql
select plan(5);

select queue.enqueue('{}') as j \gset

select attempt as a, token as t from queue.claim('w') \gset
select is(:a, 1, 'first claim: attempt 1');

select queue.fail(:j, :'t', 'boom', retry_in => interval '0') \g /dev/null
select attempt as a, token as t from queue.claim('w') \gset
select is(:a, 2, 'after a failure: attempt 2');

select queue.release(:j, :'t') \g /dev/null
select attempt as a, token as t from queue.claim('w') \gset
select is(:a, 2, 'after a release: still attempt 2');

select andal_test.expire(:j) \g /dev/null
select attempt as a from queue.claim('w') \gset
select is(:a, 3, 'after an expired lease: attempt 3');
select is((select attempt from queue.jobs where id = :j), 3, 'the table agrees');

select * from finish();
rollback;
