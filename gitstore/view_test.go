package gitstore

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/orch-tool/orch/gitstore/gitrepo"
	"github.com/orch-tool/orch/gitstore/statecache"
	"github.com/orch-tool/orch/internal/testgit"
	"github.com/orch-tool/orch/taskfile"
)

// viewRepo is a repository with an initialised state branch mirrored in its
// view, the view excluded from git status as orch init does.
func viewRepo(t *testing.T, ids ...string) string {
	t.Helper()
	dir := testgit.MakeRepo(t)
	testgit.WriteFile(t, filepath.Join(dir, ".git", "info", "exclude"), "/"+ViewDirName+"/\n")
	initStore(t, dir, ids...)
	for _, id := range ids {
		if got := testgit.ReadFile(t, viewFile(dir, taskPath(id))); got != taskDoc(id, "Task "+id, "incoming", "Body of "+id+".") {
			t.Fatalf("view of %s after init: %q", id, got)
		}
	}
	return dir
}

// setField replaces "key: old" with "key: new" in a task document.
func setField(t *testing.T, doc, key, val string) string {
	t.Helper()
	lines := strings.Split(doc, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, key+": ") {
			lines[i] = key + ": " + val
			return strings.Join(lines, "\n")
		}
	}
	t.Fatalf("no %s in %q", key, doc)
	return ""
}

// addField inserts "key: val" after the queue line.
func addField(doc, key, val string) string {
	return strings.Replace(doc, "\nqueue: ", "\n"+key+": "+val+"\nqueue: ", 1)
}

func viewDoc(id string) string { return taskDoc(id, "Task "+id, "incoming", "Body of "+id+".") }

// commitsSince lists the subjects of the commits after rev, oldest first.
func commitsSince(t *testing.T, dir, rev string) []string {
	t.Helper()
	out := testgit.Git(t, dir, "log", "--reverse", "--format=%s", rev+"..refs/heads/orch")
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}

func inoOf(t *testing.T, p string) (uint64, int64) {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	s := fi.Sys().(*syscall.Stat_t)
	return s.Ino, fi.ModTime().UnixNano()
}

func emptyReport(rep *Reconciled) bool {
	return len(rep.Committed)+len(rep.Pulled)+len(rep.Restored)+len(rep.Removed)+len(rep.Broken)+len(rep.Conflicts) == 0
}

// Row 1: W = B, R = B.
func TestReconcileNothingChanged(t *testing.T) {
	t.Parallel()
	dir := viewRepo(t, "T-same01", "T-same02")
	before := tip(t, dir)
	ino, mt := inoOf(t, viewFile(dir, taskPath("T-same01")))
	for i := 0; i < 3; i++ {
		rep, st := reconcile(t, dir)
		if !emptyReport(rep) || len(st.Notes()) != 0 {
			t.Fatalf("reconcile of an unchanged view: %+v, notes %v", rep, st.Notes())
		}
	}
	if tip(t, dir) != before {
		t.Fatal("an unchanged view made a commit")
	}
	if ino2, mt2 := inoOf(t, viewFile(dir, taskPath("T-same01"))); ino2 != ino || mt2 != mt {
		t.Fatal("an unchanged view file was rewritten")
	}
}

// Row 2: W = B, R ≠ B: the branch moved; the view follows, also for files
// the branch added or removed.
func TestReconcileBranchMoved(t *testing.T) {
	t.Parallel()
	dir := viewRepo(t, "T-move01", "T-move02", "T-move03")
	newDoc := setField(t, viewDoc("T-move01"), "queue", "claimed")
	c := gitMoveBranch(t, dir, "moved by git",
		taskPath("T-move01"), newDoc,
		taskPath("T-move04"), viewDoc("T-move04"),
		"-"+taskPath("T-move02"), "",
		ConfigFile, "id_prefix: X\n",
		"messages/from-git.md", "hello\n")
	rep, _ := reconcile(t, dir)
	if tip(t, dir) != c {
		t.Fatalf("reconcile committed on top of a branch move: %v", commitsSince(t, dir, c))
	}
	if got := testgit.ReadFile(t, viewFile(dir, taskPath("T-move01"))); got != newDoc {
		t.Fatalf("view not updated: %q", got)
	}
	if got := testgit.ReadFile(t, viewFile(dir, taskPath("T-move04"))); got != viewDoc("T-move04") {
		t.Fatalf("new branch file not written: %q", got)
	}
	if got := testgit.ReadFile(t, viewFile(dir, "messages/from-git.md")); got != "hello\n" {
		t.Fatalf("new message not written: %q", got)
	}
	if got := testgit.ReadFile(t, viewFile(dir, ConfigFile)); got != "id_prefix: X\n" {
		t.Fatalf("config not updated: %q", got)
	}
	if _, err := os.Stat(viewFile(dir, taskPath("T-move02"))); !os.IsNotExist(err) {
		t.Fatalf("file removed on the branch still in the view: %v", err)
	}
	sort.Strings(rep.Pulled)
	if !contains(rep.Pulled, taskPath("T-move01")) || !contains(rep.Pulled, ConfigFile) || !contains(rep.Removed, taskPath("T-move02")) {
		t.Fatalf("report %+v", rep)
	}
	if got := testgit.ReadFile(t, viewFile(dir, taskPath("T-move03"))); got != viewDoc("T-move03") {
		t.Fatalf("untouched file changed: %q", got)
	}
	rep, _ = reconcile(t, dir)
	if !emptyReport(rep) {
		t.Fatalf("second reconcile not clean: %+v", rep)
	}
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// Row 3: W ≠ B, R = B: a hand edit is committed.
func TestReconcileHandEdit(t *testing.T) {
	t.Parallel()
	dir := viewRepo(t, "T-hand01", "T-hand02")
	before := tip(t, dir)
	edited := setField(t, viewDoc("T-hand01"), "title", "Better title")
	edited = strings.Replace(edited, "Body of T-hand01.", "Body of T-hand01, with more detail.", 1)
	testgit.WriteFile(t, viewFile(dir, taskPath("T-hand01")), edited)
	testgit.WriteFile(t, viewFile(dir, ConfigFile), "id_prefix: T\nnew_key: 1\n")
	testgit.WriteFile(t, viewFile(dir, "prompts/implementer.md"), "Do the work well.\n")

	rep, st := reconcile(t, dir)
	if len(rep.Committed) != 3 {
		t.Fatalf("committed %v, want 3 files (report %+v)", rep.Committed, rep)
	}
	subjects := commitsSince(t, dir, before)
	if !contains(subjects, "orch(T-hand01): edit") || !contains(subjects, "orch: edit config.yaml") || !contains(subjects, "orch: edit prompts/implementer.md") {
		t.Fatalf("commits %q", subjects)
	}
	if got := showFile(t, dir, "orch", taskPath("T-hand01")); got != edited {
		t.Fatalf("branch has %q, want the hand edit", got)
	}
	if got := showFile(t, dir, "orch", ConfigFile); got != "id_prefix: T\nnew_key: 1\n" {
		t.Fatalf("branch config %q", got)
	}
	// The task's commit carries the trailers and the actor.
	hash := testgit.Git(t, dir, "log", "--format=%H", "--grep=^orch(T-hand01): edit", "-1", "orch")
	msg := testgit.Git(t, dir, "log", "-1", "--format=%an <%ae>%n%B", hash)
	for _, want := range []string{"Ada Tester <ada@example.com>", "Orch-Task: T-hand01", "Orch-Action: edit", "Orch-Actor: Ada Tester"} {
		if !strings.Contains(msg, want) {
			t.Fatalf("commit lacks %q:\n%s", want, msg)
		}
	}
	if s := st.Summary(taskPath("T-hand01")); s == nil || s.Task.Title != "Better title" {
		t.Fatalf("summary not updated: %+v", s)
	}
	// The view keeps the person's bytes, and the next reconcile is quiet.
	if got := testgit.ReadFile(t, viewFile(dir, taskPath("T-hand01"))); got != edited {
		t.Fatalf("view rewritten: %q", got)
	}
	rep, _ = reconcile(t, dir)
	if !emptyReport(rep) {
		t.Fatalf("second reconcile: %+v", rep)
	}

	// Saving the same bytes again (a touch) commits nothing.
	after := tip(t, dir)
	testgit.WriteFile(t, viewFile(dir, taskPath("T-hand02")), viewDoc("T-hand02"))
	rep, _ = reconcile(t, dir)
	if tip(t, dir) != after || len(rep.Committed) != 0 {
		t.Fatalf("re-saving an unchanged file committed: %+v", rep)
	}

	// Changing a task's id by hand is refused, not committed.
	testgit.WriteFile(t, viewFile(dir, taskPath("T-hand02")), setField(t, viewDoc("T-hand02"), "id", "T-other9"))
	rep, st = reconcile(t, dir)
	if tip(t, dir) != after || st.BrokenFile(taskPath("T-hand02")) == nil {
		t.Fatalf("id change: report %+v", rep)
	}
}

// Row 4: W ≠ B, R ≠ B: both changed; merged field by field.
func TestReconcileBothChangedMerge(t *testing.T) {
	t.Parallel()
	dir := viewRepo(t, "T-both01", "T-both02")
	// The person edits the body and a person-owned field...
	mine := strings.Replace(viewDoc("T-both01"), "Body of T-both01.", "Body of T-both01.\n\nMore context from the lead.", 1)
	mine = setField(t, mine, "priority", "P0")
	testgit.WriteFile(t, viewFile(dir, taskPath("T-both01")), mine)
	// ...while the branch moves the task to another queue.
	theirs := addField(setField(t, viewDoc("T-both01"), "queue", "claimed"), "claimed_by", "agent-b")
	c := gitMoveBranch(t, dir, "claim by git", taskPath("T-both01"), theirs)

	rep, _ := reconcile(t, dir)
	if !contains(rep.Committed, taskPath("T-both01")) {
		t.Fatalf("merge not committed: %+v", rep)
	}
	got := showFile(t, dir, "orch", taskPath("T-both01"))
	f, err := taskfile.Parse("x", []byte(got))
	if err != nil {
		t.Fatal(err)
	}
	if f.Task.Queue != "claimed" || f.Task.ClaimedBy != "agent-b" || f.Task.Priority != "P0" || !strings.Contains(got, "More context from the lead.") {
		t.Fatalf("merged result wrong:\n%s", got)
	}
	if subj := commitsSince(t, dir, c); len(subj) != 1 || subj[0] != "orch(T-both01): edit" {
		t.Fatalf("commits after the merge: %q", subj)
	}
	if v := testgit.ReadFile(t, viewFile(dir, taskPath("T-both01"))); v != got {
		t.Fatalf("view not updated to the merge:\n%s", v)
	}
	rep, _ = reconcile(t, dir)
	if !emptyReport(rep) {
		t.Fatalf("after the merge: %+v", rep)
	}

	// Non-task files merge as text.
	testgit.WriteFile(t, viewFile(dir, ConfigFile), "# mine\nid_prefix: T\n")
	c = gitMoveBranch(t, dir, "config by git", ConfigFile, "id_prefix: T\n# theirs\n")
	reconcile(t, dir)
	if got := showFile(t, dir, "orch", ConfigFile); got != "# mine\nid_prefix: T\n# theirs\n" {
		t.Fatalf("config merge: %q", got)
	}
	if len(commitsSince(t, dir, c)) != 1 {
		t.Fatal("config merge not committed once")
	}
}

// Row 4, conflicting: nothing committed, the view kept, the conflict
// reported until the person edits the file, whose version then wins.
func TestReconcileConflictThenResolved(t *testing.T) {
	t.Parallel()
	dir := viewRepo(t, "T-conf01", "T-conf02")
	p := taskPath("T-conf01")
	mine := setField(t, viewDoc("T-conf01"), "title", "Mine")
	testgit.WriteFile(t, viewFile(dir, p), mine)
	theirs := setField(t, viewDoc("T-conf01"), "title", "Theirs")
	c := gitMoveBranch(t, dir, "title by git", p, theirs)

	for i := 0; i < 2; i++ {
		rep, st := reconcile(t, dir)
		if tip(t, dir) != c {
			t.Fatalf("a conflict was committed: %v", commitsSince(t, dir, c))
		}
		cf := st.Conflicted(p)
		if len(cf) != 1 || cf[0].Key != "title" || !strings.Contains(cf[0].Ours, "Mine") || !strings.Contains(cf[0].Theirs, "Theirs") {
			t.Fatalf("round %d: Conflicted = %+v (report %+v)", i, cf, rep)
		}
		if len(rep.Conflicts[p]) == 0 {
			t.Fatalf("round %d: report lacks the conflict", i)
		}
		if got := testgit.ReadFile(t, viewFile(dir, p)); got != mine {
			t.Fatalf("round %d: conflicted view file overwritten: %q", i, got)
		}
	}

	// orch changes another field of the task meanwhile: the view file is
	// still left alone.
	st := openStore(t, dir)
	orchs := setField(t, theirs, "queue", "blocked")
	c = commitFiles(t, st, "orch(T-conf01): incoming -> blocked", p, orchs).String()
	closeStore(t, st)
	if got := testgit.ReadFile(t, viewFile(dir, p)); got != mine {
		t.Fatalf("commit overwrote a conflicted view file: %q", got)
	}
	rep, st := reconcile(t, dir)
	if tip(t, dir) != c || len(st.Conflicted(p)) == 0 {
		t.Fatalf("conflict lost after the branch moved again: %+v", rep)
	}

	// The person resolves it by editing the view file.
	resolved := setField(t, mine, "title", "Resolved")
	testgit.WriteFile(t, viewFile(dir, p), resolved)
	rep, st = reconcile(t, dir)
	if len(st.Conflicted(p)) != 0 || !contains(rep.Committed, p) {
		t.Fatalf("resolution not committed: %+v", rep)
	}
	got := showFile(t, dir, "orch", p)
	f, err := taskfile.Parse("x", []byte(got))
	if err != nil {
		t.Fatal(err)
	}
	if f.Task.Title != "Resolved" || f.Task.Queue != "blocked" {
		t.Fatalf("resolution lost orch's queue or the person's title:\n%s", got)
	}
	rep, _ = reconcile(t, dir)
	if !emptyReport(rep) {
		t.Fatalf("after resolution: %+v", rep)
	}
}

// Edited in the view, removed on the branch: a conflict, the file kept.
func TestReconcileEditedButRemovedOnBranch(t *testing.T) {
	t.Parallel()
	dir := viewRepo(t, "T-gone01")
	p := taskPath("T-gone01")
	mine := setField(t, viewDoc("T-gone01"), "title", "Still wanted")
	testgit.WriteFile(t, viewFile(dir, p), mine)
	c := gitMoveBranch(t, dir, "archive by git", "-"+p, "")
	_, st := reconcile(t, dir)
	if tip(t, dir) != c || len(st.Conflicted(p)) == 0 {
		t.Fatalf("edited+removed: tip moved or no conflict (%v)", st.Conflicted(p))
	}
	if got := testgit.ReadFile(t, viewFile(dir, p)); got != mine {
		t.Fatalf("edited file removed or changed: %q", got)
	}
}

// Row 5: W missing: restored, and said so.
func TestReconcileDeletedFileRestored(t *testing.T) {
	t.Parallel()
	dir := viewRepo(t, "T-del001", "T-del002")
	before := tip(t, dir)
	os.Remove(viewFile(dir, taskPath("T-del001")))
	os.Remove(viewFile(dir, ConfigFile))
	rep, st := reconcile(t, dir)
	if tip(t, dir) != before {
		t.Fatal("a deletion in the view was committed")
	}
	if got := testgit.ReadFile(t, viewFile(dir, taskPath("T-del001"))); got != viewDoc("T-del001") {
		t.Fatalf("not restored: %q", got)
	}
	if got := testgit.ReadFile(t, viewFile(dir, ConfigFile)); got != "id_prefix: T\n" {
		t.Fatalf("config not restored: %q", got)
	}
	if !contains(rep.Restored, taskPath("T-del001")) || !contains(rep.Restored, ConfigFile) {
		t.Fatalf("report %+v", rep)
	}
	if n := strings.Join(st.Notes(), "\n"); !strings.Contains(n, "restored .orchestrator/"+taskPath("T-del001")) {
		t.Fatalf("notes %q", n)
	}
}

// The whole view directory deleted: everything comes back.
func TestReconcileWholeViewDeleted(t *testing.T) {
	t.Parallel()
	dir := viewRepo(t, "T-all001", "T-all002", "T-all003")
	before := tip(t, dir)
	want := branchFiles(t, dir, "orch")
	if err := os.RemoveAll(filepath.Join(dir, ViewDirName)); err != nil {
		t.Fatal(err)
	}
	rep, _ := reconcile(t, dir)
	if tip(t, dir) != before {
		t.Fatal("deleting the view was committed")
	}
	if len(rep.Restored) != len(want) {
		t.Fatalf("restored %v, want %d files", rep.Restored, len(want))
	}
	for p := range want {
		if got := testgit.ReadFile(t, viewFile(dir, p)); got != showFile(t, dir, "orch", p) {
			t.Fatalf("%s not restored: %q", p, got)
		}
	}
	if rep, _ := reconcile(t, dir); !emptyReport(rep) {
		t.Fatalf("after restoring: %+v", rep)
	}
}

// Row 6: a file made by hand gets an id and is committed.
func TestReconcileHandMadeTask(t *testing.T) {
	t.Parallel()
	dir := viewRepo(t, "T-made01")
	before := tip(t, dir)
	p := "tasks/write-the-docs.md"
	testgit.WriteFile(t, viewFile(dir, p), "---\ntitle: Write the docs\npriority: P1\n---\n# Write the docs\n\nAll of them.\n")
	testgit.WriteFile(t, viewFile(dir, "messages/note.md"), "a message by hand\n")
	rep, st := reconcile(t, dir)
	if !contains(rep.Committed, p) || !contains(rep.Committed, "messages/note.md") {
		t.Fatalf("report %+v", rep)
	}
	got := showFile(t, dir, "orch", p)
	f, err := taskfile.Parse("x", []byte(got))
	if err != nil {
		t.Fatal(err)
	}
	id := f.Task.ID
	if !taskfile.ValidID(id) || f.Task.Queue != "incoming" || f.Task.Title != "Write the docs" || !strings.Contains(got, "All of them.") {
		t.Fatalf("hand-made task committed as:\n%s", got)
	}
	if v := testgit.ReadFile(t, viewFile(dir, p)); v != got {
		t.Fatalf("view lacks the assigned id:\n%s", v)
	}
	subj := commitsSince(t, dir, before)
	if !contains(subj, "orch("+id+"): new") {
		t.Fatalf("commits %q", subj)
	}
	body := testgit.Git(t, dir, "log", "-1", "--format=%B", "--grep=^orch("+id+"): new", "orch")
	if !strings.Contains(body, "Orch-Action: new") || !strings.Contains(body, "Orch-Task: "+id) {
		t.Fatalf("message %q", body)
	}
	if s := st.SummaryByID(id); s == nil || s.Path != p {
		t.Fatalf("SummaryByID(%s) = %+v", id, s)
	}
	if rep, _ := reconcile(t, dir); !emptyReport(rep) {
		t.Fatalf("after committing: %+v", rep)
	}
}

// A copy of a task file is a new task: it gets an id of its own, and the
// original is untouched.
func TestReconcileCopiedTaskGetsNewID(t *testing.T) {
	t.Parallel()
	dir := viewRepo(t, "T-orig01")
	orig := taskPath("T-orig01")
	cp := "tasks/T-orig01-copy.md"
	testgit.WriteFile(t, viewFile(dir, cp), testgit.ReadFile(t, viewFile(dir, orig)))
	rep, st := reconcile(t, dir)
	if !contains(rep.Committed, cp) || contains(rep.Committed, orig) {
		t.Fatalf("report %+v", rep)
	}
	f, err := taskfile.Parse("x", []byte(showFile(t, dir, "orch", cp)))
	if err != nil {
		t.Fatal(err)
	}
	if f.Task.ID == "T-orig01" || !taskfile.ValidID(f.Task.ID) {
		t.Fatalf("copy kept id %q", f.Task.ID)
	}
	if showFile(t, dir, "orch", orig) != viewDoc("T-orig01") {
		t.Fatal("original task changed")
	}
	if s := st.SummaryByID("T-orig01"); s == nil || s.Path != orig {
		t.Fatalf("T-orig01 resolves to %+v", s)
	}
	if s := st.SummaryByID(f.Task.ID); s == nil || s.Path != cp {
		t.Fatalf("%s resolves to %+v", f.Task.ID, s)
	}
}

// A hand edit that does not parse is never committed and never
// overwritten; the rest of the view keeps working, and the problem names
// the file and the line.
func TestReconcileBrokenHandEdit(t *testing.T) {
	t.Parallel()
	dir := viewRepo(t, "T-brok01", "T-brok02", "T-brok03")
	bp := taskPath("T-brok01")
	broken := "---\nid: T-brok01\ntitle: [unclosed\nqueue: incoming\n---\nbody\n"
	testgit.WriteFile(t, viewFile(dir, bp), broken)
	good := setField(t, viewDoc("T-brok02"), "title", "Fine edit")
	testgit.WriteFile(t, viewFile(dir, taskPath("T-brok02")), good)
	testgit.WriteFile(t, viewFile(dir, ConfigFile), "INVALID\n")
	before := tip(t, dir)

	check := func(round string) {
		t.Helper()
		_, st := reconcile(t, dir)
		err := st.BrokenFile(bp)
		if err == nil {
			t.Fatalf("%s: BrokenFile(%s) = nil", round, bp)
		}
		if !strings.Contains(err.Error(), ".orchestrator/"+bp+":3") {
			t.Fatalf("%s: problem does not name file:line: %v", round, err)
		}
		// Until the branch moves the config it is broken; once it moves,
		// the text merge conflicts first. Either way it is reported.
		if st.BrokenFile(ConfigFile) == nil && len(st.Conflicted(ConfigFile)) == 0 {
			t.Fatalf("%s: invalid config not reported", round)
		}
		if got := testgit.ReadFile(t, viewFile(dir, bp)); got != broken {
			t.Fatalf("%s: broken file overwritten: %q", round, got)
		}
		if got := testgit.ReadFile(t, viewFile(dir, ConfigFile)); got != "INVALID\n" {
			t.Fatalf("%s: invalid config overwritten", round)
		}
		if strings.Contains(showFile(t, dir, "orch", bp), "[unclosed") || strings.Contains(showFile(t, dir, "orch", ConfigFile), "INVALID") {
			t.Fatalf("%s: broken file committed", round)
		}
	}
	check("first")
	if got := showFile(t, dir, "orch", taskPath("T-brok02")); got != good {
		t.Fatal("the other task's hand edit was not committed")
	}
	if subj := commitsSince(t, dir, before); len(subj) != 1 {
		t.Fatalf("commits %q", subj)
	}
	check("again")

	// The branch moves the broken task and the config: still not
	// overwritten; other branch moves still reach the view.
	gitMoveBranch(t, dir, "git moves",
		bp, setField(t, viewDoc("T-brok01"), "queue", "claimed"),
		ConfigFile, "id_prefix: Q\n",
		taskPath("T-brok03"), setField(t, viewDoc("T-brok03"), "queue", "done"))
	check("after the branch moved")
	if got := testgit.ReadFile(t, viewFile(dir, taskPath("T-brok03"))); got != setField(t, viewDoc("T-brok03"), "queue", "done") {
		t.Fatalf("other file not pulled: %q", got)
	}

	// Fixing the file: merged with the branch's change and committed.
	fixed := setField(t, viewDoc("T-brok01"), "title", "Fixed")
	testgit.WriteFile(t, viewFile(dir, bp), fixed)
	_, st := reconcile(t, dir)
	if st.BrokenFile(bp) != nil {
		t.Fatalf("still broken: %v", st.BrokenFile(bp))
	}
	f, err := taskfile.Parse("x", []byte(showFile(t, dir, "orch", bp)))
	if err != nil || f.Task.Title != "Fixed" || f.Task.Queue != "claimed" {
		t.Fatalf("fix committed as %+v, %v", f, err)
	}
}

// A stale editor buffer saved over a task that orch changed meanwhile must
// not undo orch's change, and must keep the person's edit.
func TestReconcileStaleEditorBuffer(t *testing.T) {
	t.Parallel()
	dir := viewRepo(t, "T-stal01")
	p := taskPath("T-stal01")
	buffer := testgit.ReadFile(t, viewFile(dir, p)) // the editor loads the file

	// orch claims the task (another command).
	st := openStore(t, dir)
	claimed := addField(setField(t, viewDoc("T-stal01"), "queue", "claimed"), "claimed_by", "agent-a")
	c := commitFiles(t, st, "orch(T-stal01): incoming -> claimed", p, claimed)
	closeStore(t, st)
	if testgit.ReadFile(t, viewFile(dir, p)) != claimed {
		t.Fatal("view not updated by the commit")
	}

	// The person saves the old buffer with a body edit.
	saved := strings.Replace(buffer, "Body of T-stal01.", "Body of T-stal01.\n\nA note from the person.", 1)
	testgit.WriteFile(t, viewFile(dir, p), saved)
	_, st = reconcile(t, dir)
	got := showFile(t, dir, "orch", p)
	f, err := taskfile.Parse("x", []byte(got))
	if err != nil {
		t.Fatal(err)
	}
	if f.Task.Queue != "claimed" || f.Task.ClaimedBy != "agent-a" {
		t.Fatalf("stale buffer undid orch's change:\n%s", got)
	}
	if !strings.Contains(got, "A note from the person.") {
		t.Fatalf("stale buffer lost the person's edit:\n%s", got)
	}
	if subj := commitsSince(t, dir, c.String()); len(subj) != 1 || subj[0] != "orch(T-stal01): edit" {
		t.Fatalf("commits %q", subj)
	}
	if testgit.ReadFile(t, viewFile(dir, p)) != got {
		t.Fatal("view not updated to the merged file")
	}
	if n := strings.Join(st.Notes(), "\n"); !strings.Contains(n, "old copy") {
		t.Fatalf("notes %q", n)
	}
}

// The private state deleted while the view holds hand edits: the edits are
// committed, orch-owned fields stay as the branch has them, and a view file
// that is merely an old version is brought up to date.
func TestReconcilePrivateStateDeleted(t *testing.T) {
	t.Parallel()
	dir := viewRepo(t, "T-priv01", "T-priv02", "T-priv03", "T-priv04")
	st := openStore(t, dir)
	claimed := func(id string) string {
		return addField(setField(t, viewDoc(id), "queue", "claimed"), "claimed_by", "agent-a")
	}
	c := commitFiles(t, st, "claim three",
		taskPath("T-priv01"), claimed("T-priv01"),
		taskPath("T-priv02"), claimed("T-priv02"),
		taskPath("T-priv03"), claimed("T-priv03"))
	closeStore(t, st)

	// 01: edited on top of the current version.
	edit1 := strings.Replace(claimed("T-priv01"), "Body of T-priv01.", "Edited body 1.", 1)
	testgit.WriteFile(t, viewFile(dir, taskPath("T-priv01")), edit1)
	// 02: edited on top of an old version (queue still incoming).
	edit2 := strings.Replace(viewDoc("T-priv02"), "Body of T-priv02.", "Edited body 2.", 1)
	testgit.WriteFile(t, viewFile(dir, taskPath("T-priv02")), edit2)
	// 03: an old version, unedited.
	testgit.WriteFile(t, viewFile(dir, taskPath("T-priv03")), viewDoc("T-priv03"))
	if err := os.RemoveAll(filepath.Join(dir, ".git", "orch")); err != nil {
		t.Fatal(err)
	}

	rep, _ := reconcile(t, dir)
	subj := commitsSince(t, dir, c.String())
	sort.Strings(subj)
	if len(subj) != 2 || subj[0] != "orch(T-priv01): edit" || subj[1] != "orch(T-priv02): edit" {
		t.Fatalf("commits %q (report %+v)", subj, rep)
	}
	if got := showFile(t, dir, "orch", taskPath("T-priv01")); got != edit1 {
		t.Fatalf("edit 1 committed as %q", got)
	}
	got2 := showFile(t, dir, "orch", taskPath("T-priv02"))
	f, err := taskfile.Parse("x", []byte(got2))
	if err != nil || f.Task.Queue != "claimed" || f.Task.ClaimedBy != "agent-a" || !strings.Contains(got2, "Edited body 2.") {
		t.Fatalf("edit 2 committed as:\n%s", got2)
	}
	if testgit.ReadFile(t, viewFile(dir, taskPath("T-priv02"))) != got2 {
		t.Fatal("view of 02 not updated")
	}
	if showFile(t, dir, "orch", taskPath("T-priv03")) != claimed("T-priv03") || testgit.ReadFile(t, viewFile(dir, taskPath("T-priv03"))) != claimed("T-priv03") {
		t.Fatal("old version of 03 not replaced by the branch's")
	}
	if testgit.ReadFile(t, viewFile(dir, taskPath("T-priv04"))) != viewDoc("T-priv04") {
		t.Fatal("04 changed")
	}
	if rep, _ := reconcile(t, dir); !emptyReport(rep) {
		t.Fatalf("after rebuilding: %+v", rep)
	}
}

// A hand edit made within the same timestamp tick as orch's write, with
// identical size. orch dates the files it writes viewWriteAge in the past,
// so the edit's present mtime tells; and an entry whose stat was taken too
// close to its mtime (racy) is never trusted: the file is read.
func TestReconcileRacyEdit(t *testing.T) {
	t.Parallel()
	dir := viewRepo(t, "T-racy01")
	p := taskPath("T-racy01")
	st := openStore(t, dir)
	v2 := setField(t, viewDoc("T-racy01"), "queue", "blocked")
	commitFiles(t, st, "orch(T-racy01): incoming -> blocked", p, v2)
	ie := st.cache.Index.Get(p)
	if ie == nil || ie.Blob != gitrepo.HashBlob([]byte(v2)) {
		t.Fatalf("sync index after the write: %+v", ie)
	}
	if ie.Racy || time.Since(time.Unix(0, ie.Mtime)) < viewWriteAge-time.Second {
		t.Fatalf("a file orch wrote: racy %v, mtime %v ago; want it dated %v back and trusted", ie.Racy, time.Since(time.Unix(0, ie.Mtime)), viewWriteAge)
	}
	closeStore(t, st)
	c := tip(t, dir)

	// The person's edit: same size, in place, within the tick.
	edit := strings.Replace(v2, "Body of T-racy01.", "Body of T-racy0X.", 1)
	if len(edit) != len(v2) || edit == v2 {
		t.Fatal("setup: edit must keep the size")
	}
	f, err := os.OpenFile(viewFile(dir, p), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte(edit), 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	// Same tick: forge the recorded stat to equal the edited file's, as a
	// coarse clock would make it.
	st, err = Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	cache := statecache.Load(st.CachePath(), st.Ref, false)
	ws, ok := lstatPath(viewFile(dir, p))
	if !ok || cache.Index.Get(p) == nil {
		t.Fatal("setup: no index entry")
	}
	e := cache.Index.Get(p)
	if e.Mtime == ws.mtime {
		t.Fatal("an edit stamped the past mtime orch gave the file")
	}
	// A stat taken within the edit's tick (the edit landing between orch's
	// write and its stat): the same stat data, flagged racy.
	e.Size, e.Mtime, e.Ctime, e.Ino = ws.size, ws.mtime, ws.ctime, ws.ino
	e.Racy = true
	e.MarkChanged()
	if err := cache.Save(st.CachePath()); err != nil {
		t.Fatal(err)
	}

	rep, _ := reconcile(t, dir)
	if got := showFile(t, dir, "orch", p); got != edit {
		t.Fatalf("racy hand edit missed (report %+v); branch has %q", rep, got)
	}
	if subj := commitsSince(t, dir, c); len(subj) != 1 {
		t.Fatalf("commits %q", subj)
	}
}

// A view directory with files orch does not mirror: editor droppings and
// files elsewhere are left alone and never committed.
func TestReconcileIgnoresForeignFiles(t *testing.T) {
	t.Parallel()
	dir := viewRepo(t, "T-fore01")
	before := tip(t, dir)
	for _, p := range []string{"tasks/.T-fore01.md.swp", "tasks/T-fore01.md~", "tasks/notes.txt", "tasks/#x.md#", "other/x.md", "README.md", "tasks/.orch-tmp-123"} {
		testgit.WriteFile(t, viewFile(dir, p), "junk\n")
	}
	rep, _ := reconcile(t, dir)
	if tip(t, dir) != before || !emptyReport(rep) {
		t.Fatalf("foreign files reconciled: %+v %v", rep, commitsSince(t, dir, before))
	}
}

// A conflict on an orch-owned field: the value the person writes when they
// resolve it wins.
func TestReconcileConflictOnOrchFieldResolved(t *testing.T) {
	t.Parallel()
	dir := viewRepo(t, "T-cofq01")
	p := taskPath("T-cofq01")
	testgit.WriteFile(t, viewFile(dir, p), setField(t, viewDoc("T-cofq01"), "queue", "blocked"))
	c := gitMoveBranch(t, dir, "claim by git", p, setField(t, viewDoc("T-cofq01"), "queue", "claimed"))
	_, st := reconcile(t, dir)
	if cf := st.Conflicted(p); len(cf) != 1 || cf[0].Key != "queue" || tip(t, dir) != c {
		t.Fatalf("Conflicted = %+v", cf)
	}
	resolved := setField(t, setField(t, viewDoc("T-cofq01"), "queue", "done"), "title", "Done by hand")
	testgit.WriteFile(t, viewFile(dir, p), resolved)
	_, st = reconcile(t, dir)
	if len(st.Conflicted(p)) != 0 {
		t.Fatalf("still conflicted: %+v", st.Conflicted(p))
	}
	if got := showFile(t, dir, "orch", p); got != resolved {
		t.Fatalf("resolution committed as:\n%s", got)
	}
}

// The branch moves (git CLI) after the command loaded it and before the
// hand edits are committed: the compare-and-swap fails, the reconcile
// starts again from the new tip, and nothing is lost on either side.
func TestReconcileBranchMovedUnderIt(t *testing.T) {
	t.Parallel()
	dir := viewRepo(t, "T-unde01", "T-unde02")
	p1, p2 := taskPath("T-unde01"), taskPath("T-unde02")
	edit1 := setField(t, viewDoc("T-unde01"), "title", "Edited by hand")
	edit2 := strings.Replace(viewDoc("T-unde02"), "Body of T-unde02.", "Body, edited by hand.", 1)
	testgit.WriteFile(t, viewFile(dir, p1), edit1)
	testgit.WriteFile(t, viewFile(dir, p2), edit2)

	st := openStore(t, dir) // the branch is loaded now
	c := gitMoveBranch(t, dir, "git moves under orch",
		p2, setField(t, viewDoc("T-unde02"), "queue", "claimed"),
		"messages/git.md", "from git\n")
	rep, err := st.Reconcile(testPolicy())
	if err != nil {
		t.Fatal(err)
	}
	closeStore(t, st)
	if !contains(rep.Committed, p1) || !contains(rep.Committed, p2) {
		t.Fatalf("report %+v", rep)
	}
	if _, err := testgit.Run(dir, nil, "", "merge-base", "--is-ancestor", c, "orch"); err != nil {
		t.Fatalf("git's commit is not an ancestor of the tip: %v", err)
	}
	if showFile(t, dir, "orch", p1) != edit1 || showFile(t, dir, "orch", "messages/git.md") != "from git\n" {
		t.Fatal("a change was lost")
	}
	got2 := showFile(t, dir, "orch", p2)
	f, err := taskfile.Parse("x", []byte(got2))
	if err != nil || f.Task.Queue != "claimed" || !strings.Contains(got2, "Body, edited by hand.") {
		t.Fatalf("merge of 02 lost a side:\n%s", got2)
	}
	if testgit.ReadFile(t, viewFile(dir, "messages/git.md")) != "from git\n" || testgit.ReadFile(t, viewFile(dir, p2)) != got2 {
		t.Fatal("view not brought up to date")
	}
	testgit.Fsck(t, dir)
}

// A hand-made file that does not parse: reported, never committed, never
// removed.
func TestReconcileBrokenHandMadeFile(t *testing.T) {
	t.Parallel()
	dir := viewRepo(t, "T-bnew01")
	before := tip(t, dir)
	p := "tasks/half-written.md"
	content := "---\ntitle: Half\nqueue: [incoming\n---\n"
	testgit.WriteFile(t, viewFile(dir, p), content)
	for i := 0; i < 2; i++ {
		_, st := reconcile(t, dir)
		if err := st.BrokenFile(p); err == nil || !strings.Contains(err.Error(), ".orchestrator/"+p+":") {
			t.Fatalf("round %d: BrokenFile = %v", i, err)
		}
		if testgit.ReadFile(t, viewFile(dir, p)) != content {
			t.Fatalf("round %d: broken file changed", i)
		}
		if tip(t, dir) != before {
			t.Fatalf("round %d: committed %v", i, commitsSince(t, dir, before))
		}
	}
}

// A commit made while the person has an unreconciled edit of the same
// file does not overwrite it; the next reconcile merges.
func TestCommitKeepsUnreconciledViewEdit(t *testing.T) {
	t.Parallel()
	dir := viewRepo(t, "T-keep01")
	p := taskPath("T-keep01")
	mine := strings.Replace(viewDoc("T-keep01"), "Body of T-keep01.", "Body, mine.", 1)
	testgit.WriteFile(t, viewFile(dir, p), mine)
	st := openStore(t, dir) // no reconcile: the edit is not seen yet
	commitFiles(t, st, "orch(T-keep01): incoming -> claimed", p, setField(t, viewDoc("T-keep01"), "queue", "claimed"))
	closeStore(t, st)
	if testgit.ReadFile(t, viewFile(dir, p)) != mine {
		t.Fatal("commit overwrote the person's unreconciled edit")
	}
	reconcile(t, dir)
	got := showFile(t, dir, "orch", p)
	if !strings.Contains(got, "Body, mine.") || !strings.Contains(got, "queue: claimed") {
		t.Fatalf("merge after the commit:\n%s", got)
	}
}

// A stale buffer from two orch changes ago is still recognised.
func TestReconcileStaleBufferTwoVersionsOld(t *testing.T) {
	t.Parallel()
	dir := viewRepo(t, "T-old201")
	p := taskPath("T-old201")
	buffer := testgit.ReadFile(t, viewFile(dir, p))
	st := openStore(t, dir)
	v2 := addField(setField(t, viewDoc("T-old201"), "queue", "claimed"), "claimed_by", "agent-a")
	commitFiles(t, st, "claim", p, v2)
	closeStore(t, st)
	st = openStore(t, dir)
	v3 := strings.Replace(setField(t, v2, "queue", "provisional"), "queue: provisional", "queue: provisional\nsubmitted_by: agent-a", 1)
	commitFiles(t, st, "submit", p, v3)
	closeStore(t, st)

	testgit.WriteFile(t, viewFile(dir, p), strings.Replace(buffer, "Body of T-old201.", "Body, with the person's note.", 1))
	reconcile(t, dir)
	got := showFile(t, dir, "orch", p)
	f, err := taskfile.Parse("x", []byte(got))
	if err != nil || f.Task.Queue != "provisional" || f.Task.SubmittedBy != "agent-a" || f.Task.ClaimedBy != "agent-a" || !strings.Contains(got, "the person's note") {
		t.Fatalf("stale buffer from two versions ago committed as:\n%s", got)
	}
}

// mirroredNameOracle is mirroredName as first written, one rule at a time:
// the fast path must agree with it.
func mirroredNameOracle(dir, name string) bool {
	if ignoredName(name) || len(name) > 200 || !utf8.ValidString(name) || strings.ContainsAny(name, "/\\") {
		return false
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	if dir == TasksDir {
		return strings.HasSuffix(name, ".md")
	}
	return true
}

func TestMirroredName(t *testing.T) {
	t.Parallel()
	cases := []struct {
		dir, name string
		want      bool
	}{
		{TasksDir, "T-1abcde-fix-it.md", true},
		{TasksDir, "T-1abcde-fix-it.txt", false},
		{TasksDir, ".hidden.md", false},
		{TasksDir, "x.md~", false},
		{TasksDir, "a\\b.md", false},
		{TasksDir, "tab\there.md", false},
		{TasksDir, "del\x7f.md", false},
		{TasksDir, "café.md", true},
		{TasksDir, "bad\xff.md", false},
		{TasksDir, "ctl\u0085ok.md", true}, // C1 controls are not refused (as before)
		{"messages", "note.txt", true},
		{"messages", strings.Repeat("a", 201), false},
	}
	for _, c := range cases {
		if got := mirroredName(c.dir, c.name); got != c.want {
			t.Errorf("mirroredName(%q, %q) = %v, want %v", c.dir, c.name, got, c.want)
		}
	}
	// Every byte in every position of a short name, against the oracle.
	for _, dir := range []string{TasksDir, "messages"} {
		for b := 0; b < 256; b++ {
			for _, name := range []string{string(rune(b)) + "x.md", "x" + string([]byte{byte(b)}) + ".md", "é" + string([]byte{byte(b)}) + ".md", string([]byte{byte(b)})} {
				if got, want := mirroredName(dir, name), mirroredNameOracle(dir, name); got != want {
					t.Errorf("mirroredName(%q, %q) = %v, oracle says %v", dir, name, got, want)
				}
			}
		}
	}
}
