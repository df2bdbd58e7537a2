"""A queue's policy and its schedules as the code declares them next to its handler
(``declared``: ``Policy``, ``Backoff``, ``Periodic``), and how a worker's start gives them to
each database (``apply``: ``apply_policy``). The rules themselves are the SQL's."""

from __future__ import annotations

from .apply import Conflict, PolicyError, PolicyReport, apply_policy
from .declared import SCHEDULE_FIELDS, Backoff, Periodic, Policy

__all__ = [
    "SCHEDULE_FIELDS",
    "Backoff",
    "Conflict",
    "Periodic",
    "Policy",
    "PolicyError",
    "PolicyReport",
    "apply_policy",
]
