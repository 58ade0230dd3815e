"""`railyard gate OWNER/REPO --environment ENV --sha SHA`: the deployment gate's answer for
deploying SHA to ENV, from the command line, as a dry run: the same range, the same acceptances
judged now (roles asked of GitHub again), and nothing recorded (no `deployment_gated`, no
`acceptance_invalidated`, no answer to GitHub).

Exit 0 when the gate would approve, 3 when it would reject, 2 for bad input or missing app
credentials, 1 when the database is not ready or GitHub knows no installation on the repository.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
from typing import Any, TextIO

from app.bootstrap import command_shell
from app.cli.common import EXIT_NOT_FOUND, EXIT_USAGE, ready, repository_option
from app.settings import Settings
from app.store.database import Database
from app.views.gate_text import gate_comment, gate_lines
from handlers.errors import Missing
from handlers.gate import GateFindings, gated, judge_gate

EXIT_REJECTED = 3
SHA = re.compile(r"^[0-9a-fA-F]{40}$")


def register(commands: Any) -> None:
    """Add `gate`."""
    gate = commands.add_parser(
        "gate",
        description="Answer the deployment gate's question without writing anything: the tickets whose "
        "merge commit SHA contains and ENV's last successful deployment does not, each acceptance judged "
        "now. Exit 0 when it would approve, 3 when it would reject, 2 for bad input, 1 when the database "
        "is not ready or the app is not installed on the repository.",
    )
    gate.add_argument("repository", metavar="OWNER/REPO")
    gate.add_argument("--environment", required=True, metavar="ENV", help="the environment deployed to")
    gate.add_argument("--sha", required=True, metavar="SHA", help="the full commit sha deployed")
    gate.add_argument("--json", action="store_true", help="print JSON")
    gate.set_defaults(handler=cmd_gate)


def cmd_gate(args: argparse.Namespace, database: Database, out: TextIO, err: TextIO) -> int:
    """Print the gate's answer for the deployment the arguments name."""
    valid, repository = repository_option(args.repository, err)
    if not valid or repository is None:
        return EXIT_USAGE
    if not SHA.match(args.sha.strip()):
        err.write(f"railyard: --sha expects a full 40-character commit sha, got {args.sha!r}.\n")
        return EXIT_USAGE
    settings: Settings = args.settings
    if not settings.configured:
        err.write("railyard: gate needs the app's credentials (APP_ID, PRIVATE_KEY, WEBHOOK_SECRET).\n")
        return EXIT_USAGE
    if not ready(database, err):
        return EXIT_NOT_FOUND
    try:
        sha = args.sha.strip().lower()
        findings, gated = asyncio.run(_judge(settings, database, repository, args.environment, sha))
    except Missing:
        err.write(f"railyard: the app is not installed on {repository}.\n")
        return EXIT_NOT_FOUND
    if not gated:
        err.write(f"railyard: {args.environment} is not in deployments.gate: the server would not answer.\n")
    decision = findings.decision
    if args.json:
        out.write(json.dumps(_as_json(findings, args.environment, sha), indent=2) + "\n")
    else:
        out.writelines(line + "\n" for line in gate_lines(decision, findings.base))
    return 0 if decision.approved else EXIT_REJECTED


async def _judge(
    settings: Settings, database: Database, repository: str, environment: str, sha: str
) -> tuple[GateFindings, bool]:
    """The decision, and whether the environment is gated at all."""
    async with command_shell(settings, database) as shell:
        ports = shell.ports
        installation = await ports.github.installation_of(repository)
        rules = await ports.configs.load(installation, repository, fresh=True)
        findings = await judge_gate(ports, installation, repository, environment, sha, rules, record=False)
        return findings, gated(environment, rules)


def _as_json(findings: GateFindings, environment: str, sha: str) -> dict[str, Any]:
    decision = findings.decision
    return {
        "state": decision.state.value,
        "environment": environment,
        "sha": sha,
        "since": findings.base,
        "tickets": [
            {
                "number": v.number,
                "blocker": v.blocker.value if v.blocker else None,
                "reason": v.invalid_reason.value if v.invalid_reason else None,
            }
            for v in decision.tickets
        ],
        "unticketed": list(decision.unticketed),
        "unmerged": list(decision.unmerged),
        "unticketed_policy": decision.unticketed_policy.value,
        "comment": gate_comment(decision),
    }
