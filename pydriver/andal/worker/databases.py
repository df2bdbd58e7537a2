"""The databases a worker serves: each one's pool, lanes and state (``Source``), and the pooler
mode it is run with (``pooler_mode``). Their connection strings, labels and the meaning of a
failed statement are ``andal.hosts``'s."""

from __future__ import annotations

import queue as queues_
import threading
from collections import Counter
from typing import Any

from psycopg_pool import ConnectionPool

from ..hosts import PoolLane, check_installed
from .state import Probe, _Dry, _Run


class Source:
    """One andal database a worker claims from (see the module's docstring).

    Read-only for users: ``index`` (position in ``Worker.dsns``), ``dsn``, ``label``
    (``dbname@host:port``), ``up`` (False from a lost connection until the database answers
    again; meanwhile its claim loop reconnects with backoff and its share of the slots goes
    to the other databases), ``busy`` (slots held for its jobs), ``held`` (its jobs this
    worker holds) and ``counts`` (``Worker.counts`` for this database alone).
    ``reporting``: its jobs whose handler returned and whose outcome is not recorded yet
    (they hold no slot).
    """

    def __init__(
        self, index: int, dsn: str, label: str, poll: float, listen_dsn: str | None = None
    ) -> None:
        self.index = index
        self.dsn = dsn
        #: A direct connection string for LISTEN and the vacuum's session lock, when the
        #: worker's DSN goes through a transaction-mode pooler (None: not given).
        self.listen_dsn = listen_dsn
        #: Whether a pooler answered for the server at the worker's start (``behind_pooler``)
        #: though the worker was not told of one: it then runs as with pooler="transaction".
        self.pooled = False
        self.label = label
        self.up = True
        self.down_since: float | None = None
        self.busy = 0
        self.reporting = 0
        self.riding = 0  # successes waiting for the completer, whose claim rides on them
        self.counts: Counter[str] = Counter()
        self.pool: ConnectionPool | None = None
        self.claim_lane: PoolLane | None = None  # the claim loop's connection
        self.complete_lane: PoolLane | None = None  # the completer's connection
        self.active: dict[int, _Run] = {}  # job id (of this database) -> run
        self.done: queues_.SimpleQueue[Any] = queues_.SimpleQueue()  # outcomes to record
        self.wake = threading.Event()
        self.leased_dry = _Dry(poll)
        #: Transactional probes, by handler form (False: plain, True: ``async def``).
        self.probes = {False: Probe(poll), True: Probe(poll)}

    @property
    def held(self) -> int:
        return len(self.active)

    def check(self) -> None:
        """At the worker's start: ``check_installed``, noting whether a pooler answered."""
        self.pooled = check_installed(self.dsn)

    def attach(self, pool: ConnectionPool) -> None:
        """At the worker's start: its pool, and the claim loop's and the completer's lanes."""
        self.pool = pool
        self.claim_lane, self.complete_lane = PoolLane(pool), PoolLane(pool)

    def close(self) -> None:
        """At the worker's stop: close its pool (its lanes' connections go with it)."""
        if self.pool is not None:
            self.pool.close(timeout=1)

    def __repr__(self) -> str:
        state = "up" if self.up else "down"
        return f"<Source {self.index} {self.label} {state} busy={self.busy}>"


def pooler_mode(told: str | None, src: Source) -> str | None:
    """The pooler mode the worker runs ``src`` with: the one it was told, else
    ``"transaction"`` when a pooler answered for the server at start (safe in either mode:
    no prepared statements, LISTEN and the vacuum's session lock only on ``listen_dsn``)."""
    return told or ("transaction" if src.pooled else None)
