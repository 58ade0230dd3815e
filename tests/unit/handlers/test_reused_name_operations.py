"""Operation ids that spell a repository's name (`ticket-label:acme/app#12`,
`invalidated:acme/app#12:N`, ...) after the name is renamed away and reused by another
repository: a stored operation replays only for the ticket it was recorded for, so the new
repository's ticket gets operations of its own (replayed in turn for it), and the old ticket's
still replay for it under its new name."""

from __future__ import annotations

from datetime import UTC, datetime

from pytest import MonkeyPatch

from handlers.acceptance import recheck
from handlers.ports import Outcome, Rules
from policies.door import Change, ChangeContext
from policies.events import EventType
from policies.model import TicketKey
from policies.notices import AcceptanceLapsed, NoticeContext, invalidated_operation_id
from policies.states import WorkState
from tests.fakes.github import issue_answer
from tests.fakes.ports import FakePorts
from tests.fakes.records import Records
from tests.fakes.roles import FakeRoles
from tests.fakes.webhooks import INSTALLATION, REPOSITORY, comment, issue
from tests.unit.handlers.steps import CAROL, RACHEL, RITA, world
from tests.unit.handlers.test_repositories import NEW, OLD, of, renamed

LABELLED = Rules("blob-sha-1", ticket_label="ticket")
SHA = "a" * 40
ACCEPTED_AT = datetime(2026, 11, 30, 10, tzinfo=UTC).timestamp()
HERE, MOVED = TicketKey(REPOSITORY, 12), TicketKey("acme/tools", 12)


async def rename_away(ports: FakePorts) -> None:
    """acme/app (the repository OLD) is renamed acme/tools: its tickets move there."""
    ports.github.names[OLD] = "acme/tools"
    await ports.dispatch("repository", renamed(OLD, REPOSITORY, "acme/tools"), delivery_id="d-rename")


def types(ports: FakePorts, key: TicketKey) -> list[EventType]:
    return [recorded.event.type for recorded in ports.store.history(key)]


async def test_the_ticket_label_in_a_repository_that_reuses_a_name_makes_a_ticket_once() -> None:
    """The old acme/app#12 became a ticket by its label; the new acme/app's #12, labelled, does
    too (the old `ticket-label:acme/app#12` is not replayed for it), and the same delivery
    again, or the label again, records nothing more."""
    ports = world(LABELLED)
    await ports.dispatch("issues", of(OLD, issue("labeled", 12, labels=("ticket",))), delivery_id="d-1")
    await rename_away(ports)
    old_history = types(ports, MOVED)
    assert old_history

    labelled = of(NEW, issue("labeled", 12, labels=("ticket",)))
    await ports.dispatch("issues", labelled, delivery_id="d-3")
    assert ports.store.ticket(HERE) is not None
    assert types(ports, HERE) == old_history  # created once, as the old one was
    await ports.dispatch("issues", of(NEW, issue("labeled", 12, labels=("ticket",))), delivery_id="d-3")
    await ports.dispatch("issues", of(NEW, issue("labeled", 12, labels=("ticket",))), delivery_id="d-4")
    assert types(ports, HERE) == old_history  # replayed for the new ticket: nothing twice
    assert types(ports, MOVED) == old_history  # the old ticket untouched


async def accepted_in(ports: FakePorts, repository_id: int) -> None:
    """#12 of the repository `repository_id` (called acme/app now): published, claimed,
    delivered, accepted by rita."""
    for body, by in (
        ("/publish", RACHEL),
        ("/claim", CAROL),
        ("/deliver branch=agent/12 The fix.", CAROL),
        ("/accept", RITA),
    ):
        written = datetime.fromtimestamp(ports.clock.now, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        await ports.dispatch(
            "issue_comment", of(repository_id, comment(12, body, author=by, created_at=written))
        )


async def test_an_acceptance_that_lapses_in_a_repository_that_reuses_a_name_is_recorded_once() -> None:
    """The old acme/app#12's acceptance lapsed (rita lost the role) and was recorded; a new
    acme/app repeats the story. Its lapse is recorded on its own ticket, `recheck` says so only
    then, and a second recheck records nothing more."""
    ports = world()
    ports.clock.now = ACCEPTED_AT + 3600
    ports.github.add_branch(REPOSITORY, "agent/12", SHA)
    ports.github.add_commit(REPOSITORY, SHA)
    ports.github.logins[RITA[1]] = "rita"
    reviewers = ports.roles
    await accepted_in(ports, OLD)
    ports.roles = FakeRoles({})
    await recheck(ports.services, INSTALLATION, HERE)
    old = ports.store.ticket(HERE)
    assert old is not None and old.review is not None and old.review.invalidated is not None

    await rename_away(ports)
    ports.github.names[NEW] = REPOSITORY
    ports.roles = reviewers
    ports.github.add_issue(REPOSITORY, issue_answer(12, assignees=(RACHEL,)))
    await accepted_in(ports, NEW)
    new = ports.store.ticket(HERE)
    assert new is not None and new.work is WorkState.ACCEPTED and new.review is not None
    assert new.review.revision == old.review.revision  # the same story: the same operation id

    ports.roles = FakeRoles({})
    validity = await recheck(ports.services, INSTALLATION, HERE)
    assert validity is not None and not validity.valid and validity.recorded
    new = ports.store.ticket(HERE)
    assert new is not None and new.review is not None and new.review.invalidated is not None
    assert types(ports, HERE).count(EventType.ACCEPTANCE_INVALIDATED) == 1

    # The same notice again, for either ticket: each replays its own outcome, records nothing.
    lapse = AcceptanceLapsed(new.review.revision, "reviewer_lost_role")
    at = datetime.fromtimestamp(ports.clock.now, UTC)
    context = NoticeContext("railyard", invalidated_operation_id(REPOSITORY, 12, new.review.revision), at)
    before = {key: types(ports, key) for key in (HERE, MOVED)}
    for key in (HERE, MOVED):
        async with ports.store.unit() as uow:
            outcome = await uow.execute(key, lapse, context)
            await uow.commit()
        assert outcome.replayed
    assert {key: types(ports, key) for key in (HERE, MOVED)} == before


async def test_recheck_says_recorded_only_when_the_ticket_records_the_lapse(monkeypatch: MonkeyPatch) -> None:
    """A store that answers the lapse with a replay that changed nothing (another ticket's
    outcome) leaves the acceptance standing: `recheck` must not say it recorded it."""
    ports = world()
    ports.clock.now = ACCEPTED_AT + 3600
    ports.github.add_branch(REPOSITORY, "agent/12", SHA)
    ports.github.add_commit(REPOSITORY, SHA)
    await accepted_in(ports, OLD)
    ports.roles = FakeRoles({})

    def replayed(
        self: Records, key: TicketKey, change: Change, context: ChangeContext, _: int | None
    ) -> Outcome:
        return Outcome(context.operation_id, key, 1, replayed=True)

    monkeypatch.setattr(Records, "execute", replayed)
    validity = await recheck(ports.services, INSTALLATION, HERE)
    assert validity is not None and not validity.valid and not validity.recorded
