#!/bin/sh
# bench/run.sh BIN — orch's budgets (docs/design.md §11) measured side by side with
# `git add && git commit` of one task file in the same repository.
#
#   make bench                  # = ./bench/run.sh bin/orch
#   BENCH_RUNS=50 ./bench/run.sh bin/orch
#
# For each size (10,000 and 1,000 tasks, BENCH_HISTORY commits of history,
# default 1,000), bench/gen writes a repository with git fast-import, and
# bench/runner times each operation (warm-ups first, then BENCH_RUNS runs)
# and reports the median, p90 and peak RSS (the child's ru_maxrss). It
# prints one markdown table row per operation; "ratio to git commit" is the
# operation's median over the median of `git add && git commit` measured on
# the same repository in the same run. The last column, the median CPU time
# (user + system), is less disturbed than wall time by a busy machine, but
# does not count waiting for the disk (fsync).
#
# The git baseline commits in a linked worktree of the SAME repository, on a
# throwaway branch (bench-scratch) started at the state branch's tip, so its
# index and worktree hold all the task files (what `git commit` of one task
# file costs in a repository of that size) while main, the state branch and
# the view stay untouched. The state branch itself cannot be used: orch
# refuses to move a checked-out branch.
#
# Then: `orch new` and `orch claim` at 1,000 tasks with BENCH_LONG_HISTORY
# (10,000) commits (cost flat in history), and BENCH_SWARM (16) processes
# claiming at once from their own worktrees over 1,000 incoming tasks
# (bench/swarm: claims per second, double claims, lost commits, fsck).
#
# The archive: 20,000 tasks, 19,000 of them finished long ago and moved to
# the archive by `orch archive --due` (timed), against 1,000 open tasks, in
# the same run: `orch new`, `orch list --json` and `orch claim` there divided
# by the same operation on the 1,000 open tasks (budget 1.3).
#
# Environment: BENCH_RUNS (20), BENCH_WARMUP (2), BENCH_HISTORY (1000),
# BENCH_LONG_HISTORY (10000; 0 skips), BENCH_SWARM (16; 0 skips),
# BENCH_COORD (200 tasks through orch run; 0 skips), BENCH_COORD_MEM (1000),
# BENCH_ARCHIVE (1; 0 skips), BENCH_ONLY (archive: only the archive's rows),
# BENCH_SIZES ("10000 1000"), BENCH_OUT (a directory to keep the
# repositories in; default a temp dir, removed at the end), GO (go).
set -eu

if [ $# -ne 1 ]; then
	echo "usage: $0 ORCH_BINARY" >&2
	exit 2
fi
case $1 in
/*) BIN=$1 ;;
*) BIN=$(pwd)/$1 ;;
esac
[ -x "$BIN" ] || { echo "bench: $BIN is not an executable" >&2; exit 2; }

ROOT=$(cd "$(dirname "$0")/.." && pwd)
GO=${GO:-go}
RUNS=${BENCH_RUNS:-20}
WARM=${BENCH_WARMUP:-2}
HISTORY=${BENCH_HISTORY:-1000}
SIZES=${BENCH_SIZES:-"10000 1000"}
SHORT_HISTORY=100
ONLY=${BENCH_ONLY:-}
case $ONLY in
'') ;;
archive) SIZES= ;;
*)
	echo "bench: BENCH_ONLY=$ONLY: the only section that can run alone is archive" >&2
	exit 2
	;;
esac

if [ -n "${BENCH_OUT:-}" ]; then
	OUT=$BENCH_OUT
	mkdir -p "$OUT"
else
	OUT=$(mktemp -d "${TMPDIR:-/tmp}/orch-bench.XXXXXX")
	trap 'rm -rf "$OUT"' EXIT INT TERM
fi

# The Go build keeps the user's module and build caches (HOME changes
# below): no downloads, no network, no compiling beside the first row.
GOMODCACHE=$("$GO" env GOMODCACHE) GOCACHE=$("$GO" env GOCACHE) GOPATH=$("$GO" env GOPATH)
export GOMODCACHE GOCACHE GOPATH

# Only this repository's config counts: no user or system config, a fixed
# identity (bench/gen also sets one in each repository).
export GIT_CONFIG_NOSYSTEM=1
export HOME="$OUT/home"
export XDG_CONFIG_HOME="$HOME/.config"
unset ORCH_AGENT ORCH_STATE_BRANCH GIT_DIR GIT_WORK_TREE || true
mkdir -p "$HOME"
printf '[user]\n\tname = bench\n\temail = bench@example.com\n[init]\n\tdefaultBranch = main\n' >"$HOME/.gitconfig"

echo "bench: building bench/gen and bench/runner" >&2
(cd "$ROOT" && "$GO" build -o "$OUT/gen" ./bench/gen && "$GO" build -o "$OUT/runner" ./bench/runner && "$GO" build -o "$OUT/swarm" ./bench/swarm && "$GO" build -o "$OUT/coord" ./bench/coord)

LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')
ROWS=$OUT/rows.md
: >"$ROWS"

# measure LABEL TASKS BASE_MEDIAN RUNNER_ARGS... : one table row.
# BASE_MEDIAN "-" means this row is the baseline (ratio 1.00); "" that
# there is none (the baseline failed). MEDIAN and RATIO are this row's
# figures afterwards (empty when it failed).
measure() {
	label=$1 tasks=$2 base=$3
	shift 3
	MEDIAN= RATIO=
	echo "bench: $label ($tasks tasks)" >&2
	if ! fig=$("$OUT/runner" -n "$RUNS" -warmup "$WARM" -tsv "$@"); then
		printf '| %s | %s | failed | | | | |\n' "$label" "$tasks" >>"$ROWS"
		return 0
	fi
	med=$(echo "$fig" | cut -f1)
	p90=$(echo "$fig" | cut -f2)
	rss=$(echo "$fig" | cut -f3)
	cpu=$(echo "$fig" | cut -f4)
	if [ "$base" = "-" ]; then
		ratio=1.00
		LAST_MEDIAN=$med
	elif [ -z "$base" ]; then
		ratio=n/a
	else
		ratio=$(awk -v a="$med" -v b="$base" 'BEGIN { printf "%.2f", a / b }')
	fi
	MEDIAN=$med RATIO=$ratio
	printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$label" "$tasks" "$med" "$p90" "$rss" "$ratio" "$cpu" >>"$ROWS"
}

skip() {
	printf '| %s | %s | skipped: %s | | | | |\n' "$1" "$2" "$3" >>"$ROWS"
}

has_verb() { "$BIN" "$1" --help >/dev/null 2>&1; }

GEN_NOTES=$OUT/gen.txt
: >"$GEN_NOTES"
BASE10K=
BASE1K=

for N in $SIZES; do
	REPO=$OUT/repo-$N
	echo "bench: generating $N tasks, $HISTORY commits" >&2
	"$OUT/gen" -o "$REPO" -tasks "$N" -commits "$HISTORY" -orch "$BIN" | tee -a "$GEN_NOTES" >&2
	MAN=$REPO/.git/bench

	# Baseline: git add && git commit of one task file, in a scratch
	# worktree of this repository on a throwaway branch.
	SCRATCH=$OUT/scratch-$N
	git -C "$REPO" worktree add -q -b bench-scratch "$SCRATCH" refs/heads/orch
	FILE=$(cut -d' ' -f3 "$MAN/all.txt" | head -n 1)
	measure '`git add <task> && git commit -q`' "$N" - \
		-dir "$SCRATCH" -pre "echo '<!-- bench edit '\$(date +%s%N)' -->' >>'$FILE'" \
		-- git add "$FILE" '&&' git commit -q -m 'bench: edit one task'
	BASE=$LAST_MEDIAN
	[ "$N" = 10000 ] && BASE10K=$BASE
	[ "$N" = 1000 ] && BASE1K=$BASE

	measure '`orch new`' "$N" "$BASE" -dir "$REPO" -- "$BIN" new 'Bench task' --label bench
	measure '`orch list --json`' "$N" "$BASE" -dir "$REPO" -- "$BIN" list --json
	# The list an agent or a board makes, after somebody's transition: the
	# changed task's blob is new to the caches.
	measure '`orch list --json` after `orch new`' "$N" "$BASE" -dir "$REPO" \
		-pre "'$BIN' new 'Bench task' --label bench >/dev/null" -- "$BIN" list --json
	SHOW_ID=$(head -n 1 "$MAN/rejected.txt")
	measure '`orch show <id>`' "$N" "$BASE" -dir "$REPO" -- "$BIN" show "$SHOW_ID"

	# Verbs the lead is adding: measured once they exist.
	if has_verb claim; then
		measure '`orch claim`' "$N" "$BASE" -dir "$REPO" -- "$BIN" claim --agent agent-c --json
	else
		skip '`orch claim`' "$N" '`orch claim --help` fails (verb not built yet)'
	fi
	if has_verb reject; then
		if [ "$(wc -l <"$MAN/provisional.txt")" -ge $((RUNS + WARM)) ]; then
			measure '`orch reject <id>`' "$N" "$BASE" -dir "$REPO" -each "$MAN/provisional.txt" -- \
				"$BIN" reject '{}' -m 'Bench rejection: the handler drops the retry.' --agent lead
		else
			skip '`orch reject <id>`' "$N" "fewer than $((RUNS + WARM)) provisional tasks"
		fi
	else
		skip '`orch reject <id>`' "$N" '`orch reject --help` fails (verb not built yet)'
	fi
done

# The archive: finished work moved out of tasks/ costs the ordinary commands
# nothing. Repository A holds 20,000 tasks, 19,000 of them done 60 days ago
# (due under the default archive_after, 30d) and 1,000 open; B holds 1,000
# open tasks of the same mix. `orch archive --due` (a human's verb: the
# bench's git user is not on the roster) moves A's 19,000, a batch of 100
# per commit; then each operation runs on B, whose median is the base, and
# on A. A's open tasks depend on finished ones as in the realistic mix, so
# A's claims look dependencies up in the archive; B's dependencies are on
# open tasks, so fewer of its incoming tasks are ready, but hundreds are.
ARCHIVE_LINES=
if [ "${BENCH_ARCHIVE:-1}" != 0 ]; then
	if has_verb archive; then
		A=$OUT/archive-20000
		B=$OUT/open-1000
		echo "bench: generating 20000 tasks (19000 finished 60 days ago, 1000 open), $HISTORY commits" >&2
		"$OUT/gen" -o "$A" -tasks 20000 -finished 19000 -open -commits "$HISTORY" -orch "$BIN" | tee -a "$GEN_NOTES" >&2
		echo "bench: generating 1000 open tasks, $HISTORY commits" >&2
		"$OUT/gen" -o "$B" -tasks 1000 -open -commits "$HISTORY" -orch "$BIN" | tee -a "$GEN_NOTES" >&2
		ready() { (cd "$1" && "$BIN" list --ready --agent agent-c --jq '.tasks | length' 2>/dev/null) || echo '?'; }
		READY_A_BEFORE=$(ready "$A")
		COMMITS_BEFORE=$(git -C "$A" rev-list --count refs/heads/orch)
		echo "bench: orch archive --due (20000 tasks, 19000 due)" >&2
		T0=$(date +%s%N)
		if ARCHIVE_OUT=$(cd "$A" && "$BIN" archive --due 2>&1); then
			T1=$(date +%s%N)
			MOVED=$(echo "$ARCHIVE_OUT" | sed -n 's/^\([0-9][0-9]*\) task(s) archived.*/\1/p')
			COMMITS=$(($(git -C "$A" rev-list --count refs/heads/orch) - COMMITS_BEFORE))
			LEFT=$(git -C "$A" ls-tree refs/heads/orch tasks/ | wc -l)
			ARCHIVED=$(git -C "$A" ls-tree -r --name-only refs/heads/orch archive/ | wc -l)
			ARCHIVE_LINES=$(awk -v ms="$(((T1 - T0) / 1000000))" -v moved="${MOVED:-?}" -v c="$COMMITS" -v left="$LEFT" -v arch="$ARCHIVED" \
				-v rb="$READY_A_BEFORE" -v ra="$(ready "$A")" -v rB="$(ready "$B")" 'BEGIN {
				printf "`orch archive --due` in the 20,000-task repository: **%s tasks moved in %.1f s** (%d commits); then %d files in tasks/ (about 1,000 expected) and %d in archive/. Ready to claim for agent-c: %s before, %s after (the same expected: their dependencies on archived tasks are met); %s in the 1,000-task repository.", moved, ms / 1000, c, left, arch, rb, ra, rB }')
		else
			ARCHIVE_LINES="\`orch archive --due\` in the 20,000-task repository: FAILED ($(echo "$ARCHIVE_OUT" | tail -n 3 | tr '\n' ' '))"
		fi
		LA='(20,000 tasks, 19,000 archived)'
		LB='(1,000 open tasks)'
		RATIOS=
		# archive_op NAME ARGS... : the operation on B, then on A divided by B.
		archive_op() {
			name=$1
			shift
			measure "\`orch $name\` $LB" 1000 - -dir "$B" -- "$BIN" "$@"
			base=$MEDIAN
			measure "\`orch $name\` $LA" 20000 "$base" -dir "$A" -- "$BIN" "$@"
			shown=failed
			if [ -n "$RATIO" ]; then
				shown="**$RATIO×**"
			fi
			RATIOS="$RATIOS${RATIOS:+, }$name $shown"
		}
		archive_op new new 'Bench task' --label bench
		archive_op 'list --json' list --json
		archive_op claim claim --agent agent-c --json
		ARCHIVE_LINES="$ARCHIVE_LINES
20,000 tasks of which 19,000 archived, against 1,000 open tasks (same run, medians; budget 1.3×): $RATIOS"
	else
		skip '`orch archive --due`' 20000 '`orch archive --help` fails (verb not built yet)'
	fi
fi

# Cost flat in history length: orch new at 10,000 tasks with 100 commits of
# history (the ratio is to the git commit of the 10,000-task repository
# above).
if [ -n "$BASE10K" ] && [ "$HISTORY" != "$SHORT_HISTORY" ]; then
	REPO=$OUT/repo-10000-h$SHORT_HISTORY
	echo "bench: generating 10000 tasks, $SHORT_HISTORY commits" >&2
	"$OUT/gen" -o "$REPO" -tasks 10000 -commits "$SHORT_HISTORY" -orch "$BIN" | tee -a "$GEN_NOTES" >&2
	measure "\`orch new\` (BENCH_HISTORY=$SHORT_HISTORY)" 10000 "$BASE10K" -dir "$REPO" -- "$BIN" new 'Bench task' --label bench
fi

# Cost flat in history length, the other way: 1,000 tasks with 10,000
# commits of history against the 1,000-task repository above.
if [ -n "$BASE1K" ] && [ "${BENCH_LONG_HISTORY:-10000}" != 0 ]; then
	LONG=${BENCH_LONG_HISTORY:-10000}
	REPO=$OUT/repo-1000-h$LONG
	echo "bench: generating 1000 tasks, $LONG commits" >&2
	"$OUT/gen" -o "$REPO" -tasks 1000 -commits "$LONG" -orch "$BIN" | tee -a "$GEN_NOTES" >&2
	measure "\`orch new\` (BENCH_HISTORY=$LONG)" 1000 "$BASE1K" -dir "$REPO" -- "$BIN" new 'Bench task' --label bench
	if has_verb claim; then
		measure "\`orch claim\` (BENCH_HISTORY=$LONG)" 1000 "$BASE1K" -dir "$REPO" -- "$BIN" claim --agent agent-c --json
	fi
fi

# 16 agents claiming at once, each from its own worktree, over 1,000
# incoming tasks: aggregate claims per second, and the race's invariants.
SWARM_LINE=
if [ -z "$ONLY" ] && has_verb claim && [ "${BENCH_SWARM:-16}" != 0 ]; then
	AGENTS=${BENCH_SWARM:-16}
	REPO=$OUT/swarm-1000
	echo "bench: $AGENTS concurrent claimers over 1000 incoming tasks" >&2
	"$OUT/gen" -o "$REPO" -tasks 1000 -commits 100 -queue incoming -orch "$BIN" >/dev/null
	if fig=$("$OUT/swarm" -repo "$REPO" -orch "$BIN" -agents "$AGENTS" -tsv); then
		SWARM_LINE=$(echo "$fig" | awk -F'\t' -v a="$AGENTS" '{ printf "%s concurrent claimers (one worktree each) over 1,000 incoming tasks: %s claims in %s s = **%s claims/s**; double claims %s; commits missing %s; git fsck %s", a, $1, $2, $3, $4, $5, $6 }')
	else
		SWARM_LINE="$AGENTS concurrent claimers: FAILED ($fig)"
	fi
fi

# The coordinator (orch run, docs/design.md §11): its cost per task with 16 slots of
# instant scripted agents, against the same claim, submit and approve run
# back to back by a script; and its peak memory over 100 and 1,000 tasks.
COORD_LINE=
if [ -z "$ONLY" ] && has_verb run && [ "${BENCH_COORD:-200}" != 0 ]; then
	echo "bench: orch run over ${BENCH_COORD:-200} tasks, 16 slots" >&2
	if fig=$("$OUT/coord" -orch "$BIN" -tasks "${BENCH_COORD:-200}" -memtasks "${BENCH_COORD_MEM:-1000}" -tsv); then
		COORD_LINE=$(echo "$fig" | awk -F'\t' -v n="${BENCH_COORD:-200}" -v m="${BENCH_COORD_MEM:-1000}" '{ printf "orch run, 16 slots, instant agents, %s tasks: **%s ms a task** against %s ms for claim + submit + approve by a script (**%s×**); peak RSS %s MB over 100 tasks, %s MB over %s", n, $2, $1, $3, $4, $5, m }')
	else
		COORD_LINE="orch run: FAILED ($fig)"
	fi
fi

echo
echo "orch $("$BIN" version 2>/dev/null | head -n 1 || echo '?'); $(git --version); $(nproc 2>/dev/null || echo '?') cores; history $HISTORY commits unless noted; $RUNS runs after $WARM warm-ups; load average $LOAD_START at the start, $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?') at the end"
echo
sed -n 's/^gen: /- /p' "$GEN_NOTES"
echo
echo '| operation | tasks | median ms | p90 ms | peak RSS MB | ratio to git commit | median CPU ms |'
echo '|---|---:|---:|---:|---:|---:|---:|'
cat "$ROWS"
if [ -n "$SWARM_LINE" ]; then
	echo
	echo "$SWARM_LINE"
fi
if [ -n "$COORD_LINE" ]; then
	echo
	echo "$COORD_LINE"
fi
if [ -n "$ARCHIVE_LINES" ]; then
	echo
	echo "$ARCHIVE_LINES" | awk 'NR > 1 { print "" } { print }'
fi
