"""5. The operator's security audit (``tests/reliability/audit.sql``, run with psql exactly as an
operator would) is clean on a fresh install, and catches each weakness when one is planted.

The call matrix by role, search_path pinning, PUBLIC's lack of EXECUTE and the CVE-2018-1058
shadowing attack are tested in depth by tests/test_security.py and sql/tests/queue/security/;
this is the rerunnable operator-side check. Each weakness is planted inside a single psql
transaction that is rolled back (``-1 -c <plant> -f audit.sql -c rollback``): the audit's
failure aborts it, and a missed weakness is rolled back too, so the database (and the
cluster-wide roles) never keep it.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from conftest import ROLES, TEST_PREFIX

from andal.roles import DEFAULT_PREFIX, with_roles

AUDIT = Path(__file__).with_name("audit.sql")


@pytest.fixture(scope="module")
def audit(tmp_path_factory: pytest.TempPathFactory) -> str:
    """audit.sql; under ANDAL_TEST_PREFIX a copy naming the install's roles as the installer
    does (andal.roles.with_roles), since the audit names andal's roles literally."""
    if TEST_PREFIX == DEFAULT_PREFIX:
        return str(AUDIT)
    copy = tmp_path_factory.mktemp("audit") / AUDIT.name
    copy.write_text(with_roles(AUDIT.read_text(), TEST_PREFIX))
    return str(copy)


def psql(dsn: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", dsn, *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ, PGOPTIONS="-c client_min_messages=notice"),
    )


def test_audit_is_clean_on_a_fresh_install(rel_dsn: str, figures: dict, audit: str) -> None:
    out = psql(rel_dsn, "-f", audit)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "andal audit: clean" in out.stderr
    figures.update(findings=0)


PLANTS = {
    "public_execute": "grant execute on function queue.claim(text, text[], int, interval)"
    " to public",
    "search_path": "alter function queue.complete(bigint, uuid, jsonb) reset search_path",
    "search_path ": "alter function queue.fail(bigint, uuid, text, interval, boolean)"
    " set search_path = public, pg_catalog, pg_temp",
    "search_path  ": "alter function queue.release(bigint, uuid, interval)"
    " set search_path = pg_temp, pg_catalog",
    "matrix": f"grant execute on function queue.cancel(bigint) to {ROLES['worker']}",
    "matrix ": "revoke execute on function queue.claim(text, text[], int, interval)"
    f" from {ROLES['worker']}",
    "matrix  ": f"grant execute on function queue._reap(int, text[]) to {ROLES['admin']}",
    "unknown_function": "create function queue.backdoor() returns int"
    " language sql set search_path = pg_catalog, pg_temp as 'select 1';"
    " revoke all on function queue.backdoor() from public",
    "role": f"alter role {ROLES['worker']} login",
    "schema": "grant create on schema queue to public",
    "table": f"grant select on queue.jobs to {ROLES['producer']}",
    "default_acl": "alter default privileges in schema queue grant select on tables to public",
    "foreign_owner": f"create role {TEST_PREFIX}_t_audit_owner;"
    " create table queue.planted (i int);"
    f" alter table queue.planted owner to {TEST_PREFIX}_t_audit_owner",
    "foreign_trigger": "create function public.spy() returns trigger language plpgsql as"
    " 'begin return new; end';"
    " create trigger spy after insert on queue.jobs for each row execute function public.spy()",
}


@pytest.mark.parametrize("finding", list(PLANTS), ids=[f"{k.strip()}-{len(k)}" for k in PLANTS])
def test_audit_catches_a_planted_weakness(rel_dsn: str, finding: str, audit: str) -> None:
    out = psql(rel_dsn, "-1", "-c", PLANTS[finding], "-f", audit, "-c", "rollback")
    assert out.returncode == 3, f"the audit missed: {PLANTS[finding]}\n{out.stdout}{out.stderr}"
    assert "andal audit:" in out.stderr and "finding(s)" in out.stderr
    reported = {line.split("|")[0].strip() for line in out.stdout.splitlines() if "|" in line}
    assert finding.strip() in reported, out.stdout
    # nothing was kept
    assert psql(rel_dsn, "-f", audit).returncode == 0
