"""Every REST endpoint railyard calls and the app permission each needs.

The manifest test checks that `app.yml` grants exactly the union of these permissions, so a
call added here without its permission (or a permission the code no longer uses) fails it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Endpoint:
    """One REST endpoint and the app permission it needs (None: the app's own JWT)."""

    method: str
    path: str
    permission: tuple[str, str] | None

    @property
    def creates_content(self) -> bool:
        """GitHub asks for content-creating requests to be spaced out (a second apart)."""
        return self.method == "POST" and self.path.endswith(("/comments", "/check-runs"))


ENDPOINTS: dict[str, Endpoint] = {
    "get_repository": Endpoint("GET", "/repos/{repository}", ("metadata", "read")),
    "get_repository_by_id": Endpoint("GET", "/repositories/{repository_id}", ("metadata", "read")),
    # An account's login now, asked by its id (a reviewer renamed since their decision); an
    # installation token may ask it (no permission of its own: metadata is every app's).
    "get_user_by_id": Endpoint("GET", "/user/{account_id}", ("metadata", "read")),
    "get_permission": Endpoint(
        "GET", "/repos/{repository}/collaborators/{username}/permission", ("metadata", "read")
    ),
    "get_file": Endpoint("GET", "/repos/{repository}/contents/{path}", ("contents", "read")),
    "get_branch": Endpoint("GET", "/repos/{repository}/branches/{branch}", ("contents", "read")),
    "get_commit": Endpoint("GET", "/repos/{repository}/commits/{ref}", ("contents", "read")),
    "compare": Endpoint("GET", "/repos/{repository}/compare/{base}...{head}", ("contents", "read")),
    "get_issue": Endpoint("GET", "/repos/{repository}/issues/{number}", ("issues", "write")),
    "list_comments": Endpoint("GET", "/repos/{repository}/issues/{number}/comments", ("issues", "write")),
    "create_comment": Endpoint("POST", "/repos/{repository}/issues/{number}/comments", ("issues", "write")),
    "update_comment": Endpoint(
        "PATCH", "/repos/{repository}/issues/comments/{comment_id}", ("issues", "write")
    ),
    "add_reaction": Endpoint(
        "POST", "/repos/{repository}/issues/comments/{comment_id}/reactions", ("issues", "write")
    ),
    "add_assignees": Endpoint("POST", "/repos/{repository}/issues/{number}/assignees", ("issues", "write")),
    "remove_assignees": Endpoint(
        "DELETE", "/repos/{repository}/issues/{number}/assignees", ("issues", "write")
    ),
    "get_pull": Endpoint("GET", "/repos/{repository}/pulls/{number}", ("pull_requests", "write")),
    "list_pull_files": Endpoint(
        "GET", "/repos/{repository}/pulls/{number}/files", ("pull_requests", "write")
    ),
    "create_check_run": Endpoint("POST", "/repos/{repository}/check-runs", ("checks", "write")),
    "update_check_run": Endpoint(
        "PATCH", "/repos/{repository}/check-runs/{check_run_id}", ("checks", "write")
    ),
    "list_check_runs": Endpoint("GET", "/repos/{repository}/commits/{ref}/check-runs", ("checks", "read")),
    "list_check_suites": Endpoint(
        "GET", "/repos/{repository}/commits/{ref}/check-suites", ("checks", "read")
    ),
    "check_org_member": Endpoint("GET", "/orgs/{org}/members/{username}", ("members", "read")),
    "get_team_membership": Endpoint(
        "GET", "/orgs/{org}/teams/{team_slug}/memberships/{username}", ("members", "read")
    ),
    "list_commit_pulls": Endpoint(
        "GET", "/repos/{repository}/commits/{sha}/pulls", ("pull_requests", "read")
    ),
    "list_deployments": Endpoint("GET", "/repos/{repository}/deployments", ("deployments", "read")),
    "list_deployment_statuses": Endpoint(
        "GET", "/repos/{repository}/deployments/{deployment_id}/statuses", ("deployments", "read")
    ),
    # The deployment gate's answer to a custom deployment protection rule (GitHub Apps answer
    # only their own rules); 204 when taken.
    "review_deployment_protection_rule": Endpoint(
        "POST",
        "/repos/{repository}/actions/runs/{run_id}/deployment_protection_rule",
        ("deployments", "write"),
    ),
    "get_repository_installation": Endpoint("GET", "/repos/{repository}/installation", None),
    "list_hook_deliveries": Endpoint("GET", "/app/hook/deliveries", None),
    "redeliver": Endpoint("POST", "/app/hook/deliveries/{delivery_id}/attempts", None),
    # Unauthenticated (the code is the credential), called by app.web.setup before the app exists.
    "create_app_from_manifest": Endpoint("POST", "/app-manifests/{code}/conversions", None),
    # With a signed-in person's user token (app.web.access): who they are, what they may read.
    "get_user": Endpoint("GET", "/user", None),
    "list_user_installations": Endpoint("GET", "/user/installations", None),
    "list_user_installation_repositories": Endpoint(
        "GET", "/user/installations/{installation_id}/repositories", ("metadata", "read")
    ),
}

# GraphQL, for what REST does not answer (a PR's Development-sidebar issues); read-only queries.
ENDPOINTS["graphql"] = Endpoint("POST", "/graphql", ("pull_requests", "read"))
# GraphQL for GitHub Projects (`projects:` in the file): read the project and the item,
# add the issue, set its single-select fields (app.github.projects).
ENDPOINTS["graphql_projects"] = Endpoint("POST", "/graphql", ("organization_projects", "write"))
