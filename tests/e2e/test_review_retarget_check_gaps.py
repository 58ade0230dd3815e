"""Review of 57073be: a PR retargeted without a push gets its `railyard` check again, judged
against the new base. `handlers/pull_requests.py _edit_changes_no_check` decides that by
comparing the event's base with the stored PR's; where the stored base is unknown or not the
PR's newest, the check judged against the old base stays (SPEC *Configuration tools*: a PR that
changes `.github/railyard.yml` gets the config's problems in its `railyard` check)."""

from __future__ import annotations

import pytest
from sqlalchemy import update

from app.store import pulls
from handlers.observe import pull_request_from
from support.world import REPO, World, pull_request_payload
from tests.e2e.test_config_check_retarget import (
    BRANCH,
    CONFIG_PATH,
    HEAD,
    PROBLEM,
    RELEASE_FILE,
    RELEASE_HEAD,
    release_branch,
)
from tests.e2e.test_surfaces import verdict

BLOCKED = ("action_required", f"{CONFIG_PATH} in this PR: {PROBLEM}")


def retarget(base: str, was: str, updated: str) -> dict:
    payload = pull_request_payload(
        "edited", 61, "Tidy the docs", head=HEAD, ref=BRANCH, base=base, updated=updated
    )
    payload["changes"] = {"base": {"ref": {"from": was}, "sha": {"from": RELEASE_HEAD}}}
    return payload


@pytest.mark.xfail(
    strict=True,
    reason=(
        "handlers/pull_requests.py:193 _edit_changes_no_check takes a stored base_ref of None "
        "(a PR stored before migration 0020) as the same base: the retarget from release to main "
        "renders no check, so the success judged against release's file stays"
    ),
)
async def test_a_pr_stored_before_bases_were_kept_is_judged_again_when_retargeted(world: World) -> None:
    release_branch(world)
    world.github.add_pull(
        REPO, 61, head_ref=BRANCH, head_sha=HEAD, base_ref="release", files={CONFIG_PATH: RELEASE_FILE}
    )
    opened = pull_request_payload("opened", 61, "Tidy the docs", head=HEAD, ref=BRANCH, base="release")
    await world.send("pull_request", opened)
    assert verdict(world, HEAD) == ("success", "no linked ticket")
    with world.database.write() as connection:  # the row as written before 0020: no base
        connection.execute(update(pulls.pull_requests).values(base_ref=None))

    world.github.repositories[REPO].pulls[61].base_ref = "main"
    await world.send("pull_request", retarget("main", "release", "2026-11-30T10:05:00Z"))

    assert verdict(world, HEAD) == BLOCKED


@pytest.mark.xfail(
    strict=True,
    reason=(
        "handlers/pull_requests.py:193 compares with the stored PR, and app/store/pulls.py:43 lets "
        "an event of the same second overwrite it: retargeted to release and back to main within "
        "one second, the two `edited` deliveries processed in the other order leave base release "
        "stored and the check rendered against it (success) though the PR targets main"
    ),
)
async def test_two_retargets_in_one_second_processed_out_of_order_leave_the_check_judged_on_the_base(
    world: World,
) -> None:
    release_branch(world)
    world.github.add_pull(REPO, 61, head_ref=BRANCH, head_sha=HEAD, files={CONFIG_PATH: RELEASE_FILE})
    await world.send(
        "pull_request", pull_request_payload("opened", 61, "Tidy the docs", head=HEAD, ref=BRANCH)
    )
    assert verdict(world, HEAD) == BLOCKED

    away = retarget("release", "main", "2026-11-30T10:05:00Z")
    back = retarget("main", "release", "2026-11-30T10:05:00Z")  # the same second
    # GitHub's PR targets main again; the deliveries are processed in the other order (the first
    # one retried after a transient failure, or by another worker).
    await world.send("pull_request", back)
    await world.send("pull_request", away)

    assert verdict(world, HEAD) == BLOCKED


@pytest.mark.xfail(
    strict=True,
    reason=(
        "handlers/resync.py:68 stores the PR as GitHub answers it now (its new base included) and "
        "renders no check; the retarget's `edited` delivery, redelivered afterwards, then finds "
        "the stored base equal to its own (handlers/pull_requests.py:193) and renders none either: "
        "the success judged against release's file stays on a PR into main"
    ),
)
async def test_a_retarget_recorded_by_resync_before_its_delivery_is_still_judged(world: World) -> None:
    release_branch(world)
    world.github.add_pull(
        REPO, 61, head_ref=BRANCH, head_sha=HEAD, base_ref="release", files={CONFIG_PATH: RELEASE_FILE}
    )
    opened = pull_request_payload("opened", 61, "Tidy the docs", head=HEAD, ref=BRANCH, base="release")
    await world.send("pull_request", opened)
    assert verdict(world, HEAD) == ("success", "no linked ticket")

    # Retargeted to main during an outage; `railyard resync` then stores the PR as GitHub's pulls
    # API answers it (handlers/resync.py: pull_request_from + uow.remember, no check sent).
    world.github.repositories[REPO].pulls[61].base_ref = "main"
    edited = retarget("main", "release", "2026-11-30T10:05:00Z")
    now = pull_request_from(edited["pull_request"], REPO, 0.0)
    assert now is not None and now.base_ref == "main"
    with world.database.write() as connection:
        pulls.remember(connection, now, set())
    # GitHub redelivers the lost retarget.
    await world.send("pull_request", edited)

    assert verdict(world, HEAD) == BLOCKED
