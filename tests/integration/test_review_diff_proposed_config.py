"""Review of a759fe3..HEAD (change 3, `ProposedConfigs` compares the head's file with the default
branch's): a PR that does not touch `.github/railyard.yml` is judged as if it proposed it."""

from __future__ import annotations

from app.github.proposed_config import ProposedConfigs
from github_standin import StandinState
from support.world import REPO
from tests.integration.test_proposed_config import CONFIG_PATH, reader  # noqa: F401 (fixture)

RELEASE_HEAD, BACKPORT = "7" * 40, "8" * 40
RELEASE_FILE = "tickets:\n  lable: x\n"  # the release branch's old file: never in force, never read


async def test_a_backport_that_leaves_its_base_branchs_file_alone_proposes_nothing(
    reader: tuple[ProposedConfigs, StandinState],  # noqa: F811
) -> None:
    """`release` carries an older `.github/railyard.yml` (only default branches count, so it is
    in force nowhere). PR #36 backports a fix into `release` and does not touch the file: its
    head has release's file, byte for byte. Before this change the check listed the PR's files
    and judged nothing; now every PR into `release` is blocked by a file it does not propose."""
    proposed, state = reader
    repository = state.repositories[REPO]
    # The `release` branch itself, so a ref of `release` reads its files (the stand-in knows refs
    # as the default branch's or a PR's head: #90 stands for the branch; its list of changed
    # files is relative to `main`, where GitHub's for #36 would be relative to `release`).
    state.add_pull(REPO, 90, head_ref="release", head_sha=RELEASE_HEAD, files={CONFIG_PATH: RELEASE_FILE})
    repository.branches["release"] = RELEASE_HEAD
    state.add_pull(
        REPO, 36, head_ref="backport-12", head_sha=BACKPORT, base_ref="release",
        files={CONFIG_PATH: RELEASE_FILE, "src/fix.py": "pass\n"},
    )  # fmt: skip

    assert await proposed.problems(7, REPO, 36, BACKPORT) == ()  # its base asked of GitHub
    # A backport that does change release's file is judged.
    state.repositories[REPO].pulls[36].files[CONFIG_PATH] = "limits:\n  commands_per_hour: lots\n"
    state.repositories[REPO].pulls[36].head_sha = "9" * 40
    assert await proposed.problems(7, REPO, 36, "9" * 40, "release") == (
        "line 2: limits.commands_per_hour: expected a whole number, got 'lots'",
    )
