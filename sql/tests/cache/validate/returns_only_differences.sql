-- cache.validate answers only the keys whose version (or checksum) differs from what the
-- caller holds: moved on, stale, gone, or a checksum mismatch. Matching keys answer nothing.
begin;
\ir ../_fixtures.psql
select plan(3);

select cache.put('same', '1') as v_same \gset
select cache.put('moved', '1') as v_moved_old \gset
select cache.put('moved', '2') as v_moved \gset
select cache.put('inval', '3') as v_inval_old \gset
select cache.invalidate('inval') as v_inval \gset
select cache.put('cs', '4') as v_cs \gset

select results_eq(
    format($$ select key, version, stale, repaired from cache.validate(
        keys => '{same,moved,inval,gone,cs,never}',
        versions => array[%s, %s, %s, 5, %s, 0]::bigint[],
        checksums => array[null, null, null, null, 'not-the-checksum', null]) $$,
        :v_same, :v_moved_old, :v_inval_old, :v_cs),
    format($$ values ('moved', %s::bigint, false, false), ('inval', %s, true, false),
        ('gone', 0, true, false), ('cs', %s, false, false) $$, :v_moved, :v_inval, :v_cs),
    'moved, invalidated, gone and checksum-mismatched keys; not same nor never-held');
select is_empty(format($$ select * from cache.validate('{same}', array[%s]::bigint[]) $$,
    :v_same), 'all current: no rows');
select is((select count(*) from cache.log), 6::bigint, 'validation alone writes nothing');

select * from finish();
rollback;
