"""The examples in the docs run: fenced blocks marked ``sql example``, ``python example`` or
``sh example`` in README.md and docs/*.md, in document order, per Markdown file in one fresh
andal database (CONTRIBUTING.md, "Examples in the docs run").

``sql example`` blocks go through ``psql -v ON_ERROR_STOP=1``; ``python example`` blocks run
as scripts and ``sh example`` blocks with ``bash -e``, both with ``DATABASE_URL`` set to the
file's database. A block that fails fails the test with its file, line and output.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import PGHOST, PGPORT, PGUSER, make_dsn, test_name
from pytest_postgresql.janitor import DatabaseJanitor

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
KINDS = ("sql", "python", "sh")
FENCE = re.compile(r"^(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`]*)$")
TIMEOUT = 120  # seconds per block; a block waits on conditions, never on the clock


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # of the opening fence, 1-based
    kind: str
    code: str

    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line} ({self.kind} example)"


def blocks(path: Path) -> list[Block]:
    """The example blocks of a Markdown file, in order."""
    found: list[Block] = []
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i].strip())
        if m is None:
            i += 1
            continue
        fence, info = m.group("fence"), m.group("info").split()
        end = i + 1
        while end < len(lines) and not lines[end].strip().startswith(fence):
            end += 1
        if len(info) >= 2 and info[0] in KINDS and info[1] == "example":
            found.append(Block(path, i + 1, info[0], "\n".join(lines[i + 1 : end]) + "\n"))
        i = end + 1
    return found


def run(block: Block, dsn: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    # the `andal` command of this environment comes first on PATH
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    env = dict(os.environ, DATABASE_URL=dsn, PATH=path)
    if block.kind == "sql":
        argv = ["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", dsn, "-f", "-"]
    elif block.kind == "python":
        argv = [sys.executable, "-"]
    else:
        argv = ["bash", "-e", "-o", "pipefail", "-s"]
    return subprocess.run(
        argv, input=block.code, env=env, cwd=cwd, capture_output=True, text=True,
        timeout=TIMEOUT,
    )  # fmt: skip


@pytest.fixture
def fresh_db(template_db: str) -> Iterator[str]:
    name = test_name("doc", 10)
    janitor = DatabaseJanitor(
        user=PGUSER, host=PGHOST, port=PGPORT, dbname=name, template_dbname=template_db
    )
    janitor.init()
    try:
        yield make_dsn(name)
    finally:
        janitor.drop()


WITH_EXAMPLES = [p for p in DOCS if blocks(p)]


@pytest.mark.parametrize("path", WITH_EXAMPLES, ids=lambda p: str(p.relative_to(ROOT)))
def test_examples_run(path: Path, fresh_db: str, tmp_path: Path) -> None:
    for block in blocks(path):
        out = run(block, fresh_db, tmp_path)
        assert out.returncode == 0, (
            f"{block.where()} failed (exit {out.returncode}):\n{out.stdout}\n{out.stderr}"
        )


def test_the_documents_that_must_have_examples_have_them() -> None:
    names = {str(p.relative_to(ROOT)) for p in WITH_EXAMPLES}
    wanted = {"README.md", "docs/python.md", "docs/sql-api.md", "docs/cache.md"}
    assert wanted <= names


def test_the_parser_finds_marked_blocks_only(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text(
        "text\n```sql example\nselect 1;\n```\n```sql\nnot run;\n```\n"
        "````python example\nprint('```')\n````\n```sh example\ntrue\n```\n"
    )
    found = blocks(doc)
    assert [(b.kind, b.line, b.code) for b in found] == [
        ("sql", 2, "select 1;\n"),
        ("python", 8, "print('```')\n"),
        ("sh", 11, "true\n"),
    ]


def test_a_failing_block_fails(fresh_db: str, tmp_path: Path) -> None:
    for kind, code in (
        ("sql", "select 1;\nselect queue.no_such_function();\nselect 2;\n"),
        ("python", "raise SystemExit(3)\n"),
        ("sh", "false\necho unreachable\n"),
    ):
        out = run(Block(tmp_path / "x.md", 1, kind, code), fresh_db, tmp_path)
        assert out.returncode != 0, kind
        assert "unreachable" not in out.stdout
