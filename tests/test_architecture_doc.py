"""docs/architecture.md is a map of the tree: every file it names exists, every rule file
of the queue (sql/functions/queue/_*.sql, maintain.sql, version.sql) is in its table, and
the rules with a telling text (the NOTIFY, the dead letter, the history and completion
records, the statistics writes, the token check) are written in their home file only, or in
a listed copy with its reason."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"
PATH = re.compile(r"`((?:sql|pydriver|tests)/[^`\s]+\.(?:sql|py|json))`")


def named_paths() -> set[str]:
    return set(PATH.findall(DOC.read_text(encoding="utf-8")))


def test_every_file_the_map_names_exists() -> None:
    missing = sorted(p for p in named_paths() if not (ROOT / p).is_file())
    assert not missing, f"docs/architecture.md names files that are not in the tree: {missing}"


def test_every_rule_file_is_on_the_map() -> None:
    queue = ROOT / "sql" / "functions" / "queue"
    rules = {f"sql/functions/queue/{p.name}" for p in queue.glob("_*.sql")}
    rules |= {"sql/functions/queue/maintain.sql", "sql/functions/queue/version.sql"}
    unmapped = sorted(r for r in rules if (ROOT / r).is_file() and r not in named_paths())
    assert not unmapped, f"rule files missing from docs/architecture.md: {unmapped}"


Q = "sql/functions/queue/"
#: Each rule's telling text, the file that is its home, and every other file allowed to hold
#: it, with the reason (a deliberate copy on the hot path, until the one completion funnel).
RULE_HOMES: dict[str, tuple[str, dict[str, str]]] = {
    "pg_notify(": (Q + "_notify.sql", {}),
    "into queue.dead_letters": (Q + "_dead_letter.sql", {}),
    "insert into queue.completions": (Q + "_completions.sql", {}),
    "insert into queue.history (": (Q + "history.sql", {
        Q + "_dead_letter.sql": "a dead-lettered job's row, in the statement that moves it to"
        " the dead letters",
    }),
    "insert into queue.stat_minutes": (Q + "stats.sql", {
        Q + "_tasks.sql": "the rollup of old minutes",
    }),
    "lease_expires_at > v_now": (Q + "_lease.sql", {
        Q + "complete.sql": "the token check inside the completing delete (hot path)",
        Q + "heartbeat.sql": "the token check inside the heartbeat's update (hot path)",
        Q + "_gate.sql": "a live slot (its job's lease unexpired), counted under the gate's lock",
    }),
    # a gate slot taken and freed
    "into queue.worker_locks": (Q + "_gate.sql", {}),
    "delete from queue.worker_locks": (Q + "_gate.sql", {}),
    # the lease length: the claim's (or the heartbeat's extend), else the queue's, else this
    "queue._lease_default())": (Q + "_lease.sql", {
        Q + "claim.sql": "the direct path picks and leases in one statement, with a copy of"
        " queue._lease_taken's formula; claim/direct_and_general_lease_alike.sql proves both agree",
        Q + "heartbeat.sql": "the extension of a lease, the same rule with `extend` for the"
        " claim's lease and the attempt's deadline as the cap, inside the heartbeat's update",
    }),
    # the side effects of a state change go through the funnel (queue._settle_many)
    "queue._free_slots(": (Q + "_settle.sql", {Q + "_gate.sql": "its definition"}),
    "cache._job_done(": (Q + "_settle.sql", {
        "sql/functions/cache/_job_done.sql": "its definition",
    }),
    # a job out of attempts (dead-lettered, not retried)
    "attempt >= ": (Q + "_dead_letter.sql", {}),
    # a name's bound, written as a plain expression where a call would cost
    "not between 1 and 128": (Q + "_checks.sql", {
        Q + "claim.sql": "the claim's worker and queue names, inline on the hot path",
        Q + "enqueue.sql": "the lean enqueue's queue name, inline on the hot path",
        "sql/functions/cache/stats.sql": "a job type's name among the keys of a jsonb report",
    }),
    # the mapping from stored columns to a job's state
    "when due then 'ready'": (Q + "states.sql", {}),
    "reason in ('cancelled', 'parent_failed')": (Q + "states.sql", {}),
}  # fmt: skip


def test_each_rule_is_written_in_its_home_only() -> None:
    """A rule's text appears in its home file and the listed, explained copies only; a new
    copy elsewhere fails (move it to the home, or list it with its reason)."""
    sources = [*(ROOT / "sql" / "functions").rglob("*.sql"), *(ROOT / "pydriver").rglob("*.py")]
    for text, (home, allowed) in RULE_HOMES.items():
        holders = {str(p.relative_to(ROOT)) for p in sources if text in p.read_text()}
        assert home in holders, f"{text!r} is not in its home {home}"
        strays = sorted(holders - {home} - set(allowed))
        assert not strays, f"{text!r} written outside its home {home}: {strays}"
        gone = sorted(set(allowed) - holders)
        assert not gone, f"{text!r}: listed copies no longer there (take them off): {gone}"
