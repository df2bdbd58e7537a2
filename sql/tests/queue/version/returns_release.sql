-- version returns the installed release as a semantic version string.
begin;
\ir ../_fixtures.psql
select plan(1);

select matches(queue.version(), '^\d+\.\d+\.\d+$', 'version is major.minor.patch');

select * from finish();
rollback;
