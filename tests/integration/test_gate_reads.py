"""What the deployment gate reads before it judges (`app.store.gate_reads`), on both databases:
how far the repository's merges are from being recorded, and whether a request was answered."""

from __future__ import annotations

from app.contracts.effect_types import deployment_review
from app.store.database import Database
from app.store.delivery_status import DONE
from app.store.effects import enqueue
from app.store.gate_approvals import record
from app.store.gate_reads import gate_backlog, merge_runs
from app.store.intake import IncomingDelivery, write_batch
from app.store.queue import DeliveryQueue
from handlers.gate_ports import GateAnswer

NOW = 1_800_000_000.0


def delivery(
    delivery_id: str, event: str, action: str, repository: str = "acme/web", number: int = 41
) -> IncomingDelivery:
    """A stored delivery of pull request `number` (or another event), waiting for the worker."""
    key = f"{repository}!{number}"
    return IncomingDelivery(delivery_id, event, action, 1, repository, key, "pending", "{}", 2, NOW, NOW)


def runs_here(database: Database) -> int | None:
    with database.read() as connection:
        return merge_runs(connection, "Acme/Web")


def claim(queue: DeliveryQueue, delivery_id: str, at: float) -> object:
    [claimed] = [found for found in queue.claim(at, 10) if found.delivery_id == delivery_id]
    return claimed


def test_a_pending_close_counts_its_runs_until_processed(database: Database) -> None:
    """Only a pending `pull_request.closed` of that repository counts, leased or not, with the
    runs it has had; once processed, or another event, action or repository, not."""
    write_batch(
        database,
        [
            delivery("opened", "pull_request", "opened", number=40),
            delivery("elsewhere", "pull_request", "closed", "acme/other"),
            delivery("issue", "issues", "closed", number=7),
        ],
    )
    assert runs_here(database) is None
    write_batch(database, [delivery("closed", "pull_request", "closed")])
    assert runs_here(database) == 0
    queue = DeliveryQueue(database, owner="w1")
    closed = claim(queue, "closed", NOW)
    assert runs_here(database) == 1, "a leased delivery is not processed yet"
    assert queue.retry(closed, NOW, "TransientError: GitHub is unreachable")  # type: ignore[arg-type]
    again = claim(queue, "closed", NOW + 1)
    assert runs_here(database) == 2
    assert queue.complete(again, DONE, NOW + 1)  # type: ignore[arg-type]
    assert runs_here(database) is None


def test_a_close_behind_a_failing_delivery_of_its_pull_request_counts_that_ones_runs(
    database: Database,
) -> None:
    """The close waits behind an earlier delivery of the same pull request that keeps failing: it
    never runs itself, but the runs of the one it waits behind count, so the gate stops waiting."""
    write_batch(database, [delivery("edited", "pull_request", "edited")])
    write_batch(database, [delivery("closed", "pull_request", "closed")])
    queue = DeliveryQueue(database, owner="w1")
    for run in range(9):
        blocker = claim(queue, "edited", NOW + run)
        assert queue.retry(blocker, NOW + run, "TransientError: GitHub is unreachable")  # type: ignore[arg-type]
    assert runs_here(database) == 9


def test_an_answered_request_is_known_by_its_key(database: Database) -> None:
    """`gate_backlog` says whether the outbox holds the answer to a request (by its key only)."""
    with database.read() as connection:
        assert gate_backlog(connection, "acme/web", "acme/web:4242:production:900") == (False, None)
    effect = deployment_review(
        1, "acme/web", 4242, "production", "rejected", "no", "acme/web:4242:production:900"
    )
    with database.write() as connection:
        enqueue(connection, [effect], NOW)
    with database.read() as connection:
        assert gate_backlog(connection, "acme/web", "acme/web:4242:production:900") == (True, None)
        assert gate_backlog(connection, "acme/web", "acme/web:4242:production:901") == (False, None)


def test_an_answer_kept_before_a_rename_is_found_by_the_repository_id(database: Database) -> None:
    """The outbox key spells the name the request had; the kept answer does not: after a rename
    (another key), the same request is still known as answered, by GitHub's id, environment
    (casefolded), sha and request, and another request of the run is not."""
    answer = GateAnswer(1001, "production", "a" * 40, 4242, "900", 900, False, NOW)
    with database.write() as connection:
        record(connection, answer)
    kept = (1001, "production", "a" * 40, "900")
    with database.read() as connection:
        assert gate_backlog(connection, "acme/site", "acme/site:4242:production:900", 1001, kept)[0]
        assert not gate_backlog(
            connection, "acme/site", "acme/site:4242:production:901", 1001, (*kept[:3], "901")
        )[0]
        assert not gate_backlog(
            connection, "acme/site", "acme/site:4242:production:900", 2002, (2002, *kept[1:])
        )[0]


def test_a_close_stored_before_a_rename_is_found_by_the_repository_id(database: Database) -> None:
    """A close stored while the repository was acme/web, asked for after its rename to acme/site:
    found by GitHub's id, so the gate waits for it. Another repository's close now stored under
    the old name is not, and a close stored before ids were kept (none) counts by its name."""
    renamed = delivery("closed", "pull_request", "closed")._replace(
        ordering_key="1001!41", repository_id=1001
    )
    reused = delivery("reused", "pull_request", "closed", number=9)._replace(repository_id=2002)
    write_batch(database, [renamed, reused])
    with database.read() as connection:
        assert merge_runs(connection, "acme/site", 1001) == 0
        assert merge_runs(connection, "acme/site") is None  # by name alone: the old rows' way
        assert merge_runs(connection, "acme/web", 3003) is None  # the name is another's now
    write_batch(database, [delivery("old", "pull_request", "closed", "acme/site", number=5)])
    with database.read() as connection:
        assert merge_runs(connection, "acme/site", 1001) == 0
