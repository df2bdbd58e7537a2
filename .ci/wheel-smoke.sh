#!/usr/bin/env bash
# Install andal as a user would: build the wheel, install it into a fresh virtualenv in a
# directory outside the checkout, `andal install` into a fresh database, enqueue a job with
# `andal enqueue`, run `andal worker` on a handler module written there until the job is done
# (with a deadline), then check the result in SQL. Uses $PGHOST/$PGPORT/$PGUSER.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${PGHOST:=127.0.0.1}" "${PGPORT:=5432}" "${PGUSER:=postgres}"
export PGHOST PGPORT PGUSER
py=${PYTHON:-.venv/bin/python}
work=$(mktemp -d /tmp/andal-wheel-XXXXXX)
prefix=${ANDAL_TEST_PREFIX:-andal}  # names what this makes on a shared server
bash .ci/with-test-roles.sh "$prefix"
db="${prefix}_wheel_$$"
# Under another prefix than andal the install takes roles named after the database (a default
# install would take andal_* or andal_<db> ones); they are dropped with the database.
role_args=()
[ "$prefix" = andal ] || role_args=(--role-prefix "$db")
dsn="postgresql://$PGUSER@$PGHOST:$PGPORT/$db"
worker_pid=
cleanup() {
  [ -n "$worker_pid" ] && kill "$worker_pid" 2>/dev/null && wait "$worker_pid" 2>/dev/null
  psql -q -X -d postgres -c "drop database if exists $db" >/dev/null || true
  if [ ${#role_args[@]} -gt 0 ]; then
    for kind in producer worker admin monitor; do
      psql -q -X -d postgres -c "drop role if exists ${db}_$kind" >/dev/null || true
    done
  fi
  rm -rf "$work"
}
trap cleanup EXIT

echo "wheel-smoke: building the wheel"
"$py" -m pip wheel -q --no-deps -w "$work/dist" .
wheel=$(ls "$work"/dist/andal_pg-*.whl)
python3 -m venv "$work/venv"
"$work/venv/bin/python" -m pip install -q "$wheel"

# From here on the checkout is out of reach: another directory, no ANDAL_SQL_DIR/PYTHONPATH.
cd "$work"
unset ANDAL_SQL_DIR PYTHONPATH VIRTUAL_ENV
andal="$work/venv/bin/andal"
"$work/venv/bin/python" - <<'PY'
import andal, pathlib, sys
where = pathlib.Path(andal.__file__).resolve()
assert str(where).startswith(sys.prefix), f"andal imported from {where}, not the fresh venv"
PY
version=$("$andal" --version)
echo "wheel-smoke: $version"
psql -q -X -d postgres -c "create database $db"
"$andal" --dsn "$dsn" install "${role_args[@]}"
[ "$(psql -X -At -d "$db" -c 'select queue.version()')" = "${version#andal }" ]
psql -q -X -d "$db" -c "select from queue.configure_queue(queue => 'smoke', keep_results => true)" >/dev/null
"$andal" --dsn "$dsn" enqueue smoke '{"n": 41}'
cat > jobs.py <<'PY'
import andal

registry = andal.Registry()


@registry.handler("smoke")
def add_one(job: andal.Job) -> dict:
    return {"n": job.payload["n"] + 1}
PY
"$andal" --dsn "$dsn" worker jobs.py --queue smoke --poll 0.2 --log-level warning &
worker_pid=$!
result=
for _ in $(seq 1 600); do  # a deadline of 60 s
  result=$(psql -X -At -d "$db" -c "select result->>'n' from queue.results where queue = 'smoke'")
  [ -n "$result" ] && break
  kill -0 "$worker_pid" 2>/dev/null || { echo "wheel-smoke: the worker exited" >&2; exit 1; }
  sleep 0.1
done
[ "$result" = 42 ] || { echo "wheel-smoke: the job did not complete within 60 s" >&2; exit 1; }
[ "$(psql -X -At -d "$db" -c "select count(*) from queue.jobs")" = 0 ]
kill -TERM "$worker_pid"
wait "$worker_pid"
worker_pid=
echo "wheel-smoke: ok (the job completed with result 42 from an installed wheel)"
