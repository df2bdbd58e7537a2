"""Deprecated: the phrasebook's former name. ``andal.statements`` holds every statement the
driver sends.

Kept so that code written against this name goes on working for now; importing it warns
(``DeprecationWarning``), and it will be removed in a later release. Import
``andal.statements`` instead (its name does not shadow ``psycopg.sql``).
"""

from __future__ import annotations

import warnings

from .statements import *  # noqa: F403
from .statements import __all__ as __all__

warnings.warn(
    "andal.sql is deprecated and will be removed in a later release: import andal.statements"
    " instead (the same statements)",
    DeprecationWarning,
    stacklevel=2,
)
