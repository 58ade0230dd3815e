"""The `railyard` command line."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import traceback
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TextIO

from app.logs import configure_logging
from app.version import railyard_version

if TYPE_CHECKING:
    from app.cli.common import CommandHandler
    from app.settings import Settings

COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("migrate", "common", "create or upgrade the database schema"),
    ("status", "ticket_commands", "show a ticket's work, repository and deployment rails"),
    ("events", "ticket_commands", "show a ticket's event log"),
    ("resync", "ticket_commands", "re-read a ticket's PRs, branches and deployments from GitHub"),
    ("deliveries", "queue_commands", "list stored webhook deliveries"),
    ("redeliver", "queue_commands", "process stored webhook deliveries again"),
    ("check", "check", "find claims and reviews past their limits (exit 3 when one is)"),
    (
        "gate",
        "gate_command",
        "would the deployment gate approve deploying SHA to ENV? (dry run; exit 3 when it would reject)",
    ),
    ("validate", "validate", "check a .github/railyard.yml as the server reads it"),
    ("effects", "effect_commands", "list the outbox's intended GitHub writes"),
    ("retry", "effect_commands", "try failed or cancelled effects again, now"),
    ("tickets", "release", "list tickets with their three rails and what needs attention"),
    ("report", "release", "per runner, reviewer, model, requester and label figures from the event log"),
    ("agent", "agent", "claim or deliver a ticket, as an agent's workflow does"),
    ("demo", "demo", "the server against a built-in GitHub stand-in, with a story played: open the board"),
    ("audit", "audit_commands", "verify or export the hash-chained event log"),
    ("serve", "", "run the web server, worker and outbox"),
    ("worker", "", "run an extra worker process (PostgreSQL)"),
)
"""Each command: its name, the module of `app.cli` whose `register` adds it (none: `serve` and
`worker`, run by `app.cli.processes`) and its line in `railyard --help`. A command's module is
imported only when that command runs (or its help is asked for): `railyard agent` and
`railyard validate` start without the database, the server or the GitHub client."""

_HELP = {name: line for name, _, line in COMMANDS}


class _Commands:
    """The sub-command parsers as a module's `register` sees them: each gets its `--help` line
    from `COMMANDS`, and a name missing there is a mistake."""

    def __init__(self, actions: Any) -> None:
        self._actions = actions

    def add_parser(self, name: str, **options: Any) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = self._actions.add_parser(name, help=_HELP[name], **options)
        return parser


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The argument parser, one sub-command per job: every command's in full, or with `argv`
    only its command's (the others by name and help line, enough for `railyard --help`)."""
    parser = argparse.ArgumentParser(prog="railyard", description=__doc__)
    parser.add_argument("--version", action="version", version=f"%(prog)s {railyard_version()}")
    parser.add_argument(
        "--debug", action="store_true", help="debug logs, and the traceback of any error (as LOG_LEVEL=debug)"
    )
    actions = parser.add_subparsers(dest="command", required=True)
    commands = _Commands(actions)
    wanted = None if argv is None else next((word for word in argv if not word.startswith("-")), "")
    registered: set[str] = set()
    for name, module, _ in COMMANDS:
        if not module:
            _add_process_command(commands, name)
        elif wanted is None or module == _module_of(wanted):
            if module not in registered:
                registered.add(module)
                importlib.import_module(f"app.cli.{module}").register(commands)
        else:
            commands.add_parser(name, add_help=False)  # named and listed; never run (see `wanted`)
    return parser


def _module_of(name: str) -> str | None:
    return next((module for command, module, _ in COMMANDS if command == name), None)


def _add_process_command(commands: _Commands, name: str) -> None:
    """`serve` or `worker`: long-running, started by `_run`."""
    parser = commands.add_parser(name)
    if name == "worker":
        parser.add_argument("--concurrency", type=int, default=4)
    parser.set_defaults(handler=None)


def main(
    argv: Sequence[str] | None = None,
    settings: Settings | None = None,
    out: TextIO = sys.stdout,
    err: TextIO = sys.stderr,
) -> int:
    """Run one `railyard` command and return its exit status; a problem is answered in a line or two."""
    words = sys.argv[1:] if argv is None else argv
    args = build_parser(words).parse_args(words)  # a usage error exits 2 here, with argparse's usage line
    if getattr(args, "without_database", None) is not None:  # e.g. `validate`: no settings, no database
        return int(args.without_database(args, out, err))
    # Settings that do not load cannot say LOG_LEVEL=debug: the environment can.
    debug = args.debug or os.environ.get("LOG_LEVEL", "").strip().lower() == "debug"
    try:
        from app.settings import Settings  # pydantic: only for the commands that read settings

        settings = settings or Settings()
        debug = debug or settings.log_level == "debug"
        return _run(args, settings, out, err, debug)
    except KeyboardInterrupt:
        return 130
    except Exception as error:
        from app.cli.errors import explain

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
    from app.bootstrap import open_database

    database = open_database(settings)
    args.settings = settings
    try:
        handler: CommandHandler = args.handler
        return handler(args, database, out, err)
    finally:
        database.close()
