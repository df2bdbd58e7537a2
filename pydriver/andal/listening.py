"""The rules of LISTEN, shared by the worker's listener (``andal.worker.listen``) and the
cache's follower (``andal.cache.follower``): where a listening session connects, and the one
line at start that says so.

A LISTEN needs a session of its own: behind a transaction-mode pooler (pgbouncer
``pool_mode = transaction``) the server connection that ran it goes back to the pool, and the
notifications go nowhere. So a listener connects to the database's ``listen_dsn`` (a direct
connection string, given next to the pooled one) when there is one, to the DSN when no
transaction-mode pooler is in between, and otherwise does not run: its owner then polls.
"""

from __future__ import annotations

import logging
from typing import Any

from .logs import event

#: How a worker or a cache hears of changes on one database: on its DSN, on the separate
#: listen DSN, or not at all (it polls).
VIA_DSN, VIA_LISTEN_DSN, VIA_POLLING = "dsn", "listen_dsn", "polling"


def listen_via(listen: bool, pooler: str | None, listen_dsn: str | None) -> str:
    """Where the listener of a database connects (``VIA_*``)."""
    if not listen:
        return VIA_POLLING
    if listen_dsn is not None:
        return VIA_LISTEN_DSN
    return VIA_POLLING if pooler == "transaction" else VIA_DSN


def listen_target(
    listen: bool, pooler: str | None, listen_dsn: str | None, dsn: str
) -> tuple[str, str]:
    """``listen_via``'s answer and the DSN a listening session connects to."""
    via = listen_via(listen, pooler, listen_dsn)
    if via == VIA_LISTEN_DSN and listen_dsn is not None:
        return via, listen_dsn
    return via, dsn


def report_listening(
    name: str, via: str, poll: float, pooler: str | None, polled: str, **fields: Any
) -> None:
    """The one line at start (event ``name``, with ``fields``) that says how its owner hears
    of changes; at warning level, with what to do, when a transaction-mode pooler leaves it
    polling (``polled``: what is then found by polling, and the option that would help)."""
    if via == VIA_POLLING and pooler == "transaction":
        event(
            name,
            logging.WARNING,
            **fields,
            via=via,
            poll_s=poll,
            hint=f"behind a transaction-mode pooler LISTEN cannot work: {polled} for notifications",
        )
        return
    event(name, **fields, via=via, poll_s=poll)
