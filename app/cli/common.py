"""What every `railyard` command shares: exit codes, the table printer, argument checks."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

from policies.model import TicketKey

if TYPE_CHECKING:
    from app.store.database import Database

EXIT_NOT_FOUND = 1
EXIT_USAGE = 2
EXIT_OVERDUE = 3
EXIT_RUNNING = 4  # `redeliver`: a delivery a worker is running now was left to it
CommandHandler = Callable[[argparse.Namespace, "Database", TextIO, TextIO], int]


def table(rows: list[list[str]], out: TextIO) -> None:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        out.write("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())
        out.write("\n")


def ready(database: Database, err: TextIO) -> bool:
    if database.has_schema():
        return True
    err.write("railyard: the database has no railyard tables yet; run `railyard migrate` first.\n")
    return False


def ticket_key(text: str, err: TextIO) -> TicketKey | None:
    try:
        return TicketKey.parse(text)
    except ValueError as error:
        err.write(f"railyard: {error}\n")
        return None


def register(commands: Any) -> None:
    """Add `migrate`."""
    commands.add_parser("migrate").set_defaults(handler=cmd_migrate)


def cmd_migrate(args: argparse.Namespace, database: Database, out: TextIO, err: TextIO) -> int:
    """Bring the schema up to date."""
    database.migrate()
    out.write("railyard: database is up to date.\n")
    return 0


def repository_option(text: str | None, err: TextIO) -> tuple[bool, str | None]:
    """`--repo OWNER/REPO`: (valid, the repository or None when not given); says what is wrong."""
    if text is None:
        return True, None
    owner, slash, name = text.strip().partition("/")
    if not slash or not owner or not name or "/" in name or "#" in text:
        err.write(f"railyard: --repo expects OWNER/REPO, got {text!r}.\n")
        return False, None
    return True, text.strip()
