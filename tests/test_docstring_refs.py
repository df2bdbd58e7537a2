"""Every code name a docstring or a comment refers to exists: a renamed or removed function
leaves no stale reference behind.

What is checked, and how (no database needed):

* Python (``pydriver/andal/**.py``): the docstrings (modules, classes, functions) and the
  ``#`` comments. A reference is a dotted name in backticks (``Slots.took``,
  ``statements.CLAIM``, ``queue.claim()``, ``andal.jobs.STATES``); a lone word is not one
  (too many are plain words), except a private one (``_complete``, ``_forget``): that must
  be a name the package defines somewhere (a function, a class, an attribute). A dotted one
  is resolved by its first part:

  - ``queue`` or ``cache``: a SQL name, below;
  - ``andal``: imported, then each further part an attribute;
  - a class of the package (by its name): the second part is one of its attributes, or of
    a class of the package it extends (methods, class attributes, ``__slots__``, enum
    members, and every ``self.<name> =`` in its methods);
  - a module of the package (by its name, or the name a module of the package imports it
    as, such as ``sql`` for ``statements``): the second part is a top-level name of it, or
    a submodule; a third part, when the second is a class, as above;
  - anything else (a local variable such as ``src.up``, a library such as
    ``psycopg.Connection``) is not checked.

* SQL (``sql/functions/**.sql``): the ``--`` comments and the ``comment on`` texts. A
  reference is ``queue.<name>`` or ``cache.<name>``, in backticks or not: it must be a
  function of ``sql/functions``, or a table, view, type, sequence or index the migrations
  (``sql/schema``) create; a third part (``queue.jobs.status``) is not checked.

``ALLOWED`` lists the references that name something else on purpose, each with its reason.
"""

from __future__ import annotations

import ast
import importlib
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "pydriver" / "andal"
FUNCTIONS = ROOT / "sql" / "functions"
SCHEMA = ROOT / "sql" / "schema"

#: A dotted name in backticks (one or two each side), with an optional call.
PY_REF = re.compile(r"``?([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+|_[a-z]\w*)(?:\([^`]*\))?``?")
SQL_REF = re.compile(r"(?<![\w.])(queue|cache)\.([a-z_][a-z0-9_]*)\b")
SQL_DEF = re.compile(
    r"create\s+(?:or\s+replace\s+)?(?:unlogged\s+)?(?:materialized\s+)?"
    r"(?:function|table|view|type|sequence|index(?:\s+concurrently)?(?:\s+if\s+not\s+exists)?)"
    r"\s+(?:if\s+not\s+exists\s+)?(?:(queue|cache)\.)?([a-z_][a-z0-9_]*)",
    re.I,
)
#: References that do not name code of this tree, each with its reason.
ALLOWED: dict[str, str] = {
    "andal.attempt": "a span or span attribute name (tracing.py), not code",
    "andal.batch": "a span or span attribute name (tracing.py), not code",
    "andal.category": "a span or span attribute name (tracing.py), not code",
    "andal.claim": "a span or span attribute name (tracing.py), not code",
    "andal.complete": "a span or span attribute name (tracing.py), not code",
    "andal.fail": "a span or span attribute name (tracing.py), not code",
    "andal.handler": "a span or span attribute name (tracing.py), not code",
    "andal.job": "a span or span attribute name (tracing.py), not code",
    "andal.job_id": "a span or span attribute name (tracing.py), not code",
    "andal.outcome": "a span or span attribute name (tracing.py), not code",
    "andal.queue": "a span or span attribute name (tracing.py), not code",
    "andal.cache.source": "a span or span attribute name (tracing.py), not code",
    "andal.refresh": "a queue's name (the cache's refresh queue), not code",
    "app.state": "a FastAPI application's state (contrib/fastapi.py), not the app module",
    "app.state.andal": "a FastAPI application's state (contrib/fastapi.py), not the app module",
    "_admin": "a role name's suffix (andal_admin), not code",
    "_monitor": "a role name's suffix (andal_monitor), not code",
    "django.setup": "Django's own function, not contrib.django",
    "metrics.port": "an option's name in the Worker docstring, not the metrics module",
    "worker.metrics.text": "an instance's attribute (a Worker), not the worker package",
    "queue.jobs_p": "a partition queue.set_shards creates at run time (shards.sql)",
    "queue.jobs_p0": "a partition queue.set_shards creates at run time (shards.sql)",
    "queue.jobs_resharding": "a partition queue.set_shards creates at run time (shards.sql)",
}


# -- Python ---------------------------------------------------------------------------------


def python_texts(path: Path) -> Iterator[tuple[int, str]]:
    """(line, text) of each docstring and comment of a Python file."""
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            doc = ast.get_docstring(node, clean=False)
            if doc and node.body:
                yield node.body[0].lineno, doc
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            yield tok.start[0], tok.string


class Package:
    """The names the package defines, read with ``ast`` (nothing is imported)."""

    def __init__(self) -> None:
        #: module name (last part) -> its top-level names (and its submodules)
        self.modules: dict[str, set[str]] = {}
        #: class name -> (its attribute names, the names of its bases)
        self.classes: dict[str, tuple[set[str], set[str]]] = {}
        #: the names modules import a module of the package as (``sql``: statements)
        self.aliases: dict[str, str] = {}
        for path in PACKAGE.rglob("*.py"):
            name = path.parent.name if path.name == "__init__.py" else path.stem
            names = self.modules.setdefault(name, set())
            if path.name == "__init__.py":
                names |= {p.stem for p in path.parent.glob("*.py")}
                names |= {p.name for p in path.parent.iterdir() if (p / "__init__.py").is_file()}
            self._read(ast.parse(path.read_text(encoding="utf-8")), names)

    def _read(self, tree: ast.Module, names: set[str]) -> None:
        for node in tree.body:
            if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                names.add(node.name)
            elif isinstance(node, ast.Assign):
                names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names.add(node.target.id)
            elif isinstance(node, ast.ImportFrom | ast.Import):
                for a in node.names:
                    names.add(a.asname or a.name.split(".")[0])
                    if a.asname and isinstance(node, ast.ImportFrom) and node.level:
                        self.aliases[a.asname] = a.name
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                attrs, bases = self.classes.setdefault(node.name, (set(), set()))
                bases |= {b.id if isinstance(b, ast.Name) else ast.unparse(b) for b in node.bases}
                attrs |= _class_attributes(node)

    def has(self, cls: str, attr: str, seen: frozenset[str] = frozenset()) -> bool:
        attrs, bases = self.classes[cls]
        if attr in attrs:
            return True
        return any(b in self.classes and b not in seen and self.has(b, attr, seen | {cls})
                   for b in bases)  # fmt: skip

    def resolve(self, ref: str) -> bool | None:
        """Whether ``ref`` names something (None: not the package's, not checked)."""
        parts = ref.split(".")
        head = parts[0]
        if len(parts) == 1:
            return any(head in a for a, _ in self.classes.values()) or any(
                head in names for names in self.modules.values()
            )
        if head in ("queue", "cache"):
            return sql_names().get(head, set()).__contains__(parts[1])
        if head == "andal":
            return _imported(parts)
        if head in self.classes:
            return self.has(head, parts[1])
        module = self.aliases.get(head, head)
        if module in self.modules:
            if parts[1] not in self.modules[module]:
                return False
            if len(parts) > 2 and parts[1] in self.classes:
                return self.has(parts[1], parts[2])
            return True
        return None


def _class_attributes(node: ast.ClassDef) -> set[str]:
    attrs: set[str] = set()
    for item in node.body:
        if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            attrs.add(item.name)
        elif isinstance(item, ast.Assign):
            for t in item.targets:
                if isinstance(t, ast.Name):
                    attrs.add(t.id)
                    if t.id == "__slots__" and isinstance(item.value, ast.Tuple | ast.List):
                        attrs |= {e.value for e in item.value.elts if isinstance(e, ast.Constant)}
        elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            attrs.add(item.target.id)
    for sub in ast.walk(node):
        targets: list[ast.expr] = []
        if isinstance(sub, ast.Assign):
            targets = [
                e for t in sub.targets for e in (t.elts if isinstance(t, ast.Tuple) else [t])
            ]
        elif isinstance(sub, ast.AnnAssign | ast.AugAssign):
            targets = [sub.target]
        for t in targets:
            if (
                isinstance(t, ast.Attribute)
                and isinstance(t.value, ast.Name)
                and t.value.id == "self"
            ):
                attrs.add(t.attr)
    return attrs


def _imported(parts: list[str]) -> bool:
    obj: object = importlib.import_module("andal")
    for i, part in enumerate(parts[1:], start=1):
        if hasattr(obj, part):
            obj = getattr(obj, part)
            continue
        try:
            obj = importlib.import_module(".".join(parts[: i + 1]))
        except ImportError:
            return False
    return True


# -- SQL ------------------------------------------------------------------------------------


_SQL_NAMES: dict[str, set[str]] = {}


def sql_names() -> dict[str, set[str]]:
    """schema -> the names of its functions (sql/functions) and relations and types
    (sql/schema)."""
    if not _SQL_NAMES:
        for path in [*FUNCTIONS.rglob("*.sql"), *SCHEMA.rglob("*.sql")]:
            for m in SQL_DEF.finditer(path.read_text(encoding="utf-8")):
                if m.group(1):
                    _SQL_NAMES.setdefault(m.group(1).lower(), set()).add(m.group(2).lower())
    return _SQL_NAMES


def sql_texts(path: Path) -> Iterator[tuple[int, str]]:
    """(line, text) of each ``--`` comment and ``comment on`` text of a SQL file."""
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if "--" in line:
            yield i, line.split("--", 1)[1]
        if line.lstrip().startswith("'") or " is '" in line or line.startswith("comment on"):
            yield i, line


# -- the test -------------------------------------------------------------------------------


def stale_references() -> list[str]:
    package = Package()
    stale = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for line, text in python_texts(path):
            for m in PY_REF.finditer(text):
                ref = m.group(1)
                if ref not in ALLOWED and package.resolve(ref) is False:
                    stale.append(f"{path.relative_to(ROOT)}:{line}: {ref}")
    names = sql_names()
    for path in sorted(FUNCTIONS.rglob("*.sql")):
        for line, text in sql_texts(path):
            for m in SQL_REF.finditer(text):
                ref = f"{m.group(1)}.{m.group(2)}"
                if ref not in ALLOWED and m.group(2) not in names.get(m.group(1), set()):
                    stale.append(f"{path.relative_to(ROOT)}:{line}: {ref}")
    return sorted(set(stale))


def test_every_reference_in_a_docstring_or_comment_resolves() -> None:
    stale = stale_references()
    assert not stale, "stale references (rename them, or list one in ALLOWED with why):\n" + (
        "\n".join(stale)
    )


@pytest.mark.parametrize(
    ("ref", "found"),
    [
        ("queue.claim", True),
        ("queue.no_such_function", False),
        ("Slots.took", True),
        ("Slots.no_such_method", False),
        ("statements.CLAIM", True),
        ("sql.NO_SUCH_STATEMENT", False),
        ("andal.jobs.STATES", True),
        ("andal.jobs.NO_SUCH", False),
        ("psycopg.Connection", None),
    ],
)
def test_the_resolver_tells_a_stale_name(ref: str, found: bool | None) -> None:
    assert Package().resolve(ref) is found
