"""The package's edges: the producer's side (``andal.client``, ``andal.operations``,
``andal.methods``, ``andal.statements``), the modules it shares with the worker
(``andal.values``, ``andal.hosts``, ``andal.listening``, ``andal.maintenance``, the handlers'
``andal.handlers`` and ``andal.policy``), what the worker uses that is not its loop
(``andal.aio``, ``andal.registration``, ``andal.observe``) and the cache import nothing of the
worker, the dashboard or the command line; ``import andal`` loads neither the demo nor its
throwaway cluster.

Two checks, no database needed: each module imported in a fresh interpreter whose ``andal``
is an empty package (so the package's ``__init__``, which gathers the public names of every
part, does not count), and the import statements of the files themselves, those inside
functions included, followed from module to module.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "pydriver" / "andal"

#: The modules that must not reach the worker, the dashboard or the command line.
NEUTRAL = [
    "andal.client",
    "andal.operations",
    "andal.methods",
    "andal.statements",
    "andal.values",
    "andal.hosts",
    "andal.listening",
    "andal.jobs",
    "andal.handlers",
    "andal.policy",
    "andal.maintenance",
    "andal.aio",
    "andal.registration",
    "andal.observe",
    "andal.cache",
    "andal.cache.local",
    "andal.cache.follower",
]
FORBIDDEN = ("andal.worker", "andal.web", "andal.cli")


def forbidden(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == f or m.startswith(f + ".") for f in FORBIDDEN))


def loaded_without_init(module: str) -> set[str]:
    """The ``andal`` modules a fresh interpreter has loaded after importing ``module``, its
    ``andal`` an empty package on the same path."""
    code = (
        "import importlib, importlib.util, json, sys, types\n"
        "spec = importlib.util.find_spec('andal')\n"
        "root = types.ModuleType('andal')\n"
        "root.__path__ = list(spec.submodule_search_locations)\n"
        "sys.modules['andal'] = root\n"
        f"importlib.import_module({module!r})\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('andal'))))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    return set(json.loads(out.stdout))


def module_file(name: str) -> Path | None:
    """The file of the package's module ``name`` (None: not a module of the package)."""
    parts = name.split(".")[1:]
    base = PACKAGE.joinpath(*parts)
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    file = base.with_suffix(".py")
    return file if parts and file.is_file() else None


def imports_of(name: str) -> set[str]:
    """The package's modules ``name``'s file imports, anywhere in it (functions and
    ``TYPE_CHECKING`` blocks included), with the packages each of them runs first."""
    path = module_file(name)
    assert path is not None, name
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                origin = ".".join([*base, *([node.module] if node.module else [])])
            else:
                origin = node.module or ""
            targets = [origin, *(f"{origin}.{a.name}" for a in node.names)]
        for target in targets:
            parts = target.split(".")
            for i in range(2, len(parts) + 1):
                if parts[0] == "andal" and module_file(".".join(parts[:i])) is not None:
                    found.add(".".join(parts[:i]))
    return found


def reached(start: str) -> set[str]:
    """Every module of the package ``start`` reaches by its import statements (the package's
    ``__init__`` left out: see the module's docstring)."""
    seen, todo = {start}, [start]
    while todo:
        for name in imports_of(todo.pop()) - seen:
            seen.add(name)
            todo.append(name)
    return seen


@pytest.mark.parametrize("module", NEUTRAL)
def test_loading_it_loads_no_worker_web_or_cli_module(module: str) -> None:
    loaded = loaded_without_init(module)
    assert module in loaded
    assert not forbidden(loaded), f"importing {module} loads {forbidden(loaded)}"


@pytest.mark.parametrize("module", NEUTRAL)
def test_no_import_statement_reaches_the_worker_web_or_cli(module: str) -> None:
    found = reached(module)
    assert not forbidden(found), f"{module} reaches {forbidden(found)} by its imports"


def test_the_static_check_sees_an_edge() -> None:
    """The walk follows relative imports and function-level ones: the CLI reaches the worker."""
    assert "andal.worker" in reached("andal.cli")
    assert {"andal.hosts", "andal.values"} <= reached("andal.client")


def test_import_andal_loads_neither_the_demo_nor_its_cluster() -> None:
    code = "import json, sys, andal; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    loaded = set(json.loads(out.stdout))
    assert "andal.client" in loaded and "andal.worker" in loaded
    assert not loaded & {"andal.demo", "andal.cluster", "andal.web", "andal.cli"}


def test_the_moved_names_stay_importable_where_they_were() -> None:
    """What left the worker package is still importable from ``andal.worker`` (and
    ``andal``), the same objects."""
    import andal
    import andal.handlers
    import andal.hosts
    import andal.maintenance
    import andal.policy
    import andal.values
    import andal.worker

    moved = {
        "apply_policy": andal.policy, "Policy": andal.policy, "PolicyError": andal.policy,
        "Backoff": andal.policy, "Periodic": andal.policy, "Registry": andal.handlers,
        "Job": andal.handlers, "Handler": andal.handlers, "Retry": andal.handlers,
        "Fail": andal.handlers, "JobInterrupted": andal.handlers,
        "vacuum_tables": andal.maintenance, "VacuumReport": andal.maintenance,
        "VACUUM_LOCK_KEY": andal.maintenance, "dsn_list": andal.hosts,
        "is_connection_error": andal.hosts, "check_installed": andal.hosts,
        "database_label": andal.hosts, "database_labels": andal.hosts,
        "Seconds": andal.values, "as_interval": andal.values,
    }  # fmt: skip
    for name, home in moved.items():
        assert getattr(andal.worker, name) is getattr(home, name), name
        if name in andal.__all__:
            assert getattr(andal, name) is getattr(home, name), name
