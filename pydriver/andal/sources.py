"""Where andal's SQL sources are, and the release they belong to.

An installed package carries them as package data (``andal/sql/``, copied in at build time);
a checkout reads the repository's ``sql/``; ``$ANDAL_SQL_DIR`` overrides both.
"""

from __future__ import annotations

import os
import re
from pathlib import Path


class SqlNotFound(FileNotFoundError):
    """The SQL sources are neither in the installed package nor in a checkout."""


def sql_dir() -> Path:
    """Where the SQL sources live: ``$ANDAL_SQL_DIR``, else the copy shipped inside the
    installed package (``andal/sql``), else the ``sql/`` of the checkout this module runs
    from. Raises ``SqlNotFound`` (one line: where it looked) when none has them."""
    env = os.environ.get("ANDAL_SQL_DIR")
    here = Path(__file__).resolve().parent
    candidates = [Path(env)] if env else [here / "sql", here.parent.parent / "sql"]
    for candidate in candidates:
        if (candidate / "schema").is_dir() and (candidate / "functions").is_dir():
            return candidate
    where = " or ".join(str(c) for c in candidates)
    raise SqlNotFound(f"andal's SQL sources are missing (looked in {where}); reinstall andal-pg")


def sql_version(root: Path | None = None) -> str:
    """The release of the SQL in ``root``: the literal ``queue.version()`` returns."""
    text = ((root or sql_dir()) / "functions" / "queue" / "version.sql").read_text()
    match = re.search(r"select '([^']+)'::text", text)
    if match is None:
        raise SqlNotFound("functions/queue/version.sql holds no version literal")
    return match.group(1)


def release() -> str:
    """This package's release: the literal of ``queue.version()`` in the SQL it installs (the
    one source; the package metadata is built from the same file), else the metadata of the
    installed distribution when the SQL is missing."""
    try:
        return sql_version()
    except OSError:  # the SQL is missing (SqlNotFound)
        from importlib import metadata

        try:
            return metadata.version("andal-pg")
        except metadata.PackageNotFoundError:
            return "unknown"
