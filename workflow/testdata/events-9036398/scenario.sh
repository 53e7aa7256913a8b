#!/bin/sh
# How this fixture was made: the event log and the commit messages of the
# state branch as orch wrote them at commit 9036398, before events and
# trailers were typed. This script ran every verb that writes an event (and
# each form of those that write more than one kind of data), with that
# commit's orch on PATH, in a fresh repository under $1:
#
#   events/       $1/repo/.orchestrator/events/*.jsonl
#   commits.json  the message of every commit of $1/repo's state branch
#   want/         what that commit's code read from them: Stats, EachEvent,
#                 the latest refusals, and each commit's orch log fields
#                 (web/testdata/charts-9036398.json: the stats page's charts)
#
# events_fixture_test.go reads them with today's code and wants the same.
set -eu
W=$1
rm -rf "$W"; mkdir -p "$W/home"
export HOME=$W/home GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=$W/home/gitconfig
git config --global user.name tester
git config --global user.email tester@example.com
git config --global init.defaultBranch main
unset ORCH_AGENT || true
cd "$W"
git init -q --bare remote.git
git init -q repo
cd repo
git commit -q --allow-empty -m base
git remote add origin "$W/remote.git"
git push -q origin main
orch init >/dev/null
cat > "$W/config.yaml" <<'CFG'
base_branch: main
claim_timeout: 1h
review:
  max_rejections: 3
  max_no_progress: 1
  reviewers:
    - lead
    - name: qa
      labels: [tests]
agents:
  - {name: agent-a, roles: [implementer]}
  - {name: agent-b, roles: [implementer]}
  - {name: agent-c, roles: [implementer, docs]}
humans: [tester, lead]
CFG
orch edit config --from "$W/config.yaml" >/dev/null
id() { orch new "$@" | tail -n 1; }
branch() { orch show "$1" --json | sed -n 's/.*"branch":"\([^"]*\)".*/\1/p' | head -n 1; }
work() { # a new commit on the task's branch
	b=$(branch "$1"); c=$(git commit-tree "refs/heads/$b^{tree}" -p "refs/heads/$b" -m "work on $1")
	git update-ref "refs/heads/$b" "$c"; echo "$c"
}
commit() { orch "$@" >/dev/null; }

# new (orch new), claim, submit (with a PR and a note), approve.
A=$(id 'Approve me' --priority high)
commit claim --task "$A" --agent agent-a
work "$A" >/dev/null
commit submit "$A" --agent agent-a --pr 7 -m 'ready'
commit approve "$A" --agent lead -m 'looks good'

# a hand-made task (new, by_hand) and archive.
printf -- '---\ntitle: Made by hand\n---\n\nBody.\n' > .orchestrator/tasks/by-hand.md
commit list
commit archive "$A" --agent lead

# reject with lockout, then unlock, then approve lifting a lockout; amend.
B=$(id 'Rejected once')
commit claim --task "$B" --agent agent-a
work "$B" >/dev/null
commit submit "$B" --agent agent-a
commit reject "$B" --agent lead -m 'the error path is untested'
commit reject "$B" --amend --agent lead -m 'see also the PR comments'
commit unlock "$B" agent-a --agent lead
commit claim --task "$B" --agent agent-b
work "$B" >/dev/null
commit submit "$B" --agent agent-b
commit reject "$B" --agent lead -m 'still untested'
commit claim --task "$B" --agent agent-c
work "$B" >/dev/null
commit submit "$B" --agent agent-c
commit approve "$B" --agent lead

# structured reviews: changes requested, responses (one named by another
# form), a re-review with notes; heartbeat.
C=$(id 'Reviewed')
commit claim --task "$C" --agent agent-a
work "$C" >/dev/null
commit submit "$C" --agent agent-a
cat > "$W/review.json" <<'JSON'
{"issues": [
  {"id": "TL-001", "severity": "HIGH", "title": "SQL injection", "location": "src/a.go:5", "problem": "user input in the query", "fix": "parameterise"},
  {"id": "TL-002", "severity": "MEDIUM", "title": "Duplicate lookup"},
  {"id": "TL-003", "severity": "LOW", "title": "Typo"}
]}
JSON
commit review "$C" --agent lead -F "$W/review.json"
commit claim --agent agent-b --task "$C"
commit heartbeat "$C" --agent agent-b
FIX=$(work "$C")
commit respond "$C" R1.1 fixed -m 'uses a parameterised query now' --commit "$FIX" --agent agent-b
commit respond "$C" TL-002 deferred -m 'tracked as a follow-up task' --agent agent-b
commit respond "$C" R1.3 rejected -m 'the word is spelled the way the style guide wants it here' --agent agent-b
commit submit "$C" --agent agent-b
commit review "$C" --agent lead --reopen R1.3 -m 'one note left'

# escalations: no progress; lockout deadlock; max rejections.
D=$(id 'No progress')
commit claim --task "$D" --agent agent-a
work "$D" >/dev/null
commit submit "$D" --agent agent-a
commit review "$D" --agent lead --issue 'HIGH|Broken'
commit claim --task "$D" --agent agent-b
work "$D" >/dev/null
commit respond "$D" R1.1 fixed -m 'fixed it' --agent agent-b
commit submit "$D" --agent agent-b
commit review "$D" --agent lead --reopen R1.1
R=$(id 'Docs' --role docs)
commit claim --task "$R" --agent agent-c
commit submit "$R" --agent agent-c
commit reject "$R" --agent lead -m 'wrong audience'
E=$(id 'Deadlock')
for ag in agent-a agent-b agent-c; do
	commit claim --task "$E" --agent $ag
	work "$E" >/dev/null
	commit submit "$E" --agent $ag
	commit reject "$E" --agent lead -m "not yet ($ag)"
done

# a scoped reviewer's ground: reject, amend, review, approve.
F=$(id 'Integration tests' --label tests)
commit claim --task "$F" --agent agent-a
work "$F" >/dev/null
commit submit "$F" --agent agent-a
commit reject "$F" --agent qa -m 'the fixtures leak'
commit reject "$F" --amend --agent qa -m 'the temp dirs, precisely'
commit claim --task "$F" --agent agent-b
work "$F" >/dev/null
commit submit "$F" --agent agent-b
commit review "$F" --agent qa -m 'fine now'
G=$(id 'More tests' --label tests)
commit claim --task "$G" --agent agent-a
commit submit "$G" --agent agent-a
commit approve "$G" --agent qa

# pause, fail (own claim and a human's), reopen, requeue --to, escalate, sweep.
H=$(id 'Paused')
commit claim --task "$H" --agent agent-a
commit pause "$H" --agent agent-a -m 'done: parser; next: printer'
commit claim --task "$H" --agent agent-b
commit fail "$H" --agent agent-b -m 'cannot be done this way'
commit reopen "$H" --agent lead -m 'the API changed'
commit claim --task "$H" --agent agent-c
commit requeue "$H" --agent lead --to agent-a
commit claim --task "$H" --agent agent-a
commit requeue "$H" --agent lead
commit escalate "$H" --agent agent-a -m 'needs a product decision'
commit fail "$H" --agent lead -m 'dropped'
I=$(id 'Stale')
commit claim --task "$I" --agent agent-a
sleep 1
commit sweep --older-than 1ms --agent lead

# authority refused: an agent tries a human's verb.
J=$(id 'Authority')
orch requeue "$J" --agent agent-a >/dev/null 2>&1 && exit 1 || true

# refusals: invalid, then valid; every decision.
refuse_blocker() {
	commit refuse "$1" --agent "$2" --reason BLOCKER --summary 'Staging auth API is down' --attempted 'Ran go test ./auth/... - 12 failures' --attempted 'Called /health on staging auth - 503' --blocking-factor 'The staging auth API returns 503 for every request' --evidence 'error_log:503 from /auth' --alternative 'Have ops restart the staging auth service, then rerun the login tests'
}
K=$(id 'Blocked')
commit claim --task "$K" --agent agent-a
orch refuse "$K" --agent agent-a --reason BLOCKER --summary 'It is down' --blocking-factor 'down' >/dev/null 2>&1 && exit 1 || true
refuse_blocker "$K" agent-a
commit decide "$K" override --agent lead -m 'The API is back; try again'
refuse_blocker "$K" agent-a
commit decide "$K" accept --agent lead
L=$(id 'Deferred')
commit claim --task "$L" --agent agent-b
refuse_blocker "$L" agent-b
commit decide "$L" --auto --agent lead
M=$(id 'Billing revamp')
commit claim --task "$M" --agent agent-b
commit refuse "$M" --agent agent-b --reason SCOPE_CREEP --summary 'Three separate changes' --attempted 'Listed the billing call sites - 31 across 6 packages' --attempted 'Estimated effort - 20h vs 4h planned' --blocking-factor 'Invoices, refunds and tax all need separate schema changes' --alternative 'Split into invoices, refunds and tax tasks' --alt-task 'Invoices|invoice schema|none|6h' --alt-task 'Refunds|refund schema|N/A|6h' --alt-task 'Tax|tax tables|after refunds|8h' --original-scope 'Billing tweaks (4h)' --growth-factor 5
commit decide "$M" decompose -m 'Agreed; three tasks.' --agent lead
N=$(id 'Realtime sync')
commit claim --task "$N" --agent agent-c
cat > "$W/infeasible.json" <<'JSON'
{
  "reason_type": "INFEASIBLE",
  "reason_summary": "v1 and v2 cannot both hold",
  "reason_detail": "\"Stay backwards compatible with v1 clients\" conflicts with \"use the v2 API only\".",
  "what_attempted": ["Built the v2 client - it has no v1 encoder", "Ran the v1 integration suite against v2 - unknown field envelope"],
  "blocking_factor": "The v2 client cannot emit the v1 wire format",
  "evidence": [
    {"type": "conflict", "data": "v2 client has no v1 encoder", "source": "client/v2/encode.go"},
    {"type": "error_log", "data": "v1 client: unknown field envelope", "source": "integration test"}
  ],
  "suggested_alternative": "Keep the v1 wire format and add the v2 client behind a flag, migrating callers one at a time"
}
JSON
commit refuse "$N" --agent agent-c -F "$W/infeasible.json"
commit decide "$N" reformulate --agent lead

# a claim taking over a lease that ran out.
sed 's/^claim_timeout: 1h$/claim_timeout: 1s/' "$W/config.yaml" > "$W/short.yaml"
commit edit config --from "$W/short.yaml"
O=$(id 'Lease')
commit claim --task "$O" --agent agent-a
sleep 2
commit claim --task "$O" --agent agent-b
commit edit config --from "$W/config.yaml"

# a GitHub review imported: a rejection from GitHub.
P=$(id 'Snap fork start')
commit claim --task "$P" --agent agent-a
commit submit "$P" --agent agent-a --pr 48
cat > "$W/48.reviews.json" <<'JSON'
[{"id":2002,"node_id":"PRR_kwDOA2002","user":{"login":"alice","id":1001,"node_id":"MDQ6VXNlcj1001","type":"User","site_admin":false},"body":"Fork start is not snapped like the other shapes.","state":"CHANGES_REQUESTED","html_url":"https://github.com/acme/app/pull/48#pullrequestreview-2002","pull_request_url":"https://api.github.com/repos/acme/app/pulls/48","author_association":"MEMBER","submitted_at":"2026-02-06T16:30:00Z","commit_id":"6dcb09b5b57875f334f61aebed695e2e4193db5e"}]
JSON
echo '[]' > "$W/48.comments.json"
commit pr import "$P" --reviews "$W/48.reviews.json" --comments "$W/48.comments.json"

# a sync conflict: two clones change the same field.
Q=$(id 'Touch events')
commit sync
cd "$W"
git clone -q remote.git c2
orch -C c2 sync >/dev/null
cd "$W/repo"
f=$(ls .orchestrator/tasks/$Q-*.md)
sed -i 's/^priority: P2$/priority: P0/' "$f"
commit sync
cd "$W/c2"
f=$(ls .orchestrator/tasks/$Q-*.md)
sed -i 's/^priority: P2$/priority: P3/' "$f"
commit sync
cd "$W/repo"
commit sync
