"""A PR's proposed `.github/railyard.yml` is compared with the file of the branch the PR
targets, and the answer is kept per head and base. A PR opened into `release` whose head
carries release's (broken) file proposes nothing there; retargeted to `main` without a push,
the same head now replaces the default branch's file, the configuration in force, and its
check must say so (SPEC *Configuration tools*: a PR that changes `.github/railyard.yml` gets
the config's problems in its `railyard` check). It is judged again whatever the stored base says:
one kept from before bases were, a same-second pair of retargets processed out of order, a
resync that stored the new base before the retarget's delivery came."""

from __future__ import annotations

from sqlalchemy import update

from app.store import pulls
from handlers.observe import pull_request_from
from support.world import CONFIG, REPO, World, pull_request_payload
from tests.e2e.test_surfaces import check_on, verdict

CONFIG_PATH = ".github/railyard.yml"
RELEASE_HEAD, HEAD = "7" * 40, "6" * 40
RELEASE_FILE = CONFIG + "tickets:\n  lable: ready\n"  # release's old file: in force nowhere
BRANCH = "docs/tweak"  # links no ticket: the check is `checks.unlinked` (success)
PROBLEM = "line 12: unknown key: tickets.lable (did you mean label?)"


def release_branch(world: World) -> None:
    """`release` exists and carries RELEASE_FILE (the stand-in reads a branch's files through a
    PR whose head is that branch, as tests/integration/test_proposed_config.py does)."""
    world.github.add_pull(
        REPO, 90, head_ref="release", head_sha=RELEASE_HEAD, files={CONFIG_PATH: RELEASE_FILE}
    )
    world.github.repositories[REPO].branches["release"] = RELEASE_HEAD


BLOCKED = ("action_required", f"{CONFIG_PATH} in this PR: {PROBLEM}")


async def opened_into_release(world: World) -> None:
    """PR #61 opened into `release` with release's own file at its head: nothing proposed."""
    release_branch(world)
    world.github.add_pull(
        REPO, 61, head_ref=BRANCH, head_sha=HEAD, base_ref="release", files={CONFIG_PATH: RELEASE_FILE}
    )
    opened = pull_request_payload("opened", 61, "Tidy the docs", head=HEAD, ref=BRANCH, base="release")
    await world.send("pull_request", opened)
    assert verdict(world, HEAD) == ("success", "no linked ticket")


def retarget(base: str, was: str, updated: str) -> dict:
    payload = pull_request_payload(
        "edited", 61, "Tidy the docs", head=HEAD, ref=BRANCH, base=base, updated=updated
    )
    payload["changes"] = {"base": {"ref": {"from": was}, "sha": {"from": RELEASE_HEAD}}}
    return payload


async def test_a_pr_retargeted_to_the_default_branch_is_judged_on_the_file_it_proposes(world: World) -> None:
    await opened_into_release(world)
    # Into release the file is release's own: nothing proposed (a backport).
    assert "cannot be used" not in check_on(world, HEAD).output["summary"]

    world.github.repositories[REPO].pulls[61].base_ref = "main"
    await world.send("pull_request", retarget("main", "release", "2026-11-30T10:05:00Z"))

    # The same head now proposes release's broken file as the default branch's: blocked.
    assert verdict(world, HEAD) == BLOCKED


async def test_the_same_head_opened_into_the_default_branch_is_blocked(world: World) -> None:
    """The control: the same head, opened into `main` from the start, gets the problem."""
    release_branch(world)
    world.github.add_pull(REPO, 61, head_ref=BRANCH, head_sha=HEAD, files={CONFIG_PATH: RELEASE_FILE})
    await world.send(
        "pull_request", pull_request_payload("opened", 61, "Tidy the docs", head=HEAD, ref=BRANCH)
    )
    assert verdict(world, HEAD) == BLOCKED


async def test_a_pr_stored_before_bases_were_kept_is_judged_again_when_retargeted(world: World) -> None:
    await opened_into_release(world)
    with world.database.write() as connection:  # the row as written before 0020: no base
        connection.execute(update(pulls.pull_requests).values(base_ref=None))

    world.github.repositories[REPO].pulls[61].base_ref = "main"
    await world.send("pull_request", retarget("main", "release", "2026-11-30T10:05:00Z"))

    assert verdict(world, HEAD) == BLOCKED


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


async def test_a_retarget_recorded_by_resync_before_its_delivery_is_still_judged(world: World) -> None:
    await opened_into_release(world)

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


async def test_out_of_order_retargets_back_to_a_base_judged_before_are_judged_on_githubs_base(
    world: World,
) -> None:
    await opened_into_release(world)

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
