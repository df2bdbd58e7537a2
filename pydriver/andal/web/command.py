"""`andal web`: its command-line arguments and the server (uvicorn) that runs the app.

Kept free of the web libraries at import time: `andal --help` works without the ``web`` extra,
and `andal web` then says how to install it.
"""

from __future__ import annotations

import argparse
import os
import re
import sys

from ..roles import ROLE_PREFIX

DEFAULT_BIND = "127.0.0.1:8080"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--bind",
        default=DEFAULT_BIND,
        metavar="HOST:PORT",
        help=f"address to listen on (default {DEFAULT_BIND}: this machine only)",
    )
    p.add_argument(
        "--admin-dsn",
        metavar="DSN",
        help="database connection for actions (requeue, purge, cancel, pause), as a member of"
        " andal_admin; default: --dsn, when its role is a member of andal_admin",
    )
    p.add_argument(
        "--role-prefix",
        metavar="PREFIX",
        help="the install's role prefix: reads as PREFIX_monitor, acts as PREFIX_admin"
        " (default: the install's own, as queue.roles() names it; andal when the login role"
        " may not call it)",
    )
    p.add_argument(
        "--read-only", action="store_true", help="offer no action, whatever the role may do"
    )
    p.add_argument(
        "--auth-token",
        default=os.environ.get("ANDAL_WEB_TOKEN"),
        metavar="TOKEN",
        help="require 'Authorization: Bearer TOKEN' (default: $ANDAL_WEB_TOKEN)",
    )
    p.add_argument(
        "--basic-auth",
        default=os.environ.get("ANDAL_WEB_BASIC_AUTH"),
        metavar="USER:PASSWORD",
        help="require HTTP basic auth (default: $ANDAL_WEB_BASIC_AUTH)",
    )
    p.add_argument(
        "--root-path",
        default="",
        metavar="PREFIX",
        help="path prefix the reverse proxy serves the dashboard under, e.g. /andal",
    )
    p.add_argument(
        "--refresh", type=float, default=2.0, metavar="S", help="seconds between live updates (2)"
    )
    p.add_argument(
        "--warn-failure-rate", type=float, default=0.1, metavar="RATIO",
        help="flag a queue whose failure rate (last hour) reaches RATIO (default 0.1)",
    )  # fmt: skip
    p.add_argument(
        "--warn-oldest-ready", type=float, default=300.0, metavar="S",
        help="flag a queue whose oldest ready job waited S seconds (default 300)",
    )  # fmt: skip
    p.add_argument(
        "--warn-xmin-age", type=float, default=600.0, metavar="S",
        help="a banner on every page when the held-back xmin (queue.stats()) is S seconds old"
        " (default 600)",
    )  # fmt: skip


def parse_bind(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"--bind: expected HOST:PORT, got {text!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


#: One segment of --root-path: letters, digits and - . _ ~ (never . or .. alone).
_SEGMENT = re.compile(r"[A-Za-z0-9._~-]+")


def root_path(text: str) -> str:
    """--root-path as the app takes it ("" or "/a/b", no trailing slash), or ValueError: it
    goes into every link and the cookies' Path, so only plain path segments pass."""
    root = text.rstrip("/")
    if not root:
        return ""
    segments = root.split("/")
    if (
        segments[0]
        or len(root) > 200
        or not all(_SEGMENT.fullmatch(seg) and seg not in (".", "..") for seg in segments[1:])
    ):
        raise ValueError(
            f"--root-path: expected a path like /andal (segments of letters, digits, - . _ ~),"
            f" got {text[:80]!r}"
        )
    return root


def check_credentials(token: str | None, basic: str | None) -> None:
    """An empty token or password would turn authentication off without a word: refused
    (to serve without authentication, give neither and unset the variables)."""
    if token is not None and not token.strip():
        raise ValueError(
            "--auth-token is empty (or $ANDAL_WEB_TOKEN is set but empty): give a token, or"
            " unset ANDAL_WEB_TOKEN to serve without authentication"
        )
    if basic is not None:
        user, sep, password = basic.partition(":")
        if not sep or not user or not password:
            raise ValueError(
                "--basic-auth (or $ANDAL_WEB_BASIC_AUTH): expected USER:PASSWORD, both"
                " non-empty; unset ANDAL_WEB_BASIC_AUTH to serve without authentication"
            )


def run(args: argparse.Namespace) -> int:
    """The `andal web` command; returns the exit code (2 bad usage, 3/4 the database)."""
    if len(args.dsns) > 1:
        print("andal: `andal web` shows one database: give one --dsn", file=sys.stderr)
        return 2
    try:
        host, port = parse_bind(args.bind)
        root = root_path(args.root_path)
        check_credentials(args.auth_token, args.basic_auth)
        if args.role_prefix is not None and not ROLE_PREFIX.fullmatch(args.role_prefix):
            raise ValueError("--role-prefix: a lower-case letter, then letters, digits or _")
        if not args.refresh > 0:
            raise ValueError("--refresh must be a positive number of seconds")
        if not (0 < args.warn_failure_rate <= 1 and args.warn_oldest_ready > 0):
            raise ValueError("--warn-failure-rate: a ratio in (0, 1]; --warn-oldest-ready: > 0")
        if not args.warn_xmin_age > 0:
            raise ValueError("--warn-xmin-age must be a positive number of seconds")
    except ValueError as exc:
        print(f"andal: {exc}", file=sys.stderr)
        return 2
    try:
        from .serve import serve
    except ImportError as exc:
        print(
            f"andal: `andal web` needs the web extra ({exc.name} is missing):"
            " pip install 'andal-pg[web]'",
            file=sys.stderr,
        )
        return 2
    return serve(args, host, port, root)
