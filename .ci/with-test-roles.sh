#!/usr/bin/env bash
# with-test-roles.sh PREFIX DIR COMMAND...: run COMMAND with each argument's @DIR@ replaced by
# DIR, or, when PREFIX is not andal, by a temporary copy of DIR whose files name the install's
# roles PREFIX_producer, _worker, _admin, _monitor (and the scratch role PREFIX_test_nobody)
# instead of andal_...: the SQL tests name andal's roles literally, as the product's SQL does,
# and the installer rewrites those the same way (andal.roles.with_roles). The copy is removed
# afterwards; DIR/output (isolation results) is not copied. With PREFIX alone: only check it
# (it starts database and role names: a lower-case letter, then up to 19 of a-z, 0-9, _).
set -euo pipefail
prefix=$1
if [[ ! $prefix =~ ^[a-z][a-z0-9_]{0,19}$ ]]; then
  echo "ANDAL_TEST_PREFIX=$prefix: a lower-case letter, then up to 19 of a-z, 0-9, _" >&2
  exit 2
fi
[ $# -eq 1 ] && exit 0
dir=$2
shift 2
if [ "$prefix" != andal ]; then
  copy=$(mktemp -d "/tmp/andal-test-roles-XXXXXX")
  trap 'rm -rf "$copy"' EXIT
  (cd "$dir" && tar cf - --exclude=./output .) | (cd "$copy" && tar xf -)
  find "$copy" -type f -exec sed -E -i \
    "s/\\bandal_(producer|worker|admin|monitor|test_nobody)\\b/${prefix}_\\1/g" {} +
  dir=$copy
fi
args=()
for a in "$@"; do args+=("${a//@DIR@/$dir}"); done
"${args[@]}"
