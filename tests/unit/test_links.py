"""PR ↔ ticket links from a pull request's body (SPEC: "The repository rail", Links)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policies.links import (
    CLOSING_KEYWORDS,
    MAX_NAMED_TICKETS,
    REFERENCE_KEYWORDS,
    capped,
    linked_issues,
    links_move_rail,
    same_repository,
)
from policies.rails import PullRequestObserved, fingerprint, observation_from_data, observation_to_data

REPOSITORY = "acme/widgets"
PROPERTY_SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def links(body: str | None, repository: str = REPOSITORY) -> set[int]:
    """The linked issue numbers of `body` in the test repository, as a plain set."""
    return set(linked_issues(body, repository))


@pytest.mark.parametrize("keyword", CLOSING_KEYWORDS + REFERENCE_KEYWORDS)
def test_every_keyword_links_in_any_case(keyword: str) -> None:
    """Each closing or reference keyword links, lower, upper or title case."""
    for spelled in (keyword, keyword.upper(), keyword.title()):
        assert links(f"{spelled} #12") == {12}


def test_the_keyword_forms_github_knows_are_all_there() -> None:
    """Close, fix and resolve in their three forms; ref, refs and references."""
    assert set(CLOSING_KEYWORDS) == {
        "close",
        "closes",
        "closed",
        "fix",
        "fixes",
        "fixed",
        "resolve",
        "resolves",
        "resolved",
    }
    assert set(REFERENCE_KEYWORDS) == {"ref", "refs", "references"}


@pytest.mark.parametrize("body", ["Fixes: #12", "Refs: #12", "fixes:  #12", "Fixes\t#12", "Fixes   #12"])
def test_a_colon_and_extra_spaces_after_the_keyword_still_link(body: str) -> None:
    """`Fixes: #12` links, as on GitHub."""
    assert links(body) == {12}


@pytest.mark.parametrize("body", ["Fixes#12", "Fixes:#12", "Fixes\n#12", "Fixes - #12"])
def test_the_reference_must_follow_the_keyword_after_a_space(body: str) -> None:
    """Without a space, or with something in between, nothing links."""
    assert links(body) == set()


def test_a_bare_hash_reference_does_not_link() -> None:
    """`#12` alone, or after other words, is a mention, not a link."""
    assert links("See #12, related to #13 and about #14") == set()


@pytest.mark.parametrize("body", ["prefixes #12", "hotfix #12", "unfixed #12", "enclosed #12", "refsx #12"])
def test_keywords_inside_other_words_do_not_link(body: str) -> None:
    """The keyword must be a word of its own."""
    assert links(body) == set()


@pytest.mark.parametrize("body", ["Fixes #12abc", "Fixes #0", "Fixes #00", "Fixes #12345678901"])
def test_malformed_numbers_do_not_link(body: str) -> None:
    """A number glued to letters, zero or absurdly long is no issue."""
    assert links(body) == set()


@pytest.mark.parametrize("body", ["Fixes #12.", "(fixes #12)", "Fixes #12, thanks", "**Resolves #12**"])
def test_punctuation_around_a_link_is_fine(body: str) -> None:
    """Sentences end, brackets close: the link stands."""
    assert links(body) == {12}


def test_several_keywords_link_several_issues() -> None:
    """`Fixes #1, fixes #2` and links on several lines all count."""
    assert links("Fixes #1, fixes #2\nCloses #3; refs #4") == {1, 2, 3, 4}


def test_one_keyword_links_only_the_first_reference() -> None:
    """`Fixes #1 and #2` and `Fixes #1, #2` link #1 only, as on GitHub."""
    assert links("Fixes #1 and #2") == {1}
    assert links("Fixes #1, #2") == {1}


def test_a_reference_to_this_repository_by_name_links() -> None:
    """`owner/repo#N` links when owner/repo is this repository, compared without case."""
    assert links("Resolves acme/widgets#12\nrefs ACME/Widgets#13") == {12, 13}


@pytest.mark.parametrize(
    "body",
    [
        "Fixes other/widgets#12",
        "Fixes acme/gadgets#12",
        "Fixes acme/widgets-v2#12",
        "Fixes xacme/widgets#12",
        "Refs other/repo#12",
    ],
)
def test_references_to_other_repositories_do_not_link(body: str) -> None:
    """A closing keyword naming another repository's issue links nothing here."""
    assert links(body) == set()


def test_a_full_issue_url_of_this_repository_links() -> None:
    """`https://github.com/owner/repo/issues/N` (any case, with an anchor) links."""
    body = (
        "Fixes https://github.com/acme/widgets/issues/12\n"
        "closes https://GitHub.com/Acme/Widgets/issues/13#issuecomment-99\n"
        "refs http://github.com/acme/widgets/issues/14"
    )
    assert links(body) == {12, 13, 14}


@pytest.mark.parametrize(
    "body",
    [
        "Fixes https://github.com/other/widgets/issues/12",
        "Fixes https://evil.example/acme/widgets/issues/12",
        "Fixes https://github.com/acme/widgets/pull/12",
        "Fixes https://github.com/acme/widgets/issues/12x",
    ],
)
def test_urls_of_other_repositories_hosts_or_kinds_do_not_link(body: str) -> None:
    """Only this repository's issue URLs on the configured host link."""
    assert links(body) == set()


def test_an_enterprise_host_is_given_explicitly() -> None:
    """On GitHub Enterprise Server the issue URLs carry its host."""
    body = "Fixes https://ghe.example.com/acme/widgets/issues/12\nFixes https://github.com/acme/widgets/issues/13"
    assert linked_issues(body, REPOSITORY, web_host="ghe.example.com") == frozenset({12})


@pytest.mark.parametrize(
    "body",
    [
        "`Fixes #12`",
        "Run ``git commit -m 'Fixes #12'`` first",
        "```\nFixes #12\n```",
        "~~~md\nFixes #12\n~~~",
        "```\nFixes #12",
        "Intro.\n\n    Fixes #12",
        "<!-- Fixes #12 -->",
        "<!--\nDescribe the change. Fixes #12\n-->",
        "<!-- unclosed\nFixes #12",
    ],
)
def test_links_inside_code_or_html_comments_do_not_count(body: str) -> None:
    """Code spans, fenced and indented code and HTML comments are excluded."""
    assert links(body) == set()


def test_text_around_code_and_comments_still_links() -> None:
    """A PR template's comments hide only themselves."""
    body = "<!-- Write 'Fixes #1' below -->\nFixes #2 `not #3` and `Fixes #4` <!-- Fixes #5 --> fixes #6"
    assert links(body) == {2, 6}


def test_quoted_text_links() -> None:
    """A blockquote is text GitHub reads for keywords too."""
    assert links("> Fixes #12") == {12}


def test_code_inside_a_quote_does_not_link() -> None:
    """The quote's own code blocks stay excluded."""
    assert links("> ```\n> Fixes #12\n> ```\n> fixes #13") == {13}


def test_no_body_links_nothing() -> None:
    """A PR without a body (None) or an empty one links nothing."""
    assert links(None) == set()
    assert links("") == set()


def test_crlf_bodies_link_like_lf_bodies() -> None:
    """PR bodies written in a browser arrive with CRLF."""
    assert links("Title\r\n\r\nFixes #12\r\n```\r\nFixes #13\r\n```\r\n") == {12}


@PROPERTY_SETTINGS
@given(body=st.text())
def test_linked_issues_never_raises(body: str) -> None:
    """Any body gives a set of positive numbers."""
    assert all(number > 0 for number in linked_issues(body, REPOSITORY))


@PROPERTY_SETTINGS
@given(
    keyword=st.sampled_from(CLOSING_KEYWORDS + REFERENCE_KEYWORDS),
    number=st.integers(min_value=1, max_value=10**6),
    fence=st.sampled_from(["```", "~~~", "````"]),
    prose=st.text(alphabet="abcdefghij .,", max_size=20),
)
def test_a_link_in_prose_counts_and_the_same_link_in_a_fence_does_not(
    keyword: str, number: int, fence: str, prose: str
) -> None:
    """Wrapping a link in fenced code removes it; leaving it in prose keeps it."""
    line = f"{prose.strip()} {keyword} #{number}"  # four leading spaces would make it indented code
    assert linked_issues(f"{prose}\n\n{line}", REPOSITORY) == frozenset({number})
    assert linked_issues(f"{prose}\n\n{fence}\n{line}\n{fence}", REPOSITORY) == frozenset()


@pytest.mark.parametrize(
    ("head_repository", "links"),
    [("acme/web", True), ("ACME/Web", True), ("mallory/web", False), ("acme/web-fork", False), (None, False)],
)
def test_without_ids_only_a_head_named_like_this_repository_can_link_by_branch(
    head_repository: str | None, links: bool
) -> None:
    """A PR stored before ids were kept: the head repository's name must be this one's (compared
    without case); a fork or a deleted fork is not."""
    assert same_repository(None, None, head_repository=head_repository, repository="acme/web") is links


@pytest.mark.parametrize(
    ("head_repository_id", "head_repository", "links"),
    [
        (1, "acme/web", True),
        (1, "acme/website", True),  # renamed since railyard last heard the name
        (2, "acme/web", False),  # another repository that has (or had) this name
        (None, "acme/web", False),  # a fork's head stored before 0025, under a name it took since
        (None, None, False),  # a deleted fork
    ],
)
def test_with_the_repositorys_id_only_a_head_of_that_id_can_link_by_branch(
    head_repository_id: int | None, head_repository: str | None, links: bool
) -> None:
    """With acme/web's id (1) known, the head's id decides, whatever the names say."""
    found = same_repository(head_repository_id, 1, head_repository=head_repository, repository="acme/web")
    assert found is links


@pytest.mark.parametrize(
    "body",
    ["<details>\nFixes #12\n</details>", "- Fixes #12", "1. > Fixes #12", "text `a\nb` Fixes #12"],
)
def test_keywords_in_rendered_html_blocks_list_items_and_quotes_link(body: str) -> None:
    """GitHub renders the text in block-level HTML, list items and quotes: the keyword links."""
    assert links(body) == {12}


def test_a_keyword_inside_a_code_span_over_several_lines_does_not_link() -> None:
    """ "`start", "Fixes #12", "end`" is one code span."""
    assert links("text `start\nFixes #12\nend` text") == set()


def test_a_forks_pr_from_an_account_without_a_role_only_mentions_until_it_merges() -> None:
    """Only a fork's open PR by an account without a role leaves the rail alone; its merge counts."""
    assert not links_move_rail(head_in_repository=False, author_has_role=False, merged=False)
    assert links_move_rail(head_in_repository=False, author_has_role=False, merged=True)
    assert links_move_rail(head_in_repository=False, author_has_role=True, merged=False)
    assert links_move_rail(head_in_repository=True, author_has_role=False, merged=False)


def test_a_pull_request_observation_keeps_its_fingerprint_now_that_mentions_exist() -> None:
    """The same PR fact recorded before mentions existed is still recognised as seen."""
    fact = PullRequestObserved(
        number=4, url="u", linked=True, open=True, merged=False, head_sha=None, head_ref=None,
        merge_commit=None, updated_at=datetime(2026, 1, 1, tzinfo=UTC),
    )  # fmt: skip
    data = observation_to_data(fact)
    assert "mention" not in data and observation_from_data(data) == fact
    assert fingerprint(fact) != fingerprint(PullRequestObserved(**{**fact.__dict__, "mention": True}))


def test_a_pr_names_at_most_the_ten_lowest_tickets_whatever_their_order() -> None:
    """Twelve tickets named in any order: #1-#10 count, #11 and #12 are ignored."""
    kept, ignored = capped({12, 3, 11, 1, 2, 4, 5, 6, 7, 8, 9, 10})
    assert kept == frozenset(range(1, MAX_NAMED_TICKETS + 1)) and ignored == {11, 12}
    assert capped({5, 7}) == ({5, 7}, frozenset())
