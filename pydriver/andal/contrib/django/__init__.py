"""andal in Django: jobs enqueued on Django's own connection, a worker command.

Add ``"andal.contrib.django"`` to ``INSTALLED_APPS`` (for ``manage.py andal_worker``) and,
optionally, an ``ANDAL`` dict to the settings (``andal.contrib.django.conf``)::

    from django.db import transaction
    from andal.contrib.django import enqueue

    with transaction.atomic():
        order = Order.objects.create(...)
        enqueue({"order": order.pk}, "mail")   # commits with the order, or not at all

``enqueue`` runs ``andal.enqueue`` on the connection of the Django database ``using`` (default
``ANDAL["DATABASE"]``, else ``"default"``): inside ``transaction.atomic()`` the job is part
of that transaction; outside one it commits at once (Django's autocommit). It needs Django's
psycopg 3 backend (Django 4.2+ with psycopg 3 installed, which andal depends on).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg
from django.core.exceptions import ImproperlyConfigured
from django.db import connections

from ... import client
from .conf import AndalSettings, andal_settings, database_dsn


def connection(using: str | None = None) -> psycopg.Connection[Any]:
    """The ``psycopg.Connection`` under Django's connection ``using`` (default
    ``ANDAL["DATABASE"]``), opened if it is not yet; in the current transaction, if any."""
    alias = using or andal_settings().database
    if alias not in connections:
        raise ImproperlyConfigured(f"andal: no database {alias!r} in settings.DATABASES")
    wrapper = connections[alias]
    if wrapper.vendor != "postgresql":
        raise ImproperlyConfigured(
            f"andal: the Django database {alias!r} is {wrapper.vendor}, not PostgreSQL"
        )
    wrapper.ensure_connection()
    raw = wrapper.connection
    if not isinstance(raw, psycopg.Connection):
        raise ImproperlyConfigured(
            f"andal: the Django database {alias!r} runs on {type(raw).__module__} (psycopg 2?);"
            " andal.contrib.django needs Django's psycopg 3 backend: Django >= 4.2 with"
            " psycopg 3 installed"
        )
    # a failed statement inside atomic(): Django's own TransactionManagementError
    wrapper.validate_no_broken_transaction()
    return raw


def enqueue(
    payload: Any, queue: str = "default", *, using: str | None = None, **options: Any
) -> int | None:
    """Enqueue one job on Django's connection ``using``; returns its id. ``options``: those
    of ``andal.enqueue`` (``category``, ``priority``, ``delay``, ``dedup_key``, ``after``,
    ``timeout``, ...)."""
    return client.enqueue(connection(using), payload, queue, **options)


def enqueue_many(
    payloads: Sequence[Any], queue: str = "default", *, using: str | None = None, **options: Any
) -> list[int | None]:
    """Enqueue many jobs in one statement on Django's connection ``using``; their ids in
    order (``andal.enqueue_many``'s options)."""
    return client.enqueue_many(connection(using), payloads, queue, **options)


def dsn() -> str:
    """The worker's DSN: ``ANDAL["DSN"]`` (the first, if a list), else built from
    ``DATABASES[ANDAL["DATABASE"]]``."""
    return andal_settings().dsns[0]


__all__ = ["AndalSettings", "andal_settings", "connection", "database_dsn", "dsn", "enqueue",
           "enqueue_many"]  # fmt: skip
