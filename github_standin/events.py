"""The webhooks GitHub sends when the stand-in's world changes under railyard.

GitHub sends `repository` `renamed` when a repository is renamed and `transferred` when it
moves to another owner: the payload's `repository` is the repository as it is now (same id,
new name) and `changes` says where it came from. The payloads start from the real examples
(`@octokit/webhooks-examples`, kept under tests/fixtures/webhooks) with the stand-in's
repository, installation and sender in them, and each is recorded among the app's hook
deliveries (`GET /app/hook/deliveries`), as GitHub lists what it sent.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from github_standin.common import Json
from github_standin.render import Render
from github_standin.state import Repository, StandinState

# The examples are test fixtures of the checkout (not shipped in the wheel: only tests send these events).
_EXAMPLES = (
    Path(__file__).resolve().parent.parent
    / "tests"
    / "fixtures"
    / "webhooks"
    / "api.github.com"
    / "repository"
)


def repository_moved(
    state: StandinState,
    api: str,
    repository: Repository,
    old_full_name: str,
    installation_id: int,
    sender: str,
) -> tuple[str, Json]:
    """The `repository` webhook (its delivery id and payload) GitHub sends after `repository`
    was renamed or transferred from `old_full_name`: `renamed` when the owner stayed."""
    old_owner, old_name = old_full_name.split("/")
    render = Render(state, api)
    if old_owner.casefold() == repository.full_name.split("/")[0].casefold():
        payload = json.loads((_EXAMPLES / "10-renamed.json").read_text())
        payload["changes"] = {"repository": {"name": {"from": old_name}}}
    else:
        payload = json.loads((_EXAMPLES / "11-transferred.json").read_text())
        kind = "organization" if state.installation_for(old_owner) is not None else "user"
        payload["changes"] = {"owner": {"from": {kind: render.account(old_owner)}}}
    payload["repository"] = render.repository(repository)
    payload["installation"] = {"id": installation_id}
    payload["sender"] = render.account(sender)
    payload.pop("organization", None)
    guid = str(uuid.uuid4())
    state.add_delivery(
        "repository", guid=guid, action=payload["action"], installation_id=installation_id,
        repository_id=repository.id,
    )  # fmt: skip
    return guid, payload
