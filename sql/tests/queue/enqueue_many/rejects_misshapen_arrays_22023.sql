-- enqueue_many refuses arrays of more than one dimension or not starting at index 1 (22023):
-- a 2-D dedup_keys array was read as no keys at all, so repeating the call made new jobs.
begin;
\ir ../_fixtures.psql
select plan(5);

select andal_test.state() as before \gset
select throws_ok($$ select queue.enqueue_many(array['{}', '{}']::jsonb[],
        dedup_keys => array[['a'], ['b']]) $$, '22023',
    'dedup_keys must be a one-dimensional array starting at index 1', '2-D dedup_keys');
select throws_ok($$ select queue.enqueue_many(array[['{}'], ['{}']]::jsonb[]) $$, '22023',
    'payloads must be a one-dimensional array starting at index 1', '2-D payloads');
select throws_ok($$ select queue.enqueue_many('[0:1]={"{}","{}"}'::jsonb[]) $$, '22023',
    'payloads must be a one-dimensional array starting at index 1', 'payloads from index 0');
select throws_ok($$ select queue.enqueue_many(array['{}', '{}']::jsonb[],
        dedup_keys => '[2:3]={a,b}'::text[]) $$, '22023', null, 'dedup_keys from index 2');
select is(andal_test.state(), :'before', 'nothing was written');

select * from finish();
rollback;
