"""The layers hold: read every module's imports (AST) and fail when a rule of the README's
*Architecture* section breaks.

- `policies/` imports only the standard library (and itself);
- `handlers/` imports only the standard library, `policies/`, itself and structlog: nothing
  from `app/`, no database driver, no HTTP client;
- no import circles among railyard's modules (imports under `TYPE_CHECKING` excepted);
- `app/` has at most six modules at its top level and at least four sub-packages;
- SQL lives in `app/store/` (and the migrations under it);
- `app/views/` never reaches aiohttp, even through other modules, and imports nothing from
  `app/web/`; it imports `app/store/` only where two older views did (`answers`, `surfaces`:
  they build the outbox's effects), and every other view (the web pages' included) is pure:
  through all its imports, only the standard library, `policies/`, `handlers/`, `app/views/`
  and markupsafe;
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


# The views that still reach the store directly, and exactly which store modules (no new ones).
VIEWS_STORE_IMPORTS = {
    "app.views.answers": {"app.store.effects", "app.store.replies"},
    "app.views.surfaces": {"app.store.database", "app.store.effects", "app.store.pulls", "app.store.tickets"},
}
PURE_VIEWS_MAY_USE = {"markupsafe"}
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
    if name in VIEWS_STORE_IMPORTS:
        return wrong | (store - VIEWS_STORE_IMPORTS[name])
    outside = {m for m in reached if _top(m) == "app" and not m.startswith("app.views")}
    return wrong | store | outside | (third_party - PURE_VIEWS_MAY_USE - {"aiohttp"})


@pytest.mark.parametrize("path", source_files("app/views"), ids=lambda p: module_name(p))
def test_views_are_words_without_http_or_the_database(path: Path) -> None:
    """A view imports no aiohttp and nothing of `app/web`; only the two older views touch the store;
    the others, the web pages among them, reach nothing but policies, handlers, views and markupsafe."""
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
    """A page view importing aiohttp, app.web or app.store, or reaching app.github or pydantic,
    breaks the rule; an older view's listed store import does not, an unlisted one does."""
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
    older = "app.views.answers"
    assert views_rule_breaks(older, {"app.store.effects"}, {older, "app.github.client"}, {"httpx"}) == set()
    assert views_rule_breaks(older, {"app.store.listing"}, {older}, set()) == {"app.store.listing"}


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
