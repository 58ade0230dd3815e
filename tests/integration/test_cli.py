"""`railyard migrate`, `status` and `events` against a real database."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

from app.cli import main
from app.settings import Settings
from app.store.database import Database
from app.store.intake import IncomingDelivery, write_batch
from app.store.tickets import TicketService
from policies.commands import Accept, Claim, Deliver, Publish
from policies.model import TicketKey
from tests.fakes import REQUESTER, REVIEWER, RUNNER, Comments

KEY = TicketKey("acme/web", 7)


def run(database_url: str, *argv: str) -> tuple[int, str, str]:
    """Run the CLI in-process; return exit status, stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    status = main(list(argv), settings=Settings(DATABASE_URL=database_url), out=out, err=err)
    return status, out.getvalue(), err.getvalue()


def accepted_ticket(database: Database) -> None:
    """A ticket accepted by an independent reviewer, with one refused command in between."""
    service, comments = TicketService(database), Comments()
    service.execute(KEY, Publish("Make the upload resumable"), comments.context(REQUESTER))
    service.execute(KEY, Claim(branch="agent/7"), comments.context(RUNNER))
    service.execute(
        KEY, Deliver("Resumable now", branch="agent/7", commit="f" * 40), comments.context(RUNNER)
    )
    service.execute(KEY, Accept(), comments.context(RUNNER))  # refused: a runner is no reviewer
    service.execute(KEY, Accept(), comments.context(REVIEWER))


def test_status_json_prints_the_fields_spec_names(database: Database) -> None:
    """`status --json` holds ticket, work, integration, deployment, revision, attempt, runner, review."""
    accepted_ticket(database)
    status, out, _ = run(database.url, "status", "acme/web#7", "--json")
    assert status == 0
    summary = json.loads(out)
    assert {k: summary[k] for k in ("ticket", "work", "integration", "deployment", "revision")} == {
        "ticket": "acme/web#7",
        "work": "accepted",
        "integration": "unreported",
        "deployment": "not_deployed",
        "revision": 5,
    }
    assert (summary["attempt"], summary["runner"], summary["review"]) == (1, "coder-bot[bot]", "independent")


def test_events_json_lists_the_log_with_refusals_as_command_rejected(database: Database) -> None:
    """`events --json` items hold revision, type, actor, role, at, operation_id and metadata."""
    accepted_ticket(database)
    status, out, _ = run(database.url, "events", "acme/web#7", "--json")
    assert status == 0
    items = json.loads(out)
    assert [(i["revision"], i["type"]) for i in items] == [
        (1, "created"),
        (2, "published"),
        (3, "claimed"),
        (4, "delivered"),
        (4, "command_rejected"),
        (5, "accepted"),
    ]
    for item in items:
        assert {"revision", "type", "actor", "role", "at", "operation_id", "metadata"} <= item.keys()
    assert items[3]["metadata"]["commit"] == "f" * 40
    assert items[4]["metadata"]["code"] == "not_allowed"
    assert (items[5]["actor"], items[5]["role"], items[5]["metadata"]["review"]) == (
        "rita",
        "reviewer",
        "independent",
    )


def test_readable_status_and_events_tables(database: Database) -> None:
    """Without --json, status and events print tables a person can read."""
    accepted_ticket(database)
    _, status_text, _ = run(database.url, "status", "acme/web#7")
    assert "accepted (independent, @rita)" in status_text
    _, events_text, _ = run(database.url, "events", "acme/web#7")
    assert events_text.splitlines()[0].split() == ["REV", "AT", "TYPE", "ACTOR", "ROLE", "OPERATION"]
    assert len(events_text.splitlines()) == 7


def test_an_unknown_ticket_is_a_clear_message_and_a_non_zero_exit(database: Database) -> None:
    """Asking about an issue that is not a ticket says so and exits 1."""
    for command in ("status", "events"):
        status, out, err = run(database.url, command, "acme/web#404")
        assert (status, out) == (1, "")
        assert "acme/web#404 is not a ticket" in err


def test_a_malformed_ticket_reference_exits_2(tmp_path: Path) -> None:
    """`OWNER/REPO#N` is the only accepted form."""
    status, _, err = run(f"sqlite:///{tmp_path}/x.db", "status", "acme-web-7")
    assert status == 2 and "expected OWNER/REPO#NUMBER" in err


def test_status_before_migrate_tells_you_to_migrate(tmp_path: Path) -> None:
    """A fresh database gets a hint, not a traceback."""
    status, _, err = run(f"sqlite:///{tmp_path}/fresh.db", "status", "acme/web#1")
    assert status == 1 and "railyard migrate" in err


def test_the_installed_console_script_migrates_and_reports(tmp_path: Path) -> None:
    """`railyard migrate` then `railyard status` as a user runs them, DATABASE_URL from the env."""
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path}/cli.db"}
    railyard = Path(sys.executable).parent / "railyard"
    migrate = subprocess.run([railyard, "migrate"], env=env, capture_output=True, text=True, cwd=tmp_path)
    assert migrate.returncode == 0, migrate.stderr
    assert "up to date" in migrate.stdout
    status = subprocess.run(
        [railyard, "status", "a/b#1"], env=env, capture_output=True, text=True, cwd=tmp_path
    )
    assert status.returncode == 1 and "not a ticket" in status.stderr


def test_serve_refuses_a_private_key_that_is_not_pem_without_printing_it(tmp_path: Path) -> None:
    """A broken PRIVATE_KEY is a clear startup error (exit 2) that never echoes the secret."""
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{tmp_path}/serve.db",
        "APP_ID": "1",
        "PRIVATE_KEY": "super-secret-but-not-a-key",
        "WEBHOOK_SECRET": "s",
        "PORT": "0",
    }
    railyard = Path(sys.executable).parent / "railyard"
    result = subprocess.run(
        [railyard, "serve"], env=env, capture_output=True, text=True, cwd=tmp_path, timeout=60
    )
    assert result.returncode == 2
    assert "PRIVATE_KEY is not a PEM private key" in result.stderr
    assert "super-secret" not in result.stderr + result.stdout


def test_deliveries_lists_rejected_ones_and_redeliver_does_not_revive_them(database: Database) -> None:
    """`deliveries --status rejected` shows the reason; `redeliver` of one says it was not found."""
    rejected = IncomingDelivery(
        "replayed", "installation", "deleted", 7, None, "installation:7", "rejected", "{}", 2, 1.0, 1.0
    )
    write_batch(database, [rejected._replace(last_error="installation payload lacks installation.account")])
    status, out, _ = run(database.url, "deliveries", "--status", "rejected", "--json")
    assert status == 0
    [listed] = json.loads(out)
    assert (listed["id"], listed["status"]) == ("replayed", "rejected")
    status, _, _ = run(database.url, "redeliver", "replayed")
    assert status != 0
    _, out, _ = run(database.url, "deliveries", "--json")
    assert [item["status"] for item in json.loads(out)] == ["rejected"]
