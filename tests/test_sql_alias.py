"""``andal.sql``, the phrasebook's former name, is deprecated: importing it warns, naming
``andal.statements``, at the line that imports it, and still gives the same statements; the
package itself never imports it."""

from __future__ import annotations

import importlib
import subprocess
import sys
import warnings

import andal.statements


def test_importing_the_alias_warns_and_names_the_replacement() -> None:
    sys.modules.pop("andal.sql", None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        alias = importlib.import_module("andal.sql")
    deprecations = [w for w in caught if issubclass(w.category, DeprecationWarning)]
    assert len(deprecations) == 1, [str(w.message) for w in caught]
    assert "andal.statements" in str(deprecations[0].message)
    assert alias.CLAIM is andal.statements.CLAIM
    assert alias.__all__ == andal.statements.__all__


def test_the_warning_points_at_the_importing_line() -> None:
    """Shown by Python's default filters: it is attributed to the code that imports the alias
    (``__main__`` here), not to the import machinery."""
    out = subprocess.run(
        [sys.executable, "-c", "import andal.sql"], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert "<string>:1: DeprecationWarning: andal.sql is deprecated" in out.stderr
    assert "andal.statements" in out.stderr


def test_the_package_never_imports_the_alias() -> None:
    code = (
        "import andal, andal.cli, andal.web, andal.worker, andal.cache, andal.contrib.fastapi;"
        "import sys; assert 'andal.sql' not in sys.modules"
    )
    out = subprocess.run(
        [sys.executable, "-W", "error::DeprecationWarning", "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
