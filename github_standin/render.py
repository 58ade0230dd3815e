"""GitHub's JSON shapes, and `Render`, which fills them from the stand-in's state.

The shapes are written as GitHub documents them. `$name`s take ids, logins, refs and URLs; free
text and nullable values are merged in afterwards, so the JSON stays valid whatever they hold.
"""

from __future__ import annotations

import base64
import json
from collections import Counter
from dataclasses import dataclass
from string import Template

from github_standin.common import (
    COMPARE_COUNTS,
    DEFAULT_PERMISSIONS,
    HTML,
    REACTIONS,
    ROLES,
    SEEDED_AT,
    Json,
    fake_sha,
    fork_id,
    git_blob_sha,
    iso,
    node_id_of,
)
from github_standin.state import (
    CheckRun,
    CheckSuite,
    Comment,
    Installation,
    Issue,
    PullRequest,
    Reaction,
    Repository,
    StandinState,
)

_USER = """{
    "login": "$login", "id": $id, "node_id": "$node_id", "type": "$type", "site_admin": false,
    "avatar_url": "https://avatars.githubusercontent.com/u/$id?v=4", "gravatar_id": "",
    "html_url": "$html_url",
    "url": "$api/users/$login", "followers_url": "$api/users/$login/followers",
    "following_url": "$api/users/$login/following{/other_user}",
    "gists_url": "$api/users/$login/gists{/gist_id}",
    "starred_url": "$api/users/$login/starred{/owner}{/repo}",
    "subscriptions_url": "$api/users/$login/subscriptions",
    "organizations_url": "$api/users/$login/orgs", "repos_url": "$api/users/$login/repos",
    "events_url": "$api/users/$login/events{/privacy}",
    "received_events_url": "$api/users/$login/received_events"}"""
_APP = """{
    "id": $id, "slug": "$slug", "node_id": "$node_id", "name": "$name", "description": "",
    "external_url": "https://$slug.example", "html_url": "https://github.com/apps/$slug",
    "created_at": "$seeded", "updated_at": "$seeded",
    "events": ["check_run", "issue_comment", "issues", "pull_request", "push"]}"""
_INSTALLATION = """{
    "id": $id, "app_id": $app_id, "app_slug": "$app_slug", "target_id": $target_id, "target_type": "$type",
    "access_tokens_url": "$api/app/installations/$id/access_tokens", "repository_selection": "all",
    "repositories_url": "$api/installation/repositories", "created_at": "$seeded", "updated_at": "$seeded",
    "html_url": "https://github.com/settings/installations/$id",
    "events": ["check_run", "issue_comment", "issues", "pull_request", "push"],
    "single_file_name": null, "suspended_by": null, "suspended_at": null}"""
_REPOSITORY = """{
    "id": $id, "node_id": "$node_id", "name": "$name", "full_name": "$full_name", "private": $private,
    "visibility": "$visibility", "default_branch": "$default_branch", "open_issues": $open_issues,
    "open_issues_count": $open_issues, "pushed_at": "$seeded", "created_at": "$created_at",
    "updated_at": "$seeded",
    "html_url": "https://github.com/$full_name", "clone_url": "https://github.com/$full_name.git",
    "git_url": "git://github.com/$full_name.git", "ssh_url": "git@github.com:$full_name.git",
    "svn_url": "https://github.com/$full_name", "url": "$url", "archive_url": "$url/{archive_format}{/ref}",
    "assignees_url": "$url/assignees{/user}", "blobs_url": "$url/git/blobs{/sha}",
    "branches_url": "$url/branches{/branch}", "collaborators_url": "$url/collaborators{/collaborator}",
    "comments_url": "$url/comments{/number}", "commits_url": "$url/commits{/sha}",
    "compare_url": "$url/compare/{base}...{head}", "contents_url": "$url/contents/{+path}",
    "contributors_url": "$url/contributors", "deployments_url": "$url/deployments",
    "downloads_url": "$url/downloads", "events_url": "$url/events", "forks_url": "$url/forks",
    "git_commits_url": "$url/git/commits{/sha}", "git_refs_url": "$url/git/refs{/sha}",
    "git_tags_url": "$url/git/tags{/sha}", "hooks_url": "$url/hooks",
    "issue_comment_url": "$url/issues/comments{/number}", "issue_events_url": "$url/issues/events{/number}",
    "issues_url": "$url/issues{/number}", "keys_url": "$url/keys{/key_id}",
    "labels_url": "$url/labels{/name}",
    "languages_url": "$url/languages", "merges_url": "$url/merges",
    "milestones_url": "$url/milestones{/number}",
    "notifications_url": "$url/notifications{?since,all,participating}", "pulls_url": "$url/pulls{/number}",
    "releases_url": "$url/releases{/id}", "stargazers_url": "$url/stargazers",
    "statuses_url": "$url/statuses/{sha}", "subscribers_url": "$url/subscribers",
    "subscription_url": "$url/subscription", "tags_url": "$url/tags", "teams_url": "$url/teams",
    "trees_url": "$url/git/trees{/sha}", "description": null, "fork": false, "mirror_url": null,
    "homepage": null, "language": "Python", "forks": 0, "forks_count": 0, "stargazers_count": 0,
    "watchers": 0,
    "watchers_count": 0, "size": 100, "is_template": false, "topics": [], "has_issues": true,
    "has_projects": true, "has_wiki": true, "has_pages": false, "has_downloads": true,
    "has_discussions": false,
    "archived": false, "disabled": false, "license": null, "network_count": 0, "subscribers_count": 0}"""
_COMMIT = """{
    "sha": "$sha", "node_id": "$node_id", "url": "$api/repos/$repo/commits/$sha",
    "html_url": "https://github.com/$repo/commit/$sha",
    "comments_url": "$api/repos/$repo/commits/$sha/comments",
    "author": null, "committer": null, "parents": [],
    "commit": {"message": "A commit", "comment_count": 0, "url": "$api/repos/$repo/git/commits/$sha",
        "tree": {"sha": "$tree", "url": "$api/repos/$repo/git/trees/$tree"},
        "author": {"name": "The Octocat", "email": "octocat@users.noreply.github.com", "date": "$seeded"},
        "committer": {"name": "The Octocat", "email": "octocat@users.noreply.github.com",
        "date": "$seeded"}}}"""
_ISSUE = """{
    "id": $id, "node_id": "$node_id", "number": $number, "url": "$api/repos/$repo/issues/$number",
    "repository_url": "$api/repos/$repo", "labels_url": "$api/repos/$repo/issues/$number/labels{/name}",
    "comments_url": "$api/repos/$repo/issues/$number/comments", "html_url": "$html_url",
    "events_url": "$api/repos/$repo/issues/$number/events", "state": "$state", "comments": $comments,
    "author_association": "$association", "created_at": "$seeded", "updated_at": "$seeded", "milestone": null,
    "locked": false, "active_lock_reason": null, "state_reason": null, "closed_by": null}"""
_LABEL = """{
    "id": $id, "node_id": "$node_id", "url": "$api/repos/$repo/labels/$name", "name": "$name",
    "description": null,
    "color": "ededed", "default": false}"""
_COMMENT = """{
    "id": $id, "node_id": "$node_id", "url": "$api/repos/$repo/issues/comments/$id",
    "html_url": "https://github.com/$repo/$kind/$number#issuecomment-$id",
    "issue_url": "$api/repos/$repo/issues/$number",
    "created_at": "$created_at", "updated_at": "$updated_at", "author_association": "$association",
    "reactions": {"url": "$api/repos/$repo/issues/comments/$id/reactions"}}"""
_CHECK_RUN = """{
    "id": $id, "node_id": "$node_id", "head_sha": "$head_sha", "url": "$api/repos/$repo/check-runs/$id",
    "html_url": "https://github.com/$repo/runs/$id", "pull_requests": []}"""
_CHECK_SUITE = """{
    "id": $id, "node_id": "$node_id", "head_sha": "$head_sha", "url": "$api/repos/$repo/check-suites/$id",
    "before": null, "after": "$head_sha", "pull_requests": [], "created_at": "$seeded",
    "updated_at": "$seeded", "rerequestable": true, "runs_rerequestable": true,
    "check_runs_url": "$api/repos/$repo/check-suites/$id/check-runs"}"""
_PULL = """{
    "id": $id, "node_id": "$node_id", "number": $number, "url": "$api/repos/$repo/pulls/$number",
    "html_url": "https://github.com/$repo/pull/$number", "issue_url": "$api/repos/$repo/issues/$number",
    "diff_url": "https://github.com/$repo/pull/$number.diff",
    "patch_url": "https://github.com/$repo/pull/$number.patch",
    "commits_url": "$api/repos/$repo/pulls/$number/commits",
    "review_comments_url": "$api/repos/$repo/pulls/$number/comments",
    "review_comment_url": "$api/repos/$repo/pulls/comments{/number}",
    "comments_url": "$api/repos/$repo/issues/$number/comments",
    "statuses_url": "$api/repos/$repo/statuses/$head_sha", "state": "$state",
    "mergeable_state": "$mergeable_state", "author_association": "$association",
    "created_at": "$seeded", "updated_at": "$seeded",
    "_links": {"self": {"href": "$api/repos/$repo/pulls/$number"},
        "html": {"href": "https://github.com/$repo/pull/$number"},
        "issue": {"href": "$api/repos/$repo/issues/$number"},
        "comments": {"href": "$api/repos/$repo/issues/$number/comments"},
        "review_comments": {"href": "$api/repos/$repo/pulls/$number/comments"},
        "review_comment": {"href": "$api/repos/$repo/pulls/comments{/number}"},
        "commits": {"href": "$api/repos/$repo/pulls/$number/commits"},
        "statuses": {"href": "$api/repos/$repo/statuses/$head_sha"}},
    "locked": false, "labels": [], "milestone": null, "active_lock_reason": null, "assignee": null,
    "assignees": [], "requested_reviewers": [], "requested_teams": [], "auto_merge": null, "draft": false,
    "merged_by": null, "comments": 0, "review_comments": 0, "maintainer_can_modify": false, "commits": 1,
    "additions": 1, "deletions": 0, "changed_files": 1}"""

CONTENT_LIMIT = 1024 * 1024
"""Bytes past which the contents API answers a file with `"encoding": "none"` and no content
(GitHub changelog, 2022-05-03: larger files need the raw media type)."""

_CONTENT_FILE = """{
    "type": "file", "encoding": "base64", "size": $size, "name": "$name", "path": "$path", "sha": "$sha",
    "url": "$api/repos/$repo/contents/$path?ref=$ref", "git_url": "$api/repos/$repo/git/blobs/$sha",
    "html_url": "https://github.com/$repo/blob/$ref/$path",
    "download_url": "https://raw.githubusercontent.com/$repo/$ref/$path",
    "_links": {"self": "$api/repos/$repo/contents/$path?ref=$ref", "git": "$api/repos/$repo/git/blobs/$sha",
        "html": "https://github.com/$repo/blob/$ref/$path"}}"""
_BRANCH = """{
    "name": "$name", "protected": false, "protection_url": "$api/repos/$repo/branches/$name/protection",
    "_links": {"self": "$api/repos/$repo/branches/$name", "html": "https://github.com/$repo/tree/$name"},
    "protection": {"enabled": false,
        "required_status_checks": {"enforcement_level": "off", "contexts": [], "checks": []}}}"""
_COMPARISON = """{
    "url": "$api/repos/$repo/compare/$basehead", "html_url": "https://github.com/$repo/compare/$basehead",
    "permalink_url": "https://github.com/$repo/compare/$basehead",
    "diff_url": "https://github.com/$repo/compare/$basehead.diff",
    "patch_url": "https://github.com/$repo/compare/$basehead.patch", "status": "$status",
    "ahead_by": $ahead_by, "total_commits": $ahead_by, "files": []}"""


@dataclass
class Render:
    """Builds response bodies; API URLs point back at the stand-in, html_url at github.com."""

    state: StandinState
    api: str

    def fill(self, template: str, **values: object) -> Json:
        """A shape with `$api` and `$seeded` filled in too; values are ids, logins, refs and URLs."""
        values |= {"api": self.api, "seeded": iso(SEEDED_AT)}
        text = {key: value if isinstance(value, str) else json.dumps(value) for key, value in values.items()}
        return json.loads(Template(template).substitute(text))  # type: ignore[no-any-return]

    def user(self, login: str, type_: str | None = None) -> Json:
        type_, uid = type_ or ("Bot" if login.endswith("[bot]") else "User"), self.state.user_id(login)
        html_url = f"{HTML}/apps/{login.removesuffix('[bot]')}" if type_ == "Bot" else f"{HTML}/{login}"
        return self.fill(
            _USER, login=login, id=uid, node_id=node_id_of(type_, uid), type=type_, html_url=html_url
        )

    def account(self, login: str) -> Json:
        installation = self.state.installation_for(login)
        return self.user(login, installation.account_type if installation else "User")

    def app(self, app_id: int | None = None) -> Json:
        """railyard's app, or (a comment another installed app wrote) the app with `app_id`."""
        slug, app_id = (
            (self.state.app_slug, self.state.app_id)
            if app_id in (None, self.state.app_id)
            else (self.state.apps.get(app_id, f"other-app-{app_id}"), app_id)
        )
        app = self.fill(
            _APP, id=app_id, slug=slug, node_id=node_id_of("Integration", app_id), name=slug.title()
        )
        app["client_id"] = f"Iv1.{fake_sha(slug)[:16]}"
        return app | {
            "owner": self.user("railyard-dev"),
            "permissions": DEFAULT_PERMISSIONS,
        }

    def installation(self, i: Installation) -> Json:
        account = self.user(i.account, i.account_type)
        state, target = self.state, {"target_id": account["id"], "type": i.account_type}
        installation = self.fill(
            _INSTALLATION, id=i.id, app_id=state.app_id, app_slug=state.app_slug, **target
        )
        return installation | {"account": account, "permissions": i.permissions}

    def repository(self, r: Repository) -> Json:
        owner, name = r.full_name.split("/")
        shape = self.fill(
            _REPOSITORY,
            id=r.id,
            node_id=node_id_of("Repository", r.id),
            name=name,
            full_name=r.full_name,
            private=r.private,
            visibility="private" if r.private else "public",
            default_branch=r.default_branch,
            open_issues=sum(i.state == "open" for i in r.issues.values()),
            url=f"{self.api}/repos/{r.full_name}",
            created_at=iso(r.created_at or SEEDED_AT),
        )
        return shape | {"owner": self.account(owner)}

    def _fork(self, full_name: str) -> Json:
        """A fork's repository object, as it appears in a PR's `head.repo`."""
        owner, name = full_name.split("/")
        shape = self.fill(
            _REPOSITORY,
            id=fork_id(full_name),
            node_id=node_id_of("Repository", fork_id(full_name)),
            name=name,
            full_name=full_name,
            private=False,
            visibility="public",
            default_branch="main",
            open_issues=0,
            url=f"{self.api}/repos/{full_name}",
            created_at=iso(SEEDED_AT),
        )
        return shape | {"owner": self.account(owner), "fork": True}

    def commit(self, repo: str, sha: str) -> Json:
        repository = self.state.repository(repo)
        tree = repository.tree_of(sha) if repository is not None else fake_sha(sha, "tree")
        return self.fill(_COMMIT, sha=sha, node_id=node_id_of("Commit", sha), repo=repo, tree=tree)

    def association(self, repo: str, login: str) -> str:
        if login.lower() == repo.split("/")[0].lower():
            return "OWNER"
        role = self.state.permissions.get((repo, login), "none")
        return "COLLABORATOR" if ROLES.index(role) >= ROLES.index("triage") else "NONE"

    def issue(self, r: Repository, issue: Issue) -> Json:
        number, uid = issue.number, r.id * 100_000 + issue.number
        html_url = f"{HTML}/{r.full_name}/{'pull' if number in r.pulls else 'issues'}/{number}"
        shape = self.fill(
            _ISSUE,
            id=uid,
            node_id=node_id_of("Issue", uid),
            number=number,
            repo=r.full_name,
            html_url=html_url,
            state=issue.state,
            comments=sum(
                (c.repo, c.issue_number) == (r.full_name, number) for c in self.state.comments.values()
            ),
            association=self.association(r.full_name, issue.user),
        )
        assignees = [self.user(login) for login in issue.assignees]
        if number in r.pulls:
            links: Json = {"url": f"{shape['repository_url']}/pulls/{number}", "html_url": html_url}
            links |= {"diff_url": f"{html_url}.diff", "patch_url": f"{html_url}.patch", "merged_at": None}
            shape["pull_request"] = links
        return shape | {
            "title": issue.title,
            "body": issue.body,
            "user": self.user(issue.user),
            "labels": [self.label(r, name) for name in issue.labels],
            "assignees": assignees,
            "assignee": assignees[0] if assignees else None,
            "closed_at": iso(SEEDED_AT) if issue.state == "closed" else None,
        }

    def label(self, r: Repository, name: str) -> Json:
        label_id = int(fake_sha(r.full_name, name)[:7], 16)
        return self.fill(
            _LABEL, id=label_id, node_id=node_id_of("Label", label_id), repo=r.full_name, name=name
        )

    def comment(self, c: Comment) -> Json:
        repository = self.state.repository(c.repo)
        shape = self.fill(
            _COMMENT,
            id=c.id,
            node_id=node_id_of("IssueComment", c.id),
            repo=c.repo,
            kind="pull" if repository and c.issue_number in repository.pulls else "issues",
            number=c.issue_number,
            created_at=iso(c.created_at),
            updated_at=iso(c.updated_at),
            association="NONE" if c.user_type == "Bot" else self.association(c.repo, c.user),
        )
        counts = Counter(r.content for r in self.state.reactions if r.comment_id == c.id)
        shape["reactions"] |= {"total_count": counts.total(), **{name: counts[name] for name in REACTIONS}}
        return shape | {
            "body": c.body,
            "user": self.user(c.user, c.user_type),
            "performed_via_github_app": self.app(c.app_id) if c.app_id is not None else None,
        }

    def reaction(self, r: Reaction) -> Json:
        shape = {"id": r.id, "node_id": node_id_of("Reaction", r.id), "content": r.content}
        return shape | {"user": self.user(r.user), "created_at": iso(r.created_at)}

    def check_run(self, run: CheckRun) -> Json:
        node_id = node_id_of("CheckRun", run.id)
        shape = self.fill(_CHECK_RUN, id=run.id, node_id=node_id, head_sha=run.head_sha, repo=run.repo)
        return shape | {
            "name": run.name,
            "status": run.status,
            "conclusion": run.conclusion,
            "details_url": run.details_url,
            "external_id": run.external_id,
            "started_at": iso(run.started_at) if run.started_at else None,
            "completed_at": iso(run.completed_at) if run.completed_at else None,
            "output": run.output | {"annotations_count": 0, "annotations_url": f"{shape['url']}/annotations"},
            "check_suite": {"id": self.state.suite_id(run.repo, run.head_sha, run.app_id)},
            "app": self.app(run.app_id),
        }

    def check_suite(self, r: Repository, suite: CheckSuite, runs: list[CheckRun]) -> Json:
        """A check suite as `GET .../commits/{ref}/check-suites` lists it."""
        branch = next((name for name, sha in r.branches.items() if sha == suite.head_sha), None)
        shape = self.fill(
            _CHECK_SUITE,
            id=suite.id,
            node_id=node_id_of("CheckSuite", suite.id),
            repo=r.full_name,
            head_sha=suite.head_sha,
        )
        return shape | {
            "head_branch": branch,
            "status": suite.status,
            "conclusion": suite.conclusion,
            "app": self.app(suite.app_id),
            "repository": self.repository(r),
            "head_commit": {
                "id": suite.head_sha,
                "tree_id": r.tree_of(suite.head_sha),
                "message": "A commit",
                "timestamp": iso(SEEDED_AT),
                "author": {"name": "octocat", "email": "octocat@github.com"},
                "committer": {"name": "octocat", "email": "octocat@github.com"},
            },
            "latest_check_runs_count": len({run.name for run in runs}),
        }

    def pull(self, r: Repository, pull: PullRequest) -> Json:
        uid, number = r.id * 100_000 + pull.number, pull.number
        shape = self.fill(
            _PULL,
            id=uid,
            node_id=node_id_of("PullRequest", uid),
            number=number,
            repo=r.full_name,
            head_sha=pull.head_sha,
            state=pull.state,
            mergeable_state={True: "clean", False: "dirty", None: "unknown"}[pull.mergeable],
            association=self.association(r.full_name, pull.user),
        )
        repository, owner = self.repository(r), r.full_name.split("/")[0]
        base_sha = r.resolve(pull.base_ref) or fake_sha(r.full_name, pull.base_ref)
        for side, ref, sha in (("head", pull.head_ref, pull.head_sha), ("base", pull.base_ref, base_sha)):
            shape[side] = {"label": f"{owner}:{ref}", "ref": ref, "sha": sha, "repo": repository}
            shape[side]["user"] = repository["owner"]
        if pull.head_repo != "":  # a fork's head (or a deleted fork's: null, as GitHub answers)
            fork = self._fork(pull.head_repo) if pull.head_repo else None
            fork_owner = pull.head_repo.split("/")[0] if pull.head_repo else owner
            shape["head"].update({"repo": fork, "label": f"{fork_owner}:{pull.head_ref}"})
        closed_at = iso(SEEDED_AT) if pull.state == "closed" else None
        return shape | {
            "title": pull.title,
            "body": pull.body,
            "user": self.user(pull.user),
            "closed_at": closed_at,
            "merged": pull.merged,
            "merged_at": closed_at if pull.merged else None,
            "merge_commit_sha": pull.merge_commit_sha,
            "mergeable": pull.mergeable,
            "rebaseable": pull.mergeable,
        }

    def content_file(self, r: Repository, path: str, ref: str, text: str | None = None) -> Json:
        data = (r.files[path] if text is None else text).encode()
        sha, encoded = git_blob_sha(data), base64.b64encode(data).decode()
        name, size = path.rsplit("/", 1)[-1], len(data)
        shape = self.fill(_CONTENT_FILE, repo=r.full_name, path=path, ref=ref, sha=sha, name=name, size=size)
        if size > CONTENT_LIMIT:  # past 1 MB only the raw media type carries the text
            return shape | {"encoding": "none", "content": ""}
        # GitHub wraps the base64 every 60 characters and ends it with a newline.
        return shape | {"content": "".join(encoded[i : i + 60] + "\n" for i in range(0, len(encoded), 60))}

    def pull_file(self, r: Repository, pull: PullRequest, path: str) -> Json:
        """One entry of GET pulls/{n}/files: the file's blob at the PR's head and how it changed."""
        text, before = pull.files[path], r.files.get(path)
        status = "removed" if text is None else "added" if before is None else "modified"
        kept = before if text is None else text
        lines = (kept or "").count("\n")
        head = pull.head_sha
        return {
            "sha": git_blob_sha((kept or "").encode()),
            "filename": path,
            "status": status,
            "additions": 0 if text is None else lines,
            "deletions": lines if text is None else (before or "").count("\n"),
            "changes": lines + (before or "").count("\n") if status == "modified" else lines,
            "blob_url": f"https://github.com/{r.full_name}/blob/{head}/{path}",
            "raw_url": f"https://github.com/{r.full_name}/raw/{head}/{path}",
            "contents_url": f"{self.api}/repos/{r.full_name}/contents/{path}?ref={head}",
            "patch": "".join(f"+{line}\n" for line in (text or "").splitlines()),
        }

    def branch(self, r: Repository, name: str) -> Json:
        shape = self.fill(_BRANCH, repo=r.full_name, name=name)
        return shape | {"commit": self.commit(r.full_name, r.branches[name])}

    def comparison(self, r: Repository, base: str, head: str, status: str) -> Json:
        """base...head; the merge base is base when head is ahead, head when behind, else another."""
        (ahead_by, behind_by), basehead = COMPARE_COUNTS[status], f"{base}...{head}"
        base_sha, head_sha = r.resolve(base) or "", r.resolve(head) or ""
        merge_base = {"identical": base_sha, "ahead": base_sha, "behind": head_sha}.get(
            status, fake_sha(basehead)
        )
        shape = self.fill(_COMPARISON, repo=r.full_name, basehead=basehead, status=status, ahead_by=ahead_by)
        return shape | {
            "behind_by": behind_by,
            "base_commit": self.commit(r.full_name, base_sha),
            "merge_base_commit": self.commit(r.full_name, merge_base),
            "commits": [self.commit(r.full_name, head_sha)] if ahead_by else [],
        }
