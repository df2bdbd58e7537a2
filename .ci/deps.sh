#!/usr/bin/env bash
# Install the Debian packages the tests need when they are missing (as root), or name them.
set -euo pipefail
missing=()
command -v pg_prove >/dev/null || missing+=(libtap-parser-sourcehandler-pgtap-perl)
[ -f /usr/share/postgresql/15/extension/pgtap.control ] || missing+=(postgresql-15-pgtap)
[ -f /usr/share/postgresql/15/extension/plpgsql_check.control ] || missing+=(postgresql-15-plpgsql-check)
# the PL/Proxy router's tests (tests/test_router.py)
[ -f /usr/share/postgresql/15/extension/plproxy.control ] || missing+=(postgresql-15-plproxy)
# the browser tests of `andal web` drive Debian's Chromium (nothing downloads a browser)
command -v chromium >/dev/null || missing+=(chromium)
command -v chromedriver >/dev/null || missing+=(chromium-driver)
command -v pgbouncer >/dev/null || [ -x /usr/sbin/pgbouncer ] || missing+=(pgbouncer)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ]; then
  echo "installing Debian packages: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
else
  echo "missing Debian packages: ${missing[*]}" >&2
  echo "install them with: sudo apt-get install ${missing[*]}" >&2
  exit 1
fi
