"""``manage.py andal_worker MODULE [andal worker options]``: ``andal worker`` for the handlers
of MODULE, on the DSN of ``settings.ANDAL`` (``andal.contrib.django.conf``), in this process
(after ``django.setup()``: handlers may use the ORM).

Everything after MODULE goes to ``andal worker`` as is (``andal worker --help``; Django's own
options, ``--settings`` and the like, come before MODULE). ``ANDAL["QUEUES"]`` and
``ANDAL["CONCURRENCY"]`` are defaults the command line overrides; ``--dsn`` is refused: the
database is the settings'.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from andal import cli
from andal.contrib.django.conf import andal_settings


def worker_argv(module: str, given: Sequence[str]) -> list[str]:
    """The ``andal`` argv: the settings' DSNs, ``worker MODULE``, the settings' defaults,
    then ``given`` (which wins: argparse keeps the last value of an option)."""
    args = cli.parser().parse_args(["worker", module, *given])  # bad usage exits 2, as andal
    if getattr(args, "dsn_after", None):
        raise CommandError(
            "andal_worker: --dsn is not taken: the database is settings.ANDAL['DSN'], else"
            " settings.DATABASES[settings.ANDAL['DATABASE']]"
        )
    conf = andal_settings()
    argv = [part for dsn in conf.dsns for part in ("--dsn", dsn)]
    argv += ["worker", module]
    if conf.concurrency is not None:
        argv += ["--concurrency", str(conf.concurrency)]
    if conf.queues and args.queue is None:  # --queue appends: the command line replaces them
        argv += [part for queue in conf.queues for part in ("--queue", queue)]
    return [*argv, *given]


class Command(BaseCommand):
    help = (
        "Run an andal worker for the handlers of MODULE (a module path or .py file with a"
        " `registry`) on the database of settings.ANDAL; the arguments after MODULE are"
        " `andal worker`'s (andal worker --help)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("module", metavar="MODULE", help="the handlers' module")
        parser.add_argument(
            "worker_args",
            nargs=argparse.REMAINDER,
            metavar="...",
            help="options of `andal worker` (--queue, --concurrency, --grace, --poll, ...)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        code = cli.main(worker_argv(options["module"], options["worker_args"]))
        if code != 0:
            raise CommandError(
                f"andal worker stopped with exit code {code} (`andal --help` lists the codes)",
                returncode=code,
            )
