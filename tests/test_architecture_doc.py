"""docs/architecture.md is a map of the tree: every file it names exists, and every rule file
of the queue (sql/functions/queue/_*.sql, maintain.sql, version.sql) is in its table."""

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
