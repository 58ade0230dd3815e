"""Every path parameter railyard sends to GitHub names exactly what it says."""

from __future__ import annotations

from app.github.client import ENDPOINTS
from app.github.paths import path_segment


def test_a_ref_a_login_and_a_team_slug_are_one_segment_each() -> None:
    """`#`, `?`, `/`, `%` and `..` in a ref, login or slug are percent-encoded, never read as syntax."""
    assert path_segment("branch", "a#b") == "a%23b"
    assert path_segment("ref", "release/1.0?x") == "release%2F1.0%3Fx"
    assert path_segment("username", "..") == ".."  # one segment: GitHub reads it as a name
    assert path_segment("team_slug", "a%2Fb") == "a%252Fb"
    assert path_segment("base", "main") == "main"


def test_a_repository_keeps_its_one_slash_and_a_file_path_its_folders() -> None:
    """`owner/name` and `.github/railyard.yml` keep their separators; anything else in them is encoded."""
    assert path_segment("repository", "acme/web") == "acme/web"
    assert path_segment("repository", "acme/we#b") == "acme/we%23b"
    assert path_segment("path", ".github/rail yard#1.yml") == ".github/rail%20yard%231.yml"


def test_every_path_parameter_of_every_endpoint_goes_through_the_encoder() -> None:
    """An endpoint whose parameters would come out as they went in for `a#b` does not exist."""
    import string

    for name, endpoint in ENDPOINTS.items():
        fields = [f for _, f, _, _ in string.Formatter().parse(endpoint.path) if f]
        for field in fields:
            if field not in ("repository", "path"):
                assert "#" not in path_segment(field, "a#b"), (name, field)
