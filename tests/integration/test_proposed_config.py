"""The check's reader of a PR's proposed `.github/railyard.yml` (app/github/proposed_config.py
`ProposedConfigs`) against the GitHub stand-in: the head's file, compared with the default
branch's, one read per head."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from app.github.client import GitHubClient
from app.github.config_loader import ConfigLoader
from app.github.proposed_config import ProposedConfigs
from app.github.reads import config_fetcher
from app.runtime.metrics import Metrics
from github_standin import Fault, StandinState, running_standin
from handlers.errors import TransientError
from support.world import FIX, REPO, standin_state
from tests.fakes import app_settings

CONFIG_PATH = ".github/railyard.yml"


@pytest.fixture
async def reader(tmp_path: object) -> AsyncIterator[tuple[ProposedConfigs, StandinState]]:
    """A reader over a client talking to the e2e stand-in state (PR #34 at FIX)."""
    state = standin_state()
    async with running_standin(state) as standin:
        github = GitHubClient(app_settings("sqlite://", GITHUB_API_URL=standin.url), Metrics())
        await github.start()
        try:
            yield ProposedConfigs(github, ConfigLoader(config_fetcher(github))), state
        finally:
            await github.close()


async def test_a_wide_pr_costs_one_read_of_the_file_at_its_head(
    reader: tuple[ProposedConfigs, StandinState],
) -> None:
    """A PR with 3,000 changed files, its broken config among them: the file is read at the head
    and at the base, and judged; the PR's list of files (30 pages) is never asked for."""
    proposed, state = reader
    files = state.repositories[REPO].pulls[34].files
    files.update({f"-vendored/{n:04}.py": "pass\n" for n in range(3000)})
    files[CONFIG_PATH] = "limits:\n  commands_per_hour: lots\n"

    problems = await proposed.problems(7, REPO, 34, FIX)

    assert problems == ("line 2: limits.commands_per_hour: expected a whole number, got 'lots'",)
    assert state.calls_to("GET", f"/repos/{REPO}/pulls/34/files") == []
    reads = state.calls_to("GET", f"/repos/{REPO}/contents/{CONFIG_PATH}")
    # the head's file, then (it differs from the file in force) the base branch's
    assert [call.query["ref"] for call in reads if call.query.get("ref")] == [FIX, "main"]


async def test_a_head_with_the_default_branchs_file_proposes_nothing(
    reader: tuple[ProposedConfigs, StandinState],
) -> None:
    """The same blob as the default branch's is no proposal, whatever the default branch's holds
    (a broken file in force is reported where it is in force, not on every PR)."""
    proposed, state = reader
    state.repositories[REPO].files[CONFIG_PATH] = "tickets:\n  lable: x\n"

    assert await proposed.problems(7, REPO, 34, FIX) == ()
    state.repositories[REPO].pulls[34].files[CONFIG_PATH] = "tickets:\n  lable: y\n"
    state.repositories[REPO].pulls[34].head_sha = "b" * 40
    assert await proposed.problems(7, REPO, 34, "b" * 40) == (
        "line 2: unknown key: tickets.lable (did you mean label?)",
    )


async def test_each_heads_file_is_read_once(reader: tuple[ProposedConfigs, StandinState]) -> None:
    """Asking again about a head that keeps the file in force makes no call. One that proposes a
    file reads it once; its PR's base is asked again each time (a retarget needs no push)."""
    proposed, state = reader
    assert await proposed.problems(7, REPO, 34, FIX, "main") == ()
    calls = len(state.calls)
    assert await proposed.problems(7, REPO, 34, FIX, "main") == ()
    assert len(state.calls) == calls

    state.repositories[REPO].pulls[34].files[CONFIG_PATH] = "tickets:\n  lable: x\n"
    state.repositories[REPO].pulls[34].head_sha = "b" * 40
    first = await proposed.problems(7, REPO, 34, "b" * 40, "main")
    assert first == ("line 2: unknown key: tickets.lable (did you mean label?)",)
    calls = len(state.calls)
    assert await proposed.problems(7, REPO, 34, "b" * 40, "main") == first
    again = [(c.path, c.query.get("ref")) for c in state.calls[calls:]]
    assert (f"/repos/{REPO}/contents/{CONFIG_PATH}", "b" * 40) not in again
    assert (f"/repos/{REPO}/pulls/34", None) in again


async def test_a_pull_request_github_does_not_know_has_no_problems(
    reader: tuple[ProposedConfigs, StandinState],
) -> None:
    """A head GitHub does not know (a 404: the PR deleted, another repository's) has no problems."""
    proposed, _ = reader

    assert await proposed.problems(7, REPO, 999, "c" * 40) == ()


async def test_a_refused_read_leaves_the_check_to_its_tickets(
    reader: tuple[ProposedConfigs, StandinState],
) -> None:
    """A 403 (the app lacks a permission) is no problem to report: the check is still written."""
    proposed, state = reader
    state.repositories[REPO].pulls[34].files[CONFIG_PATH] = "tickets:\n  lable: x\n"
    state.inject("GET", r"/contents/\.github/railyard\.yml", Fault(status=403))

    assert await proposed.problems(7, REPO, 34, FIX) == ()


async def test_a_server_error_is_raised_for_the_outbox_to_retry(
    reader: tuple[ProposedConfigs, StandinState],
) -> None:
    """A 5xx is transient: raised (the effect is retried), and nothing is remembered for the head."""
    proposed, state = reader
    state.repositories[REPO].pulls[34].files[CONFIG_PATH] = "tickets:\n  lable: x\n"
    state.inject("GET", r"/contents/\.github/railyard\.yml", Fault(status=502))

    with pytest.raises(TransientError):
        await proposed.problems(7, REPO, 34, FIX)
    assert await proposed.problems(7, REPO, 34, FIX) == (
        "line 2: unknown key: tickets.lable (did you mean label?)",
    )


async def test_a_proposed_file_that_extends_is_judged_with_the_base_on_its_default_branch(
    reader: tuple[ProposedConfigs, StandinState],
) -> None:
    """`_extends: .github` in the PR: acme/.github's file (read from its default branch, not the
    PR's head) is laid under it, and a problem in it is reported naming acme/.github, without
    quoting that repository's file (its values are not the PR author's to read)."""
    proposed, state = reader
    state.add_repository("acme/.github", files={CONFIG_PATH: "limits:\n  commands_per_hour: lots\n"})
    state.repositories[REPO].pulls[34].files[CONFIG_PATH] = "_extends: .github\n"

    problems = await proposed.problems(7, REPO, 34, FIX)

    assert problems == (
        "the file of acme/.github, which this one extends, cannot be used with it (1 problem(s) "
        "there, not quoted on a pull request; `railyard validate` or the status comment of a "
        "ticket there shows them)",
    )
    assert not any("lots" in problem for problem in problems)
    [read] = state.calls_to("GET", f"/repos/acme/.github/contents/{CONFIG_PATH}")
    assert "ref" not in read.query


async def test_a_proposed_file_extending_a_repository_that_does_not_exist_is_a_problem(
    reader: tuple[ProposedConfigs, StandinState],
) -> None:
    """GitHub answers 404 for acme/shared: merged as it is, every command would be refused."""
    proposed, state = reader
    state.repositories[REPO].pulls[34].files[CONFIG_PATH] = "_extends: shared\n"

    assert await proposed.problems(7, REPO, 34, FIX) == (
        "line 1: _extends: acme/shared has no .github/railyard.yml on its default branch "
        "(or the app cannot read that repository)",
    )


async def test_a_proposed_file_extending_a_good_base_has_no_problems(
    reader: tuple[ProposedConfigs, StandinState],
) -> None:
    """A valid base and a valid override: the check has nothing to say about the file."""
    proposed, state = reader
    state.add_repository("acme/.github", files={CONFIG_PATH: "limits:\n  commands_per_hour: 3\n"})
    state.repositories[REPO].pulls[34].files[CONFIG_PATH] = (
        "_extends: acme/.github\nlimits: {attempts_per_ticket: 2}\n"
    )

    assert await proposed.problems(7, REPO, 34, FIX) == ()


RELEASE_HEAD, BACKPORT = "7" * 40, "8" * 40


def backport_into_release(state: StandinState, file: str | None) -> None:
    """A `release` branch whose `.github/railyard.yml` is `file` (None: it has none), and PR #36
    into it at BACKPORT, keeping that file and fixing `src/fix.py`. (The stand-in reads a
    branch's files through a PR whose head is that branch: #90 stands for `release`.)"""
    state.add_pull(REPO, 90, head_ref="release", head_sha=RELEASE_HEAD, files={CONFIG_PATH: file})
    state.repositories[REPO].branches["release"] = RELEASE_HEAD
    state.add_pull(
        REPO, 36, head_ref="backport-12", head_sha=BACKPORT, base_ref="release",
        files={CONFIG_PATH: file, "src/fix.py": "pass\n"},
    )  # fmt: skip


RELEASE_FILE = "tickets:\n  lable: x\n"  # the release branch's old file: never in force


async def test_a_backport_that_leaves_its_base_branchs_file_alone_proposes_nothing(
    reader: tuple[ProposedConfigs, StandinState],
) -> None:
    """`release` carries an older `.github/railyard.yml` (only default branches count, so it is
    in force nowhere). PR #36 backports a fix into `release` and does not touch the file: its
    head has release's file, byte for byte: the file is compared with its base's, not only with
    the one in force, and nothing is proposed. One that changes release's file is judged."""
    proposed, state = reader
    backport_into_release(state, RELEASE_FILE)

    assert await proposed.problems(7, REPO, 36, BACKPORT) == ()  # its base asked of GitHub
    # A backport that does change release's file is judged.
    state.repositories[REPO].pulls[36].files[CONFIG_PATH] = "limits:\n  commands_per_hour: lots\n"
    state.repositories[REPO].pulls[36].head_sha = "9" * 40
    assert await proposed.problems(7, REPO, 36, "9" * 40, "release") == (
        "line 2: limits.commands_per_hour: expected a whole number, got 'lots'",
    )


async def test_the_answer_for_a_head_follows_the_base_it_is_asked_for(
    reader: tuple[ProposedConfigs, StandinState],
) -> None:
    """Asked again for the same head under another base (a PR retargeted), it judges again."""
    proposed, state = reader
    state.add_pull(REPO, 90, head_ref="release", head_sha=RELEASE_HEAD, files={CONFIG_PATH: RELEASE_FILE})
    state.repositories[REPO].branches["release"] = RELEASE_HEAD
    state.add_pull(
        REPO, 61, head_ref="docs", head_sha="6" * 40, base_ref="release", files={CONFIG_PATH: RELEASE_FILE}
    )

    assert await proposed.problems(7, REPO, 61, "6" * 40, "release") == ()
    state.repositories[REPO].pulls[61].base_ref = "main"  # retargeted, no push
    assert await proposed.problems(7, REPO, 61, "6" * 40, "main") == (
        "line 2: unknown key: tickets.lable (did you mean label?)",
    )


async def test_a_passing_404_on_the_pull_read_is_not_kept(
    reader: tuple[ProposedConfigs, StandinState],
) -> None:
    """GitHub will not say the PR's base once (a 404 right after it opens): the stored base is
    taken, the file judged, and nothing kept that a later answer could not correct."""
    proposed, state = reader
    state.repositories[REPO].pulls[34].files[CONFIG_PATH] = "tickets:\n  lable: x\n"
    state.inject("GET", r"/pulls/34$", Fault(status=404))

    await proposed.problems(7, REPO, 34, FIX, "main")  # the glitch: whatever it answers now

    # GitHub answers again; the stored base was `main` all along, and main's file is not this one.
    assert await proposed.problems(7, REPO, 34, FIX, "main") == (
        "line 2: unknown key: tickets.lable (did you mean label?)",
    )


ORG_FILE = "_extends: policy\nlimits:\n  commands_per_hour: 3\n"  # fine for acme/.github itself


async def test_removing_the_own_file_onto_an_unusable_organization_file_is_reported(
    reader: tuple[ProposedConfigs, StandinState],
) -> None:
    """A PR that deletes the repository's own file puts its organization's in force once merged:
    judged as that (here a file that says `_extends`, which one others start from may not)."""
    proposed, state = reader
    state.add_repository("acme/policy", files={CONFIG_PATH: "limits:\n  attempts_per_ticket: 2\n"})
    state.add_repository("acme/.github", files={CONFIG_PATH: ORG_FILE})
    state.repositories[REPO].pulls[34].files[CONFIG_PATH] = None  # PR #34 deletes the file

    problems = await proposed.problems(7, REPO, 34, FIX, "main")
    assert problems and "acme/.github" in problems[-1]  # named, not quoted (another repository's)
