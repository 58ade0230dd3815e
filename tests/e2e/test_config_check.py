"""A PR that changes `.github/railyard.yml` gets the new file's problems in its `railyard` check,
through the real server: the check reads the PR's files and the file at the PR's head."""

from __future__ import annotations

from support.world import CONFIG, FIX, REPO, World, pull_request_payload
from tests.e2e.test_surfaces import check_on, delivered_on_pull_request, verdict

CONFIG_PATH = ".github/railyard.yml"
BROKEN = CONFIG + "tickets:\n  lable: ready\n"  # CONFIG starts with an empty line: `lable` is on line 12
FILES, CONTENTS = f"/repos/{REPO}/pulls/34/files", f"/repos/{REPO}/contents/{CONFIG_PATH}"


def propose(world: World, text: str | None, number: int = 34) -> None:
    """PR `number` changes the configuration file to `text` (None: removes it) at its head."""
    world.github.repositories[REPO].pulls[number].files[CONFIG_PATH] = text


def contents_at(world: World, sha: str) -> int:
    """How many times the file was read at `sha`."""
    return len([c for c in world.github.calls_to("GET", CONTENTS) if c.query.get("ref") == sha])


async def test_a_pr_proposing_a_broken_config_gets_its_problems_in_the_check(world: World) -> None:
    """The check names the problem with its line and does not pass (`action_required`)."""
    propose(world, BROKEN)
    await world.send("pull_request", pull_request_payload("opened", 34, "Fixes #12"))
    run = check_on(world, FIX)
    problem = "line 12: unknown key: tickets.lable (did you mean label?)"
    assert (run.conclusion, run.output["title"]) == (
        "action_required",
        f"{CONFIG_PATH} in this PR: {problem}",
    )
    assert "`.github/railyard.yml` in this PR cannot be used" in run.output["summary"]
    assert f"- {problem}" in run.output["summary"]


async def test_the_check_stays_blocked_by_the_broken_config_after_acceptance(world: World) -> None:
    """Accepting the work at the head does not pass a PR whose config would refuse every command."""
    propose(world, BROKEN)
    await delivered_on_pull_request(world)
    await world.say("rita", "/accept")
    assert world.ticket().work.value == "accepted"  # the default branch's config still holds
    conclusion, title = verdict(world, FIX)
    assert conclusion == "action_required" and title.startswith(f"{CONFIG_PATH} in this PR: line 12:")
    assert "#12: accepted at this commit" in check_on(world, FIX).output["summary"]


async def test_fixing_the_config_in_a_new_push_passes_again(world: World) -> None:
    """A push that repairs the file gets a check without the problems on the new head."""
    propose(world, BROKEN)
    await world.send("pull_request", pull_request_payload("opened", 34, "Fixes #12"))
    fixed, new_head = CONFIG + "tickets:\n  label: ready\n", "b" * 40
    world.github.repositories[REPO].pulls[34].head_sha = new_head
    propose(world, fixed)
    pushed = pull_request_payload(
        "synchronize", 34, "Fixes #12", head=new_head, updated="2026-11-30T11:00:00Z"
    )
    await world.send("pull_request", pushed)
    assert verdict(world, new_head) == ("action_required", "#12: not a ticket")
    assert "cannot be used" not in check_on(world, new_head).output["summary"]


async def test_each_head_reads_the_file_at_it_once_and_lists_no_files(world: World) -> None:
    """No change to the file: one read of it at the head (the same blob as the default branch's:
    nothing to judge), never the PR's list of files; rendering again reads nothing."""
    await world.send("pull_request", pull_request_payload("opened", 34, "Fixes #12"))
    assert contents_at(world, FIX) == 1 and len(world.github.calls_to("GET", FILES)) == 0
    await world.send("pull_request", pull_request_payload("edited", 34, "Fixes #12"))
    await world.say("rachel", "/publish")  # the check on the same head is rendered again
    assert verdict(world, FIX) == ("action_required", "#12: awaiting claim")
    assert contents_at(world, FIX) == 1 and len(world.github.calls_to("GET", FILES)) == 0


async def test_a_pr_removing_the_config_onto_the_defaults_has_nothing_to_report(world: World) -> None:
    """A PR that deletes the file leaves the defaults (acme has no organization file): nothing to report."""
    propose(world, None)
    await world.send("pull_request", pull_request_payload("opened", 34, "Fixes #12"))
    assert contents_at(world, FIX) == 1  # answered 404
    assert verdict(world, FIX) == ("action_required", "#12: not a ticket")


async def test_a_valid_proposed_config_leaves_the_check_as_it_was(world: World) -> None:
    """A PR whose new file parses is judged on its tickets only."""
    propose(world, CONFIG + "claims:\n  max_silence_minutes: 60\n")
    await world.send("pull_request", pull_request_payload("opened", 34, "Fixes #12"))
    assert contents_at(world, FIX) == 1
    assert verdict(world, FIX) == ("action_required", "#12: not a ticket")
