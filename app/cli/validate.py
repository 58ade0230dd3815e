"""`railyard validate [PATH] [--extends BASE]`: the server's own verdict on a
`.github/railyard.yml`, offline.

It runs the parser the server runs and prints the same problems the status comment and the
check show, with their lines; it needs no database, no settings and no network. A file that
says `_extends` is judged with the file it starts from when `--extends` names a local copy of
it (laid under it as the server lays it, the base's problems naming the base), and on its own
otherwise (the summary says so). `--schema` prints `railyard.schema.json` instead.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from app.github.config import CONFIG_PATH, ConfigError, ParsedFile, RepositoryConfig, parse_file
from app.github.config_loader import layered
from app.github.config_schema import schema_text
from policies.config_layers import EXTENDS_KEY, extends_name

EXIT_VALID, EXIT_INVALID, EXIT_USAGE = 0, 1, 2
Standalone = Callable[[argparse.Namespace, TextIO, TextIO], int]
"""A command that runs without the database (`main` calls it before opening one)."""


def _hours(what: str, hours: int | None) -> str:
    return f"{what} none" if hours is None else f"{what} {hours} h"


def register(commands: Any) -> None:
    """Add `validate` to the `railyard` command line."""
    parser = commands.add_parser("validate")
    parser.add_argument("path", nargs="?", default=CONFIG_PATH, help=f"the file (default {CONFIG_PATH})")
    parser.add_argument(
        "--extends",
        metavar="BASE",
        help=f"a local copy of the file PATH's {EXTENDS_KEY} names (the other repository's {CONFIG_PATH})",
    )
    parser.add_argument("--schema", action="store_true", help="print railyard.schema.json and exit")
    without_database: Standalone = cmd_validate
    parser.set_defaults(handler=None, without_database=without_database)


def cmd_validate(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Exit 0 with a one-line summary when the file is valid, 1 listing its problems, 2 when unreadable."""
    if args.schema:
        out.write(schema_text())
        return EXIT_VALID
    text = _read(Path(args.path), err)
    if text is None:
        return EXIT_USAGE
    parsed = parse_file(text)
    if args.extends is not None and not parsed.has_extends:
        err.write(
            f"railyard: {args.path} does not say {EXTENDS_KEY}: railyard would not read {args.extends}.\n"
        )
        return EXIT_USAGE
    base = _read(Path(args.extends), err) if args.extends is not None else None
    if args.extends is not None and base is None:
        return EXIT_USAGE
    try:
        config, note = _judged(parsed, args.extends, base)
    except ConfigError as error:
        count = len(error.problems)
        out.write(f"{args.path}: {count} problem{'s' if count != 1 else ''}\n")
        out.writelines(f"{args.path}: {line}\n" for line in error.message.splitlines())
        return EXIT_INVALID
    out.write(f"{args.path}: OK · {note}{summary(config)}\n")
    return EXIT_VALID


def _judged(parsed: ParsedFile, base_path: str | None, base: str | None) -> tuple[RepositoryConfig, str]:
    """The configuration the file puts in force (over `base` when given) and a note on what was
    judged; ConfigError with every problem (the base's named by `base_path`)."""
    problems = list(parsed.error.problems) if parsed.error is not None else []
    if not parsed.has_extends:
        if problems:
            raise ConfigError(problems)
        return parsed.config, ""
    try:
        _, name = extends_name(parsed.extends)
    except ValueError as reason:  # the owner is checked by the server, which knows the repository
        problems.append(f"line {parsed.extends_line}: {EXTENDS_KEY}: {reason}")
        raise ConfigError(problems) from None
    if base_path is None or base is None:
        if problems:
            raise ConfigError(problems)
        return (
            parsed.config,
            f"on its own (it extends {name}: give that file with --extends to judge both) · ",
        )
    return layered(parsed, parse_file(base), base_path), f"extends {name}, merged with {base_path} · "


def _read(path: Path, err: TextIO) -> str | None:
    """The file's text as the server decodes it (UTF-8, bad bytes replaced), or None with a message."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        where = " (run it in the repository, or name the file)" if str(path) == CONFIG_PATH else ""
        err.write(f"railyard: {path}: no such file{where}.\n")
        return None
    except IsADirectoryError:
        err.write(f"railyard: {path} is a directory; name the configuration file.\n")
        return None
    except OSError as error:
        err.write(f"railyard: cannot read {path}: {error.strerror or error}.\n")
        return None
    return data.decode("utf-8", errors="replace")


def summary(config: RepositoryConfig) -> str:
    """The policy the file puts in force, in one line."""
    roles = (
        "roles " + ", ".join(f"{role.value} {len(entries)}" for role, entries in config.roles.items())
        if config.roles
        else "roles from repository permissions"
    )
    checks = ", ".join(config.checks.required) or "none"
    days = config.acceptance.expires_after_days
    expiry = "acceptances never expire" if days is None else f"acceptances expire after {days} days"
    return " · ".join(
        [
            roles,
            f"self_verification {config.self_verification.value}",
            f"high-risk labels {', '.join(config.high_risk.labels) or 'none'}",
            f"ticket label {config.tickets.label or 'none'}",
            f"claims silent after {config.claims.max_silence_minutes} min",
            _hours("attempt deadline", config.claims.max_attempt_hours),
            _hours("review wait", config.reviews.max_wait_hours),
            expiry,
            f"acceptance CI {config.acceptance.ci.value}",
            f"accepted by {config.acceptance.by.value}",
            f"agents {len(config.agents)}",
            f"{config.limits.commands_per_hour} commands/hour",
            f"{config.limits.outsider_requests_per_hour} role-less API requests/hour",
            f"required checks {checks}",
            f"unlinked PRs {config.checks.unlinked.value}",
            f"environments {', '.join(config.deployments.environments)}",
            _projects(config),
            f"gated environments {', '.join(config.deployments.gate) or 'none'}",
            f"unticketed merges {config.deployments.unticketed.value}",
        ]
    )


def _projects(config: RepositoryConfig) -> str:
    """The projects whose items show the rails, `acme/5` each (`+ items` when issues are added)."""
    shown = [f"{p.owner}/{p.number}{' + items' if p.add_items else ''}" for p in config.projects]
    return f"projects {', '.join(shown) or 'none'}"
