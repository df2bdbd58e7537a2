"""Structured logs: one JSON object per line, on the stdlib logger ``andal``.

The message of a record is the event name (``claimed``, ``completed``, ``retried``, ``dead``,
``released``, ``lease_lost``, ...); the fields given in ``extra`` become keys of the object.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import datetime, timezone
from typing import IO, Any

LOGGER_NAME = "andal"
log = logging.getLogger(LOGGER_NAME)

_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    """Format a record as one JSON line: ts, level, logger, event, then the extra fields."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, timezone.utc).isoformat(
                timespec="milliseconds"
            ),
            "level": record.levelname.lower(),
            "logger": record.name,
            "event": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_"):
                out[key] = value
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str, ensure_ascii=False)


def setup(level: int | str = logging.INFO, stream: IO[str] | None = None) -> logging.Handler:
    """Send the ``andal`` logger's records to ``stream`` (stderr) as JSON lines; psycopg's
    own warnings (``psycopg.pool`` discarding a broken connection, say) go the same way."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter())
    log.handlers[:] = [handler]
    log.setLevel(level if isinstance(level, int) else level.upper())
    log.propagate = False
    driver = logging.getLogger("psycopg")
    driver.handlers[:] = [handler]
    driver.setLevel(logging.WARNING)
    driver.propagate = False
    return handler


def event(name: str, level: int = logging.INFO, **fields: Any) -> None:
    """Log one transition ``name`` with its fields."""
    if log.isEnabledFor(level):
        log.log(level, name, extra=fields)
