"""The in-memory store keeps the promises of `app.store` that handlers rely on."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from handlers.answers import StatusComment
from handlers.ports import Heard, PullRequest
from policies.commands import Claim, Context, Draft, Publish
from policies.model import Actor, TicketKey
from policies.notices import IssueStateObserved, NoticeContext
from policies.rails import BranchObserved, CheckObserved, ObservationContext
from policies.refusals import RefusalCode
from policies.states import Role, WorkState
from tests.fakes.store import MemoryStore

KEY = TicketKey("Acme/App", 12)
AT = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)
OWNER = Actor("rachel", frozenset({Role.REQUESTER, Role.TASK_OWNER}), 101)
RUNNER = Actor("carol", frozenset({Role.RUNNER}), 202)


def said(actor: Actor, operation: str, minutes: int = 0) -> Context:
    """A command's context, `minutes` after AT."""
    at = AT + timedelta(minutes=minutes)
    return Context(actor=actor, operation_id=operation, at=at, comment_id=int(operation), comment_at=at)


async def open_ticket(store: MemoryStore) -> None:
    """Publish #12 in a unit of its own."""
    async with store.unit() as uow:
        await uow.execute(KEY, Publish(description="Work."), said(OWNER, "1"))
        await uow.commit()


async def test_a_unit_left_without_commit_keeps_nothing() -> None:
    """Writes of a unit that never reaches commit(), or raises, are discarded."""
    store = MemoryStore()
    async with store.unit() as uow:
        await uow.execute(KEY, Draft(), said(OWNER, "1"))
        await uow.send(StatusComment(1, "acme/app", 12))
    with pytest.raises(RuntimeError):
        async with store.unit() as uow:
            await uow.execute(KEY, Draft(), said(OWNER, "2"))
            raise RuntimeError("handler failed")
    assert store.ticket(KEY) is None and store.answers == []


async def test_a_unit_that_ended_refuses_writes_and_a_nested_unit_fails() -> None:
    """A unit cannot be written after it ended, nor opened inside another unit of the same task."""
    store = MemoryStore()
    async with store.unit() as uow:
        await uow.commit()
        with pytest.raises(RuntimeError):
            await uow.execute(KEY, Draft(), said(OWNER, "1"))
        with pytest.raises(RuntimeError):
            async with store.unit():
                pass


async def test_a_stored_operation_replays_and_a_refusal_is_stored_once() -> None:
    """The same operation id replays its applied events or its refusal and writes nothing more."""
    store = MemoryStore()
    await open_ticket(store)
    async with store.unit() as uow:
        again = await uow.execute(KEY, Publish(description="Work."), said(OWNER, "1"))
        refused = await uow.execute(KEY, Claim(), said(OWNER, "2"))
        replayed = await uow.execute(KEY, Claim(), said(OWNER, "2"))
        await uow.commit()
    assert again.replayed and [e.type.value for e in again.events] == ["created", "published"]
    assert refused.refusal is not None and not refused.replayed
    assert replayed.replayed and replayed.refusal is not None
    assert replayed.refusal.code is RefusalCode.NOT_ALLOWED
    assert len(store.history(KEY)) == 2
    async with store.read() as reads:
        assert await reads.commands_since("acme/app", 101, AT) == 2  # the publish and the refused claim


async def test_an_observation_that_is_refused_is_not_stored() -> None:
    """An observation about an issue that is not a ticket yet is recorded once the ticket exists."""
    store = MemoryStore()
    seen = BranchObserved("fix", "b" * 40, AT)
    context = ObservationContext("github", "obs-1", AT)
    async with store.unit() as uow:
        first = await uow.execute(KEY, seen, context)
        await uow.commit()
    await open_ticket(store)
    async with store.unit() as uow:
        second = await uow.execute(KEY, seen, context)
        await uow.commit()
    assert first.refusal is not None and first.refusal.code is RefusalCode.NOT_A_TICKET
    assert second.applied and not second.replayed


async def test_a_stale_expected_revision_is_a_transient_refusal() -> None:
    """An expected revision the ticket has moved past is refused, transiently, and writes nothing."""
    store = MemoryStore()
    await open_ticket(store)
    closed = NoticeContext("railyard", "close-1", AT)
    async with store.unit() as uow:
        stale = await uow.execute(KEY, IssueStateObserved(True), closed, expected_revision=1)
        fresh = await uow.execute(KEY, IssueStateObserved(True), closed, expected_revision=2)
        await uow.commit()
    assert stale.refusal is not None and stale.refusal.transient and not stale.answerable
    assert fresh.applied and fresh.revision == 3


async def test_branches_of_claims_and_deliveries_count_by_when_they_were_reported() -> None:
    """A claim's branch links from the claim on; with `reported_by`, only if reported by then."""
    store = MemoryStore()
    await open_ticket(store)
    async with store.unit() as uow:
        await uow.execute(KEY, Claim(branch="agent/12"), said(RUNNER, "3", minutes=30))
        await uow.commit()
    async with store.read() as reads:
        assert await reads.tickets_on_branch("acme/app", "agent/12", head_in_repository=True) == {12}
        assert await reads.tickets_on_branch("acme/app", "agent/12", head_in_repository=False) == set()
        early = AT + timedelta(minutes=10)
        assert (
            await reads.tickets_on_branch("acme/app", "agent/12", head_in_repository=True, reported_by=early)
            == set()
        )
        assert not await reads.attempt_opened_by("acme/app", 12, early)
        assert await reads.attempt_opened_by("acme/app", 12, AT + timedelta(hours=1))
    claimed = store.ticket(KEY)
    assert claimed is not None and claimed.work is WorkState.CLAIMED


async def test_an_older_pull_request_never_replaces_a_newer_one() -> None:
    """Remembering a PR older than the stored one keeps the newer state and reports the links it had."""
    store = MemoryStore()
    newer = PullRequest("acme/app", 40, "u", False, False, "fix", "a" * 40, None, AT + timedelta(hours=1))
    older = PullRequest("acme/app", 40, "u", True, False, "fix", "a" * 40, None, AT)
    async with store.unit() as uow:
        assert await uow.remember(newer, {12}) == set()
        assert await uow.remember(older, {13}) == {12}
        await uow.commit()
    async with store.read() as reads:
        stored = await reads.stored_pull("ACME/app", 40)
    assert stored is not None and not stored[0].open and stored[1] == {12}


async def test_held_observations_are_kept_once_or_once_per_subject() -> None:
    """The same observation is held once per repository, or once per subject when asked."""
    store = MemoryStore()
    check = CheckObserved("a" * 40, "tests", "success", 1, AT)
    async with store.unit() as uow:
        await uow.hold("acme/app", "check:a", check, 1.0)
        await uow.hold("acme/app", "check:b", check, 2.0)
        await uow.hold("acme/app", "ticket:1", check, 3.0, per_subject=True)
        await uow.hold("acme/app", "ticket:2", check, 4.0, per_subject=True)
        await uow.commit()
    async with store.read() as reads:
        found = [
            len(await reads.held_for("acme/app", s)) for s in ("check:a", "check:b", "ticket:1", "ticket:2")
        ]
    assert found == [1, 0, 1, 1]


async def test_signs_of_life_move_only_forward_and_only_for_tickets() -> None:
    """A sign of life is stored only for a ticket, and an older one never replaces a newer one."""
    store = MemoryStore()
    async with store.unit() as uow:
        assert not await uow.record_sign_of_life(Heard(KEY, 1, AT, "comment", "c1"))
        await uow.commit()
    await open_ticket(store)
    async with store.unit() as uow:
        assert await uow.record_sign_of_life(Heard(KEY, 1, AT + timedelta(hours=1), "push", "p1", 60, "v2"))
        assert await uow.record_sign_of_life(Heard(KEY, 1, AT, "comment", "c2"))
        await uow.commit()
    sign = store.sign_of_life(KEY, 1)
    assert sign is not None
    assert (sign.kind, sign.at, sign.max_silence_minutes) == ("push", AT + timedelta(hours=1), 60)
