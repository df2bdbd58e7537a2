-- enqueue checks every argument before it writes anything: a bad cache_value is refused
-- also when a live job holds the dedup key (it was accepted silently), and a refused call
-- advances no sequence.
begin;
\ir ../_fixtures.psql
select plan(5);

select queue.enqueue('{}', queue => 'd', dedup_key => 'k', cache_key => 'ck') \g /dev/null
select andal_test.state() as before \gset
create function pg_temp.sequences() returns text language plpgsql as $$
declare v_out text := ''; v_seq text; v_last bigint;
begin
    foreach v_seq in array array[pg_get_serial_sequence('queue.jobs', 'id'),
        pg_get_serial_sequence('queue.categories', 'id')] loop
        execute format('select last_value from %s', v_seq) into v_last;
        v_out := v_out || v_seq || '=' || v_last || ' ';
    end loop;
    return v_out;
end $$;
select pg_temp.sequences() as seq_before \gset
select throws_ok($$ select queue.enqueue('{}', queue => 'd', dedup_key => 'k', cache_key => 'ck',
        cache_value => 'null') $$, '22023', 'cache_value must not be JSON null',
    'JSON null cache_value with the key held');
select throws_ok(format('select queue.enqueue(%L, queue => %L, dedup_key => %L, cache_key => %L,'
        ' cache_value => to_jsonb(repeat(%L, 1048577)))', '{}', 'd', 'k', 'ck', 'x'), '54000',
    null, 'oversized cache_value with the key held');
select throws_ok($$ select queue.enqueue('{}', queue => 'e', category => 'new', cache_key => 'c2',
        cache_value => 'null') $$, '22023', null, 'JSON null cache_value on a new job');
select is(andal_test.state(), :'before', 'nothing was written');
select is(pg_temp.sequences(), :'seq_before', 'no sequence advanced');

select * from finish();
rollback;
