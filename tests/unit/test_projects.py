"""GitHub Projects, the pure parts: the option each rail's field shows, which fields of an item
must change, what a project lacks, and the status comment's line about it."""

from __future__ import annotations

from datetime import timedelta

import pytest

from app.github.config import ConfigError, parse_repository_config
from app.views.project_text import every_option, project_notices, project_options
from app.views.render import StatusView, render_status_comment
from policies.projects import (
    Board,
    BoardField,
    FieldUpdate,
    Problem,
    ProblemCode,
    ProjectRail,
    Wanted,
    plan_item,
)
from policies.rails import PullRequestObserved
from policies.states import WorkState
from tests.fakes import START, Story

WORK = BoardField("F1", "Work", True, (("o1", "open"), ("o2", "claimed"), ("o3", "delivered")))
CODE = BoardField("F2", "Code", True, (("c1", "nothing reported yet"), ("c2", "PR open")))
REPOSITORY = BoardField("F3", "Repository", False)  # GitHub's own field
DEPLOYMENT = BoardField("F4", "Deployment", True, (("d1", "Not Deployed"),))
BOARD = Board("P1", (WORK, CODE, REPOSITORY, DEPLOYMENT))


def wanted(work: str = "claimed", code: str = "PR open", deployment: str = "not deployed") -> list[Wanted]:
    """What the fields should show, Repository renamed Code."""
    return [
        Wanted(ProjectRail.WORK, "Work", work),
        Wanted(ProjectRail.REPOSITORY, "Code", code),
        Wanted(ProjectRail.DEPLOYMENT, "Deployment", deployment),
    ]


def test_only_the_fields_that_differ_are_updated() -> None:
    """An item already showing Work: claimed gets only its Code and Deployment set."""
    plan = plan_item(BOARD, wanted(), {"F1": "o2"})
    assert plan.updates == (
        FieldUpdate(ProjectRail.REPOSITORY, "F2", "c2"),
        FieldUpdate(ProjectRail.DEPLOYMENT, "F4", "d1"),
    )
    assert plan.problems == ()


def test_an_item_showing_the_rails_needs_no_write() -> None:
    """Nothing differs: no update at all (the card a person moved is set back only when it differs)."""
    assert plan_item(BOARD, wanted(), {"F1": "o2", "F2": "c2", "F4": "d1"}).updates == ()
    moved = plan_item(BOARD, wanted(), {"F1": "o3", "F2": "c2", "F4": "d1"})
    assert moved.updates == (FieldUpdate(ProjectRail.WORK, "F1", "o2"),)


def test_names_match_without_regard_to_case() -> None:
    """`work` finds the field Work, `not deployed` the option Not Deployed."""
    plan = plan_item(BOARD, [Wanted(ProjectRail.WORK, "work", "OPEN")], {})
    assert plan.updates == (FieldUpdate(ProjectRail.WORK, "F1", "o1"),)


def test_a_missing_field_option_or_single_select_is_a_problem_and_the_others_are_still_set() -> None:
    """No option `accepted`, GitHub's own Repository field, no field Stage: three problems, and
    the Deployment field is set all the same."""
    asked = [
        Wanted(ProjectRail.WORK, "Work", "accepted"),
        Wanted(ProjectRail.REPOSITORY, "Repository", "merged"),
        Wanted(ProjectRail.DEPLOYMENT, "Deployment", "not deployed"),
        Wanted(ProjectRail.DEPLOYMENT, "Stage", "x"),
    ]
    plan = plan_item(BOARD, asked, {})
    assert plan.problems == (
        Problem(ProblemCode.NO_OPTION, "Work", "accepted"),
        Problem(ProblemCode.NOT_SINGLE_SELECT, "Repository"),
        Problem(ProblemCode.NO_FIELD, "Stage"),
    )
    assert plan.updates == (FieldUpdate(ProjectRail.DEPLOYMENT, "F4", "d1"),)


def test_a_problem_survives_its_round_trip_through_the_stored_result() -> None:
    """What the effect keeps reads back as the same problem."""
    problem = Problem(ProblemCode.NO_OPTION, "Work", "accepted")
    assert Problem.from_data(problem.to_data()) == problem


def test_the_options_are_the_status_comment_words_for_the_rails() -> None:
    """A claimed ticket with an open PR: `claimed`, `PR open` (no PR number), `not deployed`."""
    pull = PullRequestObserved(
        number=34,
        url="https://github.com/acme/app/pull/34",
        linked=True,
        open=True,
        merged=False,
        head_sha="a1b2c3",
        head_ref="agent/12",
        merge_commit=None,
        updated_at=START + timedelta(minutes=5),
    )
    ticket = Story().walk_to(WorkState.CLAIMED).observe(pull).ticket
    assert project_options(ticket) == {
        ProjectRail.WORK: "claimed",
        ProjectRail.REPOSITORY: "PR open",
        ProjectRail.DEPLOYMENT: "not deployed",
    }


def test_every_state_of_every_rail_has_an_option_to_create() -> None:
    """The lists the docs tell people to create cover every state, with no repeats."""
    for rail in ProjectRail:
        options = every_option(rail)
        assert len(options) == len(set(options)) >= 5
    assert "nothing reported yet" in every_option(ProjectRail.REPOSITORY)


def test_the_status_comment_says_once_what_a_project_lacks() -> None:
    """One line per project naming the field and the option; user text escaped."""
    problems = (Problem(ProblemCode.NO_OPTION, "Work", "accepted"), Problem(ProblemCode.NO_FIELD, "<b>Stage"))
    [blank, line] = project_notices([("acme/5", problems)])
    assert blank == ""
    assert line.startswith("**Project acme/5.**")
    assert "field `Work` has no option `accepted`" in line and "<b>" not in line
    ticket = Story().walk_to(WorkState.OPEN).ticket
    body = render_status_comment(StatusView(ticket, project_problems=(("acme/5", problems),)))
    [_, named] = project_notices([("acme/5", (Problem(ProblemCode.NO_OPTION, "Work_state", "A&B"),))])
    assert "field “Work\\_state” has no option “A&amp;B”" in named  # escapes outside a code span
    assert body.count("**Project acme/5.**") == 1
    assert "Project" not in render_status_comment(StatusView(ticket))


def test_a_project_entry_defaults_to_the_three_field_names_and_no_adding() -> None:
    """`{owner, number}` alone: fields Work, Repository, Deployment; add_items false."""
    [project] = parse_repository_config("projects: [{owner: acme, number: 5}]").projects
    assert (project.owner, project.number, project.add_items) == ("acme", 5, False)
    assert (project.fields.work, project.fields.repository, project.fields.deployment) == (
        "Work",
        "Repository",
        "Deployment",
    )


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (
            "projects: [{owner: acme, number: 5, add_item: true}]",
            "projects[0].add_item (did you mean add_items?)",
        ),
        ("projects: [{owner: -acme, number: 5}]", "projects[0].owner: expected an organization's login"),
        ("projects: [{owner: acme, number: 0}]", "projects[0].number: must be at least 1"),
        ("projects: [{owner: acme, number: 5, add_items: 'yes'}]", "projects[0].add_items"),
        (
            "projects: [{owner: acme, number: 5, fields: {work: Code, repository: code}}]",
            "three different names",
        ),
        ("projects: [" + ", ".join(["{owner: acme, number: 1}"] * 6) + "]", "projects"),
    ],
)
def test_a_bad_project_entry_is_reported_with_its_location(text: str, problem: str) -> None:
    """Misspelt keys get a suggestion; logins, numbers, flags, names and the list are bounded."""
    with pytest.raises(ConfigError) as raised:
        parse_repository_config(text)
    assert problem in raised.value.message
