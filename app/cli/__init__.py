"""The `railyard` command line."""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Sequence
from typing import TextIO

from app.bootstrap import open_database
from app.cli import (
    agent,
    audit_commands,
    check,
    demo,
    effect_commands,
    gate_command,
    queue_commands,
    release,
    ticket_commands,
    validate,
)
from app.cli.common import CommandHandler, cmd_migrate
from app.cli.errors import explain
from app.logs import configure_logging
from app.settings import Settings, railyard_version


def build_parser() -> argparse.ArgumentParser:
    """The argument parser, one sub-command per job."""
    parser = argparse.ArgumentParser(prog="railyard", description=__doc__)
    parser.add_argument("--version", action="version", version=f"%(prog)s {railyard_version()}")
    parser.add_argument(
        "--debug", action="store_true", help="debug logs, and the traceback of any error (as LOG_LEVEL=debug)"
    )
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("migrate", help="create or upgrade the database schema").set_defaults(
        handler=cmd_migrate
    )
    ticket_commands.register(commands)
    queue_commands.register(commands)
    check.register(commands)
    gate_command.register(commands)
    validate.register(commands)
    effect_commands.register(commands)
    release.register(commands)
    agent.register(commands)
    demo.register(commands)
    audit_commands.register(commands)
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
    """Run one `railyard` command and return its exit status; a problem is answered in a line or two."""
    args = build_parser().parse_args(argv)  # a usage error exits 2 here, with argparse's usage line
    if getattr(args, "without_database", None) is not None:  # e.g. `validate`: no settings, no database
        return int(args.without_database(args, out, err))
    # Settings that do not load cannot say LOG_LEVEL=debug: the environment can.
    debug = args.debug or os.environ.get("LOG_LEVEL", "").strip().lower() == "debug"
    try:
        settings = settings or Settings()
        debug = debug or settings.log_level == "debug"
        return _run(args, settings, out, err, debug)
    except KeyboardInterrupt:
        return 130
    except Exception as error:
        stop = explain(error, settings.database_url if settings is not None else None)
        if debug:
            traceback.print_exception(error, file=err)
        print(f"railyard: {stop}", file=err)
        return stop.status


def _run(args: argparse.Namespace, settings: Settings, out: TextIO, err: TextIO, debug: bool) -> int:
    level = "debug" if debug else settings.log_level
    if args.command in ("serve", "worker"):
        from app.cli.processes import run_server, run_worker

        configure_logging(level)
        return run_server(settings) if args.command == "serve" else run_worker(settings, args.concurrency)
    if err is sys.__stderr__:  # the process's own stderr; a caller's stream is left to the caller
        configure_logging(level, err)
    database = open_database(settings)
    args.settings = settings
    try:
        handler: CommandHandler = args.handler
        return handler(args, database, out, err)
    finally:
        database.close()
