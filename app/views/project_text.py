"""GitHub Projects' words: the option each rail's field shows (the status comment's words for
the rail, without PR numbers or branch names), and the status comment's line on what a project
lacks."""

from __future__ import annotations

from collections.abc import Sequence

from app.views.markdown import escape_inline
from policies.model import Ticket
from policies.projects import Problem, ProblemCode, ProjectRail
from policies.states import DeploymentState, IntegrationState, WorkState

REPOSITORY_OPTIONS = {
    IntegrationState.NOT_APPLICABLE: "not applicable",
    IntegrationState.UNREPORTED: "nothing reported yet",
    IntegrationState.BRANCH_REPORTED: "branch reported",
    IntegrationState.PULL_REQUEST_OPEN: "PR open",
    IntegrationState.BLOCKED: "blocked",
    IntegrationState.MERGED: "merged",
}
"""The Repository field's options, as the status comment's headline words the rail."""


def work_option(state: WorkState) -> str:
    """The Work field's option: the state as the headline shows it (`claimed`)."""
    return state.value


def deployment_option(state: DeploymentState) -> str:
    """The Deployment field's option: the headline's words (`not deployed`)."""
    return state.value.replace("_", " ")


def project_options(ticket: Ticket) -> dict[ProjectRail, str]:
    """The option each rail's field should show for the ticket now."""
    work = ticket.work if ticket.work is not None else WorkState.DRAFT
    return {
        ProjectRail.WORK: work_option(work),
        ProjectRail.REPOSITORY: REPOSITORY_OPTIONS[ticket.rails.integration],
        ProjectRail.DEPLOYMENT: deployment_option(ticket.rails.deployment),
    }


def every_option(rail: ProjectRail) -> list[str]:
    """Every option a rail's field needs (what docs/projects.md tells people to create)."""
    if rail is ProjectRail.WORK:
        return [work_option(state) for state in WorkState]
    if rail is ProjectRail.REPOSITORY:
        return list(REPOSITORY_OPTIONS.values())
    return [deployment_option(state) for state in DeploymentState]


def _named(text: str) -> str:
    """A field's or option's name in a sentence: in a code span when it needs no escaping (shown
    exactly), else escaped between quotes, since a code span would show the escapes themselves
    (`Work\\_state`, `A&amp;B`)."""
    escaped = escape_inline(text, limit=100)
    return f"`{escaped}`" if escaped == text else f"“{escaped}”"


def _problem_words(problem: Problem) -> str:
    field = _named(problem.field or "")
    if problem.code is ProblemCode.NO_PROJECT:
        return "railyard cannot find it (is it the organization's, and is the app installed there?)"
    if problem.code is ProblemCode.NO_ACCESS:
        return "the app may not read or write it (grant it Organization projects: read and write)"
    if problem.code is ProblemCode.NO_FIELD:
        return f"it has no field {field}"
    if problem.code is ProblemCode.NOT_SINGLE_SELECT:
        # GitHub's own Repository field holds that name: railyard's needs another (`fields:`).
        return f"its field {field} is not a single-select field (`fields:` can name railyard's another)"
    option = _named(problem.option or "")
    return f"its field {field} has no option {option}"


def project_notices(problems: Sequence[tuple[str, Sequence[Problem]]]) -> list[str]:
    """The status comment's lines for what the configured projects lack, by project
    (`acme/5`): one line each, said until it is fixed (then gone at the ticket's next change)."""
    lines: list[str] = []
    for project, found in problems:
        if not found:
            continue
        said = "; ".join(_problem_words(problem) for problem in found)
        name = escape_inline(project, limit=100)
        lines += ["", f"**Project {name}.** Its item cannot show every rail: {said}."]
    return lines
