"""Run the dashboard under uvicorn (imported only by `andal web`)."""

from __future__ import annotations

import argparse
import os
import socket
import sys

import psycopg
import uvicorn

from ..cli.base import EXIT_NOT_INSTALLED, EXIT_PORT, connect_failure
from . import pages, security
from .app import Settings, create_app
from .db import Database, SetupError


def serve(args: argparse.Namespace, host: str, port: int, root: str) -> int:
    settings = Settings(
        dsn=args.dsn,
        admin_dsn=args.admin_dsn,
        role_prefix=args.role_prefix,
        root_path=root,
        refresh=args.refresh,
        warn=pages.Thresholds(args.warn_failure_rate, args.warn_oldest_ready, args.warn_xmin_age),
        access=security.Access(token=args.auth_token or None, basic=args.basic_auth or None),
        secret=os.environ.get("ANDAL_WEB_SECRET"),
    )
    taken = _port_taken(host, port)
    if taken:
        print(f"andal: --bind {host}:{port}: {taken}", file=sys.stderr)
        return EXIT_PORT
    db = Database(settings.dsn, settings.admin_dsn, settings.role_prefix)
    try:
        db.open()
    except SetupError as exc:
        if isinstance(exc.__cause__, psycopg.Error):
            failure = connect_failure(exc.__cause__)
            print(f"andal: {failure}", file=sys.stderr)
            return failure.code
        print(f"andal: {exc}", file=sys.stderr)
        return EXIT_NOT_INSTALLED
    if args.read_only:
        db.can_act = False
    mode = f"actions enabled ({db.admin_role})" if db.can_act else "read-only"
    print(f"andal web: serving http://{host}:{port}{root or ''}/ ({mode})", flush=True)
    try:
        uvicorn.run(
            create_app(settings, db), host=host, port=port, log_level="warning", access_log=False
        )
    finally:
        db.close()
    return 0


def _port_taken(host: str, port: int) -> str | None:
    """Why the address cannot be listened on (taken, not this machine's), or None."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            return f"cannot listen there: {exc.strerror or exc}"
    return None
