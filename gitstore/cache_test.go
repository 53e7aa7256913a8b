package gitstore

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"testing"

	"github.com/orch-tool/orch/internal/testgit"
)

// cacheRepo makes a state branch whose tasks exercise every field of a
// summary: lists, times, normalised priorities, files that do not parse or
// do not validate.
func cacheRepo(t *testing.T) string {
	t.Helper()
	dir := testgit.MakeRepo(t)
	st := openStore(t, dir)
	pairs := []string{ConfigFile, "id_prefix: T\n"}
	for i := 0; i < 12; i++ {
		id := "T-cach" + strconv.Itoa(10+i)
		pairs = append(pairs, taskPath(id), taskDoc(id, "Task "+strconv.Itoa(i), "incoming", "body "+strconv.Itoa(i)))
	}
	pairs = append(pairs,
		"tasks/T-full01-full.md", "---\nid: T-full01\ntitle: \"Full: every field\"\nqueue: rejected\npriority: high\nrole: implementer\n"+
			"branch: task/T-full01-full\nbase_branch: main\npr_number: 48\nrejection_count: 2\nno_progress_count: 1\nattempts: 3\n"+
			"claimed_by: agent-b\nclaimed_at: 2026-02-06T11:00:00.5Z\nsubmitted_by: agent-b\nsubmitted_at: 2026-02-06T12:00:00+02:00\n"+
			"assigned_to: lead\nlocked_out: [agent-a, agent-c]\ndepends_on: [T-cach10]\nlabels: []\ncreated: 1970-01-01T00:00:00Z\n"+
			"rejected_at_commit: 0123456789abcdef0123456789abcdef01234567\ncustom: kept # comment\n---\n# Full\n\nText.\n",
		"tasks/T-old001-old.md", "---\nid: T-old001\ntitle: Old\nqueue: done\ncreated: 1969-07-20T20:17:40Z\n---\n",
		"tasks/T-bad001-bad.md", "---\nid: T-bad001\ntitle: [unclosed\nqueue: incoming\n---\nbody\n",
		"tasks/T-inv001-inv.md", "---\nid: T-inv001\ntitle: Invalid queue\nqueue: nowhere\n---\n",
		"tasks/no-front.md", "# Just a heading\n",
		"tasks/README.txt", "not a task\n",
		"prompts/implementer.md", "p\n",
	)
	commitFiles(t, st, "init", pairs...)
	closeStore(t, st)
	return dir
}

// checkSummaries opens the store like a command and compares everything it
// knows about tasks with a from-scratch computation at the branch tip.
func checkSummaries(t *testing.T, dir, what string) *Store {
	t.Helper()
	return checkSummariesAgainst(t, dir, what, scratchSummaries(t, dir, "refs/heads/orch"), branchFiles(t, dir, "refs/heads/orch"))
}

// checkSummariesAgainst is checkSummaries with the expected summaries and
// files computed once by the caller.
func checkSummariesAgainst(t *testing.T, dir, what string, want []*Summary, wantFiles map[string]string) *Store {
	t.Helper()
	st := openStore(t, dir)
	sameSummaries(t, what, st.Summaries(), want)
	for _, s := range want {
		if s.Task.ID == "" {
			continue
		}
		if got := st.SummaryByID(s.Task.ID); got == nil || got.Path != s.Path {
			t.Fatalf("%s: SummaryByID(%s) = %v, want %s", what, s.Task.ID, got, s.Path)
		}
		if got := st.Summary(s.Path); got == nil || got.Blob != s.Blob {
			t.Fatalf("%s: Summary(%s) = %v", what, s.Path, got)
		}
	}
	if st.SummaryByID("T-nope99") != nil {
		t.Fatalf("%s: SummaryByID of a missing id", what)
	}
	// The snapshot (trees from the cache) agrees with git too.
	got := map[string]string{}
	for _, fe := range st.Snapshot().AllFiles() {
		got[fe.Path] = fe.Blob.String()
	}
	if len(got) != len(wantFiles) {
		t.Fatalf("%s: snapshot has %d files, branch %d", what, len(got), len(wantFiles))
	} else {
		for p, b := range wantFiles {
			if got[p] != b {
				t.Fatalf("%s: snapshot %s = %s, branch %s", what, p, got[p], b)
			}
		}
	}
	if tp, _ := st.Repo.ReadRef(st.Ref); st.Snapshot().Tip != tp {
		t.Fatalf("%s: snapshot tip %s, branch %s", what, st.Snapshot().Tip, tp)
	}
	return st
}

func TestCacheRebuiltWhenDamaged(t *testing.T) {
	t.Parallel()
	dir := cacheRepo(t)
	st := checkSummaries(t, dir, "first open")
	path := st.CachePath()
	closeStore(t, st)
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no cache written: %v", err)
	}
	closeStore(t, checkSummaries(t, dir, "valid cache"))

	magic := string(good[:bytes.IndexByte(good, '\n')+1]) // "orch-state-cache v<n>\n"
	damage := map[string]func([]byte) []byte{
		"deleted":      nil,
		"empty":        func([]byte) []byte { return nil },
		"magic only":   func(b []byte) []byte { return []byte(magic) },
		"truncated":    func(b []byte) []byte { return b[:len(b)/2] },
		"one short":    func(b []byte) []byte { return b[:len(b)-1] },
		"one more":     func(b []byte) []byte { return append(append([]byte{}, b...), 0) },
		"garbage":      func(b []byte) []byte { return bytes.Repeat([]byte{0xff, 0x01, 0x7f}, len(b)/3) },
		"old version":  func(b []byte) []byte { c := append([]byte{}, b...); c[len("orch-state-cache v")]--; return c },
		"huge lengths": func(b []byte) []byte { return append([]byte(magic), bytes.Repeat([]byte{0xff}, 64)...) },
	}
	// Flip one byte at many places: header, trees, summaries, index, checksum.
	step := len(good) / 23
	if step == 0 {
		step = 1
	}
	for off := 0; off < len(good); off += step {
		off := off
		damage["flip@"+strconv.Itoa(off)] = func(b []byte) []byte { c := append([]byte{}, b...); c[off] ^= 0x20; return c }
	}
	damage["flip@last"] = func(b []byte) []byte { c := append([]byte{}, b...); c[len(c)-1] ^= 1; return c }

	want, wantFiles := scratchSummaries(t, dir, "refs/heads/orch"), branchFiles(t, dir, "refs/heads/orch")
	for name, f := range damage {
		if f == nil {
			os.Remove(path)
		} else {
			testgit.WriteFile(t, path, string(f(good)))
		}
		closeStore(t, checkSummariesAgainst(t, dir, "cache "+name, want, wantFiles))
		// The rebuilt cache is valid again.
		closeStore(t, checkSummariesAgainst(t, dir, "after rebuilding from "+name, want, wantFiles))
	}

	// A damaged cache must not damage the next commit's tree surgery.
	testgit.WriteFile(t, path, string(good[:len(good)-7]))
	st = openStore(t, dir)
	commitFiles(t, st, "after damage", taskPath("T-cach10"), taskDoc("T-cach10", "Changed", "claimed", "x"), "messages/m.md", "m\n")
	closeStore(t, st)
	if showFile(t, dir, "orch", "prompts/implementer.md") != "p\n" || showFile(t, dir, "orch", "tasks/README.txt") != "not a task\n" {
		t.Fatal("files lost by a commit made after the cache was damaged")
	}
	closeStore(t, checkSummaries(t, dir, "after commit"))
	testgit.Fsck(t, dir)
}

func TestCacheStaleAfterGitMovesBranch(t *testing.T) {
	t.Parallel()
	dir := cacheRepo(t)
	closeStore(t, checkSummaries(t, dir, "first open"))
	first := tip(t, dir)

	// The git CLI changes, adds and deletes task files behind orch's back.
	gitMoveBranch(t, dir, "by git",
		taskPath("T-cach10"), taskDoc("T-cach10", "Changed by git", "claimed", "git"),
		"tasks/T-git001-new.md", taskDoc("T-git001", "New by git", "incoming", "new"),
		"-"+taskPath("T-cach11"), "",
		"-tasks/T-bad001-bad.md", "",
		"tasks/T-inv001-inv.md", "---\nid: T-inv001\ntitle: Now valid\nqueue: blocked\n---\n")
	closeStore(t, checkSummaries(t, dir, "after git commit"))

	// Back to the old tip (a reset): the cache is ahead of the branch.
	// History only moves forward: orch refuses until a person accepts it
	// (orch doctor --accept-rewind), then follows.
	testgit.Git(t, dir, "update-ref", "refs/heads/orch", first)
	st0, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	var mb *ErrMovedBackwards
	if err := st0.Lock(); !errors.As(err, &mb) || len(mb.Dropped) != 1 || mb.Dropped[0].Subject() != "by git" {
		t.Fatalf("Lock after a reset: %v, want moved backwards dropping the git commit", err)
	}
	st0.Close()
	st0, err = Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	st0.AcceptRewind = true
	if err := st0.Lock(); err != nil {
		t.Fatal(err)
	}
	closeStore(t, st0)
	closeStore(t, checkSummaries(t, dir, "after reset to an older tip"))

	// A commit made with git on top, then packed and gc'd: objects are only
	// in packs now.
	gitMoveBranch(t, dir, "again", taskPath("T-cach12"), taskDoc("T-cach12", "Again", "done", "x"))
	testgit.Git(t, dir, "gc", "-q", "--prune=now")
	closeStore(t, checkSummaries(t, dir, "after gc"))

	// The branch removed entirely, then created again by git.
	c := tip(t, dir)
	testgit.Git(t, dir, "update-ref", "-d", "refs/heads/orch")
	st := openStore(t, dir)
	if st.Exists() || len(st.Summaries()) != 0 {
		t.Fatalf("deleted branch: exists=%v, %d summaries", st.Exists(), len(st.Summaries()))
	}
	closeStore(t, st)
	testgit.Git(t, dir, "update-ref", "refs/heads/orch", c)
	closeStore(t, checkSummaries(t, dir, "branch recreated"))
}

func TestCacheAfterCommitsMatchesScratch(t *testing.T) {
	t.Parallel()
	dir := cacheRepo(t)
	for i := 0; i < 5; i++ {
		st := openStore(t, dir)
		id := "T-more" + strconv.Itoa(10+i)
		commitFiles(t, st, "more", taskPath(id), taskDoc(id, "More", "incoming", "x"), "-"+taskPath("T-cach1"+strconv.Itoa(i)), "")
		sameSummaries(t, "in the committing process", st.Summaries(), scratchSummaries(t, dir, "refs/heads/orch"))
		closeStore(t, st)
		closeStore(t, checkSummaries(t, dir, "next command"))
	}
}

// TestCacheOtherStateBranch: each state branch has its own cache, and a
// cache file of another branch is never taken for this one's.
func TestCacheOtherStateBranch(t *testing.T) {
	t.Parallel()
	dir := cacheRepo(t)
	st := openStore(t, dir)
	mainCache := st.CachePath()
	closeStore(t, st)

	other, err := Open(Options{Dir: dir, StateBranch: "orch-test"})
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Lock(); err != nil {
		t.Fatal(err)
	}
	if other.CachePath() == mainCache {
		t.Fatal("two state branches share a cache file")
	}
	if other.Exists() || len(other.Summaries()) != 0 {
		t.Fatal("the other state branch sees orch's tasks")
	}
	// Planting orch's cache under the other branch's name changes nothing.
	b, _ := os.ReadFile(mainCache)
	other.Close()
	testgit.WriteFile(t, other.CachePath(), string(b))
	other2, err := Open(Options{Dir: dir, StateBranch: "refs/heads/orch-test"})
	if err != nil {
		t.Fatal(err)
	}
	if err := other2.Lock(); err != nil {
		t.Fatal(err)
	}
	defer other2.Close()
	if other2.Exists() || len(other2.Summaries()) != 0 {
		t.Fatalf("a cache of another branch was used: %d summaries", len(other2.Summaries()))
	}
	if _, err := Open(Options{Dir: dir, StateBranch: "bad..name"}); err == nil {
		t.Fatal("invalid state branch accepted")
	}
}
