"""andal: a job queue and worker cache that live inside PostgreSQL.

Producers::

    import andal
    andal.Client(dsn).enqueue({"to": "a@b.c"}, "mail")
    andal.enqueue(conn, {"to": "a@b.c"}, "mail")      # in the caller's transaction
    await andal.enqueue(aconn, {"to": "a@b.c"}, "mail")   # on a psycopg AsyncConnection
    await andal.AsyncClient(dsn).enqueue({"to": "a@b.c"}, "mail")

Workers::

    registry = andal.Registry()

    @registry.handler("mail")
    def send(job: andal.Job) -> dict:
        ...

    @registry.handler("fetch", limit=50)       # awaited on the worker's event loop
    async def fetch(job: andal.Job) -> None:
        ...

    @registry.handler("ledger", transactional=True)
    def post(job: andal.Job, conn) -> None:
        conn.execute("insert into ledger ...")   # commits with the job's completion

    andal.Worker(dsn, registry, concurrency=8).run()
"""

from __future__ import annotations

from .cache import REFRESH_QUEUE, Cache, Lookup, refresh_handler, register_refresh
from .client import AsyncClient, Client, configure_queue, enqueue, enqueue_many, set_category_limit
from .errors import (
    AndalError,
    BadInput,
    IllegalTransition,
    InvalidArgument,
    LeaseLost,
    NotInstalled,
    NotPermitted,
    NullArgument,
    PartitionUnreachable,
    PrimaryOnly,
    TooLarge,
    UnknownJob,
)
from .handlers import Fail, Handler, Job, JobInterrupted, Registry, Retry
from .jobs import Child, JobInfo, JobOrigin, Parent
from .policy import Backoff, PolicyError
from .sources import release
from .worker import Worker
from .workflows import chain, group

__version__ = release()

__all__ = [
    "REFRESH_QUEUE",
    "AndalError",
    "AsyncClient",
    "Backoff",
    "BadInput",
    "Cache",
    "Child",
    "Client",
    "Fail",
    "Handler",
    "IllegalTransition",
    "InvalidArgument",
    "Job",
    "JobInfo",
    "JobOrigin",
    "JobInterrupted",
    "LeaseLost",
    "Lookup",
    "NotInstalled",
    "NotPermitted",
    "NullArgument",
    "Parent",
    "PolicyError",
    "PartitionUnreachable",
    "PrimaryOnly",
    "Registry",
    "Retry",
    "TooLarge",
    "UnknownJob",
    "Worker",
    "chain",
    "configure_queue",
    "enqueue",
    "enqueue_many",
    "group",
    "refresh_handler",
    "register_refresh",
    "set_category_limit",
    "__version__",
]
