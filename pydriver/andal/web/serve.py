"""Run the dashboard under uvicorn (imported only by `andal web`)."""

from __future__ import annotations

import argparse
import os
import sys

import uvicorn

from . import security
from .app import Settings, create_app
from .db import Database, SetupError


def serve(args: argparse.Namespace, host: str, port: int, root: str) -> int:
    settings = Settings(
        dsn=args.dsn,
        admin_dsn=args.admin_dsn,
        role_prefix=args.role_prefix,
        root_path=root,
        refresh=args.refresh,
        access=security.Access(token=args.auth_token or None, basic=args.basic_auth or None),
        secret=os.environ.get("ANDAL_WEB_SECRET"),
    )
    db = Database(settings.dsn, settings.admin_dsn, settings.role_prefix)
    try:
        db.open()
    except SetupError as exc:
        print(f"andal: {exc}", file=sys.stderr)
        return 3 if str(exc).startswith("cannot connect") else 4
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
