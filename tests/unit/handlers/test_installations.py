"""`installation`, `installation_repositories` and `ping` through the handlers and the in-memory fakes."""

from __future__ import annotations

from tests.fakes.webhooks import installation, installation_repositories
from tests.unit.handlers.steps import world


async def test_an_installation_is_recorded_with_its_repositories() -> None:
    """A new installation is active and covers the repositories it was created with."""
    ports = world()
    await ports.dispatch("installation", installation("created", 5, "acme", ["acme/app", "Acme/Site"]))
    assert ports.store.installation(5) == ("acme", "active")
    assert ports.store.active_repositories(5) == ["acme/app", "acme/site"]


async def test_suspending_and_deleting_an_installation_are_recorded() -> None:
    """Suspending and then deleting an installation records each status in turn."""
    ports = world()
    await ports.dispatch("installation", installation("created", 5, "acme", []))
    await ports.dispatch("installation", installation("suspend", 5, "acme", []))
    assert ports.store.installation(5) == ("acme", "suspended")
    await ports.dispatch("installation", installation("deleted", 5, "acme", []))
    assert ports.store.installation(5) == ("acme", "deleted")


async def test_repositories_added_and_removed_are_recorded() -> None:
    """Repositories added to an installation are covered; removed ones no longer are."""
    ports = world()
    await ports.dispatch(
        "installation_repositories", installation_repositories(5, added=("acme/app", "acme/site"))
    )
    await ports.dispatch("installation_repositories", installation_repositories(5, removed=("acme/site",)))
    assert ports.store.active_repositories(5) == ["acme/app"]


async def test_a_ping_changes_nothing() -> None:
    """GitHub's ping is logged and writes nothing."""
    ports = world()
    await ports.dispatch("ping", {"zen": "Keep it logically awesome.", "hook_id": 1})
    assert ports.store.commits == 0
