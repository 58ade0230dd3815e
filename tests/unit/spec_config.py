"""SPEC's example `.github/railyard.yml`, which several configuration tests read."""

from __future__ import annotations

SPEC_EXAMPLE = """\
roles:                       # "@org/team-slug" = GitHub team; a bare name = a login
  requester: ["@acme/product"]
  task_owner: ["@acme/leads"]
  runner: ["@acme/agents", "coder-bot[bot]"]
  reviewer: ["@acme/reviewers"]
  repository_maintainer: ["@acme/maintainers"]
  release_owner: ["@acme/release"]
high_risk:
  labels: ["risk:high"]      # tickets with one of these labels need independent review
self_verification: explicit  # explicit | never
tickets:
  label: null                # issues opened/labelled with this label become draft tickets
  no_code_label: "no-code"
  branch_pattern: null       # e.g. "agent/{number}-*": a claimed ticket's branches
claims:
  max_silence_minutes: 240
acceptance:
  expires_after_days: 30     # null = never (see Acceptance that stays true)
  ci: record                 # record | require
  by: people                 # people | anyone: Bots and `agents` never accept
agents: ["@acme/agents"]     # accounts that are agents although they are user accounts
limits:
  commands_per_hour: 30
checks:
  required: []               # check names that can block a PR
  unlinked: success          # success | action_required
deployments:
  environments: ["production"]
"""
