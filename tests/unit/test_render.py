"""The status comment and the check-run's text, rendered from state alone.

Golden files under `tests/fixtures/status/` hold the expected comment for each combination of
rails SPEC's examples mention; `RAILYARD_UPDATE_GOLDEN=1 pytest tests/unit/test_render.py`
rewrites them (then read the diff before committing it).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.views.gate_text import gated_detail
from app.views.render import (
    COMMENT_LIMIT,
    SUMMARY_LIMIT,
    StatusView,
    render_check_summary,
    render_status_comment,
)
from app.views.status_json import parse_status_line, status_comment_body
from policies.checks import Linked, verdict
from policies.commands import Accept, AcceptMode, Claim, Deliver, Reopen, SendBack
from policies.model import Actor
from policies.notices import DeploymentGated, IssueStateObserved, OverdueObserved
from policies.rails import (
    CheckObserved,
    DeploymentObserved,
    MergeabilityObserved,
    PullRequestObserved,
    RailPolicy,
)
from policies.reverts import RevertObserved
from policies.states import Role, WorkState
from tests.fakes import MAINTAINER, REVIEWER, RUNNER, START, Story

GOLDEN = Path(__file__).parent.parent / "fixtures" / "status"
HEAD = "a1b2c3d4e5f6"


def pull(number: int = 34, *, state: str = "open", head: str = HEAD, minute: int = 30) -> PullRequestObserved:
    """A PR linking the ticket, as a pull_request event shows it."""
    return PullRequestObserved(
        number=number,
        url=f"https://github.com/acme/app/pull/{number}",
        linked=True,
        open=state == "open",
        merged=state == "merged",
        head_sha=head,
        head_ref="agent/12-retries",
        merge_commit="f00dfeedbeef" if state == "merged" else None,
        updated_at=START + timedelta(minutes=minute),
        linked_at_merge=state == "merged",  # the merge event itself: it linked the ticket
    )


def deployed(deployment_id: int, status: str, environment: str = "production") -> DeploymentObserved:
    """A deployment containing the merge, with its newest status."""
    return DeploymentObserved(deployment_id, environment, "f00dfeedbeef", True, status, deployment_id * 10)


def delivered_with_pr() -> Story:
    return Story().walk_to(WorkState.CLAIMED).observe(pull()).walk_to(WorkState.DELIVERED, pull=34)


SELF_REVIEWER = Actor("coder-bot[bot]", frozenset({Role.RUNNER, Role.REVIEWER}))

SCENARIOS: dict[str, Callable[[], StatusView]] = {
    "draft": lambda: StatusView(
        Story().walk_to(WorkState.DRAFT).ticket, Story().walk_to(WorkState.DRAFT).events
    ),
    "open": lambda: _view(Story().walk_to(WorkState.OPEN)),
    "claimed": lambda: _view(Story().walk_to(WorkState.CLAIMED)),
    "delivered-pr-open": lambda: _view(delivered_with_pr()),
    "accepted-pr-open-not-deployed": lambda: _view(delivered_with_pr().walk_to(WorkState.ACCEPTED)),
    "accepted-merged-deployed": lambda: _view(
        delivered_with_pr()
        .walk_to(WorkState.ACCEPTED)
        .observe(pull(state="merged", minute=40))
        .observe(deployed(7, "success"))
    ),
    "delivered-merged-deploying-unaccepted": lambda: _view(
        delivered_with_pr().observe(pull(state="merged", minute=40)).observe(deployed(7, "in_progress"))
    ),
    "delivered-blocked-by-check": lambda: _view(
        delivered_with_pr().observe(CheckObserved(HEAD, "ci", "failure", 99, START + timedelta(minutes=50)))
    ),
    "delivered-ci-awaiting-approval": lambda: _view(
        delivered_with_pr().observe(
            CheckObserved(HEAD, "build", "action_required", 98, START + timedelta(minutes=50), True)
        )
    ),
    "accepted-merged-reverted": lambda: _view(
        delivered_with_pr()
        .walk_to(WorkState.ACCEPTED)
        .observe(pull(state="merged", minute=40))
        .notice(RevertObserved(reverts=34, by=40, url="https://github.com/acme/app/pull/40"))
    ),
    "accepted-deploy-failed": lambda: _view(
        delivered_with_pr()
        .walk_to(WorkState.ACCEPTED)
        .observe(pull(state="merged", minute=40))
        .observe(deployed(8, "failure"))
    ),
    "sent-back": lambda: _view(
        delivered_with_pr().command(SendBack(feedback="The retry cap is still 10, not 5."), REVIEWER)
    ),
    "redelivered-after-send-back": lambda: _view(
        delivered_with_pr()
        .command(SendBack(feedback="The retry cap is still 10, not 5."), REVIEWER)
        .command(Deliver(summary="Cap is 5 now.", commit="0badc0ffee11", pull_request=34), RUNNER)
    ),
    "reopened-after-acceptance": lambda: _view(
        delivered_with_pr()
        .walk_to(WorkState.ACCEPTED)
        .command(Reopen(reason="Regression: retries are back in 2.3."), MAINTAINER)
    ),
    "released-by-claimant": lambda: _view(
        Story().walk_to(WorkState.CLAIMED).command(Reopen(reason="Out of my depth here."), RUNNER)
    ),
    "self-verified": lambda: _view(
        Story()
        .walk_to(WorkState.OPEN)
        .command(Claim(), SELF_REVIEWER)
        .command(Deliver(summary="Docs typo.", commit=HEAD), SELF_REVIEWER)
        .command(Accept(mode=AcceptMode.SELF), SELF_REVIEWER)
    ),
    "override": lambda: _view(
        delivered_with_pr().command(
            Accept(mode=AcceptMode.OVERRIDE, reason="Hotfix verified in staging."), MAINTAINER
        )
    ),
    "no-code-accepted": lambda: _view(_no_code()),
    "config-error": lambda: _view(
        Story().walk_to(WorkState.CLAIMED),
        config_error="roles.reviewer: expected a list of logins or @org/team",
    ),
    "issue-closed": lambda: _view(
        Story().walk_to(WorkState.DELIVERED).notice(IssueStateObserved(closed=True))
    ),
    "claim-overdue": lambda: _view(
        Story()
        .walk_to(WorkState.CLAIMED)
        .notice(OverdueObserved(1, "coder-bot[bot]", START + timedelta(minutes=3), 240))
    ),
    "two-environments": lambda: _view(
        Story(environments=("production", "staging"))
        .walk_to(WorkState.CLAIMED)
        .observe(pull())
        .walk_to(WorkState.ACCEPTED, pull=34)
        .observe(pull(state="merged", minute=40))
        .observe(deployed(9, "success", "staging"))
    ),
}


def _no_code() -> Story:
    from policies.commands import Draft, Publish
    from tests.fakes import REQUESTER_AND_OWNER

    story = Story()
    story.command(Draft(), REQUESTER_AND_OWNER)
    story.command(
        Publish(description="Write the runbook.", first_assignee="rachel", no_code=True), REQUESTER_AND_OWNER
    )
    story.command(Claim(), RUNNER)
    story.command(
        Deliver(summary="Runbook written.", artifacts=("https://docs.example.com/runbook",)), RUNNER
    )
    return story.command(Accept(), REVIEWER)


def _view(story: Story, **facts: object) -> StatusView:
    return StatusView(story.ticket, tuple(story.events), **facts)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_status_comment_matches_its_golden_file(name: str) -> None:
    """Each rail combination renders exactly as reviewed in its golden file."""
    rendered = render_status_comment(SCENARIOS[name]())
    golden = GOLDEN / f"{name}.md"
    if os.environ.get("RAILYARD_UPDATE_GOLDEN"):
        golden.write_text(rendered + "\n")
    assert rendered + "\n" == golden.read_text()


@pytest.mark.parametrize(
    ("name", "first_line"),
    [
        (
            "accepted-pr-open-not-deployed",
            "**Work: accepted · Repository: PR open (#34) · Deployment: not deployed**",
        ),
        ("accepted-merged-deployed", "**Work: accepted · Repository: merged (#34) · Deployment: deployed**"),
        (
            "delivered-merged-deploying-unaccepted",
            "**Work: delivered · Repository: merged (#34) · Deployment: deploying**",
        ),
        ("no-code-accepted", "**Work: accepted · Repository: not applicable · Deployment: not applicable**"),
        (
            "delivered-blocked-by-check",
            "**Work: delivered · Repository: blocked (#34: ci failed) · Deployment: not deployed**",
        ),
        (
            "delivered-ci-awaiting-approval",
            "**Work: delivered · Repository: blocked (#34: CI awaiting approval to run)"
            " · Deployment: not deployed**",
        ),
        (
            "accepted-merged-reverted",
            "**Work: accepted · Repository: merged in #34, reverted by #40 · Deployment: not deployed**",
        ),
    ],
)
def test_first_line_names_the_three_rails_in_plain_words(name: str, first_line: str) -> None:
    """The headline keeps the three facts apart, as SPEC's example line does."""
    assert render_status_comment(SCENARIOS[name]()).splitlines()[0] == first_line


def test_the_status_comment_does_not_blame_a_check_the_config_does_not_require() -> None:
    """`checks.required: [tests]`: PR #34 conflicts with its base and a `lint` check failed. The
    headline and the hidden status line name the conflict, not `lint`, which cannot block."""
    story = (
        delivered_with_pr()
        .observe(MergeabilityObserved(34, HEAD, False, START + timedelta(minutes=45)))
        .observe(CheckObserved(HEAD, "lint", "failure", 99, START + timedelta(minutes=50)))
    )
    body = status_comment_body(_view(story, policy=RailPolicy(required_checks=("tests",))))
    headline = body.splitlines()[0]
    assert "#34: conflicts with its base branch" in headline and "lint" not in headline, headline
    assert [b["reason"] for b in parse_status_line(body)["blocked_by"]] == ["conflict"]


def test_acceptance_kind_is_spelled_out() -> None:
    """Self-verification and overrides are never shown as independent review."""
    assert "self-verified by the runner, not an independent review" in render_status_comment(
        SCENARIOS["self-verified"]()
    )
    override = render_status_comment(SCENARIOS["override"]())
    assert "override by a maintainer, not a review" in override
    assert "independent review)" not in override


def test_long_history_is_summarised_under_the_limit_with_a_note() -> None:
    """Hundreds of attempts with long summaries stay under GitHub's limit; the newest are kept."""
    story = delivered_with_pr()
    for round_ in range(120):
        story.command(SendBack(feedback="x" * 3000), REVIEWER, attempts_per_ticket=None)
        story.command(Deliver(summary="y" * 3000, commit=f"{round_:012x}", pull_request=34), RUNNER)
    body = render_status_comment(_view(story))
    assert len(body) <= COMMENT_LIMIT - 100
    assert "older attempts not shown" in body
    assert f"#### Attempt {story.ticket.attempt} (current)" in body
    assert "#### Attempt 1 " not in body


# -- crafted user text -------------------------------------------------------------------

CRAFTED = (
    *("@octocat", "@acme/reviewers", "<!--", "-->", "<!-- railyard:effect:0123 -->", "<script>"),
    *("</details>", "```", "~~~", "    code", "|", "| a | b |", "\n", "\r\n", "#", "- ", "1. ", ">"),
    *("&lt;", "&#64;", "[x](javascript:alert(1))", "![i](http://x/y.png)", "$$", "\u202e", "\x00"),
    *("`", "*", "_", "\\"),
)
HOSTILE = st.one_of(
    st.text(max_size=300),
    st.lists(
        st.sampled_from(CRAFTED),
        max_size=40,
    ).map("".join),
)
LIVE_MENTION = re.compile(r"(?<![\w`])@[A-Za-z0-9]")


def _crafted(summary: str, feedback: str, reason: str, branch: str) -> StatusView:
    story = Story().walk_to(WorkState.OPEN)
    story.command(Claim(branch=branch or None), RUNNER)
    summary = summary if summary.strip() else "s"
    story.command(Deliver(summary=summary, commit=HEAD, artifacts=(f"https://x/{branch}",)), RUNNER)
    story.command(SendBack(feedback=feedback if feedback.strip() else "f"), REVIEWER)
    story.command(Deliver(summary=summary + "!", commit="0badc0ffee11"), RUNNER)
    story.command(Accept(mode=AcceptMode.OVERRIDE, reason=reason if reason.strip() else "r"), MAINTAINER)
    return _view(story, config_error=reason)


@settings(max_examples=150, deadline=None)
@given(summary=HOSTILE, feedback=HOSTILE, reason=HOSTILE, branch=HOSTILE)
def test_no_user_text_yields_markup_a_mention_a_marker_or_a_broken_fence(
    summary: str, feedback: str, reason: str, branch: str
) -> None:
    """Whatever people type, the comment has no raw HTML, no live mention, no marker, no fence."""
    body = render_status_comment(_crafted(summary, feedback, reason, branch))
    assert "<" not in body and ">" not in body.replace("\n>", "\n").lstrip(">")
    assert not LIVE_MENTION.search(body)
    assert "<!--" not in body and "-->" not in body
    for line in body.splitlines():
        stripped = line.lstrip("> \u00a0")
        assert not stripped.startswith(("```", "~~~")), line
        assert not line.startswith("    "), line
    assert len(body) <= COMMENT_LIMIT


@settings(max_examples=40, deadline=None)
@given(text=st.text(min_size=1, max_size=20_000), linked=st.integers(min_value=1, max_value=2000))
def test_huge_user_text_keeps_both_surfaces_under_their_limits(text: str, linked: int) -> None:
    """Long summaries and reasons are cut, and a PR may link thousands of tickets: neither the
    comment nor the check summary overflows GitHub's limits."""
    view = _crafted(text, text, text, "b")
    body = render_status_comment(view)
    assert len(body) <= COMMENT_LIMIT
    tickets = [Linked(n, view.ticket) for n in range(1, linked + 1)]
    summary = render_check_summary(verdict(HEAD, tickets), [("https://x", body)] * linked)
    assert len(summary) <= SUMMARY_LIMIT


def test_check_summary_links_the_status_comment_and_carries_its_body() -> None:
    """The check-run's summary is the status comment's body, with a link to the comment."""
    view = SCENARIOS["delivered-pr-open"]()
    body = render_status_comment(view)
    link = "https://github.com/acme/app/issues/12#issuecomment-77"
    summary = render_check_summary(verdict(HEAD, [Linked(12, view.ticket)]), [(link, body)])
    assert f"[Status comment]({link})" in summary
    assert body in summary
    assert summary.startswith("**#12: awaiting review**")


def test_the_check_summary_lists_a_proposed_configs_problems_escaped() -> None:
    """A PR's broken config file is listed line by line; text from the file cannot mention or open HTML."""
    problems = [
        "line 2: unknown key: tickets.lable (did you mean label?)",
        "line 5: '@mallory <b>x</b>' is bad",
    ]

    summary = render_check_summary(verdict(HEAD, []), [], config_problems=problems)

    assert "### `.github/railyard.yml` in this PR cannot be used" in summary
    assert "- line 2: unknown key: tickets.lable (did you mean label?)" in summary
    assert "@mallory" not in summary and "<b>" not in summary
    assert render_check_summary(verdict(HEAD, []), []) == "**no linked ticket**\n"  # unchanged


def test_a_gated_deployment_is_shown_among_the_recent_events_with_why() -> None:
    """The gate's answer for the ticket is on its status comment: where, at which commit, why."""
    story = Story().walk_to(WorkState.DELIVERED)
    story.notice(DeploymentGated("production", "abc1234" + "0" * 33, "rejected", "not_accepted"))
    story.notice(DeploymentGated("staging", "def5678" + "0" * 33, "approved"))
    comment = render_status_comment(_view(story))
    assert "deployment gated: production held back at `abc1234` (not accepted)" in comment
    assert "deployment gated: staging approved at `def5678`" in comment


def test_a_gated_environments_name_cannot_spell_a_marker_or_html() -> None:
    """The environment comes from GitHub's payload: it is escaped like any other user text."""
    detail = gated_detail({"environment": "<!-- railyard:state -->", "sha": "f" * 40, "state": "approved"})
    assert "<!--" not in detail and "railyard:" not in detail
    assert gated_detail({"environment": "prod", "sha": "not a sha", "state": "approved"}) == ": prod approved"
    assert gated_detail({"environment": "prod", "sha": "f" * 40, "state": "maybe"}) == ""
