"""`railyard tickets` and `railyard report`: tables, JSON, filters, and exit 2 for bad input."""

from __future__ import annotations

import io
import json

import pytest

from app.cli import main
from app.settings import Settings
from app.store.database import Database
from app.store.tickets import TicketService
from policies.commands import Claim, Deliver, Publish, SendBack
from policies.model import Evidence, TicketKey
from tests.fakes import REQUESTER, REVIEWER, RUNNER, Comments

KEY, OTHER = TicketKey("acme/web", 7), TicketKey("acme/api", 3)


def run(database: Database, *argv: str) -> tuple[int, str, str]:
    """Run the CLI in-process; return exit status, stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    status = main(list(argv), settings=Settings(DATABASE_URL=database.url), out=out, err=err)
    return status, out.getvalue(), err.getvalue()


@pytest.fixture
def recorded(database: Database) -> Database:
    """acme/web#7 delivered by the runner and sent back once; acme/api#3 only published."""
    service, comments = TicketService(database), Comments()
    service.execute(KEY, Publish("Make the upload resumable"), comments.context(REQUESTER))
    service.execute(KEY, Claim(), comments.context(RUNNER))
    service.execute(KEY, Deliver("First try", commit="a" * 40), comments.context(RUNNER))
    service.execute(KEY, SendBack("Still restarts"), comments.context(REVIEWER))
    service.execute(KEY, Deliver("Resumes", commit="b" * 40), comments.context(RUNNER))
    service.execute(OTHER, Publish("Document the API"), comments.context(REQUESTER))
    return database


def test_tickets_prints_a_table_of_rails_and_attention(recorded: Database) -> None:
    """A header, one row per ticket, newest activity first, the attention codes in the last column."""
    status, out, _ = run(recorded, "tickets")
    lines = out.splitlines()
    assert status == 0 and lines[0].split()[:4] == ["TICKET", "WORK", "REPOSITORY", "DEPLOYMENT"]
    assert lines[1].startswith("acme/api#3") and lines[2].startswith("acme/web#7")
    assert lines[2].endswith("awaiting_review")


def test_tickets_filters_by_repository_work_and_attention(recorded: Database) -> None:
    """`--repo`, `--work` and `--attention` narrow the list; `--json` items are status objects."""
    _, out, _ = run(recorded, "tickets", "--repo", "acme/web", "--json")
    [item] = json.loads(out)
    assert (item["ticket"], item["work"], item["attention"]) == (
        "acme/web#7",
        "delivered",
        ["awaiting_review"],
    )
    assert "next" in item and "revision" in item
    _, out, _ = run(recorded, "tickets", "--work", "open", "--json")
    assert [i["ticket"] for i in json.loads(out)] == ["acme/api#3"]
    _, out, _ = run(recorded, "tickets", "--attention", "--json")
    assert [i["ticket"] for i in json.loads(out)] == ["acme/web#7"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["tickets", "--work", "finished"], "--work 'finished' is not a work state; use one of: draft"),
        (["tickets", "--repo", "acme"], "--repo expects OWNER/REPO"),
        (["report", "--since", "last tuesday"], "--since 'last tuesday' is not a date or time"),
        (["report", "--since", "2026-11-01T09:00"], "has no timezone"),
        (["report", "--since", "9999-12-31T23:00:00-14:00"], "is out of range once in UTC"),
    ],
)
def test_bad_input_is_exit_2_with_a_clear_message(recorded: Database, argv: list[str], message: str) -> None:
    """Unknown work states, malformed repositories and dates are refused with usage status 2."""
    status, out, err = run(recorded, *argv)
    assert (status, out) == (2, "")
    assert message in err


def test_report_prints_runners_and_reviewers(recorded: Database) -> None:
    """The table names the runner with its figures, and the reviewer with the decision."""
    status, out, _ = run(recorded, "report", "--repo", "acme/web")
    assert status == 0
    runners, reviewers = out.split("Reviewers\n")
    row = next(line for line in runners.splitlines() if line.startswith("@coder-bot[bot]"))
    assert row.split()[1:6] == ["2", "0", "1", "0", "50%"]
    assert any(line.startswith("@rita") for line in reviewers.splitlines())


def test_report_json_and_a_period_with_nothing_in_it(recorded: Database) -> None:
    """`--json` has runners, reviewers, models, requesters and labels; after everything, all empty."""
    _, out, _ = run(recorded, "report", "--json", "--since", "2020-01-01")
    figures = json.loads(out)
    assert figures["runners"][0]["runner"] == RUNNER.login and figures["runners"][0]["send_back_rate"] == 0.5
    _, out, _ = run(recorded, "report", "--json", "--since", "2999-01-01T00:00:00Z")
    assert json.loads(out) == {"runners": [], "reviewers": [], "models": [], "requesters": [], "labels": []}
    status, out, _ = run(recorded, "report", "--since", "2999-01-01")
    assert status == 0 and "none in this period" in out


def test_report_prints_spend_per_runner_and_model_and_send_backs_per_requester(database: Database) -> None:
    """The text report has a model table with the reported cost and a requester table with the rate."""
    service, comments = TicketService(database), Comments()
    service.execute(KEY, Publish("Make the upload resumable"), comments.context(REQUESTER))
    service.execute(KEY, Claim(), comments.context(RUNNER))
    spent = Evidence(model="m1", input_tokens=1200, output_tokens=300, cost_usd="0.42")
    service.execute(KEY, Deliver("First try", commit="a" * 40, evidence=spent), comments.context(RUNNER))
    service.execute(KEY, SendBack("Still restarts"), comments.context(REVIEWER))
    status, out, _ = run(database, "report")
    assert status == 0
    runner = next(line for line in out.splitlines() if line.startswith(f"@{RUNNER.login}"))
    assert runner.split()[-5:] == ["1200", "300", "$0.42", "0", "-"]
    models = out.split("Models (as reported by the runners)\n")[1]
    assert next(line for line in models.splitlines() if line.startswith("m1")).split()[1:4] == [
        "1",
        "1200",
        "300",
    ]
    requesters = out.split("Requesters\n")[1]
    assert next(line for line in requesters.splitlines() if line.startswith(f"@{REQUESTER.login}")).split()[
        1:
    ] == ["1", "1", "1", "100%"]
    assert "(no label recorded)" in out.split("Labels\n")[1]
