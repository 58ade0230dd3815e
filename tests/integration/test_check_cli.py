"""`railyard check`: exit 0 when nothing is overdue, 3 when something is; a table, `--json`, the
GitHub Actions step summary; bad input is exit 2 and changes nothing."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import select, update

from app.cli import build_parser, main
from app.contracts.effect_types import project_key, status_key
from app.settings import Settings
from app.store.database import Database
from app.store.effects import effects_table
from app.store.tickets import TicketService, tickets
from policies.commands import Claim, Deliver, Publish
from policies.events import EventType
from policies.model import TicketKey
from tests.fakes import REQUESTER, RUNNER, Clock, Comments

KEY = TicketKey("acme/web", 7)
OTHER = TicketKey("acme/api", 3)


def run(database: Database, *argv: str) -> tuple[int, str, str]:
    """Run the CLI in-process; return exit status, stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    status = main(list(argv), settings=Settings(DATABASE_URL=database.url), out=out, err=err)
    return status, out.getvalue(), err.getvalue()


def stamp(moment: datetime) -> str:
    """ISO-8601 with a Z, as a person types it."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def claim(database: Database, key: TicketKey, check_in: int) -> datetime:
    """Publish and claim `key` three hours ago; return when the attempt opened."""
    comments = Comments(Clock(datetime.now(UTC).replace(microsecond=0) - timedelta(hours=3)))
    service = TicketService(database)
    service.execute(key, Publish("Make the upload resumable"), comments.context(REQUESTER))
    outcome = service.execute(key, Claim(check_in_minutes=check_in), comments.context(RUNNER))
    return outcome.events[0].at


def overdue_count(database: Database, key: TicketKey = KEY) -> int:
    """How many `claim_overdue` events the ticket has."""
    history = TicketService(database).history(key)
    return sum(r.event.type is EventType.CLAIM_OVERDUE for r in history)


@pytest.fixture(autouse=True)
def no_step_summary(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests run inside GitHub Actions too: start without its summary file."""
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


def test_nothing_overdue_exits_0_and_says_so(database: Database) -> None:
    """Within its limit, the claim is not reported and nothing is recorded."""
    opened = claim(database, KEY, check_in=30)
    status, out, err = run(database, "check", "--at", stamp(opened + timedelta(minutes=29)))
    assert (status, err) == (0, "")
    assert "no claim is overdue" in out
    assert overdue_count(database) == 0


def test_an_overdue_claim_exits_3_with_a_table_and_is_recorded_once(database: Database) -> None:
    """Past the limit: exit 3, one row naming ticket, kind, claimant, attempt, silence, limit, due
    time and delay; running it again records nothing more."""
    opened = claim(database, KEY, check_in=30)
    at = stamp(opened + timedelta(minutes=95))
    status, out, _ = run(database, "check", "--at", at)
    assert status == 3
    header, row = out.splitlines()
    assert header.split() == [
        "TICKET",
        "KIND",
        "WHO",
        "ATTEMPT",
        "SINCE",
        "LIMIT",
        "DUE",
        "AT",
        "OVERDUE",
        "BY",
    ]
    assert row.split()[:4] == ["acme/web#7", "silence", RUNNER.login, "1"]
    assert "30 min" in row and row.endswith("1h 05m")
    assert run(database, "check", "--at", at)[0] == 3
    assert run(database, "check")[0] == 3  # now: still the same silence
    assert overdue_count(database) == 1


def test_json_prints_a_list_of_overdue_claims(database: Database) -> None:
    """`--json`: one object per overdue claim; an empty list when none is."""
    opened = claim(database, KEY, check_in=30)
    status, out, _ = run(database, "check", "--json", "--at", stamp(opened + timedelta(minutes=40)))
    assert status == 3
    [item] = json.loads(out)
    assert item == {
        "ticket": "acme/web#7",
        "kind": "silence",
        "claimant": RUNNER.login,
        "attempt": 1,
        "silent_since": opened.isoformat(),
        "limit_minutes": 30,
        "due_at": (opened + timedelta(minutes=30)).isoformat(),
        "overdue": True,
        "overdue_minutes": 10,
        "recorded": True,
    }
    status, out, _ = run(database, "check", "--json", "--at", stamp(opened + timedelta(minutes=10)))
    assert (status, json.loads(out)) == (0, [])


def test_the_step_summary_is_appended_when_github_step_summary_is_set(
    database: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Markdown table in the file `$GITHUB_STEP_SUMMARY` names, after what was already there."""
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    opened = claim(database, KEY, check_in=30)
    run(database, "check", "--at", stamp(opened + timedelta(minutes=10)))
    run(database, "check", "--at", stamp(opened + timedelta(minutes=40)))
    text = summary.read_text()
    assert text.startswith("earlier step\n## railyard check\n")
    assert "No claim is overdue" in text
    assert "1 is overdue" in text
    assert "| Ticket | Kind | Who | Attempt | Since | Limit | Due at | Overdue by |" in text
    assert "| acme/web#7 | silence | coder-bot\\[bot\\] | 1 |" in text


def test_repo_narrows_the_check_to_one_repository(database: Database) -> None:
    """`--repo OWNER/REPO` looks at that repository only (case-insensitively)."""
    opened = claim(database, KEY, check_in=30)
    claim(database, OTHER, check_in=30)
    at = stamp(opened + timedelta(minutes=90))
    status, out, _ = run(database, "check", "--json", "--repo", "Acme/Web", "--at", at)
    assert status == 3 and [i["ticket"] for i in json.loads(out)] == ["acme/web#7"]
    assert overdue_count(database, OTHER) == 0


def test_a_time_in_the_future_previews_without_recording(database: Database) -> None:
    """`--at` later than now reports what would be overdue then, and records nothing."""
    claim(database, KEY, check_in=30)
    future = stamp(datetime.now(UTC) + timedelta(days=2))
    status, out, _ = run(database, "check", "--json", "--at", future)
    assert status == 3 and json.loads(out)[0]["recorded"] is False
    assert overdue_count(database) == 0


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--at", "2026-11-30T12:00:00"], "has no timezone"),
        (["--at", "yesterday"], "is not an ISO-8601 time"),
        (["--at", "0001-01-01T00:00:00+14:00"], "is out of range once in UTC"),
        (["--at", "9999-12-31T23:59:59-14:00"], "is out of range once in UTC"),
        (["--repo", "acme"], "--repo expects OWNER/REPO"),
        (["--repo", "acme/web#7"], "--repo expects OWNER/REPO"),
    ],
)
def test_bad_input_exits_2_with_a_clear_message_and_changes_nothing(
    database: Database, argv: list[str], message: str
) -> None:
    """A time without a timezone is refused, not guessed; a malformed repository is refused."""
    opened = claim(database, KEY, check_in=1)
    assert opened < datetime.now(UTC) - timedelta(minutes=5)
    status, out, err = run(database, "check", *argv)
    assert (status, out) == (2, "")
    assert message in err
    assert overdue_count(database) == 0


def test_help_says_a_time_without_a_timezone_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    """The choice about naive times is documented where people look."""
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["check", "--help"])
    assert exited.value.code == 0
    assert "without one is refused" in " ".join(capsys.readouterr().out.split())


def test_check_before_migrate_tells_you_to_migrate(tmp_path: Path) -> None:
    """A fresh database gets a hint and exit 1, not a traceback."""
    status, _, err = run(Database(f"sqlite:///{tmp_path}/fresh.db"), "check")
    assert status == 1 and "railyard migrate" in err


def test_an_unreachable_database_is_exit_1_with_a_message() -> None:
    """No traceback when PostgreSQL does not answer."""
    database = Database("postgresql+psycopg://nobody:nothing@127.0.0.1:9/railyard?connect_timeout=2")
    status, out, err = run(database, "check")
    assert (status, out) == (1, "")
    assert "could not read the database" in err


def test_an_overdue_claim_recorded_from_the_command_line_reaches_the_status_comment(
    database: Database,
) -> None:
    """The CLI records through the same door as the server: the status comment write is enqueued
    for the server's outbox, through the installation the ticket was last seen from."""
    opened = claim(database, KEY, check_in=30)
    with database.write() as connection:
        connection.execute(effects_table.delete())  # what the claim itself enqueued (nothing, here)
        connection.execute(tickets.update().where(tickets.c.number == KEY.number).values(installation_id=7))
    assert run(database, "check", "--at", stamp(opened + timedelta(minutes=95)))[0] == 3
    with database.read() as connection:
        keys = [row.dedupe_key for row in connection.execute(select(effects_table))]
    # The command line does not read `.github/railyard.yml`: the project fields' write is
    # enqueued too, and the outbox's renderer finds whether the file names a project.
    assert keys == [status_key(KEY.repository, KEY.number), project_key(KEY.repository, KEY.number)]


def break_snapshot(database: Database, key: TicketKey) -> None:
    """The ticket's snapshot as no release can read it (a hand edit, a half-applied migration)."""
    with database.write() as connection:
        connection.execute(
            update(tickets)
            .where(tickets.c.repository == key.repository, tickets.c.number == key.number)
            .values(snapshot={"work": "claimed"})
        )


def test_a_ticket_that_cannot_be_checked_is_named_and_the_others_still_are(database: Database) -> None:
    """One ticket's unreadable row: the other's overdue claim is still reported and recorded, the broken
    one is named on stderr and in `--json`, and the exit is 3 (it may be overdue: never a silent 0)."""
    opened = claim(database, KEY, check_in=30)
    claim(database, OTHER, check_in=30)
    break_snapshot(database, OTHER)
    at = stamp(opened + timedelta(minutes=40))

    status, out, err = run(database, "check", "--json", "--at", at)

    assert status == 3
    assert [item["ticket"] for item in json.loads(out)] == ["acme/web#7", "acme/api#3"]
    assert json.loads(out)[1] == {"ticket": "acme/api#3", "failed": "KeyError"}
    assert "could not check acme/api#3 (KeyError)" in err
    assert overdue_count(database) == 1


def test_a_broken_ticket_alone_still_exits_3_not_0(database: Database) -> None:
    """Nothing else overdue, one ticket unreadable: exit 3 with the ticket named, never "all clear"."""
    opened = claim(database, OTHER, check_in=30)
    break_snapshot(database, OTHER)

    status, out, err = run(database, "check", "--at", stamp(opened + timedelta(minutes=10)))

    assert status == 3
    assert "no claim is overdue" in out and "could not check acme/api#3" in err


def deliver(database: Database, key: TicketKey, hours_ago: int = 3) -> datetime:
    """Claim `key` `hours_ago` hours ago and deliver it then; return when it was delivered."""
    comments = Comments(Clock(datetime.now(UTC).replace(microsecond=0) - timedelta(hours=hours_ago)))
    service = TicketService(database)
    service.execute(key, Publish("Make the upload resumable"), comments.context(REQUESTER))
    service.execute(key, Claim(), comments.context(RUNNER))
    outcome = service.execute(key, Deliver("Resumable now", commit="a" * 40), comments.context(RUNNER))
    assert outcome.applied
    return outcome.events[0].at


def test_a_delivery_waiting_past_the_review_limit_exits_3_with_kind_review(database: Database) -> None:
    """A delivery with no decision for longer than 72 hours (the default): exit 3, a `review` row naming
    the runner, `review_overdue` recorded once; judged at `--at`, before it nothing is due."""
    delivered = deliver(database, KEY, hours_ago=80)
    status, out, _ = run(database, "check", "--at", stamp(delivered + timedelta(hours=71)))
    assert status == 0 and "no claim is overdue" in out

    status, out, _ = run(database, "check", "--at", stamp(delivered + timedelta(hours=73)))
    assert status == 3
    _, row = out.splitlines()
    assert row.split()[:4] == ["acme/web#7", "review", RUNNER.login, "1"]
    assert run(database, "check", "--at", stamp(delivered + timedelta(hours=74)))[0] == 3
    history = TicketService(database).history(KEY)
    assert sum(r.event.type is EventType.REVIEW_OVERDUE for r in history) == 1


def test_all_json_lists_every_watched_claim_and_delivery_with_its_due_time(database: Database) -> None:
    """`--all --json`: the claim within its silence is listed with its due time and `overdue: false`,
    the delivery with its review due time; nothing is overdue, so the exit is 0."""
    opened = claim(database, KEY, check_in=30)
    delivered = deliver(database, OTHER)
    status, out, _ = run(database, "check", "--all", "--json", "--at", stamp(opened + timedelta(minutes=10)))
    assert status == 0
    items = {(i["ticket"], i["kind"]): i for i in json.loads(out)}
    assert set(items) == {("acme/web#7", "silence"), ("acme/api#3", "review")}
    silence = items["acme/web#7", "silence"]
    assert (silence["due_at"], silence["overdue"]) == ((opened + timedelta(minutes=30)).isoformat(), False)
    review = items["acme/api#3", "review"]
    assert (review["due_at"], review["overdue"]) == ((delivered + timedelta(hours=72)).isoformat(), False)
    assert overdue_count(database) == 0
    status, out, _ = run(database, "check", "--json", "--at", stamp(opened + timedelta(minutes=10)))
    assert (status, json.loads(out)) == (0, [])


def test_a_broken_delivered_ticket_never_stops_the_review_check_of_the_others(database: Database) -> None:
    """Two deliveries waiting past the limit, one ticket's row unreadable: the other's `review_overdue`
    is still reported and recorded, the broken one is named, and the exit is 3."""
    delivered = deliver(database, KEY, hours_ago=80)
    deliver(database, OTHER, hours_ago=80)
    break_snapshot(database, OTHER)

    status, out, err = run(database, "check", "--json", "--at", stamp(delivered + timedelta(hours=73)))

    assert status == 3
    items = json.loads(out)
    assert [(i["ticket"], i.get("kind")) for i in items] == [("acme/web#7", "review"), ("acme/api#3", None)]
    assert items[1] == {"ticket": "acme/api#3", "failed": "KeyError"}
    assert "could not check acme/api#3 (KeyError)" in err
    history = TicketService(database).history(KEY)
    assert sum(r.event.type is EventType.REVIEW_OVERDUE for r in history) == 1
