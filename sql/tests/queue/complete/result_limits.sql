-- Results are bounded: a result to keep (keep_results) over queue.config.max_result_bytes is
-- refused with 54000 and nothing changes (the job can still be completed without it); on a
-- rewrite-policy queue a result over the cache's value limit invalidates the key instead of
-- making the job impossible to complete.
begin;
\ir ../_fixtures.psql
select plan(6);

update queue.config set max_result_bytes = 1024;
select queue.configure_queue('keep', keep_results => true) \g /dev/null
select queue.enqueue('{}', queue => 'keep') as job \gset
select token from queue.claim(worker => 'w', queues => '{keep}') \gset
select andal_test.state() as before \gset
select throws_ok(format('select queue.complete(%s, %L, to_jsonb(repeat(%L, 2000)))', :job,
    :'token', 'x'), '54000', 'result is 2002 bytes, over the limit of 1024 bytes for kept results',
    'complete: an oversized kept result');
select throws_ok(format('select queue.complete_many(array[%s], array[%L]::uuid[], array[to_jsonb(repeat(%L, 2000))])',
    :job, :'token', 'x'), '54000', null, 'complete_many: an oversized kept result');
select is(andal_test.state(), :'before', 'nothing changed');
select lives_ok(format('select queue.complete(%s, %L)', :job, :'token'),
    'the job completes without it');

-- rewrite policy, result over the cache limit: the key is invalidated, the job completes
update cache.config set max_value_bytes = 100;
select queue.configure_queue('rw', cache_policy => 'rewrite') \g /dev/null
select queue.enqueue('{}', queue => 'rw', cache_key => 'rk', cache_value => '"old"') as job2 \gset
select token as token2 from queue.claim(worker => 'w', queues => '{rw}') \gset
select lives_ok(format('select queue.complete(%s, %L, to_jsonb(repeat(%L, 200)))', :job2,
    :'token2', 'x'), 'a rewrite result over the cache limit does not block completion');
select is((select stale from cache.get('rk')), true, 'the key was invalidated instead');

select * from finish();
rollback;
