"""`railyard effects` and `railyard retry` against a real database (SQLite and PostgreSQL)."""

from __future__ import annotations

import io
import json
import time

from sqlalchemy import select, update

from app.cli import main
from app.settings import Settings
from app.store.database import Database
from app.store.effects import comment, effects_table, enqueue, reaction

REPO = "acme/web"
CREATED = 1_800_000_000.0


def run(database_url: str, *argv: str) -> tuple[int, str, str]:
    """Run the CLI in-process; return exit status, stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    status = main(list(argv), settings=Settings(DATABASE_URL=database_url), out=out, err=err)
    return status, out.getvalue(), err.getvalue()


def stored(database: Database, *statuses: str) -> list[int]:
    """One effect per status given, in that order, failed ones with 32 tries and an error; their ids."""
    with database.write() as connection:
        for n, _ in enumerate(statuses):
            enqueue(connection, [comment(7, REPO, 12, f"body {n}", key=f"op-{n}")], CREATED + n)
        ids = [row.id for row in connection.execute(select(effects_table.c.id).order_by(effects_table.c.id))]
        for effect_id, status in zip(ids, statuses, strict=True):
            error = "GitHubUnavailable: 502 Bad Gateway\nmore" if status == "failed" else None
            connection.execute(
                update(effects_table)
                .where(effects_table.c.id == effect_id)
                .values(status=status, attempts=32 if error else 1, last_error=error)
            )
    return ids


def row(database: Database, effect_id: int) -> dict[str, object]:
    """The stored effect."""
    with database.read() as connection:
        query = select(effects_table).where(effects_table.c.id == effect_id)
        return dict(connection.execute(query).mappings().one())


def test_effects_json_lists_every_field_newest_first(database: Database) -> None:
    """`effects --json` gives id, kind, repository, status, attempts, next attempt, last error, created."""
    ids = stored(database, "done", "failed")
    status, out, _ = run(database.url, "effects", "--json")
    assert status == 0
    listed = json.loads(out)
    assert [item["id"] for item in listed] == ids[::-1]
    assert listed[0] == {
        "id": ids[1],
        "kind": "comment",
        "repository": REPO,
        "status": "failed",
        "attempts": 32,
        "next_attempt_at": CREATED + 1,
        "last_error": "GitHubUnavailable: 502 Bad Gateway\nmore",
        "created_at": CREATED + 1,
    }


def test_effects_filters_by_status_and_limits(database: Database) -> None:
    """`--status failed` shows only failed effects; `--limit` caps how many."""
    ids = stored(database, "failed", "done", "failed", "pending")
    _, out, _ = run(database.url, "effects", "--status", "failed", "--json")
    assert [item["id"] for item in json.loads(out)] == [ids[2], ids[0]]
    _, out, _ = run(database.url, "effects", "--limit", "1", "--json")
    assert [item["id"] for item in json.loads(out)] == [ids[3]]


def test_effects_table_shows_the_error_first_line(database: Database) -> None:
    """The plain listing has a header and one row per effect, the error's first line only."""
    stored(database, "failed")
    with database.write() as connection:
        enqueue(connection, [reaction(7, REPO, 555)], CREATED)
    status, out, _ = run(database.url, "effects")
    lines = out.splitlines()
    assert status == 0 and lines[0].split()[:5] == ["ID", "KIND", "REPOSITORY", "STATUS", "TRIES"]
    assert "reaction" in lines[1] and "pending" in lines[1]
    assert "failed" in lines[2] and "502 Bad Gateway" in lines[2] and "more" not in out


def test_retry_puts_failed_and_cancelled_effects_back_to_pending_now(database: Database) -> None:
    """A retried effect is pending, due now, with no tries counted and no lease."""
    failed, cancelled = stored(database, "failed", "cancelled")
    before = time.time()
    status, out, err = run(database.url, "retry", str(failed), str(cancelled))
    assert (status, err) == (0, "")
    assert f"effect {failed} (failed) is pending again" in out
    for effect_id in (failed, cancelled):
        effect = row(database, effect_id)
        assert effect["status"] == "pending" and effect["attempts"] == 0 and effect["lease_until"] is None
        assert before <= float(effect["next_attempt_at"]) <= time.time()  # type: ignore[arg-type]


def test_retry_explains_unknown_and_done_effects_and_fails_when_none_was_retried(database: Database) -> None:
    """An unknown id and a done effect are named on stderr and left alone; exit 1 when nothing was retried."""
    [done] = stored(database, "done")
    status, out, err = run(database.url, "retry", str(done), "999999")
    assert status == 1 and out == ""
    assert f"effect {done} is done already" in err and "no effect 999999 is stored here" in err
    assert row(database, done)["status"] == "done" and row(database, done)["attempts"] == 1


def test_retry_succeeds_when_some_were_retried(database: Database) -> None:
    """One failed among unknown ids: it is retried, the others are explained, and the exit is 0."""
    [failed] = stored(database, "failed")
    status, _, err = run(database.url, "retry", "999999", str(failed))
    assert status == 0 and "no effect 999999" in err and row(database, failed)["status"] == "pending"


def test_retry_waiting_makes_effects_in_backoff_due_now_and_leaves_the_rest(database: Database) -> None:
    """After an outage: effects waiting for their next try are due now with their tries kept;
    a held one, a spaced first write, and failed or done ones are left as they were."""
    backoff, held, spaced, failed = stored(database, "pending", "pending", "pending", "failed")
    later = time.time() + 600
    with database.write() as connection:
        for effect_id, tries, lease in ((backoff, 3, None), (held, 2, later), (spaced, 0, None)):
            connection.execute(
                update(effects_table)
                .where(effects_table.c.id == effect_id)
                .values(attempts=tries, next_attempt_at=later, lease_until=lease)
            )
    before = time.time()
    status, out, err = run(database.url, "retry", "--waiting")
    assert (status, err) == (0, "") and "1 waiting effects are due now" in out
    moved = row(database, backoff)
    assert before <= float(moved["next_attempt_at"]) <= time.time()  # type: ignore[arg-type]
    assert (moved["status"], moved["attempts"]) == ("pending", 3)
    for effect_id in (held, spaced):
        assert float(row(database, effect_id)["next_attempt_at"]) == later  # type: ignore[arg-type]
    assert row(database, failed)["status"] == "failed"


def test_retry_wants_ids_or_waiting_but_not_both(database: Database) -> None:
    """No ids and no --waiting, or both: a usage error that changes nothing."""
    [failed] = stored(database, "failed")
    assert run(database.url, "retry")[0] == 2
    status, _, err = run(database.url, "retry", "--waiting", str(failed))
    assert status == 2 and "not both" in err and row(database, failed)["status"] == "failed"
