-- Adaptive TTL: ttl = clamp(ttl_factor * max(EWMA of the gaps between changes, time
-- since the last change), min_ttl, max_ttl); default_ttl before two changes were seen. A put
-- without ttl uses it.
begin;
\ir ../_fixtures.psql
select plan(7);

update cache.config set default_ttl = '10 minutes', min_ttl = '2 seconds',
    max_ttl = '20 minutes', ttl_factor = 0.5, ewma_alpha = 0.5;

select is(cache.ttl_for('new'), interval '10 minutes', 'a key never seen changing: default_ttl');
select cache.put('k', '1') \g /dev/null
select is((select expires_at - now() from cache.get('k')), interval '10 minutes',
    'a put without ttl uses it');

-- Two changes 60 s apart: EWMA 60 s, half of it.
update cache.entries set changed_at = now() - interval '60 seconds', changes = 1
where key = 'k';
select cache.invalidate('k') \g /dev/null
select is((select mean_interval from cache.entries where key = 'k'), 60::double precision,
    'the gap is measured');
select is(cache.ttl_for('k'), interval '30 seconds', 'ttl = 0.5 * 60 s');

-- A change 4 s later: EWMA 0.5 * 4 + 0.5 * 60 = 32 s.
update cache.entries set changed_at = now() - interval '4 seconds' where key = 'k';
select cache.invalidate('k') \g /dev/null
select is(cache.ttl_for('k'), interval '16 seconds', 'frequent changes shorten it');

update cache.entries set mean_interval = 0.5 where key = 'k';
select is(cache.ttl_for('k'), interval '2 seconds', 'never below min_ttl');
update cache.entries set changed_at = now() - interval '3 hours' where key = 'k';
select is(cache.ttl_for('k'), interval '20 minutes',
    'a key that stopped changing earns its TTL back, up to max_ttl');

select * from finish();
rollback;
