#!/usr/bin/env bash
# make demo: a throwaway repository seeded from the embedded example, taken
# through the whole review loop by two agents and a reviewer, then the rest
# of the queue by orch run with two scripted implementers and a scripted
# reviewer. Every step prints the command it runs and what orch answered.
set -euo pipefail
BIN=$(cd "$(dirname "${1:-bin/orch}")" && pwd)/$(basename "${1:-bin/orch}")
AGENTS=$(cd "$(dirname "$0")/../.orchestrator-example/agents" && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/orch-demo.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
export HOME="$WORK/home" GIT_CONFIG_NOSYSTEM=1 NO_COLOR=1
mkdir -p "$HOME"
git config --global user.name lead
git config --global user.email lead@example.com
git config --global init.defaultBranch main

step() { printf '\n\033[1m== %s\033[0m\n' "$*" | sed 's/\x1b\[[0-9;]*m//g'; }
run() { printf '$ %s\n' "$*"; "$@"; }
orch() { "$BIN" "$@"; }
# expect_fail CODE cmd...: show a refusal and its exit code.
expect_fail() {
  local want=$1; shift
  printf '$ %s\n' "$*"
  set +e; "$@"; local got=$?; set -e
  echo "(exit $got)"
  [ "$got" = "$want" ] || { echo "demo: expected exit $want, got $got" >&2; exit 1; }
}

step "A repository with some code, and orch seeded from the example"
mkdir "$WORK/repo" && cd "$WORK/repo"
git init -q && echo "# Sketch app" > README.md && git add README.md && git commit -qm "Initial commit"
run orch init --example
run orch list
echo "(The example is seeded with tasks in every queue: T-1qzk7w is escalated, rejected three times,"
echo " and T-8rjy5d blocked by an agent's refusal, on purpose: they wait for a person to decide.)"

step "The human in charge adds a task"
ID=$(orch new "Add a dark mode toggle" --priority critical --body "## Context

Users work at night. Add a toggle in the header that switches the app to a dark theme.

## Acceptance Criteria

- [ ] The toggle switches the theme without a reload.
- [ ] The choice survives a restart.")
echo "$ orch new \"Add a dark mode toggle\" --priority critical --body ..."
echo "$ID"
BRANCH=

step "agent-a claims it: a new branch from main, checked out in the task's own worktree"
run orch claim --task "$ID" --agent agent-a --worktree
BRANCH=$(orch show "$ID" --json | sed -n 's/.*"branch":"\([^"]*\)".*/\1/p' | head -1)
WT=$(orch worktree "$ID")

step "agent-a reads its prompt"
run orch prompt "$ID" --agent agent-a

step "agent-a works in its worktree, commits and submits"
cd "$WT"
echo "toggle" > theme.js && git add theme.js && git commit -qm "Add theme toggle"
run orch submit --agent agent-a --pr 7 -m "Toggle in the header; theme in CSS variables"
cd "$WORK/repo"

step "agent-a may not approve its own work"
expect_fail 4 orch approve "$ID" --agent agent-a

step "lead reviews and rejects with feedback"
run orch reject "$ID" --agent lead -m "The choice does not survive a restart: persist it in SettingsStore.
Push to the existing branch; do not open a new PR."
run orch show "$ID"

step "agent-a is locked out of the task it wrote"
expect_fail 4 orch claim --task "$ID" --agent agent-a

step "agent-b claims it: same branch, same worktree, same PR, a retry prompt"
run orch claim --task "$ID" --agent agent-b --worktree
run orch prompt "$ID" --agent agent-b

step "agent-b tries to resubmit without a new commit: refused"
cd "$WT"
expect_fail 4 orch submit --agent agent-b

step "agent-b fixes it on the same branch and resubmits"
echo "persist" >> theme.js && git commit -qam "Persist the theme in SettingsStore"
run git log --oneline main.."$BRANCH"
run orch submit --agent agent-b -m "Theme persisted; survives restarts"
cd "$WORK/repo"

step "Meanwhile a person commits on main: the same file, another line"
echo "// the theme lives in settings" > theme.js && git add theme.js && git commit -qm "Note where the theme lives"
run git log --oneline -2 main

step "lead approves: the task waits in approved to land"
run orch approve "$ID" --agent lead -m "Works after a restart."

step "orch land: the approved work conflicts with main, so it goes back with the hunks (no one locked out)"
run orch land
orch show "$ID" | sed -n '/^## Review Feedback (landing #1)/,/^This is not a verdict/p'

step "agent-b claims it again, brings the branch up to date and resubmits"
run orch claim --task "$ID" --agent agent-b
cd "$WT"
git merge -q main >/dev/null 2>&1 || true
printf 'toggle\npersist\n// the theme lives in settings\n' > theme.js && git add theme.js && git commit -qm "Merge main: keep the settings note"
run orch submit --agent agent-b -m "Merged main; the note stays at the end"
cd "$WORK/repo"

step "lead reviews the landing retry (the prompt shows the diff since the approval) and approves; it lands"
orch prompt "$ID" --agent lead | grep -m1 "landing retry"
run orch approve "$ID" --agent lead -m "Merge is right."
run orch land
run git log --oneline --graph -6 main

step "The history of the task, from the commit trailers"
run orch log "$ID"
run git log --oneline -3 orch

step "The coordinator: lead puts two scripted implementers and a scripted reviewer on the rest of the queue"
# The example's scripted agents (.orchestrator-example/agents/): the
# implementers answer the review's blocking issues, commit and submit; the
# reviewer asks for a test once, then approves.
cat >> .orchestrator/config.yaml <<YAML
run:
  agents:
    - {name: impl-1, cmd: 'sh "$AGENTS/implementer.sh"'}
    - {name: impl-2, cmd: 'sh "$AGENTS/implementer.sh"'}
  reviewers:
    - {name: rev-1, cmd: 'sh "$AGENTS/reviewer.sh"'}
YAML
run orch check
PATH="$(dirname "$BIN"):$PATH" run orch run --until-idle
run orch list
step "What waits for a person: the seeded escalation (T-1qzk7w) and refusal (T-8rjy5d), and agent-a's refused approval"
run orch inbox
step "Every approved task landed on main, each through a checked merge"
run git log --oneline --first-parent -8 main
run git status --short
echo
echo "demo: done (the throwaway repository was $WORK/repo)"
