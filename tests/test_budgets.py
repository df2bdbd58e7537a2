"""The size-budget check of `make lint` (.ci/budgets.py) catches what it promises: a
function over 60 lines that the written list does not name, a listed one that grew past its
written size, and a listed one that fits its budget now."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent


def budgets() -> ModuleType:
    spec = importlib.util.spec_from_file_location("budgets", ROOT / ".ci" / "budgets.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def tree(tmp_path: Path, body_lines: int, listed: str) -> Path:
    (tmp_path / "pydriver" / "andal").mkdir(parents=True)
    (tmp_path / "sql" / "functions").mkdir(parents=True)
    body = "".join("    x = 1\n" for _ in range(body_lines))
    (tmp_path / "pydriver" / "andal" / "mod.py").write_text(f"def long():\n{body}")
    (tmp_path / "CONTRIBUTING.md").write_text(
        f"## Size budgets and their written exceptions\n\n{listed}\n\n## Next\n"
    )
    return tmp_path


@pytest.mark.parametrize(
    ("lines", "listed", "says"),
    [
        (61, "", "over the budget of 60, and not listed"),
        (70, "- `mod.long` (65)", "more than the 65 written for it"),
        (40, "- `mod.long` (65)", "within its budget: take it off the list"),
        (61, "- `mod.gone` (70)", "is listed but does not exist"),
    ],
)
def test_each_breach_is_found(tmp_path: Path, lines: int, listed: str, says: str) -> None:
    check = budgets()
    check.ROOT = tree(tmp_path, lines, listed)
    assert any(says in f for f in check.findings()), check.findings()


def test_a_listed_function_within_its_written_size_passes(tmp_path: Path) -> None:
    check = budgets()
    check.ROOT = tree(tmp_path, 64, "- `mod.long`\n  (65)")
    assert check.findings() == []


def test_the_tree_keeps_its_budgets() -> None:
    assert budgets().findings() == []
