"""GitHub Projects through the real server: the ticket's card in acme's project 5 follows the
rails (a card a person moved is set back at the next change), and an option the project lacks
is said once on the status comment."""

from __future__ import annotations

from app.github.config import CONFIG_PATH
from app.store.effects import effect_counts
from app.views.project_text import every_option
from policies.projects import ProjectRail
from support.world import CONFIG, REPO, World, pull_request_payload

PROJECTS = """
projects:
  - owner: acme
    number: 5
    add_items: true
    fields: {repository: Code}
"""


async def test_the_card_follows_the_rails_and_a_missing_option_is_said_once(world: World) -> None:
    """Published: added, Work open; a person drags it to delivered; the PR sets it back to open
    and Code to PR open; claimed, with no option `claimed`: one line says so, once."""
    work = [option for option in every_option(ProjectRail.WORK) if option != "claimed"]
    fields = {
        "Work": work,
        "Code": every_option(ProjectRail.REPOSITORY),
        "Deployment": every_option(ProjectRail.DEPLOYMENT),
    }
    project = world.github.projects.add_project("acme", 5, fields)
    world.github.installations[7].permissions["organization_projects"] = "write"
    world.github.repositories[REPO].files[CONFIG_PATH] = CONFIG + PROJECTS
    await world.say("rachel", "/publish")
    assert project.values_of(REPO, 12)["Work"] == "open"
    world.github.projects.move(project, REPO, 12, "Work", "delivered")  # moves no rail
    await world.send("pull_request", pull_request_payload("opened", 34, "Fixes #12"))
    shown = project.values_of(REPO, 12)
    assert (shown["Work"], shown["Code"]) == ("open", "PR open") and "Deployment" in shown
    await world.say("cody", "/claim")
    [body] = world.status_comments()
    assert body.startswith("**Work: claimed · Repository: PR open (#34)")
    assert body.count("**Project acme/5.**") == 1
    assert "its field `Work` has no option `claimed`" in body
    # Done, not retried: nothing failed, and a later change says it no more often.
    await world.send("pull_request", pull_request_payload("edited", 34, "Fixes #12 (edited)"))
    assert effect_counts(world.database).get("failed") is None
    [body] = world.status_comments()
    assert body.count("**Project acme/5.**") == 1 and project.values_of(REPO, 12)["Work"] == "open"
