"""The project-fields effect performed against an in-memory GitHub Projects: the item's fields
follow the rails, a new ticket's issue is added once, and what a project lacks is kept and
shown on the status comment once, not retried."""

from __future__ import annotations

from typing import Any

from app.bootstrap import surfaces_under
from app.contracts.effect_types import EffectKind
from app.github.config_loader import ConfigLoader, RepoFile
from app.runtime.project_sync import ProjectSync, problems_in, wanted_payload
from policies.model import Ticket, TicketKey
from policies.projects import Board, BoardField, Problem, ProblemCode, ProjectRail
from tests.fakes.projects import FakeBoards

WORK = BoardField("F1", "Work", True, (("o1", "open"), ("o2", "claimed")))
CODE = BoardField("F2", "Code", True, (("c1", "nothing reported yet"), ("c2", "PR open")))
DEPLOYMENT = BoardField("F3", "Deployment", True, (("d1", "not applicable"), ("d2", "not deployed")))
BOARD = Board("P1", (WORK, CODE, DEPLOYMENT))
PROJECTS = "projects: [{owner: acme, number: 5}]\n"
NAMES = {ProjectRail.WORK: "Work", ProjectRail.REPOSITORY: "Code", ProjectRail.DEPLOYMENT: "Deployment"}


class Shown:
    """Records each time the status comment is asked to be written again."""

    def __init__(self) -> None:
        self.times = 0

    async def __call__(self, installation: int, repository: str, number: int) -> None:
        assert (installation, repository, number) == (7, "acme/web", 12)
        self.times += 1


def payload(
    work: str = "open", code: str = "nothing reported yet", *, add_items: bool = False
) -> dict[str, Any]:
    """The rendered payload: what acme/5's fields should show."""
    rails = {ProjectRail.WORK: work, ProjectRail.REPOSITORY: code, ProjectRail.DEPLOYMENT: "not applicable"}
    wanted = wanted_payload(rails, NAMES)
    return {
        "number": 12,
        "projects": [{"owner": "acme", "number": 5, "add_items": add_items, "wanted": wanted}],
    }


async def perform(sync: ProjectSync, sent: dict[str, Any], result: dict[str, Any] | None) -> dict[str, Any]:
    """One performance of the effect, as the outbox does it (the row keeps the last result)."""
    row = {"installation_id": 7, "repository": "acme/web", "result": result}
    return await sync.write(row, sent)


async def test_the_items_fields_follow_the_rails_and_a_moved_card_is_set_back() -> None:
    """First sync sets all three; a person moves Work; the next change sets it back."""
    boards, shown = FakeBoards(BOARD, ("PVTI_1", {})), Shown()
    sync = ProjectSync(boards, shown)
    result = await perform(sync, payload(), None)
    assert boards.shows() == {"Work": "open", "Code": "nothing reported yet", "Deployment": "not applicable"}
    boards.item[1]["F1"] = "o2"  # type: ignore[index]  # a person drags the card to claimed
    boards.writes.clear()
    result = await perform(sync, payload(code="PR open"), result)
    assert boards.writes == [("set", "F1", "o1"), ("set", "F2", "c2")]
    assert problems_in(result) == {} and shown.times == 0


async def test_a_new_tickets_issue_is_added_once_when_add_items_is_on() -> None:
    """Added at the first sync; removed by a person afterwards, it is not added again."""
    boards, shown = FakeBoards(BOARD), Shown()
    sync = ProjectSync(boards, shown)
    result = await perform(sync, payload(add_items=True), None)
    assert boards.writes[0] == ("add", "P1", "I_12") and boards.shows()["Work"] == "open"
    boards.item, boards.writes = None, []
    await perform(sync, payload(work="claimed", add_items=True), result)
    assert boards.writes == []


async def test_an_issue_not_on_the_board_is_left_alone_without_add_items() -> None:
    """No item and `add_items: false`: nothing is written and nothing is reported."""
    boards = FakeBoards(BOARD)
    result = await perform(ProjectSync(boards, Shown()), payload(), None)
    assert boards.writes == [] and problems_in(result) == {}


async def test_a_missing_option_is_reported_once_and_never_retried() -> None:
    """No option `claimed`... the status comment is asked again once; the same problem at the
    next change asks nothing more; the other fields are still kept."""
    lacking = Board("P1", (BoardField("F1", "Work", True, (("o1", "open"),)), CODE, DEPLOYMENT))
    boards, shown = FakeBoards(lacking, ("PVTI_1", {})), Shown()
    sync = ProjectSync(boards, shown)
    result = await perform(sync, payload(work="claimed"), None)
    assert problems_in(result) == {"acme/5": (Problem(ProblemCode.NO_OPTION, "Work", "claimed"),)}
    assert shown.times == 1 and boards.shows() == {
        "Code": "nothing reported yet",
        "Deployment": "not applicable",
    }
    result = await perform(sync, payload(work="claimed", code="PR open"), result)
    assert shown.times == 1 and boards.shows()["Code"] == "PR open"
    result = await perform(sync, payload(work="open", code="PR open"), result)
    assert problems_in(result) == {} and shown.times == 2  # fixed: the line goes


async def test_a_missing_project_or_permission_is_a_problem_not_a_failure() -> None:
    """No such project: `no_project`; the projects permission read only: `no_access`."""
    result = await perform(ProjectSync(FakeBoards(None), Shown()), payload(), None)
    assert problems_in(result) == {"acme/5": (Problem(ProblemCode.NO_PROJECT),)}
    boards = FakeBoards(BOARD, ("PVTI_1", {}), access="read")
    result = await perform(ProjectSync(boards, Shown()), payload(), None)
    assert problems_in(result) == {"acme/5": (Problem(ProblemCode.NO_ACCESS),)}
    result = await perform(ProjectSync(FakeBoards(BOARD, access="none"), Shown()), payload(), None)
    assert problems_in(result) == {"acme/5": (Problem(ProblemCode.NO_ACCESS),)}


async def test_a_repository_known_to_name_no_project_gets_no_project_effect() -> None:
    """Unknown file: enqueued (the renderer decides); a file without `projects:`: not; with: enqueued."""
    files = {
        "acme/web": RepoFile("a1", "checks: {unlinked: success}\n"),
        "acme/app": RepoFile("b2", PROJECTS),
    }

    async def fetch(installation_id: int, repository: str) -> RepoFile | None:
        return files[repository]

    loader = ConfigLoader(fetch)
    surfaces = surfaces_under(loader)

    def kinds(repository: str) -> list[EffectKind]:
        return [effect.kind for effect in surfaces(7, Ticket(TicketKey(repository, 12)))]

    assert EffectKind.PROJECT_FIELDS in kinds("acme/web")
    await loader.load(7, "acme/web")
    await loader.load(7, "acme/app")
    assert kinds("acme/web") == [EffectKind.STATUS_COMMENT]
    assert EffectKind.PROJECT_FIELDS in kinds("acme/app")
