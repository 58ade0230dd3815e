"""The layers hold: read every module's imports (AST) and fail when a rule of the README's
*Architecture* section breaks.

- `policies/` imports only the standard library (and itself);
- `handlers/` imports only the standard library, `policies/`, itself and structlog: nothing
  from `app/`, no database driver, no HTTP client;
- no import circles among railyard's modules (imports under `TYPE_CHECKING` excepted);
- `app/` is a ranked shell, its packages the nodes: `app.settings`, `app.version`, `app.logs`
  and `app.contracts` at the bottom; `app.store`, `app.github` and `app.views`, peers that never
  import each other; `app.runtime`; `app.web`; `app.bootstrap`; `app.cli` on top. No package
  imports one ranked above it, and no two packages import each other in a circle. Here every
  import statement counts, in a function or under `TYPE_CHECKING` too: a type-only import up
  the ranks is still a dependency up the ranks;
- only `app/bootstrap.py` constructs the GitHub client;
- no two modules of `app/` share a file name (a name says what the module is), nor does one
  share `handlers/answers.py`'s or `handlers/api.py`'s;
- `app/` has at most six modules at its top level and at least four sub-packages;
- SQL lives in `app/store/` (and the migrations under it);
- `app/views/` never reaches aiohttp, even through other modules, and imports nothing from
  `app/web/` nor `app/store/`; every view (the web pages' included) is pure: through all its
  imports, only the standard library, `policies/`, `handlers/`, `app/views/`,
  `app/contracts/` (the effects a reply becomes) and markupsafe;
- `app/web/` builds no HTML: markupsafe only in `app/web/pages.py`, which sends the views' Markup;
- no Python module anywhere in the repository is over 500 lines.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIRST_PARTY = ("app", "handlers", "policies")
HANDLERS_MAY_USE = {"structlog"}
MAX_LINES = 500
SKIPPED_DIRS = {".venv", ".git", "build", "dist", "node_modules", "__pycache__", ".mypy_cache", ".ruff_cache"}
# SQL outside the store: none. (Exceptions classes of the driver are imported where they are caught.)
SQL_MAY_BE_CAUGHT = {"sqlalchemy.exc"}


@dataclass(frozen=True)
class Import:
    """One imported module name, as written, and whether it is only for the type checker."""

    module: str
    type_checking: bool


def module_name(path: Path) -> str:
    """`app/store/unit.py` -> `app.store.unit`; a package's `__init__.py` -> the package."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def source_files(*roots: str) -> list[Path]:
    """Every Python file under the given top-level directories."""
    return sorted(p for root in roots for p in (ROOT / root).rglob("*.py") if not SKIPPED_DIRS & set(p.parts))


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports_of(path: Path) -> list[Import]:
    """Every module a file imports (absolute names; relative imports resolved), anywhere in the file."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found: list[Import] = []

    def visit(node: ast.AST, guarded: bool) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.body:
                visit(child, True)
            for child in node.orelse:
                visit(child, guarded)
            return
        if isinstance(node, ast.Import):
            found.extend(Import(alias.name, guarded) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = (
                    module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
                )
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.append(Import(base, guarded))
            # `from app.store import tickets` imports the module app.store.tickets too.
            found.extend(Import(f"{base}.{alias.name}", guarded) for alias in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child, guarded)

    visit(tree, False)
    return found


def _top(module: str) -> str:
    return module.split(".")[0]


def _is_stdlib(module: str) -> bool:
    return _top(module) in sys.stdlib_module_names or _top(module) == "__future__"


def _real_modules() -> set[str]:
    return {module_name(p) for p in source_files(*FIRST_PARTY)}


def _graph() -> dict[str, set[str]]:
    """First-party module -> the first-party modules it imports at run time."""
    known = _real_modules()
    graph: dict[str, set[str]] = {}
    for path in source_files(*FIRST_PARTY):
        name = module_name(path)
        targets = {i.module for i in imports_of(path) if not i.type_checking and i.module in known}
        graph[name] = targets - {name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> Iterator[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each a circle of imports."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    counter = [0]

    def connect(node: str) -> Iterator[list[str]]:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                yield from connect(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                yield sorted(component)

    for node in sorted(graph):
        if node not in index:
            yield from connect(node)


# -- the rules ----------------------------------------------------------------------------


@pytest.mark.parametrize("path", source_files("policies"), ids=lambda p: module_name(p))
def test_policies_import_only_the_standard_library(path: Path) -> None:
    """The core is pure: standard library and `policies` only."""
    wrong = {i.module for i in imports_of(path) if not _is_stdlib(i.module) and _top(i.module) != "policies"}
    assert not wrong, f"{module_name(path)} imports {sorted(wrong)}"


@pytest.mark.parametrize("path", source_files("handlers"), ids=lambda p: module_name(p))
def test_handlers_import_only_policies_handlers_and_the_standard_library(path: Path) -> None:
    """Use cases see the world through their ports: nothing from `app/`, no driver, no HTTP client."""
    allowed = {"policies", "handlers", *HANDLERS_MAY_USE}
    wrong = {i.module for i in imports_of(path) if not _is_stdlib(i.module) and _top(i.module) not in allowed}
    assert not wrong, f"{module_name(path)} imports {sorted(wrong)}"


def test_no_import_circles() -> None:
    """No two railyard modules import each other, directly or through others (TYPE_CHECKING aside)."""
    circles = list(_cycles(_graph()))
    assert circles == [], "import circles: " + "; ".join(" -> ".join(c) for c in circles)


def test_app_is_a_shell_of_sub_packages() -> None:
    """`app/` has at most six modules at its top level and at least four sub-packages."""
    app = ROOT / "app"
    modules = sorted(p.name for p in app.glob("*.py"))
    packages = sorted(p.name for p in app.iterdir() if (p / "__init__.py").is_file())
    assert len(modules) <= 6, modules
    assert len(packages) >= 4, packages


@pytest.mark.parametrize("path", source_files("app", "handlers", "policies"), ids=lambda p: module_name(p))
def test_sql_lives_in_the_store(path: Path) -> None:
    """Only `app/store/` builds SQL; elsewhere at most a driver error is caught by name."""
    if module_name(path).startswith("app.store"):
        return
    sql = {
        i.module
        for i in imports_of(path)
        if _top(i.module) in ("sqlalchemy", "sqlmodel", "psycopg", "sqlite3", "alembic")
        and not any(
            i.module == allowed or i.module.startswith(allowed + ".") for allowed in SQL_MAY_BE_CAUGHT
        )
    }
    assert not sql, f"{module_name(path)} imports {sorted(sql)}"


RANKS: dict[str, int] = {
    "app.settings": 0,
    "app.version": 0,
    "app.logs": 0,
    "app.contracts": 0,
    "app.store": 1,
    "app.github": 1,
    "app.views": 1,
    "app.runtime": 2,
    "app.web": 3,
    "app.bootstrap": 4,
    "app.cli": 5,
}
PEERS_AT = {1}  # the rank whose packages never import one another


def app_package(module: str) -> str | None:
    """`app.store.unit` -> `app.store`; `app.bootstrap` -> itself; None outside `app/` (and `app` itself)."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "app" and len(parts) > 1 else None


def _package_edges() -> dict[tuple[str, str], set[str]]:
    """(importing package, imported package) -> the module imports that make the edge, every
    import statement counted (in functions and under TYPE_CHECKING too)."""
    known = _real_modules()
    edges: dict[tuple[str, str], set[str]] = {}
    for path in source_files("app"):
        name = module_name(path)
        source = app_package(name)
        for i in imports_of(path):
            target = app_package(i.module) if i.module in known else None
            if source is not None and target is not None and source != target:
                edges.setdefault((source, target), set()).add(f"{name} -> {i.module}")
    return edges


def rank_breaks(edges: dict[tuple[str, str], set[str]]) -> set[str]:
    """The module imports that run up the ranks, or sideways between peers, or into an unranked package."""
    wrong: set[str] = set()
    for (source, target), lines in edges.items():
        low, high = RANKS.get(source), RANKS.get(target)
        if low is None or high is None or high > low or (high == low and low in PEERS_AT):
            wrong |= lines
    return wrong


def test_app_packages_import_only_downward() -> None:
    """No package of `app/` imports one ranked above it, and store, github and views never import
    one another (every import statement counts)."""
    wrong = rank_breaks(_package_edges())
    assert not wrong, f"{len(wrong)} imports run up the ranks:\n" + "\n".join(sorted(wrong))


def test_no_two_app_packages_import_each_other_in_a_circle() -> None:
    """With the packages of `app/` as nodes (every import counted), the import graph has no circle."""
    graph: dict[str, set[str]] = {}
    for source, target in _package_edges():
        graph.setdefault(source, set()).add(target)
    circles = list(_cycles(graph))
    assert circles == [], "package circles: " + "; ".join(" -> ".join(c) for c in circles)


CONSTRUCTS_THE_CLIENT = {"app.bootstrap"}


def constructs(path: Path, name: str) -> list[int]:
    """The lines where `path` calls `name` (or `something.name`): where it builds one."""
    tree = ast.parse(path.read_text(), filename=str(path))
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and (
            (isinstance(node.func, ast.Name) and node.func.id == name)
            or (isinstance(node.func, ast.Attribute) and node.func.attr == name)
        )
    ]


@pytest.mark.parametrize(
    "path", source_files("app", "handlers", "policies", "bench"), ids=lambda p: module_name(p)
)
def test_only_bootstrap_constructs_the_github_client(path: Path) -> None:
    """One place builds the GitHub client (with the shared limits and HTTP cache): `app/bootstrap.py`."""
    if module_name(path) in CONSTRUCTS_THE_CLIENT:
        return
    lines = constructs(path, "GitHubClient")
    assert not lines, f"{module_name(path)} constructs GitHubClient on lines {lines}"


def name_collisions(paths: list[Path]) -> dict[str, list[str]]:
    """File name -> the modules that share it (packages' `__init__.py` and migrations aside)."""
    by_name: dict[str, list[str]] = {}
    for path in paths:
        if path.name != "__init__.py" and "migrations" not in path.parts:
            by_name.setdefault(path.name, []).append(module_name(path))
    return {name: modules for name, modules in by_name.items() if len(modules) > 1}


def test_no_two_shell_modules_share_a_name() -> None:
    """`answers.py` or `api.py` names one module, not three: each module of `app/` has a name of its own."""
    paths = [*source_files("app"), ROOT / "handlers" / "answers.py", ROOT / "handlers" / "api.py"]
    assert name_collisions(paths) == {}


PURE_VIEWS_MAY_USE = {"markupsafe"}
VIEWS_MAY_REACH = ("app.views", "app.contracts")
WEB_MAY_USE_MARKUPSAFE = {"app.web.pages"}


def _closure(start: str, graph: dict[str, set[str]]) -> set[str]:
    """`start` and every first-party module it imports at run time, directly or through others."""
    seen: set[str] = set()
    todo = [start]
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(graph.get(name, ()))
    return seen


def _third_party(modules: set[str]) -> set[str]:
    """The top-level names of what `modules` import from outside railyard and the standard library."""
    return {
        _top(i.module)
        for path in source_files(*FIRST_PARTY)
        if module_name(path) in modules
        for i in imports_of(path)
        if not i.type_checking and not _is_stdlib(i.module) and _top(i.module) not in FIRST_PARTY
    }


def views_rule_breaks(name: str, imported: set[str], reached: set[str], third_party: set[str]) -> set[str]:
    """What breaks the views' rule for module `name`: its direct imports, the first-party modules
    it reaches at run time, and the third-party packages those use."""
    wrong = {m for m in imported if _top(m) == "aiohttp" or m == "app.web" or m.startswith("app.web.")}
    if "aiohttp" in third_party:
        wrong.add("aiohttp (reached)")
    store = {m for m in imported if m.startswith("app.store")}
    outside = {m for m in reached if _top(m) == "app" and not m.startswith(VIEWS_MAY_REACH)}
    return wrong | store | outside | (third_party - PURE_VIEWS_MAY_USE - {"aiohttp"})


@pytest.mark.parametrize("path", source_files("app/views"), ids=lambda p: module_name(p))
def test_views_are_words_without_http_or_the_database(path: Path) -> None:
    """A view imports no aiohttp, nothing of `app/web` nor of the store; every view, the web pages
    among them, reaches nothing but policies, handlers, views, the contracts and markupsafe."""
    name, graph = module_name(path), _graph()
    reached = _closure(name, graph)
    known = _real_modules()  # `from m import name` also records `m.name`: keep real modules only
    imported = {
        i.module
        for i in imports_of(path)
        if not i.type_checking and (_top(i.module) not in FIRST_PARTY or i.module in known)
    }
    wrong = views_rule_breaks(name, imported, reached, _third_party(reached))
    assert not wrong, f"{name} imports or reaches {sorted(wrong)}"


@pytest.mark.parametrize("path", source_files("app/web"), ids=lambda p: module_name(p))
def test_web_modules_build_no_html(path: Path) -> None:
    """The words and markup of the pages are chosen in `app/views/`; `app/web/` only sends them."""
    name = module_name(path)
    uses = {i.module for i in imports_of(path) if _top(i.module) == "markupsafe"}
    assert name in WEB_MAY_USE_MARKUPSAFE or not uses, f"{name} builds HTML with {sorted(uses)}"


def _all_python_files() -> list[Path]:
    return sorted(p for p in ROOT.rglob("*.py") if not SKIPPED_DIRS & set(p.relative_to(ROOT).parts))


@pytest.mark.parametrize("path", _all_python_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_is_over_500_lines(path: Path) -> None:
    """Every module stays short enough to read in one sitting."""
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_LINES, f"{path.relative_to(ROOT)} has {lines} lines"


# -- the checker checks ---------------------------------------------------------------------


def test_the_circle_finder_finds_a_circle_and_ignores_a_chain() -> None:
    """A -> B -> A is a circle; A -> B -> C is not."""
    assert list(_cycles({"a": {"b"}, "b": {"a"}, "c": set()})) == [["a", "b"]]
    assert list(_cycles({"a": {"b"}, "b": {"c"}, "c": set()})) == []


def test_the_views_rule_catches_http_the_web_the_store_and_other_packages() -> None:
    """A view importing aiohttp, app.web or app.store, or reaching app.github or pydantic, breaks
    the rule; reaching the contracts does not."""
    page = "app.views.pages.board"
    assert views_rule_breaks(page, {"aiohttp.web"}, {page}, {"aiohttp"}) == {
        "aiohttp.web",
        "aiohttp (reached)",
    }
    assert views_rule_breaks(page, {"app.web.pages"}, {page, "app.web.pages"}, set()) >= {"app.web.pages"}
    assert views_rule_breaks(page, {"app.store.listing"}, {page}, set()) == {"app.store.listing"}
    assert views_rule_breaks(page, set(), {page, "app.github.client"}, {"pydantic"}) == {
        "app.github.client",
        "pydantic",
    }
    assert views_rule_breaks(page, {"markupsafe", "policies.model"}, {page}, {"markupsafe"}) == set()
    replies = "app.views.replies_text"
    assert (
        views_rule_breaks(
            replies, {"app.contracts.effect_types"}, {replies, "app.contracts.effect_types"}, set()
        )
        == set()
    )
    assert views_rule_breaks(replies, {"app.store.effects"}, {replies}, set()) == {"app.store.effects"}


def test_the_rank_rule_catches_an_upward_a_sideways_and_an_unranked_import() -> None:
    """store -> runtime runs up, store -> views runs sideways, app.extra is unranked; runtime -> store
    and store -> settings run down."""
    edges = {
        ("app.store", "app.runtime"): {"up"},
        ("app.store", "app.views"): {"sideways"},
        ("app.extra", "app.store"): {"unranked"},
        ("app.runtime", "app.store"): {"down"},
        ("app.store", "app.settings"): {"bottom"},
    }
    assert rank_breaks(edges) == {"up", "sideways", "unranked"}


def test_the_construction_finder_sees_a_call_and_not_a_mention(tmp_path: Path) -> None:
    """`GitHubClient(...)` and `client.GitHubClient(...)` are constructions; a type hint is not."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from app.github import client\nx: client.GitHubClient | None = None\n"
        "a = client.GitHubClient(1)\nb = GitHubClient(2)\n"
    )
    assert constructs(probe, "GitHubClient") == [3, 4]


def test_the_name_check_sees_two_modules_of_one_name(tmp_path: Path) -> None:
    """Two `answers.py` in different packages collide; two `__init__.py` do not."""
    paths = [ROOT / "app/views/answers.py", ROOT / "app/web/answers.py", ROOT / "app/web/__init__.py"]
    assert name_collisions([*paths, ROOT / "app/views/__init__.py"]) == {
        "answers.py": ["app.views.answers", "app.web.answers"]
    }


def test_imports_under_type_checking_are_marked(tmp_path: Path) -> None:
    """An import under `if TYPE_CHECKING:` is seen and marked, a function-level import is seen too."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import app.cli\n"
        "def f() -> None:\n    from app.store import unit\n"
    )
    found = imports_of(probe)
    assert Import("app.cli", True) in found
    assert Import("app.store.unit", False) in found
