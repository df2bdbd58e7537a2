"""``settings.ANDAL``, read and checked: which Django database the jobs go to and which DSN
the worker connects with.

    ANDAL = {
        "DATABASE": "default",  # the alias enqueue uses, and the DSN is built from
        "DSN": None,            # the worker's DSN (or a list); default: DATABASES[DATABASE]
        "QUEUES": None,         # andal_worker: only these queues (default: every handler's)
        "CONCURRENCY": None,    # andal_worker: handler slots (default: andal worker's, 4)
    }

Every key is optional; an unknown key, or a value of the wrong type, is refused with
``ImproperlyConfigured`` naming it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import connections
from psycopg.conninfo import make_conninfo

KEYS = ("DATABASE", "DSN", "QUEUES", "CONCURRENCY")
#: Keys of ``DATABASES[...]["OPTIONS"]`` that Django's backend takes for itself (not libpq's).
DJANGO_OPTIONS = frozenset(
    {"isolation_level", "assume_role", "pool", "server_side_binding", "prepare_threshold",
     "cursor_factory", "context"}
)  # fmt: skip


@dataclass(frozen=True)
class AndalSettings:
    database: str
    dsns: tuple[str, ...]
    queues: tuple[str, ...] | None
    concurrency: int | None


def andal_settings() -> AndalSettings:
    """``settings.ANDAL`` with its defaults filled in (the DSN built when not given)."""
    conf = getattr(settings, "ANDAL", {})
    if not isinstance(conf, Mapping):
        raise ImproperlyConfigured("settings.ANDAL must be a dict (docs/integrations.md)")
    unknown = sorted(set(conf) - set(KEYS))
    if unknown:
        raise ImproperlyConfigured(f"settings.ANDAL: unknown keys {unknown}; known: {list(KEYS)}")
    database = conf.get("DATABASE", "default")
    if not isinstance(database, str):
        raise ImproperlyConfigured("settings.ANDAL['DATABASE'] must be a DATABASES alias (str)")
    dsn = conf.get("DSN")
    dsns = (database_dsn(database),) if dsn is None else _strings("DSN", dsn)
    if not dsns:
        raise ImproperlyConfigured("settings.ANDAL['DSN'] is empty")
    queues = conf.get("QUEUES")
    concurrency = conf.get("CONCURRENCY")
    if concurrency is not None and (type(concurrency) is not int or concurrency < 1):
        raise ImproperlyConfigured("settings.ANDAL['CONCURRENCY'] must be an int >= 1")
    return AndalSettings(
        database=database,
        dsns=dsns,
        queues=None if queues is None else _strings("QUEUES", queues),
        concurrency=concurrency,
    )


def _strings(key: str, value: Any) -> tuple[str, ...]:
    """One string, or a list or tuple of non-empty strings."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list | tuple) or not all(isinstance(s, str) and s for s in items):
        raise ImproperlyConfigured(
            f"settings.ANDAL[{key!r}] must be a string or a list of non-empty strings"
        )
    return tuple(items)


def database_dsn(alias: str) -> str:
    """A libpq connection string for ``settings.DATABASES[alias]`` (a PostgreSQL database):
    its NAME, USER, PASSWORD, HOST, PORT and the libpq keys of its OPTIONS."""
    if alias not in connections:
        raise ImproperlyConfigured(f"andal: no database {alias!r} in settings.DATABASES")
    wrapper = connections[alias]
    if wrapper.vendor != "postgresql":
        raise ImproperlyConfigured(
            f"andal: settings.DATABASES[{alias!r}] is a {wrapper.vendor} database; andal's"
            " jobs live in PostgreSQL (set ANDAL['DATABASE'] to a PostgreSQL alias)"
        )
    db = wrapper.settings_dict
    params = {k: v for k, v in (db.get("OPTIONS") or {}).items() if k not in DJANGO_OPTIONS}
    for key, name in (("dbname", "NAME"), ("user", "USER"), ("password", "PASSWORD"),
                      ("host", "HOST"), ("port", "PORT")):  # fmt: skip
        if db.get(name) not in (None, ""):
            params[key] = db[name]
    return make_conninfo(**{k: str(v) for k, v in params.items() if v is not None})
