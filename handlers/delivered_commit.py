"""What only GitHub knows of a `/deliver`: the commit its sha, branch or pull request names."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from handlers.answers import ArtifactNotFound
from handlers.errors import Missing
from handlers.payloads import dig_int, dig_str
from handlers.ports import GitHubReads
from policies.commands import Deliver
from policies.links import same_repository

if TYPE_CHECKING:
    from handlers.commands import CommandFacts


async def resolved(github: GitHubReads, f: CommandFacts, command: Deliver) -> Deliver | ArtifactNotFound:
    """The commit: the given sha, else the branch head, else the linked PR's head (and its branch,
    only when the PR's head is in this repository: a fork's branch is no branch here)."""
    pull_number = command.pull_request or (f.number if f.on_pull_request else None)
    try:
        if command.commit:
            found = await github.commit(f.installation_id, f.repository, command.commit)
            tree = dig_str(found, "commit", "tree", "sha")
            return replace(command, commit=dig_str(found, "sha"), pull_request=pull_number, tree=tree)
        if command.branch:
            found = await github.branch(f.installation_id, f.repository, command.branch)
            tree = dig_str(found, "commit", "commit", "tree", "sha")
            commit = dig_str(found, "commit", "sha")
            return replace(command, commit=commit, pull_request=pull_number, tree=tree)
        if pull_number is not None:
            found = await github.pull(f.installation_id, f.repository, pull_number)
            own = same_repository(
                dig_int(found, "head", "repo", "id"), dig_int(found, "base", "repo", "id"),
                head_repository=dig_str(found, "head", "repo", "full_name"), repository=f.repository,
            )  # fmt: skip
            branch = dig_str(found, "head", "ref") if own else None
            return replace(
                command, commit=dig_str(found, "head", "sha"), branch=branch, pull_request=pull_number
            )
    except Missing:
        if command.commit:
            return ArtifactNotFound("commit", command.commit, f.repository)
        if command.branch:
            return ArtifactNotFound("branch", command.branch, f.repository)
        return ArtifactNotFound("pull request", str(pull_number), f.repository)
    return command
