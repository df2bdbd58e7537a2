"""The coordinated cache, Python side (docs/cache.md), in rooms:

* ``local``: the ``Cache`` callers use (reads local → shared → loader, writes, counters);
* ``store``: the process's copies and the bookkeeping that keeps a stale copy out;
* ``follower``: follows the shared cache's change log (LISTEN, or polling) into the store;
* ``repair``: read-repair of sampled hits, batched revalidation;
* here: the handlers of materialized-view refresh jobs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import psycopg

from .. import statements as sql
from ..values import Seconds
from .local import Cache
from .values import Loader, Lookup

#: The queue of materialized-view refresh jobs (cache.refresh_due enqueues into it).
REFRESH_QUEUE = "andal.refresh"
#: The NOTIFY channel of cache changes (payload: the writer's transaction id, a hint only).
CHANNEL = sql.CACHE_CHANNEL


def refresh_handler(job: Any, conn: psycopg.Connection) -> None:
    """Transactional handler of the ``andal.refresh`` queue: run ``cache.refresh_view`` for
    the job's view (``REFRESH MATERIALIZED VIEW CONCURRENTLY``) in the job's transaction. A
    view dropped since the job was enqueued is skipped.

    Register it with ``registry.add(REFRESH_QUEUE, refresh_handler, transactional=True)``."""
    payload = job.payload if not isinstance(job, Mapping) else job
    conn.execute(sql.CACHE_REFRESH_VIEW, {"view": payload["view"]})


def register_refresh(registry: Any) -> None:
    """Add ``refresh_handler`` to a worker ``Registry`` for the ``andal.refresh`` queue."""
    registry.add(REFRESH_QUEUE, refresh_handler, transactional=True)


__all__ = [
    "CHANNEL", "REFRESH_QUEUE", "Cache", "Loader", "Lookup", "Seconds", "refresh_handler",
    "register_refresh",
]  # fmt: skip
