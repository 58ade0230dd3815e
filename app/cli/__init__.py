"""The `railyard` command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TextIO

from app.cli import check, effects, queue, tickets
from app.cli.common import Handler, cmd_migrate
from app.logs import configure_logging
from app.settings import Settings
from app.store.database import Database


def build_parser() -> argparse.ArgumentParser:
    """The argument parser, one sub-command per job."""
    parser = argparse.ArgumentParser(prog="railyard", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("migrate", help="create or upgrade the database schema").set_defaults(
        handler=cmd_migrate
    )
    tickets.register(commands)
    queue.register(commands)
    check.register(commands)
    effects.register(commands)
    commands.add_parser("serve", help="run the web server, worker and outbox").set_defaults(handler=None)
    worker = commands.add_parser("worker", help="run an extra worker process (PostgreSQL)")
    worker.add_argument("--concurrency", type=int, default=4)
    worker.set_defaults(handler=None)
    return parser


def main(
    argv: Sequence[str] | None = None,
    settings: Settings | None = None,
    out: TextIO = sys.stdout,
    err: TextIO = sys.stderr,
) -> int:
    """Run one `railyard` command and return its exit status."""
    args = build_parser().parse_args(argv)
    settings = settings or Settings()
    if args.command in ("serve", "worker"):
        from app.runtime.runner import run_server, run_worker

        configure_logging()
        return run_server(settings) if args.command == "serve" else run_worker(settings, args.concurrency)
    database = Database(settings.database_url)
    args.settings = settings
    try:
        handler: Handler = args.handler
        return handler(args, database, out, err)
    finally:
        database.close()
