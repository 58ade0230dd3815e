"""The deployment gate's answers (`app.store.gate_approvals`) on both databases, and through
the unit of work: kept once per request, approved or rejected, found by repository id and
environment (never by the repository's name), and None until the first answer in the
environment; only approvals are approved shas, and the first request is the lowest deployment
among all answers."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select

from app.store.database import Database
from app.store.gate_approvals import approved, bases, gate_approvals, record
from app.store.unit import SqlStore
from handlers.gate_ports import GateAnswer
from tests.fakes.store import MemoryStore

M12, HEAD, OTHER = "1" * 40, "E" * 40, "2" * 40
NOW = 1_800_000_000.0


def approval(
    sha: str = M12, environment: str = "Production", request: str = "901", repository_id: int = 7
) -> GateAnswer:
    """An approval of deploying `sha` to `environment` of repository 7, for run 4242."""
    return GateAnswer(repository_id, environment, sha, 4242, request, 901, True, NOW)


def approved_here(
    database: Database, *shas: str, environment: str = "production", repository_id: int = 7
) -> set[str] | None:
    with database.read() as connection:
        return approved(connection, repository_id, environment, shas)


def test_no_approval_is_none_and_an_approval_is_found_by_id_environment_and_sha(database: Database) -> None:
    """None before any approval in the environment; after one, the approved shas among those
    asked (lowercase, the environment's case ignored), an empty set for others; another
    environment or another repository id stays None."""
    assert approved_here(database, M12) is None
    with database.write() as connection:
        record(connection, approval())
        record(connection, approval(sha=HEAD, request="902"))
    assert approved_here(database, M12, OTHER) == {M12}
    assert approved_here(database, HEAD.lower(), environment="PRODUCTION") == {HEAD.lower()}
    assert approved_here(database, OTHER) == set()
    assert approved_here(database) == set(), "nothing asked: whether any approval exists"
    assert approved_here(database, M12, environment="staging") is None
    assert approved_here(database, M12, repository_id=8) is None


def test_an_approval_is_kept_once_per_request(database: Database) -> None:
    """The same request recorded again (a unit run again) keeps one row."""
    with database.write() as connection:
        record(connection, approval())
        record(connection, approval())
        record(connection, approval(request="run-4242@" + M12 + "#d1"))
    with database.read() as connection:
        assert connection.execute(select(func.count()).select_from(gate_approvals)).scalar_one() == 2


async def test_an_approval_is_kept_only_when_its_unit_commits(database: Database) -> None:
    """Through `SqlStore`: an approval written in a unit that does not commit leaves nothing; one
    that commits is read back by `gate_approved`."""
    store = SqlStore(database, render=lambda answer: None, clock=lambda: NOW)  # type: ignore[arg-type,return-value]
    try:
        async with store.unit() as uow:
            await uow.record_gate_answer(approval())
        async with store.read() as reads:
            assert await reads.gate_approved(7, "production", [M12]) is None
        async with store.unit() as uow:
            await uow.record_gate_answer(approval())
            await uow.commit()
        async with store.read() as reads:
            assert await reads.gate_approved(7, "production", [M12, OTHER]) == {M12}
    finally:
        store.close()


async def test_the_bases_are_where_the_answers_ranges_started_there(database: Database) -> None:
    """`gate_bases`: none before any answer (or when none had a base), then the commits the
    ranges of the answers in the environment of that repository id started from, whatever case,
    a rejection's included."""
    store = SqlStore(database, render=lambda answer: None, clock=lambda: NOW)  # type: ignore[arg-type,return-value]
    try:
        async with store.unit() as uow:
            await uow.record_gate_answer(GateAnswer(7, "Production", M12, 4242, "run-4242", None, True, NOW))
            await uow.commit()
        async with store.read() as reads:
            assert await reads.gate_bases(7, "production") == set()
        async with store.unit() as uow:
            await uow.record_gate_answer(GateAnswer(7, "Production", HEAD, 4243, "950", 950, True, NOW, M12))
            await uow.record_gate_answer(
                GateAnswer(7, "production", M12, 4244, "920", 920, False, NOW, OTHER)
            )
            await uow.record_gate_answer(GateAnswer(8, "production", M12, 4245, "10", 10, True, NOW, HEAD))
            await uow.commit()
        async with store.read() as reads:
            assert await reads.gate_bases(7, "PRODUCTION") == {M12, OTHER}
            assert await reads.gate_bases(7, "staging") == set()
    finally:
        store.close()


def test_a_rejection_is_an_answer_but_never_an_approved_sha(database: Database) -> None:
    """A rejection of HEAD kept in production, its range started at M12: the environment has an
    answer (an empty set, not None), HEAD is not approved there, and M12 is a base there."""
    with database.write() as connection:
        record(connection, GateAnswer(7, "Production", HEAD, 4242, "901", 901, False, NOW, M12.upper()))
    assert approved_here(database, HEAD) == set()
    assert approved_here(database) == set()
    assert approved_here(database, HEAD, repository_id=8) is None
    with database.write() as connection:
        record(connection, approval(sha=M12, request="905"))
    assert approved_here(database, HEAD, M12) == {M12}
    with database.read() as connection:
        assert bases(connection, 7, "PRODUCTION") == {M12}
        assert bases(connection, 7, "staging") == set()


def test_an_answer_that_trusted_nothing_leaves_the_bootstrap_on(database: Database) -> None:
    """A rejection kept without a base (unjudged, or judged from no success) neither approves
    anything nor starts a range anywhere: `approved` still says the bootstrap lasts (None). A
    rejection with a base, or an approval, ends it."""
    with database.write() as connection:
        record(connection, GateAnswer(7, "production", HEAD, 4242, "901", 901, False, NOW))
    assert approved_here(database, HEAD) is None
    with database.write() as connection:
        record(connection, GateAnswer(7, "production", HEAD, 4243, "902", 902, False, NOW, M12))
    assert approved_here(database, HEAD) == set()


async def answered_with_an_empty_base(store: Any) -> tuple[set[str] | None, set[str]]:
    """A rejection kept with an empty base (`GateAnswer.base` ""): what `gate_approved` and
    `gate_bases` then say for the environment."""
    async with store.unit() as uow:
        await uow.record_gate_answer(GateAnswer(7, "production", HEAD, 4242, "901", 901, False, NOW, ""))
        await uow.commit()
    async with store.read() as reads:
        return await reads.gate_approved(7, "production", [HEAD]), await reads.gate_bases(7, "production")


async def test_the_fake_reads_an_empty_base_as_the_store_does(database: Database) -> None:
    """`gate_approvals.record` stores `base or None`: an empty base is no base, so the bootstrap
    lasts (None) and no base is listed. The fake (`MemoryUnit.record_gate_answer`) keeps "" as
    given, and `gate_approved` / `gate_bases` read it as a base: set() and {""}."""
    store = SqlStore(database, render=lambda answer: None, clock=lambda: NOW)  # type: ignore[arg-type,return-value]
    try:
        in_sql = await answered_with_an_empty_base(store)
    finally:
        store.close()
    assert in_sql == (None, set())
    assert await answered_with_an_empty_base(MemoryStore()) == in_sql
