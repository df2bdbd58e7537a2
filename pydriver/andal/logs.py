"""Structured logs on the stdlib logger ``andal``: one JSON object per line, or (``pretty``,
for a person at a terminal) one readable line per record.

The message of a record is the event name (``claimed``, ``completed``, ``retried``, ``dead``,
``released``, ``lease_lost``, ...); the fields given in ``extra`` become keys of the object
(``key=value`` in the pretty form).
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


#: Control characters (but none of a line's own) shown as "?" in a pretty line.
_CONTROL = str.maketrans({c: "?" for c in [*range(0x20), *range(0x7F, 0xA0)]})


class PrettyFormatter(logging.Formatter):
    """A record as one line for a person: ``12:00:01.250 warning dead job_id=7 queue=mail
    error="..."``: the time (UTC), the level, the event, then each field as key=value
    (quoted when it holds a space); control characters of a value show as "?"."""

    def format(self, record: logging.LogRecord) -> str:
        at = datetime.fromtimestamp(record.created, timezone.utc)
        parts = [at.strftime("%H:%M:%S.") + f"{at.microsecond // 1000:03d}"]
        parts += [f"{record.levelname.lower():<7}", record.getMessage()]
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_") and value is not None:
                text = value if isinstance(value, str) else json.dumps(value, default=str)
                text = text.translate(_CONTROL)
                parts.append(f"{key}={json.dumps(text) if ' ' in text or not text else text}")
        line = " ".join(parts)
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


#: The formats ``setup`` takes (``None``: pretty on a terminal, else JSON).
FORMATS = ("json", "pretty")


def setup(
    level: int | str = logging.INFO, stream: IO[str] | None = None, fmt: str | None = "json"
) -> logging.Handler:
    """Send the ``andal`` logger's records to ``stream`` (stderr) as JSON lines (``fmt``
    "json"), readable lines ("pretty"), or, with ``fmt`` None, pretty when the stream is a
    terminal and JSON otherwise; psycopg's own warnings (``psycopg.pool`` discarding a broken
    connection, say) go the same way."""
    out = stream or sys.stderr
    if fmt is None:
        fmt = "pretty" if getattr(out, "isatty", lambda: False)() else "json"
    if fmt not in FORMATS:
        raise ValueError(f"log format: expected json or pretty, got {fmt!r}")
    handler = logging.StreamHandler(out)
    handler.setFormatter(JsonFormatter() if fmt == "json" else PrettyFormatter())
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


def one_line(exc: BaseException) -> str:
    """The first line of an error's text (psycopg adds CONTEXT and HINT lines)."""
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__
