"""The one GitHub stand-in: answers railyard's REST calls over loopback as api.github.com does.

Status codes, headers and JSON shapes follow GitHub's OpenAPI description, so githubkit parses
every answer. State lives in memory, every call is recorded, and faults are injected per request.

In-process::

    async with running_standin() as standin:
        standin.state.add_installation(7, "acme")
        standin.state.add_repository("acme/widgets", {"railyard.yml": "..."})

As a subprocess, seeded and inspected over HTTP under /_standin/::

    python -m github_standin --port 0 --port-file PATH [--seed seed.json]

The parts: `common` (constants, ids, times), `faults` (injected failures), `state` (what GitHub
knows), `render` (GitHub's JSON shapes), `lookups` (errors, paging, path lookups), the
endpoints by area (`apps`, `repos`, `issues`, `checks`), `edge` (authentication, rate limits
and faults on every request), `conditional` (ETags and 304s; `StandinState.counters()` tells
counted calls, 304s and content writes apart), `server` (routes, control API, serving), `process`,
`webhooks` (the app's signed webhooks, built from the state and sent when told something happened)
and `pages` (github.com's issue pages, comments rendered from Markdown).

It is a package of its own, outside `tests/`, because `railyard demo` runs railyard against it
(and ships with the wheel), and the tests and `bench/` use the same one.
"""

from github_standin.common import Json, fake_jwt, fork_id, git_blob_sha, iso
from github_standin.faults import Fault, LimitWatch, RandomFaults
from github_standin.history import Deployment
from github_standin.process import StandinProcess, main, standin_subprocess
from github_standin.server import RunningStandin, create_standin, running_standin
from github_standin.state import (
    Call,
    CheckRun,
    Comment,
    Delivery,
    Installation,
    Issue,
    PullRequest,
    Reaction,
    Repository,
    StandinState,
    WebhookTarget,
    account_id,
    repository_id,
)
from github_standin.webhooks import Webhooks, signature, signed_headers

__all__ = [
    "Call",
    "CheckRun",
    "Comment",
    "Delivery",
    "Deployment",
    "Fault",
    "Installation",
    "Issue",
    "Json",
    "LimitWatch",
    "PullRequest",
    "RandomFaults",
    "Reaction",
    "Repository",
    "RunningStandin",
    "StandinProcess",
    "StandinState",
    "WebhookTarget",
    "Webhooks",
    "account_id",
    "create_standin",
    "fake_jwt",
    "fork_id",
    "git_blob_sha",
    "iso",
    "main",
    "repository_id",
    "running_standin",
    "signature",
    "signed_headers",
    "standin_subprocess",
]
