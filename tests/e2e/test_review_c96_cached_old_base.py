"""Review of c96c2f8: the answer kept under (head, stored base) is returned without asking
GitHub the PR's base, so a stored base that is behind GitHub's still excuses the head when that
base's answer was kept earlier.

The commit's own scenario (two retargets in one second processed out of order, leaving the
stored base `release` while GitHub's is `main`) is fixed only when the PR had never been judged
on `release` before. Here it had: opened into `release` (release carries the head's broken file,
so nothing is proposed there and `(head, release) -> ()` is kept), retargeted to `main` (blocked,
correctly), then retargeted away and back within one second, the deliveries processed in the
other order. The last render reads stored base `release`, hits the kept `()`, never calls
`GET pulls/61`, and writes success although GitHub's base is `main` and merging would replace
the file in force with the broken one (app/github/proposed_config.py:48-50 return before
`_read` asks `_base`).
"""

from __future__ import annotations

import pytest

from support.world import REPO, World, pull_request_payload
from tests.e2e.test_config_check_retarget import (
    BLOCKED,
    BRANCH,
    CONFIG_PATH,
    HEAD,
    RELEASE_FILE,
    release_branch,
    retarget,
)
from tests.e2e.test_surfaces import verdict


@pytest.mark.xfail(
    strict=True,
    reason="c96c2f8: a kept (head, old base) answer is returned without asking GitHub the base; "
    "same-second retargets processed out of order leave success on a PR whose base is main",
)
async def test_out_of_order_retargets_back_to_a_base_already_judged_still_leave_success(
    world: World,
) -> None:
    release_branch(world)
    world.github.add_pull(
        REPO, 61, head_ref=BRANCH, head_sha=HEAD, base_ref="release", files={CONFIG_PATH: RELEASE_FILE}
    )
    opened = pull_request_payload("opened", 61, "Tidy the docs", head=HEAD, ref=BRANCH, base="release")
    await world.send("pull_request", opened)
    assert verdict(world, HEAD) == ("success", "no linked ticket")  # (HEAD, release) -> () kept

    world.github.repositories[REPO].pulls[61].base_ref = "main"
    await world.send("pull_request", retarget("main", "release", "2026-11-30T10:05:00Z"))
    assert verdict(world, HEAD) == BLOCKED

    # Within one second: main -> release, then release -> main. GitHub's PR targets main; the
    # deliveries are processed in the other order (a retry, another worker).
    away = retarget("release", "main", "2026-11-30T10:06:00Z")
    back = retarget("main", "release", "2026-11-30T10:06:00Z")
    await world.send("pull_request", back)
    await world.send("pull_request", away)

    assert world.github.repositories[REPO].pulls[61].base_ref == "main"
    assert verdict(world, HEAD) == BLOCKED
