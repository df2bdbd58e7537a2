"""The phrasebook's former name: ``andal.statements`` holds every statement the driver sends.

Kept so that code written against ``andal.sql`` goes on working; new code imports
``andal.statements`` (its name does not shadow ``psycopg.sql``).
"""

from __future__ import annotations

from .statements import *  # noqa: F403
from .statements import __all__ as __all__
