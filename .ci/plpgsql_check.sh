#!/usr/bin/env bash
# Check every PL/pgSQL function of andal against a live schema with plpgsql_check.
# Creates a scratch database, installs andal into it, reports errors and warnings, drops it.
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=${ANDAL_TEST_PREFIX:-andal}  # names what this makes on a shared server
bash .ci/with-test-roles.sh "$prefix"
db="${prefix}_lint_$$"
psql -q -X -d postgres -c "create database $db" >/dev/null
trap 'psql -q -X -d postgres -c "drop database if exists $db" >/dev/null' EXIT
# (the suite's role names: a database of its own, dropped at exit, whose derived roles would stay)
.venv/bin/python -m andal.install "postgresql://${PGUSER:-postgres}@${PGHOST:-127.0.0.1}:${PGPORT:-5432}/$db" \
    --role-prefix "$prefix" >/dev/null
out=$(psql -q -X -At -v ON_ERROR_STOP=1 -d "$db" <<'SQL'
set client_min_messages = warning;
create extension plpgsql_check;
-- Trigger functions are checked against a table they are attached to (none: skipped).
with fns as (
    select p.oid, coalesce(
        (select t.tgrelid from pg_trigger t where t.tgfoid = p.oid limit 1), 0) as relid,
        p.prorettype = 'trigger'::regtype as is_trigger
    from pg_proc p
    join pg_namespace n on n.oid = p.pronamespace
    join pg_language l on l.oid = p.prolang
    where n.nspname in ('queue', 'cache') and l.lanname = 'plpgsql'
)
select format('%s: %s %s%s', f.oid::regprocedure, c.level, c.message,
              coalesce(' (' || c.detail || ')', ''))
from fns f
cross join lateral plpgsql_check_function_tb(f.oid, f.relid::regclass, fatal_errors => false,
    extra_warnings => false, performance_warnings => false) c
where (not f.is_trigger or f.relid <> 0) and c.level in ('error', 'warning');
SQL
)
if [ -n "$out" ]; then
  echo "plpgsql_check found problems:"
  echo "$out"
  exit 1
fi
n=$(psql -X -At -d "$db" -c "select count(*) from pg_proc p join pg_namespace n on n.oid = p.pronamespace join pg_language l on l.oid = p.prolang where n.nspname in ('queue','cache') and l.lanname = 'plpgsql'")
echo "plpgsql_check: $n functions clean"
