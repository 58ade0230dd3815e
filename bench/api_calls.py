"""GitHub writes per state change: the status comment and the check-run, under a realistic stream.

Runs the real server (worker and outbox inside, SQLite) against the in-process GitHub
stand-in on loopback, and replays for many tickets at once what a day of work looks like:

- code tickets: /publish, /claim, a PR opened with `Fixes #N`, CI passing, /deliver on the
  branch (naming its commit), every third one sent back, pushed again and delivered again, /accept, the PR
  merged, a deployment going in_progress then success;
- one ticket in four is a no-code ticket: /publish --no-code, /claim, /deliver artifact=URL, /accept.

Steps of one ticket follow each other `--gap` seconds apart; all tickets run at once, so the
server sees bursts. Afterwards it prints, from the stand-in's record of calls:

- status-comment and check-run writes per state change (targets: at most 2 on average, at
  most 1 for tickets without a PR), with reactions and replies reported separately;
- the most writes one ticket's surface received within any one second (target: at most 1).

It also prints the calls counted against the installation's rate limit per state change,
the 304s (conditional requests answered "not modified", which count against nothing) and the
content writes per state change. `--steady` runs `bench/api_pace.py`'s scenarios instead: a
steady 15 commands a minute and a 40-ticket burst, each with conditional requests off and on,
with status-comment latency and the hourly capacity per installation they imply.

    python bench/api_calls.py [--tickets 40] [--gap 0.3] [--spacing 1.0]
    python bench/api_calls.py --steady [--compress 1] [--burst 40] [--spacing 1.0]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import tempfile
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sqlalchemy import text

from app.contracts.effect_types import status_key
from app.store.database import Database
from app.store.effects import marker
from bench.api_pace import run_pace
from github_standin import Call, StandinState, running_standin
from support.servers import app_settings, running_server
from support.world import CONFIG, REPO, World, event_payload, pull_request_payload, standin_state

FIRST = 100
# The log's changes that move something people see (observations are evidence, not changes).
EVIDENCE = ("repository_observed", "deployment_observed")


@dataclass
class Ticket:
    number: int
    code: bool

    def sha(self, push: int) -> str:
        return f"{self.number:08x}{push:04x}".ljust(40, "c")

    @property
    def merge(self) -> str:
        return f"{self.number:08x}".ljust(40, "d")

    @property
    def pull(self) -> int:
        return self.number + 1000  # PRs and issues share numbers on GitHub: keep them apart

    @property
    def branch(self) -> str:
        return f"agent/{self.number}-fix"


class Stream:
    """One ticket's day, sent to the server as signed webhook deliveries."""

    def __init__(self, world: World, ticket: Ticket, gap: float) -> None:
        self.world, self.ticket, self.gap = world, ticket, gap
        self.pushes = 0

    async def say(self, login: str, body: str) -> None:
        payload = self.world.write(login, body, self.ticket.number)
        await self.send("issue_comment", payload)

    async def send(self, event: str, payload: dict[str, Any]) -> None:
        response = await self.world.server.deliver(event, json.dumps(payload).encode())
        assert response.status == 202, response.status
        await asyncio.sleep(self.gap)

    async def run(self) -> None:
        if not self.ticket.code:
            await self.say("rachel", "/publish --no-code")
            await self.say("cody", "/claim")
            await self.say(
                "cody", f"/deliver artifact=https://docs.example.com/{self.ticket.number} Runbook."
            )
            await self.say("rita", "/accept")
            return
        await self.say("rachel", "/publish")
        await self.say("cody", "/claim")
        await self.push("opened")
        await self.say("cody", f"/deliver {self.delivered()} First pass.")
        if self.ticket.number % 3 == 0:
            await self.say("rita", "/send-back The retry cap is still 10.")
            await self.push("synchronize")
            await self.say("cody", f"/deliver {self.delivered()} Cap is 5 now.")
        await self.say("rita", "/accept")
        await self.merge_and_deploy()

    def delivered(self) -> str:
        """What an agent names when it delivers: its branch and the commit it pushed (the stream
        does not wait for processing, so the branch alone could resolve to a later push)."""
        return f"branch={self.ticket.branch} commit={self.ticket.sha(self.pushes)}"

    async def push(self, action: str) -> None:
        """A new head on the ticket's PR, and CI passing on it."""
        self.pushes += 1
        head = self.ticket.sha(self.pushes)
        self.world.github.repositories[REPO].branches[self.ticket.branch] = head
        self.world.github.repositories[REPO].commits.add(head)  # still a commit after the next push
        pull = self.world.github.repositories[REPO].pulls.get(self.ticket.pull)
        if pull is not None:
            pull.head_sha = head
        payload = self._pull(action, head, state="open")
        await self.send("pull_request", payload)
        check = event_payload("check_run", "02-completed.json")
        check["check_run"].update(
            {"name": "ci", "head_sha": head, "status": "completed", "conclusion": "success"}
        )
        check["check_run"].update({"id": self.ticket.number * 100 + self.pushes})
        check["check_run"]["completed_at"] = f"2026-11-30T10:{self.pushes:02d}:00Z"
        await self.send("check_run", check)

    def _pull(self, action: str, head: str, *, state: str, merged: bool = False) -> dict[str, Any]:
        minute = 10 + self.pushes + (30 if merged else 0)
        payload = pull_request_payload(
            action,
            self.ticket.pull,
            f"Fixes #{self.ticket.number}",
            head=head,
            ref=self.ticket.branch,
            merged=merged,
            state=state,
            updated=f"2026-11-30T11:{minute:02d}:00Z",
        )
        payload["pull_request"]["merge_commit_sha"] = self.ticket.merge
        payload["pull_request"]["user"]["login"] = "cody"
        return payload

    async def merge_and_deploy(self) -> None:
        head = self.ticket.sha(self.pushes)
        await self.send("pull_request", self._pull("closed", head, state="closed", merged=True))
        deployment_id = 10_000 + self.ticket.number
        for status_id, state in ((None, None), (1, "in_progress"), (2, "success")):
            if state is None:
                event, payload = "deployment", event_payload("deployment", "01-created.json")
            else:
                event, payload = "deployment_status", event_payload("deployment_status", "01-created.json")
                payload["deployment_status"].update(
                    {"id": deployment_id * 10 + (status_id or 0), "state": state, "environment": "production"}
                )
            payload["deployment"].update(
                {"id": deployment_id, "sha": self.ticket.merge, "environment": "production"}
            )
            await self.send(event, payload)


def seed(state: StandinState, tickets: list[Ticket]) -> None:
    """The issues and PRs of the stream, on the stand-in's acme/web."""
    for ticket in tickets:
        state.add_issue(REPO, ticket.number, body=f"Ticket {ticket.number}", assignees=["olivia"])
        if ticket.code:
            state.add_pull(
                REPO,
                ticket.pull,
                body=f"Fixes #{ticket.number}",
                head_ref=ticket.branch,
                head_sha=ticket.sha(1),
            )


@dataclass
class Figures:
    changes: Counter[int]
    surface_writes: Counter[int]
    per_second: Counter[tuple[int, str, int]]
    reactions: int
    replies: int
    calls: Counter[str] = field(default_factory=Counter)
    reply_kinds: Counter[str] = field(default_factory=Counter)
    installation_calls: list[Call] = field(default_factory=list)


def count(database: Database, state: StandinState, tickets: list[Ticket]) -> Figures:
    """State changes from the log; writes from the stand-in's record of performed calls."""
    with database.read() as connection:
        rows = connection.execute(
            text("SELECT t.number, e.type FROM ticket_events e JOIN tickets t ON t.id = e.ticket_id")
        ).all()
    changes = Counter(number for number, kind in rows if kind not in EVIDENCE)
    markers = {marker(status_key(REPO, t.number)): t.number for t in tickets}
    heads = {t.sha(push): t.number for t in tickets for push in (1, 2)}
    runs: dict[int, int] = {}
    surface_writes: Counter[int] = Counter()
    per_second: Counter[tuple[int, str, int]] = Counter()
    reactions = replies = 0
    kinds: Counter[str] = Counter()
    performed = [c for c in state.calls if c.method in ("POST", "PATCH") and 200 <= c.status < 300]
    for call in performed:
        found = _surface(call, markers, heads, runs, state)
        if found is None:
            reactions += call.path.endswith("/reactions")
            if call.method == "POST" and call.path.endswith("/comments"):
                replies += 1
                kinds[_reply_kind(str(body_of(call).get("body", "")))] += 1
            continue
        number, surface = found
        surface_writes[number] += 1
        per_second[(number, surface, int(call.at.timestamp()))] += 1
    calls = Counter(_endpoint(c) for c in state.calls)
    mine = [c for c in state.calls if c.installation_id is not None]
    return Figures(changes, surface_writes, per_second, reactions, replies, calls, kinds, mine)


def body_of(call: Call) -> dict[str, Any]:
    return call.body if isinstance(call.body, dict) else {}


def _reply_kind(body: str) -> str:
    """What a reply was about, in a few words (the first line without the mention)."""
    first, _, rest = body.partition("\n")
    if "sent back for attempt" in first:
        return "sent back"
    command = first.split(">", 1)[-1].strip().split(" ")[0]
    return f"{command}: {rest.strip().splitlines()[0][:70] if rest.strip() else ''}"


def _endpoint(call: Call) -> str:
    """A call as its method and path shape (numbers and shas folded)."""
    shape = re.sub(r"/[0-9a-f]{40}", "/SHA", call.path)
    return f"{call.method} {re.sub(r'/[0-9]+', '/N', shape)}"


def _surface(
    call: Call, markers: dict[str, int], heads: dict[str, int], runs: dict[int, int], state: StandinState
) -> tuple[int, str] | None:
    body = call.body if isinstance(call.body, dict) else {}
    if "/comments" in call.path and not call.path.endswith("/reactions"):
        for text_marker, number in markers.items():
            if text_marker in str(body.get("body", "")):
                return number, "status comment"
        return None
    if call.path.endswith("/check-runs") and call.method == "POST":
        sha = str(body.get("head_sha"))
        return heads.get(sha, -1), f"check-run {sha}"
    if "/check-runs/" in call.path:
        run = state.check_runs.get(int(call.path.rsplit("/", 1)[1]))
        sha = run.head_sha if run else "?"
        return heads.get(sha, -1), f"check-run {sha}"  # each commit's check is its own surface
    return None


def _shows_final_state(world: World, number: int) -> bool:
    """The ticket exists and its one status comment reads as its final state renders."""
    return world.ticket(number) is not None and world.status_comments(number) == [
        world.expected_status(number)
    ]


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tickets", type=int, default=40)
    parser.add_argument("--gap", type=float, default=0.3, help="seconds between one ticket's steps")
    parser.add_argument("--spacing", type=float, default=1.0, help="seconds between content-creating writes")
    parser.add_argument("--steady", action="store_true", help="the steady-pace and burst scenarios")
    parser.add_argument("--compress", type=float, default=1.0, help="--steady: run the pace K times faster")
    parser.add_argument("--burst", type=int, default=40, help="--steady: tickets in the burst")
    args = parser.parse_args()
    if args.steady:
        await run_pace(args.compress, args.spacing, args.burst)
        return
    tickets = [Ticket(FIRST + i, code=i % 4 != 3) for i in range(args.tickets)]
    state = standin_state()
    # One runner and one reviewer do all the work here: lift the per-person command budget.
    state.repositories[REPO].files[".github/railyard.yml"] = CONFIG + "limits:\n  commands_per_hour: 10000\n"
    seed(state, tickets)
    started = datetime.now()
    with tempfile.TemporaryDirectory() as directory:
        url = f"sqlite:///{directory}/railyard.db"
        async with running_standin(state) as standin:
            settings = app_settings(url, GITHUB_API_URL=standin.url, APP_ID="1")
            async with running_server(settings, outbox_spacing=args.spacing) as server:
                world = World(server, state, Database(url))
                await asyncio.gather(*(Stream(world, t, args.gap).run() for t in tickets))
                await world.settle(timeout=900.0)  # content writes are spaced a second apart
                figures = count(world.database, state, tickets)
                current = sum(_shows_final_state(world, t.number) for t in tickets)
    report(figures, tickets, (datetime.now() - started).total_seconds())
    print(f"  tickets whose one status comment shows their final state: {current} of {len(tickets)}")


def report(figures: Figures, tickets: list[Ticket], seconds: float) -> None:
    groups = {"with a PR": [t for t in tickets if t.code], "without a PR": [t for t in tickets if not t.code]}
    print(f"{len(tickets)} tickets, replayed and settled in {seconds:.1f} s")
    for name, members in groups.items():
        changes = sum(figures.changes[t.number] for t in members)
        writes = sum(figures.surface_writes[t.number] for t in members)
        ratio = writes / changes if changes else 0.0
        print(f"  tickets {name:>12}: {changes:5d} state changes, {writes:5d} status-comment and check-run "
              f"writes = {ratio:.2f} per change")  # fmt: skip
    total_changes = sum(figures.changes.values())
    total_writes = sum(figures.surface_writes.values())
    print(f"  all tickets:             {total_changes:5d} state changes, {total_writes:5d} writes = "
          f"{total_writes / max(total_changes, 1):.2f} per change")  # fmt: skip
    worst = max(figures.per_second.values(), default=0)
    by_surface: dict[str, int] = defaultdict(int)
    for (_, surface, _), n in figures.per_second.items():
        kind = surface.split(" ")[0]
        by_surface[kind] = max(by_surface[kind], n)
    print(f"  most writes to one ticket's surface within one second: {worst} "
          f"({', '.join(f'{k}: {v}' for k, v in sorted(by_surface.items()))})")  # fmt: skip
    kinds = ", ".join(f"{n} {kind}" for kind, n in figures.reply_kinds.most_common())
    print(f"  reported separately: {figures.reactions} reactions, {figures.replies} replies ({kinds})")
    total_changes = max(sum(figures.changes.values()), 1)
    counted = sum(c.counted for c in figures.installation_calls)
    not_modified = sum(c.status == 304 for c in figures.installation_calls)
    writes = sum(c.content_write for c in figures.installation_calls)
    print(f"  installation calls counted against the rate limit: {counted} = {counted / total_changes:.2f} "
          f"per state change; 304s (not counted): {not_modified}; content writes: {writes} = "
          f"{writes / total_changes:.2f} per state change")  # fmt: skip
    calls = sum(figures.calls.values())
    print(f"  GitHub API calls, all kinds: {calls} ({calls / total_changes:.1f} per state change)")
    for endpoint, n in figures.calls.most_common(8):
        print(f"    {n:6d}  {endpoint}")


if __name__ == "__main__":
    asyncio.run(main())
