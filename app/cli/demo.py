"""`railyard demo`: the real server on SQLite against the GitHub stand-in, in one process.

The stand-in (`github_standin`, shipped with railyard) plays github.com on a loopback port:
acme/web with its `.github/railyard.yml`, issues, pull requests, accounts and the app's OAuth
client. The server is built as `railyard serve` builds it (`app.web.server.create_app`, wired
by `app.bootstrap`), with a generated app key and webhook secret. A scripted story is then
played through signed webhooks, as GitHub would send them: tickets in every work state, one
sent back and delivered again, one accepted, merged and deployed, one claim gone overdue.

The story is told over the last three hours: the server's and the stand-in's clocks run behind
while it plays, one step every few minutes, then catch up with the wall clock, so the claim
made two hours ago is overdue when the watchdog looks (every two seconds here).

`railyard demo say 12 /claim --as agent-ann` comments on the running demo's issue as that
account; the stand-in sends the signed `issue_comment` webhook, and the command waits until
railyard has answered and prints the status comment's first line.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import getpass
import json
import os
import secrets
import signal
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

import httpx
from aiohttp import web
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from app.cli.errors import Stop
from app.contracts.effect_types import status_key
from app.logs import configure_logging
from app.settings import Settings
from app.store.database import Database
from app.store.effects import effect_counts, marker
from app.store.queue import queue_depth
from app.store.tickets import TicketService
from app.views.render import StatusView
from app.views.status_json import status_comment_body
from github_standin import Deployment, PullRequest, StandinState, Webhooks, WebhookTarget, running_standin
from github_standin.common import fake_sha
from policies.events import EventType
from policies.model import TicketKey

REPO = "acme/web"
MAINTAINER = "max"  # who the board's sign-in is: a maintainer and release owner of acme/web
CONFIG = """\
roles:
  requester: [rachel]
  task_owner: [rachel]
  runner: [agent-ann, agent-bo]
  reviewer: [rita, max]
  repository_maintainer: [max]
  release_owner: [max]
deployments:
  environments: [production]
"""
ACCOUNTS = (
    "rachel (requester, task owner), agent-ann and agent-bo (runners), rita (reviewer), "
    "max (reviewer, maintainer, release owner)"
)
ISSUES = {
    1: ("Dark mode for the settings page", "Users ask for it; the colours are in `theme.css`."),
    2: ("Export the board as CSV", "One row per ticket, its three rails as columns."),
    3: ("Fix the flaky upload test", "`test_upload_resumes` fails one run in twenty."),
    4: ("Rate-limit the login form", "Ten attempts a minute per address, then a 429."),
    5: ("Resumable uploads", "Uploads over 100 MB restart from zero after a dropped connection."),
    6: ("Retry failed webhooks", "A delivery that fails should be retried with backoff, not dropped."),
    7: ("Document the agent API", "A page on the HTTP API: tokens, idempotency keys, answers."),
    8: ("Password reset emails", "Send the reset link by email instead of showing it on the page."),
}
STORY_MINUTES = 180  # the story starts this long ago
STEP_MINUTES = 6  # and moves this far on after each round


@dataclass
class StoryClock:
    """The wall clock, behind by `offset` seconds while the story is told (then caught up)."""

    offset: float = -STORY_MINUTES * 60.0

    def __call__(self) -> float:
        return time.time() + self.offset

    def at(self) -> datetime:
        return datetime.fromtimestamp(self(), UTC)

    def step(self, minutes: float = STEP_MINUTES) -> None:
        self.offset = min(0.0, self.offset + minutes * 60)

    def catch_up(self) -> None:
        self.offset = 0.0


def private_key_pem() -> str:
    """A throwaway RSA key for the demo's app (the stand-in checks no signature)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return pem.decode()


def seed(state: StandinState) -> None:
    """acme/web installed, with its configuration file, the issues, and who may read it."""
    state.add_installation(7, "acme")
    repository = state.add_repository(REPO, files={".github/railyard.yml": CONFIG})
    for number, (title, body) in ISSUES.items():
        state.add_issue(REPO, number, title=title, body=body, user="rachel")
    for login, role in [
        (MAINTAINER, "admin"),
        ("rachel", "write"),
        ("rita", "write"),
        ("agent-ann", "write"),
    ]:
        state.permissions[(REPO, login)] = role
    state.permissions[(REPO, "agent-bo")] = "write"
    state.oauth.approving = MAINTAINER  # the browser's GitHub account: sign-in approves at once
    repository.branches["main"] = fake_sha("demo", "main")


@dataclass
class Story:
    """Plays the story through signed webhooks and waits for railyard after each round."""

    state: StandinState
    hooks: Webhooks
    database: Database
    clock: StoryClock
    pulls: dict[int, PullRequest] = field(default_factory=dict)

    async def say(self, login: str, number: int, body: str) -> None:
        user_type = "Bot" if login.endswith("[bot]") else "User"
        comment = self.state.add_comment(REPO, number, body, user=login, user_type=user_type)
        await self._send("issue_comment", self.hooks.comment_created(comment))

    async def open_pull(self, number: int, ticket: int, branch: str, author: str) -> None:
        """`author` pushes `branch` and opens PR `number` that fixes #`ticket`."""
        sha = fake_sha("demo", branch, 1)
        self.state.repositories[REPO].branches[branch] = sha
        title = f"{ISSUES[ticket][0]} (#{ticket})"
        pull = self.state.add_pull(
            REPO, number, head_ref=branch, head_sha=sha, body=f"Fixes #{ticket}", user=author, title=title
        )
        self.pulls[number] = pull
        await self._send("pull_request", self.hooks.pull_request("opened", self.repository, pull, author))

    async def push(self, number: int, author: str) -> None:
        """A new commit on PR `number`'s branch."""
        pull = self.pulls[number]
        pull.head_sha = fake_sha("demo", pull.head_ref, pull.head_sha)
        self.repository.branches[pull.head_ref] = pull.head_sha
        payload = self.hooks.pull_request("synchronize", self.repository, pull, author)
        await self._send("pull_request", payload)

    async def merge(self, number: int, by: str) -> str:
        """PR `number` merged into main; its merge commit."""
        pull, repository = self.pulls[number], self.repository
        merge = fake_sha("demo", "merge", number)
        pull.state, pull.merged, pull.merge_commit_sha = "closed", True, merge
        previous = repository.branches["main"]
        repository.branches["main"] = merge
        repository.commits.add(merge)
        repository.compare[(previous, merge)] = "ahead"
        repository.compare[(merge, previous)] = "behind"
        for other in self.pulls.values():  # merges are ordered: each later one contains the earlier
            if other.merged and other.merge_commit_sha not in (None, merge):
                repository.compare[(other.merge_commit_sha, merge)] = "ahead"
                repository.compare[(merge, other.merge_commit_sha)] = "behind"
        await self._send("pull_request", self.hooks.pull_request("closed", repository, pull, by))
        return merge

    async def deploy(self, sha: str, *states: str) -> None:
        deployment = Deployment(self.state.next_id(), sha)
        for reached in states:
            payload = self.hooks.deployment_status(self.repository, deployment, reached)
            await self._send("deployment_status", payload)

    @property
    def repository(self) -> Any:
        return self.state.repositories[REPO]

    async def _send(self, event: str, payload: dict[str, Any]) -> None:
        delivery = await self.hooks.send(event, payload)
        if delivery.status_code != 202:
            raise RuntimeError(f"railyard answered the {event} webhook with {delivery.status_code}")

    async def settle(self) -> None:
        """Wait until the worker has run every delivery and the outbox has written to GitHub."""
        await settled(self.database)
        self.clock.step()

    async def play(self) -> None:
        """Every work state: a draft, an open ticket, two claims (one overdue), deliveries, acceptances."""
        for number in ISSUES:
            await self.say("rachel", number, "/draft" if number == 1 else _publish(number))
        await self.settle()
        # #4: claimed two hours and more ago with a 60-minute check-in; nothing heard since.
        await self.say("agent-bo", 4, "/claim --check-in 60")
        await self.settle()
        for number in (5, 6, 7, 8):
            await self.say("agent-ann" if number % 2 else "agent-bo", number, "/claim --check-in 240")
        await self.settle()
        await self.open_pull(21, 5, "agent/5-resumable", "agent-ann")
        await self.open_pull(22, 6, "agent/6-retries", "agent-bo")
        await self.open_pull(23, 8, "agent/8-reset-mail", "agent-bo")
        await self.settle()
        await self.say("agent-ann", 5, "/deliver #21\nUploads resume from the last acknowledged chunk.")
        await self.say("agent-bo", 6, "/deliver #22\nFailed deliveries are retried 5 times.")
        await self.say("agent-ann", 7, "/deliver artifact=https://example.com/docs/api\nThe API page is up.")
        await self.say("agent-bo", 8, "/deliver #23\nThe reset link goes out by email.")
        await self.settle()
        await self.say("rita", 6, "/send-back The retries have no backoff: space them out (1, 2, 4, 8 s).")
        await self.say("rita", 7, "/accept")
        await self.say("rita", 8, "/accept")
        await self.settle()
        await self.push(22, "agent-bo")
        await self.settle()
        await self.say("agent-bo", 6, "/deliver #22\nRetries now back off: 1, 2, 4, 8 and 16 seconds.")
        await self.settle()
        await self.say("rita", 6, "/accept")
        await self.settle()
        merge = await self.merge(22, MAINTAINER)
        await self.settle()
        await self.deploy(merge, "in_progress", "success")
        await self.settle()
        await self.merge(23, MAINTAINER)  # after the deployment: accepted and merged, not deployed
        await self.settle()
        # #3: claimed just now, well within its check-in.
        self.clock.catch_up()
        await self.say("agent-ann", 3, "/claim --check-in 240")
        await settled(self.database)


def _publish(number: int) -> str:
    return "/publish --no-code" if number == 7 else "/publish"


async def settled(database: Database, timeout: float = 60.0) -> None:
    """Wait until no stored delivery and no GitHub write is pending."""
    deadline = time.monotonic() + timeout
    while (await asyncio.to_thread(queue_depth, database))[0] or (
        await asyncio.to_thread(effect_counts, database)
    ).get("pending"):
        if time.monotonic() > deadline:
            raise TimeoutError("railyard did not finish the story's deliveries in time")
        await asyncio.sleep(0.02)


async def overdue_recorded(database: Database, key: TicketKey, timeout: float = 30.0) -> None:
    """Wait until the watchdog has recorded the overdue claim (and the outbox has said so)."""
    tickets, deadline = TicketService(database), time.monotonic() + timeout
    while not any(r.event.type is EventType.CLAIM_OVERDUE for r in tickets.history(key)):
        if time.monotonic() > deadline:
            raise TimeoutError(f"the watchdog did not record #{key.number}'s overdue claim in time")
        await asyncio.sleep(0.1)
    await settled(database)


def headline(database: Database, number: int) -> str:
    """The first line of #`number`'s status comment, as railyard's stored state renders it."""
    tickets, key = TicketService(database), TicketKey(REPO, number)
    ticket = tickets.load(key)
    if ticket is None:
        return "not a ticket"
    view = StatusView(ticket, tuple(recorded.event for recorded in tickets.history(key)))
    return _plain(status_comment_body(view).splitlines()[0])


def claim_overdue(database: Database, number: int) -> bool:
    """Whether the watchdog has recorded the current claim of #`number` as overdue."""
    since_claim: list[EventType] = []
    for recorded in TicketService(database).history(TicketKey(REPO, number)):
        since_claim = [] if recorded.event.type is EventType.CLAIMED else [*since_claim, recorded.event.type]
    return EventType.CLAIM_OVERDUE in since_claim


def _plain(line: str) -> str:
    """A status line for the terminal: without the bold it has on GitHub."""
    return line.strip().removeprefix("**").removesuffix("**")


# -- the command line --------------------------------------------------------------------


def register(commands: Any) -> None:
    """Add `demo` (and `demo say`) to the `railyard` command line."""
    demo = commands.add_parser(
        "demo",
        description="Run railyard on SQLite against the GitHub stand-in, play a scripted story "
        "through signed webhooks, and serve the board until Ctrl-C.",
    )
    demo.add_argument(
        "--port", type=int, default=3000, help="the board's port (default 3000; 0: any free one)"
    )
    demo.add_argument("--host", default="127.0.0.1", help="the board's address (default 127.0.0.1)")
    demo.add_argument(
        "--database", type=Path, help="keep the SQLite database in this new file (default: a temporary one)"
    )
    played = demo.add_subparsers(dest="demo_command", metavar="say")
    say = played.add_parser(
        "say",
        help="comment on an issue of the running demo as someone: `say 12 /claim --as agent-ann`",
        description="Comment on an issue of the running demo as LOGIN (the stand-in sends railyard "
        "the signed webhook), wait for railyard's answer, and print the status comment's first line. "
        "A \\n in the text starts a new line (a /deliver's summary).",
    )
    say.add_argument("number", type=int, help="the issue's number")
    say.add_argument("words", nargs=argparse.REMAINDER, help="the comment, then --as LOGIN")
    demo.set_defaults(handler=None, without_database=cmd_demo)


def cmd_demo(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """`railyard demo` (serve until interrupted) or `railyard demo say`."""
    if args.demo_command == "say":
        return cmd_say(args, out, err)
    if args.database is not None and args.database.exists():
        print(f"railyard demo: {args.database} exists; the demo starts from a new database", file=err)
        return 2
    configure_logging("debug" if args.debug else "warning", err)
    try:
        return asyncio.run(_demo(args, out))
    except KeyboardInterrupt:
        return 130
    except Stop as stop:  # e.g. the port is taken: said in a line, as `serve` says it
        said = str(stop).replace("set PORT", "use --port").replace("set HOST", "use --host")
        print(f"railyard demo: {said}", file=err)
        return stop.status


def state_file() -> Path:
    """Where a running demo says where it is, for `railyard demo say`."""
    return Path(tempfile.gettempdir()) / f"railyard-demo-{getpass.getuser()}.json"


async def _demo(args: argparse.Namespace, out: TextIO) -> int:
    # Imported on use, as `serve` imports them: the server's modules are not needed by `demo say`.
    from app.bootstrap import server
    from app.cli.processes import listen

    started = time.monotonic()
    clock = StoryClock()
    state = StandinState(clock=clock.at)
    seed(state)
    stop = asyncio.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        asyncio.get_running_loop().add_signal_handler(signum, stop.set)
    with tempfile.TemporaryDirectory(prefix="railyard-demo-") as directory:
        path = args.database or Path(directory) / "railyard.db"
        async with running_standin(state) as standin:
            listening = listen(args.host, args.port)
            url = f"http://{args.host}:{listening.getsockname()[1]}"
            secret = secrets.token_urlsafe(24)
            settings = Settings(
                _env_file=None,
                APP_ID=str(state.app_id),
                PRIVATE_KEY=await asyncio.to_thread(private_key_pem),
                WEBHOOK_SECRET=secret,
                DATABASE_URL=f"sqlite:///{path}",
                GITHUB_API_URL=standin.url,
                GITHUB_WEB_URL=standin.url,
                GITHUB_CLIENT_ID=state.oauth.client_id,
                GITHUB_CLIENT_SECRET=state.oauth.client_secret,
                PUBLIC_URL=url,
                WATCHDOG_INTERVAL_SECONDS=2.0,
            )
            runner = web.AppRunner(server(settings, clock=clock, outbox_spacing=0.0), access_log=None)
            await runner.setup()
            database = Database(settings.database_url)
            try:
                await web.SockSite(runner, listening).start()
                state.webhook = WebhookTarget(f"{url}/webhooks", secret)
                story = Story(state, Webhooks(state, standin.url), database, clock)
                await story.play()
                await overdue_recorded(database, TicketKey(REPO, 4))
                _write_state(url, standin.url, settings.database_url)  # before it says to use it
                _announce(out, url, standin.url, database, time.monotonic() - started)
                await stop.wait()
            finally:
                _remove_state()
                await runner.cleanup()
                database.close()
    return 0


def _announce(out: TextIO, url: str, standin: str, database: Database, seconds: float) -> None:
    """The board, the sign-in, the tickets and their rails, and what to type next."""
    lines = [
        f"railyard demo: the real server on SQLite, against a GitHub stand-in at {standin}",
        f"(nothing leaves this machine), ready in {seconds:.1f} s.",
        "",
        f"  Board:   {url}/login?next=/tickets/{REPO}",
        f"           signs you in through the stand-in's OAuth as {MAINTAINER}, a maintainer of {REPO}",
        f"  Issues:  {standin}/{REPO}/issues   (each status comment, rendered as GitHub shows it)",
        "",
    ]
    for number, (title, _) in ISSUES.items():
        overdue = " (claim overdue)" if claim_overdue(database, number) else ""
        lines.append(f"  #{number}  {title:34}  {headline(database, number)}{overdue}")
    lines += [
        "",
        f"Accounts: {ACCOUNTS}.",
        "Play on, from another terminal:",
        "  railyard demo say 2 /claim --as agent-ann",
        "  railyard demo say 2 '/deliver artifact=https://example.com/csv\\nIt works.' --as agent-ann",
        "  railyard demo say 5 /accept --as rita",
        "  railyard demo say 5 '/send-back Resume from the last chunk, not the last file.' --as rita",
        "Ctrl-C stops the demo.",
    ]
    out.write("\n".join(lines) + "\n")
    out.flush()


def _write_state(url: str, standin: str, database_url: str) -> None:
    partial = state_file().with_suffix(".partial")
    record = {"url": url, "standin": standin, "database": database_url, "pid": os.getpid()}
    partial.write_text(json.dumps(record))
    partial.replace(state_file())


def _remove_state() -> None:
    with contextlib.suppress(OSError, ValueError):
        if json.loads(state_file().read_text()).get("pid") == os.getpid():
            state_file().unlink()


def cmd_say(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Post the comment to the running demo's stand-in; print railyard's answer."""
    words: list[str] = list(args.words)
    if "--as" not in words or words.index("--as") + 1 >= len(words):
        print("railyard demo say: say who comments with --as LOGIN (e.g. --as agent-ann)", file=err)
        return 2
    at = len(words) - 1 - words[::-1].index("--as")
    login, text = words[at + 1], " ".join(words[:at] + words[at + 2 :]).replace("\\n", "\n")
    try:
        demo = json.loads(state_file().read_text())
    except (OSError, ValueError):
        print("railyard demo say: no demo is running (start one with `railyard demo`)", file=err)
        return 1
    request = {"repo": REPO, "number": args.number, "body": text, "login": login}
    try:
        answer = _post(f"{demo['standin']}/_standin/comments", request)
    except httpx.HTTPStatusError as error:
        print(f"railyard demo say: {error.response.json().get('message', error)}", file=err)
        return 1
    except httpx.TransportError:
        print("railyard demo say: the demo does not answer (is `railyard demo` still running?)", file=err)
        return 1
    database = Database(demo["database"])
    try:
        asyncio.run(settled(database, timeout=30))
    finally:
        database.close()
    comments = _get(f"{demo['standin']}/_standin/state")["comments"]
    written = int(answer["comment"]["id"])
    out.write(_answer_lines(comments, args.number, written))
    return 0


def _answer_lines(comments: list[dict[str, Any]], number: int, written: int) -> str:
    """The status comment's first line, and the first line of each reply railyard wrote since."""
    status = marker(status_key(REPO, number))
    mine = [c for c in comments if c["issue_number"] == number and c["app_id"] is not None]
    headline = next((_plain(c["body"].splitlines()[0]) for c in mine if status in c["body"]), None)
    lines = [f"#{number}: {headline}" if headline else f"#{number} has no status comment (not a ticket)"]
    for reply in (c for c in mine if c["id"] > written and status not in c["body"]):
        shown = [line for line in reply["body"].splitlines() if line.strip() and not line.startswith("<!--")]
        lines.append("railyard replied: " + " ".join(shown[:2]))
    return "\n".join(lines) + "\n"


def _post(url: str, body: dict[str, Any]) -> Any:
    response = httpx.post(url, json=body, timeout=30)
    response.raise_for_status()
    return response.json()


def _get(url: str) -> Any:
    response = httpx.get(url, timeout=30)
    response.raise_for_status()
    return response.json()
