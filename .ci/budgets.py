"""The size budgets (CONTRIBUTING.md, "Size budgets and their written exceptions"): every
function, SQL (sql/functions) or Python (pydriver/andal), is at most 60 lines and every
Python class at most 300, except those the written list names, each no longer than the size
written beside it. A listed one that fits the budget now must leave the list (it should
shrink). Run by `make lint`; prints each finding and exits 1 when there is one.

Sizes are lines from the definition's first line to its last: a Python `def`/`class` line to
its last statement, a SQL `create or replace function` to the `$$` that ends its body.
Names: SQL `schema.function`, Python `module.Class.method` without the `andal.` prefix
(`worker.complete.Completer._complete`).
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FUNCTION_LINES, CLASS_LINES = 60, 300
SQL_FUNCTION = re.compile(r"^create or replace function ([a-z_]+\.[a-z_0-9]+)\s*\(", re.I)
LISTED = re.compile(r"`([A-Za-z_][\w.]*)`\s+\((\d+)")


def sql_sizes() -> dict[str, int]:
    """The longest definition of each SQL function name (its overloads share the name)."""
    sizes: dict[str, int] = {}
    for path in sorted((ROOT / "sql" / "functions").rglob("*.sql")):
        lines = path.read_text().splitlines()
        for i, line in enumerate(lines):
            m = SQL_FUNCTION.match(line)
            if m is None:
                continue
            dollars, end = 0, i
            for end in range(i, len(lines)):
                dollars += lines[end].count("$$")
                if dollars >= 2:
                    break
            sizes[m.group(1)] = max(sizes.get(m.group(1), 0), end - i + 1)
    return sizes


def python_sizes() -> tuple[dict[str, int], dict[str, int]]:
    """Every Python function and class of the package, by qualified name, and its size."""
    functions: dict[str, int] = {}
    classes: dict[str, int] = {}
    package = ROOT / "pydriver" / "andal"
    for path in sorted(package.rglob("*.py")):
        module = ".".join(path.relative_to(package).with_suffix("").parts)
        module = module.removesuffix(".__init__").removesuffix("__init__")
        tree = ast.parse(path.read_text(), str(path))
        _walk(tree, module, functions, classes)
    return functions, classes


def _walk(node: ast.AST, prefix: str, functions: dict[str, int], classes: dict[str, int]) -> None:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            name = f"{prefix}.{child.name}" if prefix else child.name
            size = (child.end_lineno or child.lineno) - child.lineno + 1
            (classes if isinstance(child, ast.ClassDef) else functions)[name] = size
            _walk(child, name, functions, classes)


def written_exceptions() -> dict[str, int]:
    text = (ROOT / "CONTRIBUTING.md").read_text()
    start = text.index("## Size budgets and their written exceptions")
    section = text[start : text.index("\n## ", start + 3)]
    return {name: int(size) for name, size in LISTED.findall(section)}


def findings() -> list[str]:
    listed = written_exceptions()
    functions, classes = python_sizes()
    measured = [(n, s, FUNCTION_LINES) for n, s in sql_sizes().items()]
    measured += [(n, s, FUNCTION_LINES) for n, s in functions.items()]
    measured += [(n, s, CLASS_LINES) for n, s in classes.items()]
    found, seen = [], set()
    for name, size, budget in measured:
        allowed = listed.get(name)
        if allowed is not None:
            seen.add(name)
            if size <= budget:
                found.append(f"{name} is {size} lines, within its budget: take it off the list")
            elif size > allowed:
                found.append(f"{name} is {size} lines, more than the {allowed} written for it")
        elif size > budget:
            found.append(f"{name} is {size} lines, over the budget of {budget}, and not listed")
    found += [f"{name} is listed but does not exist" for name in sorted(set(listed) - seen)]
    return found


def main() -> int:
    problems = findings()
    for line in problems:
        print(f"budgets: {line}")
    if problems:
        print("budgets: see CONTRIBUTING.md, 'Size budgets and their written exceptions'")
        return 1
    print(f"budgets: clean ({len(written_exceptions())} written exceptions)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
