"""Starting: check the databases, make the pools and the rooms, start the threads.

``Startup`` sees the worker through two objects only: its options (``options.Options``) and
the rooms and controls it wires together (``StartRooms``). What it decides (the leased and
transactional queues, the executor, each database's maintenance and registration) stays on
it for the worker to read, and goes to the rooms that use it (``hand_over``)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import ConnectionPool

from .. import tracing as tracing_
from ..client import route
from ..hosts import PoolLane, is_connection_error
from ..listening import VIA_POLLING, Dryness, Listener, abort_target, listen_via
from ..logs import event, one_line
from ..maintenance import Maintenance
from ..policy import apply_policy
from ..registration import Registration
from .databases import Source, pooler_mode
from .execute import Executor
from .heartbeat import Heartbeat
from .limits import Limits
from .state import _Dry, _Run
from .transact import Transactions, TxGroup

if TYPE_CHECKING:
    from ..handlers import Registry
    from ..observe import Observer
    from .claim import Claimer
    from .complete import Completer
    from .execute import InternalError
    from .interrupt import Interrupter
    from .options import Options
    from .shutdown import Shutdown
    from .slots import Slots
    from .trouble import Trouble


@dataclass(frozen=True)
class StartRooms:
    """What the start wires together: the handlers, the databases, the rooms made before it
    (slots, observer, trouble, interrupter, claimer, completer, shutdown) and the worker's
    controls (``should_stop()``, ``pause(s)``, ``hint(src)``, ``internal_error(where)``). The
    threads it starts go to the shutdown's ``claimers`` and ``threads`` (it waits for them);
    the helper threads end at its ``helpers_stop``."""

    registry: Registry
    sources: Sequence[Source]
    slots: Slots
    observer: Observer
    trouble: Trouble
    interrupter: Interrupter
    claimer: Claimer
    completer: Completer
    shutdown: Shutdown
    should_stop: Callable[[], bool]
    pause: Callable[[float], None]
    hint: Callable[[Source], None]
    internal_error: InternalError


class Startup:
    """The start of one worker (``prepare`` in the caller's thread, then ``start_threads``).

    After ``prepare``: ``leased_queues``, ``tx_queues`` and ``tx_groups`` (what is claimed,
    and how), ``queue_set`` (the queues a NOTIFY hint may name), ``executor``,
    ``maintenance`` and ``registrations`` (per database index)."""

    def __init__(self, options: Options, rooms: StartRooms) -> None:
        self.o, self.r = options, rooms
        self.prepared = False
        self.leased_queues: list[str] = []
        self.tx_queues: list[str] = []
        self.tx_groups: list[TxGroup] = []
        self.queue_set: set[str] = set()
        self.executor: Executor | None = None
        self.maintenance: dict[int, Maintenance[Source]] = {}
        self.registrations: dict[int, Registration] = {}

    def prepare(self) -> None:
        o, r = self.o, self.r
        if self.prepared:
            raise RuntimeError("a Worker runs once; make a new one")
        if not r.registry:
            raise ValueError("no handler registered")
        wanted = o.queues or r.registry.queues()
        missing = [q for q in wanted if q not in r.registry]
        if missing:
            raise ValueError(f"no handler for queue(s): {', '.join(missing)}")
        handlers = [r.registry[q] for q in wanted]
        self.leased_queues = [h.queue for h in handlers if not h.transactional]
        self.tx_queues = [h.queue for h in handlers if h.transactional]
        for is_async in (False, True):
            group = [h.queue for h in handlers if h.transactional and h.is_async == is_async]
            if group:
                self.tx_groups.append(TxGroup(group, is_async))
        self.queue_set = set(wanted)
        r.slots.configure(bool(self.leased_queues), [g.is_async for g in self.tx_groups])
        self.check_sources()
        self.apply_policies()
        self.prepared = True
        sync_tx = any(h.transactional and not h.is_async for h in handlers)
        self.make_pools(3 + (o.concurrency if sync_tx else 0))
        self.maintenance = {
            src.index: Maintenance(
                src,
                o.name,
                o.maintain_every,
                self.vacuum_dsn(src) if o.vacuum else None,
                r.shutdown.helpers_stop,
                r.trouble.db_trouble,
                r.hint,
                r.observer.vacuumed,
                r.internal_error,
            )  # fmt: skip
            for src in r.sources
        }
        self.registrations = {
            src.index: Registration(o.name, src.label, wanted, o.concurrency, tracing_._version())
            for src in r.sources
        }
        limits = Limits[_Run]({h.queue: h.limit for h in handlers if h.limit is not None})
        threads = o.concurrency if any(not h.is_async for h in handlers) else 0
        needs_loop = any(h.is_async for h in handlers)
        self.executor = self.make_executor(threads, needs_loop, limits)
        self.hand_over(self.executor)
        tracing = o.tracing if o.tracing is not None else tracing_.configured()
        r.observer.start_tracing(bool(tracing))
        r.observer.serve(o.metrics_port, o.metrics_addr)

    def apply_policies(self) -> None:
        """Each database that answers takes the registry's policies (those of ``queues``
        only, when given), before anything is claimed (``policy.apply_policy``; with
        ``apply_policy``: over the database's values). A schedule goes to the database its
        queue routes to (``andal.client.route``: once, not once per database; skipped this
        start when that one does not answer). A refusal raises ``PolicyError``."""
        o, r = self.o, self.r
        into = {p.queue for p in r.registry.periodics() if not o.queues or p.queue in o.queues}
        for src in r.sources:
            if src.up:
                here = [q for q in into if q is not None and route(q, len(r.sources)) == src.index]
                apply_policy(
                    src.dsn, r.registry, apply=o.apply_policy, queues=o.queues,
                    schedules_for=here, worker=o.name, database=src.label,
                )  # fmt: skip

    def make_pools(self, max_size: int) -> None:
        """Each database's connection pool (opened by ``start_threads``) and lanes."""
        for src in self.r.sources:
            src.attach(
                ConnectionPool(
                    src.dsn, min_size=2, max_size=max_size, open=False, **self.pool_options(src)
                )
            )

    def make_executor(self, threads: int, needs_loop: bool, limits: Limits[_Run]) -> Executor:
        """The executor, with the transactional probes when a queue is transactional."""
        o, r = self.o, self.r
        executor = Executor(
            r.slots, r.observer, o.name, r.internal_error, threads, needs_loop, limits
        )
        if self.tx_groups:
            executor.transactions = Transactions(
                r.slots, r.observer, r.claimer, r.trouble, o.name, limits,
                executor.queue_done, r.should_stop, r.pause, self.pool_options,
            )  # fmt: skip
        return executor

    def hand_over(self, executor: Executor) -> None:
        """What the start made, to the rooms that use it."""
        r = self.r
        r.completer.executor = executor
        r.shutdown.setup(executor, self.maintenance, self.registrations)
        r.claimer.setup(
            self.leased_queues, self.tx_groups, executor, self.registrations, self.maintenance
        )

    def pool_options(self, src: Source) -> dict[str, Any]:
        """The options of ``src``'s connection pools (the threads' and the event loop's).
        Behind a pooler, no server-side prepared statements: the server connection that
        prepared one may not be the one the next statement lands on. Elsewhere the sessions
        turn ``idle_in_transaction_session_timeout`` off (``_keep_transactions_open``)."""
        kwargs: dict[str, Any] = {
            "autocommit": True,
            "application_name": f"andal {self.o.name}"[:63],
            "connect_timeout": 5,
        }
        if pooler_mode(self.o.pooler, src) is not None:
            kwargs["prepare_threshold"] = None
        else:  # (a pooler refuses the startup option: there the DBA's value stays)
            kwargs["options"] = _keep_transactions_open(src.dsn)
        return {
            "kwargs": kwargs,
            "timeout": self.o.pool_timeout,
            "reconnect_timeout": 24 * 3600,
            "name": f"andal-{self.o.name}-{src.index}",
        }

    def check_sources(self) -> None:
        """Check every database at once. Raise when none answers, or when one answers without
        andal installed (or refuses us: a bad DSN is not an outage); start with the others
        when some do not answer (they are reconnected to in the background)."""
        sources = self.r.sources
        errors: dict[int, BaseException] = {}

        def check(src: Source) -> None:
            try:
                src.check()
            except BaseException as exc:  # raised below, in the caller's thread
                errors[src.index] = exc

        threads = [threading.Thread(target=check, args=(s,), daemon=True) for s in sources]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for src in sources:
            exc = errors.get(src.index)
            if exc is not None and not is_connection_error(exc):
                raise exc
        if len(errors) == len(sources):
            raise errors[sources[0].index]
        for src in sources:
            if src.pooled and self.o.pooler is None:
                event(
                    "pooler_detected", logging.WARNING, worker=self.o.name, database=src.label,
                    runs_as="transaction", hint="a pooler (pgbouncer) answers for this"
                    " database: the worker runs as with --pooler transaction (no prepared"
                    " statements; LISTEN only on --listen-dsn, else it polls); say --pooler"
                    " session or transaction (and --listen-dsn) to choose",
                )  # fmt: skip
        for src in sources:
            exc = errors.get(src.index)
            if exc is not None:
                self.r.slots.went_down(src)
                event(
                    "database_down",
                    logging.WARNING,
                    worker=self.o.name,
                    database=src.label,
                    error=one_line(exc),
                )

    def start_threads(self) -> None:
        o, r = self.o, self.r

        def spawn(target: Callable[..., None], name: str, *args: Any) -> threading.Thread:
            t = threading.Thread(target=target, args=args, name=name, daemon=True)
            t.start()
            return t

        def keeping(
            lane: PoolLane | None, loop: Callable[[Source], None]
        ) -> Callable[[Source], None]:
            """``loop``, then its pooled connection (kept between its statements) back."""

            def run(src: Source) -> None:
                try:
                    loop(src)
                finally:
                    assert lane is not None
                    lane.release()

            return run

        for src in r.sources:
            assert src.pool is not None
            src.pool.open(wait=False)
        assert self.executor is not None
        self.executor.start()
        threads, stop = r.shutdown.threads, r.shutdown.helpers_stop
        for src in r.sources:
            i = src.index
            threads.append(
                spawn(keeping(src.complete_lane, r.completer.run), f"andal-completer-{i}", src)
            )
            beats = None
            if o.heartbeat:
                beats = Heartbeat(r.slots, r.observer, r.trouble, r.interrupter, src, o.lease, stop)
                threads.append(spawn(beats.run, f"andal-heartbeat-{i}", r.internal_error))
            if listen_via(o.listen, pooler_mode(o.pooler, src), src.listen_dsn) != VIA_POLLING:
                listener = self.listener(src, beats)
                threads.append(spawn(listener.run, f"andal-listener-{i}"))
        for src in r.sources:
            r.shutdown.claimers.append(
                spawn(keeping(src.claim_lane, r.claimer.run), f"andal-claim-{src.index}", src)
            )

    def listener(self, src: Source, beats: Heartbeat | None = None) -> Listener:
        o, r = self.o, self.r
        dsn = src.listen_dsn or src.dsn

        def hint(payload: str) -> None:
            if not payload or payload in self.queue_set:
                r.hint(src)

        def abort(payload: str) -> None:
            ours, job_id = abort_target(payload, o.name)
            if ours and beats is not None:
                beats.poke(job_id)

        def lost(error: str) -> None:
            r.slots.count("listener_lost", src=src)
            event("listener_lost", logging.WARNING, worker=o.name, database=src.label, error=error)

        name = f"andal {o.name} listen"
        on_abort = abort if beats is not None else None
        dries = [src.leased_dry] if self.leased_queues else []
        dries += [src.probes[g.is_async].dry for g in self.tx_groups]
        listener = Listener(
            dsn, name, hint, lost, r.shutdown.helpers_stop, r.internal_error, on_abort,
            self.dryness(dries), sorted(self.queue_set),
        )  # fmt: skip
        for d in dries:
            d.on_empty = listener.poke
        return listener

    @staticmethod
    def dryness(dries: list[_Dry]) -> Dryness:
        """Whether every claim of a database (``dries``: leased, and each transactional
        group's probe) last came back empty, and how many empty claims there were."""

        def dryness() -> tuple[int, bool]:
            return sum(d.empties for d in dries), all(d.step > 0 for d in dries)

        return dryness

    def vacuum_dsn(self, src: Source) -> str | None:
        """Where the vacuum connects: its advisory lock is a session's, which a transaction-
        mode pooler does not keep; so the listen DSN there, and no vacuum without one."""
        if src.listen_dsn is not None:
            return src.listen_dsn
        return None if pooler_mode(self.o.pooler, src) == "transaction" else src.dsn


def _keep_transactions_open(dsn: str) -> str:
    """The DSN's ``options`` and ``-c idle_in_transaction_session_timeout=0``. A transactional
    handler runs inside its claim's transaction, idle while its Python code runs: a DBA's
    timeout would end the session, roll back the claim with the work and leave the job to run
    again, with no attempt counted, as often as it takes longer. The job's lease and timeout
    bound that transaction instead."""
    given = conninfo_to_dict(dsn).get("options") or ""
    return f"{given} -c idle_in_transaction_session_timeout=0".strip()
