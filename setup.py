"""Build step: ship the SQL inside the package, and read the version from it.

The top-level ``sql/schema``, ``sql/functions`` and ``sql/router`` (the PL/Proxy router's
SQL) are copied into the built package as ``andal/sql/`` (``andal.install`` finds them
there once installed); the release number is the literal of ``queue.version()`` in
``sql/functions/queue/version.sql``, its one source.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from setuptools import setup  # type: ignore[import-untyped]
from setuptools.command.build_py import build_py  # type: ignore[import-untyped]

ROOT = Path(__file__).resolve().parent
SHIPPED = ("schema", "functions", "router")


def version() -> str:
    text = (ROOT / "sql" / "functions" / "queue" / "version.sql").read_text()
    match = re.search(r"select '([^']+)'::text", text)
    if match is None:
        raise SystemExit("sql/functions/queue/version.sql: no version literal found")
    return match.group(1)


class BuildWithSql(build_py):
    """build_py that also copies the SQL sources into the package (not for editable
    installs: a checkout reads its own ``sql/``)."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        target = Path(self.build_lib) / "andal" / "sql"
        shutil.rmtree(target, ignore_errors=True)
        for part in SHIPPED:
            # the SQL files, and the install order of the function files (manifest.txt)
            for src in sorted((ROOT / "sql" / part).rglob("*.sql")) + sorted(
                (ROOT / "sql" / part).glob("*.txt")
            ):
                dest = target / src.relative_to(ROOT / "sql")
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, dest)


setup(version=version(), cmdclass={"build_py": BuildWithSql})
