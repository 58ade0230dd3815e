"""Review of 7ac6966: `ProposedConfigs.problems` depends on the PR's base since then, but its
answer is still kept per head (`repo#pull@head`): asked again for the same head under another
base (a PR retargeted), it answers what it judged against the old base."""

from __future__ import annotations

import pytest

from app.github.proposed_config import ProposedConfigs
from github_standin import StandinState
from support.world import REPO
from tests.integration.test_proposed_config import reader  # noqa: F401

CONFIG_PATH = ".github/railyard.yml"
RELEASE_HEAD, HEAD = "7" * 40, "6" * 40
RELEASE_FILE = "tickets:\n  lable: x\n"  # release's old file: in force nowhere


@pytest.mark.xfail(
    strict=True,
    reason=(
        "app/github/proposed_config.py ProposedConfigs.problems (line 45) keys its answer by "
        "repository, PR and head only, not by the base it compared with: the head judged () "
        "against `release` stays () when asked with base `main`, where it replaces the file in force"
    ),
)
async def test_the_answer_for_a_head_follows_the_base_it_is_asked_for(
    reader: tuple[ProposedConfigs, StandinState],  # noqa: F811
) -> None:
    proposed, state = reader
    state.add_pull(REPO, 90, head_ref="release", head_sha=RELEASE_HEAD, files={CONFIG_PATH: RELEASE_FILE})
    state.repositories[REPO].branches["release"] = RELEASE_HEAD
    state.add_pull(
        REPO, 61, head_ref="docs", head_sha=HEAD, base_ref="release", files={CONFIG_PATH: RELEASE_FILE}
    )

    assert await proposed.problems(7, REPO, 61, HEAD, "release") == ()
    state.repositories[REPO].pulls[61].base_ref = "main"  # retargeted, no push
    assert await proposed.problems(7, REPO, 61, HEAD, "main") == (
        "line 2: unknown key: tickets.lable (did you mean label?)",
    )
