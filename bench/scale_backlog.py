"""bench/scale.py's backlog (tickets, their installations and command comments, seeded on the
GitHub stand-in subprocess), the checks it runs afterwards, and where the CPU time went."""

from __future__ import annotations

import os
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import text

from app.contracts.effect_types import status_key
from app.store.database import Database
from app.store.effects import marker
from github_standin import StandinProcess, account_id
from github_standin.common import fake_sha
from support.world import CONFIG, MEMBERS, comment_payload

FIRST_INSTALLATION = 7000
CONFIG_EXTRA = "limits:\n  commands_per_hour: 100000\n"  # one runner and one reviewer do all the work


@dataclass
class Command:
    """One command comment of a ticket: who writes it, and its id once seeded on the stand-in."""

    login: str
    body: str
    comment_id: int = 0


@dataclass
class Ticket:
    """Issue #1 of `repository` (installation `installation`), and the commands on it, in order."""

    repository: str
    installation: int
    commands: list[Command]

    @property
    def org(self) -> str:
        """The organization owning the repository (its teams hold the roles)."""
        return self.repository.split("/")[0]


def commands(count: int, number: int) -> list[Command]:
    """`count` commands (even, at least 4): publish, claim, (deliver, send back)*, deliver, accept."""
    out = [Command("rachel", "/publish --no-code"), Command("cody", "/claim")]
    for round_ in range((count - 4) // 2):
        out.append(Command("cody", f"/deliver artifact=https://docs.example.com/{number}/{round_} Try."))
        out.append(Command("rita", f"/send-back Round {round_} needs a test."))
    out.append(Command("cody", f"/deliver artifact=https://docs.example.com/{number}/final Done."))
    out.append(Command("rita", "/accept"))
    return out


def backlog(tickets: int, per_ticket: int, per_installation: int) -> list[Ticket]:
    """The tickets, `per_installation` to an installation (each its own organization)."""
    out = []
    for index in range(tickets):
        group = index // per_installation
        out.append(
            Ticket(f"scale{group}/web{index}", FIRST_INSTALLATION + group, commands(per_ticket, index))
        )
    return out


def seed(standin: StandinProcess, tickets: list[Ticket]) -> None:
    """Installations, repositories, teams and the command comments on the stand-in; records the
    comments' ids on the commands."""
    orgs = {t.org: t.installation for t in tickets}
    comments = [(t, c) for t in tickets for c in t.commands]
    seeded = standin.seed(
        {
            "installations": [{"id": i, "account": org} for org, i in orgs.items()],
            "repositories": [
                {
                    "full_name": t.repository,
                    "files": {".github/railyard.yml": CONFIG.replace("@acme/", f"@{t.org}/") + CONFIG_EXTRA},
                    "issues": [{"number": 1, "body": "Scale ticket", "assignees": ["olivia"]}],
                }
                for t in tickets
            ],
            "team_memberships": [
                {"org": org, "team": team, "login": login, "state": state}
                for org in orgs
                for (team, login), state in MEMBERS.items()
            ],
            "comments": [
                {"repo": t.repository, "number": 1, "body": c.body, "user": c.login} for t, c in comments
            ],
        }
    )
    ids = {(c["repo"], c["body"], c["user"]): c["id"] for c in seeded["comments"]}
    for ticket, command in comments:
        command.comment_id = ids[(ticket.repository, command.body, command.login)]


def payload(ticket: Ticket, command: Command) -> dict[str, Any]:
    """The `issue_comment.created` webhook of one seeded command comment."""
    body = comment_payload(command.login, command.body, 1, id=command.comment_id)
    body["installation"] = {"id": ticket.installation}
    owner, name = ticket.repository.split("/")
    body["repository"].update(
        {"full_name": ticket.repository, "name": name, "id": int(fake_sha(ticket.repository)[:7], 16)}
    )
    body["repository"]["owner"].update({"login": owner, "id": account_id(owner)})
    return body


# --- the checks -----------------------------------------------------------------------------------


@dataclass
class Checks:
    """Each check's failures (examples); a check with none passed."""

    failures: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    notes: list[str] = field(default_factory=list)

    def fail(self, check: str, example: str) -> None:
        """Record one failure of `check`."""
        self.failures[check].append(example)

    def line(self, check: str) -> str:
        """`check: pass`, or `FAIL` with how many and a few examples."""
        found = self.failures.get(check, [])
        return f"{check}: pass" if not found else f"{check}: FAIL ({len(found)}: {'; '.join(found[:3])})"


ORDER, ONCE, LIMITS, DONE = (
    "per-ticket order kept",
    "no effect twice",
    "shared rate limit respected",
    ("every delivery processed"),
)


def query(database: Database, sql: str) -> list[Any]:
    """The rows of one read-only statement of ours (fixed text, no input in it)."""
    with database.read() as connection:
        return list(connection.execute(text(sql)).all())


def check_order(database: Database, tickets: list[Ticket], checks: Checks) -> None:
    """Each ticket's event log names its command comments in the order their webhooks were
    sent, and every command applied."""
    rows = query(
        database,
        "SELECT t.repository, e.operation_id FROM ticket_events e "
        "JOIN tickets t ON t.id = e.ticket_id ORDER BY t.repository, e.revision",
    )
    refused = query(
        database, "SELECT repository, operation_id, refusal_code FROM operations WHERE outcome != 'applied'"
    )
    logged: dict[str, list[int]] = defaultdict(list)
    for repository, operation in rows:
        found = re.search(r"(\d+)$", operation)
        if found and (not logged[repository] or logged[repository][-1] != int(found.group(1))):
            logged[repository].append(int(found.group(1)))
    for ticket in tickets:
        sent = [c.comment_id for c in ticket.commands]
        if logged[ticket.repository] != sent:
            checks.fail(ORDER, f"{ticket.repository}: logged {logged[ticket.repository]} sent {sent}")
    for repository, operation, code in refused:
        checks.fail(ORDER, f"{repository}: {operation} refused ({code})")


def check_deliveries(database: Database, sent: int, checks: Checks) -> None:
    """Every delivery sent is stored and done."""
    rows = query(database, "SELECT status, count(*) FROM webhook_deliveries GROUP BY status")
    statuses: dict[str, int] = {status: int(n) for status, n in rows}
    if statuses.get("done", 0) != sent:
        checks.fail(DONE, f"{sent} sent, stored: {dict(statuses)}")


def check_once(standin: StandinProcess, tickets: list[Ticket], checks: Checks) -> None:
    """From the stand-in's record of writes: one status comment created per ticket, at most one
    reaction per command comment, at most one assignment per /claim."""
    calls = standin.calls()
    tokens = sum(c["path"].endswith("/access_tokens") for c in calls)
    writes = [c for c in calls if c["method"] in ("POST", "PATCH") and 200 <= c["status"] < 300]
    created: Counter[str] = Counter()
    assigned: Counter[str] = Counter()
    reacted: Counter[str] = Counter()
    for call in writes:
        path, body = call["path"], call["body"] or {}
        repository = "/".join(path.split("/")[2:4])
        if path.endswith("/issues/1/comments") and marker(status_key(repository, 1)) in body.get("body", ""):
            created[repository] += 1
        elif path.endswith("/issues/1/assignees"):
            assigned[repository] += 1
        elif path.endswith("/reactions"):
            reacted[path] += 1
    for ticket in tickets:
        if created[ticket.repository] != 1:
            checks.fail(ONCE, f"{ticket.repository}: {created[ticket.repository]} status comments created")
        claims = sum(c.body == "/claim" for c in ticket.commands)
        if assigned[ticket.repository] > claims:
            checks.fail(
                ONCE, f"{ticket.repository}: {assigned[ticket.repository]} assignments, {claims} claim"
            )
    for path, n in reacted.items():
        if n > 1:
            checks.fail(ONCE, f"{n} reactions on {path}")
    checks.notes.append(
        f"writes: {sum(created.values())} status comments created, {sum(reacted.values())} reactions, "
        f"{sum(assigned.values())} assignments, {len(writes)} writes in all; "
        f"GitHub calls {len(calls)}, of which {tokens} installation tokens"
    )
    kinds = Counter(f"{c['method']} {call_kind(c['path'])} {c['status']}" for c in calls)
    checks.notes.append("GitHub calls by kind: " + ", ".join(f"{k} {n}" for k, n in kinds.most_common(8)))


def call_kind(path: str) -> str:
    """A call's path with its repository, account and numbers as placeholders."""
    path = re.sub(r"^/repos/[^/]+/[^/]+", "/repos/R", path.split("?")[0])
    path = re.sub(r"^/orgs/[^/]+", "/orgs/O", path)
    path = re.sub(r"/memberships/[^/]+$", "/memberships/L", path)
    return re.sub(r"/\d+", "/N", path)


def check_limits(database: Database, standin: StandinProcess, injected: int, checks: Checks) -> None:
    """The injected Retry-Afters were answered and stored as the installations' shared pause, and
    no call reached their installation before the pause ended (the stand-in's LimitWatch, with
    its one-second grace for calls in flight)."""
    with database.read() as connection:
        paused = connection.execute(
            text("SELECT count(*) FROM installation_limits WHERE paused_until > 0")
        ).scalar_one()
    if paused < injected:
        checks.fail(LIMITS, f"{paused} installations hold a shared pause, {injected} were limited")
    watched = standin.limits()
    if len(watched["limits"]) < injected:
        checks.fail(LIMITS, f"only {len(watched['limits'])} of {injected} Retry-Afters were answered")
    for installation, method, path, since, left in watched["ignored"]:
        checks.fail(LIMITS, f"installation {installation}: {method} {path} {since} s after, {left} s early")
    checks.notes.append(
        f"Retry-Afters answered: {len(watched['limits'])}, stored as a shared pause: {paused}; "
        f"calls during one: {len(watched['ignored'])}"
    )


# --- where the CPU time went ----------------------------------------------------------------------

TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int, children: bool = False) -> float:
    """User + system CPU seconds of a process (with its reaped children's when asked), from /proc."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return 0.0
    ticks = int(fields[11]) + int(fields[12]) + (int(fields[13]) + int(fields[14]) if children else 0)
    return ticks / TICK


def tree_cpu_seconds(pid: int) -> float:
    """CPU seconds of a process and of every live process under it (railyard's intake writer
    process, on SQLite), each read from /proc."""
    total = cpu_seconds(pid)
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except (FileNotFoundError, ProcessLookupError):
        return total
    return total + sum(tree_cpu_seconds(int(child)) for child in children)


def postgres_cpu(data: Path) -> float:
    """CPU seconds of a cluster: the postmaster, its reaped backends and the live ones."""
    postmaster = int((data / "postmaster.pid").read_text().split()[0])
    total = cpu_seconds(postmaster, children=True)
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (FileNotFoundError, ProcessLookupError, IndexError):
                continue
            if parent == postmaster:
                total += cpu_seconds(int(entry.name))
    return total


def machine_ticks() -> tuple[int, int, int]:
    """(busy, idle, iowait) ticks of the whole machine since boot (/proc/stat)."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle, iowait = values[3], values[4]
    return sum(values) - idle - iowait, idle, iowait


@dataclass
class Runs:
    """The workers' processing runs (delivery_runs): how the work spread and how long it took."""

    per_process: list[int]  # runs per process, most first
    seconds: float  # all runs' durations added up
    count: int
    longest_ticket: float  # the most any one ticket's runs took, added up: its runs cannot overlap

    def line(self, drained: float) -> str:
        """Printed: spread, mean duration, runs in flight on average, the longest ticket's chain."""
        mean = 1000 * self.seconds / self.count
        return (
            f"processing runs per process {self.per_process}; a run takes {mean:.0f} ms on average,"
            f" {self.seconds / drained:.1f} in flight on average; the longest ticket's runs "
            f"add up to {self.longest_ticket:.1f} s of the {drained:.1f} s drain"
        )


def runs(database: Database) -> Runs:
    """What delivery_runs recorded."""
    rows = query(
        database,
        "SELECT r.worker, d.ordering_key, r.finished_at - r.started_at FROM delivery_runs r "
        "JOIN webhook_deliveries d ON d.seq = r.delivery_seq",
    )
    per_worker: Counter[str] = Counter()
    per_ticket: Counter[str] = Counter()
    for worker, key, seconds in rows:
        per_worker[worker] += 1
        per_ticket[key] += seconds
    longest = max(per_ticket.values(), default=0.0)
    return Runs(sorted(per_worker.values(), reverse=True), sum(r[2] for r in rows), len(rows), longest)
