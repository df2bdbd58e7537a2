-- register_worker and unregister_worker refuse bad input with its SQLSTATE, writing nothing.
begin;
\ir ../_fixtures.psql
select plan(10);

select queue.register_worker(worker => 'kept', host => 'h', pid => 1) \g /dev/null
select md5(string_agg(r::text, ',')) as before from queue.worker_registrations as r \gset

select throws_ok($$ select queue.register_worker(null, 'h', 1) $$, '22004', null, 'null worker');
select throws_ok($$ select queue.register_worker('w', null, 1) $$, '22004', null, 'null host');
select throws_ok($$ select queue.register_worker('w', 'h', null) $$, '22004', null, 'null pid');
select throws_ok($$ select queue.register_worker('w', 'h', -1) $$, '22023', null, 'negative pid');
select throws_ok($$ select queue.register_worker('w', repeat('h', 256), 1) $$, '22023', null,
    'a host over 255 characters');
select throws_ok($$ select queue.register_worker('w', 'h', 1, slots => 100001) $$, '22023',
    null, 'slots over 100000');
select throws_ok($$ select queue.register_worker('w', 'h', 1, queues => '{a,null}') $$,
    '22023', null, 'a null queue name');
select throws_ok($$ select queue.register_worker('w', 'h', 1, expire_after => '0') $$,
    '22023', null, 'expire_after not positive');
select throws_ok($$ select queue.unregister_worker(null) $$, '22004', null, 'unregister null');
select is((select md5(string_agg(r::text, ',')) from queue.worker_registrations as r),
    :'before', 'nothing was written');

select * from finish();
rollback;
