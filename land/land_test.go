package land

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/orch-tool/orch/gitstore/gitrepo"
	"github.com/orch-tool/orch/internal/testgit"
)

func TestMain(m *testing.M) { testgit.Main(m, "orch-land-test") }

// repo makes a repository on main, with the main worktree checked out on
// another branch (so that landing moves the ref alone), and returns it.
func repo(t *testing.T) string {
	t.Helper()
	dir := testgit.MakeRepo(t)
	testgit.Git(t, dir, "checkout", "-q", "-b", "person")
	return dir
}

// branch makes branch from main with one commit writing file.
func branch(t *testing.T, dir, name, file, content string) Candidate {
	t.Helper()
	testgit.Git(t, dir, "checkout", "-q", "-b", name, "main")
	testgit.WriteFile(t, filepath.Join(dir, file), content)
	testgit.Git(t, dir, "add", file)
	testgit.Git(t, dir, "commit", "-q", "-m", "work on "+name)
	testgit.Git(t, dir, "checkout", "-q", "person")
	return Candidate{Task: "T-" + strings.ReplaceAll(name, "/", ""), Title: "task " + name, Branch: name, Tip: testgit.RevParse(dir, name)}
}

func opts(t *testing.T, dir string) Options {
	repo, err := gitrepo.Discover(dir)
	if err != nil {
		t.Fatal(err)
	}
	return Options{CommonDir: filepath.Join(dir, ".git"), CheckedOut: repo.CheckedOutIn, Base: "main", Strategy: "merge", Scratch: filepath.Join(dir, ".git", "orch", "land"),
		Name: "lead", Email: "lead@orch", Env: os.Environ(), CheckTimeout: time.Minute}
}

func landed(t *testing.T, out []Outcome, want ...bool) {
	t.Helper()
	if len(out) != len(want) {
		t.Fatalf("outcomes %+v", out)
	}
	for i, w := range want {
		if out[i].Landed != w {
			t.Errorf("%s landed %v, want %v (%+v)", out[i].Task, out[i].Landed, w, out[i].Failure)
		}
	}
}

func TestLandStrategies(t *testing.T) {
	for _, strategy := range []string{"merge", "squash", "rebase"} {
		t.Run(strategy, func(t *testing.T) {
			dir := repo(t)
			a := branch(t, dir, "task/a", "a.txt", "a\n")
			b := branch(t, dir, "task/b", "b.txt", "b\n")
			o := opts(t, dir)
			o.Strategy = strategy
			o.Check = "test -f a.txt"
			out, err := Land(o, []Candidate{a, b})
			if err != nil {
				t.Fatal(err)
			}
			landed(t, out, true, true)
			main := testgit.RevParse(dir, "main")
			if out[1].Commit != main || out[0].Check != "passed" {
				t.Errorf("b's commit %s, main %s, check %q", out[1].Commit, main, out[0].Check)
			}
			files := testgit.Git(t, dir, "ls-tree", "--name-only", "main")
			if !strings.Contains(files, "a.txt") || !strings.Contains(files, "b.txt") {
				t.Errorf("main holds %q", files)
			}
			msg := testgit.Git(t, dir, "log", "-1", "--format=%B", out[0].Commit)
			if !strings.Contains(msg, "Orch-Landed-Task: "+a.Task) || !strings.Contains(msg, "Orch-Landed-Tip: "+a.Tip) {
				t.Errorf("a's landing commit says %q", msg)
			}
			parents := strings.Fields(testgit.Git(t, dir, "log", "-1", "--format=%P", out[0].Commit))
			if strategy == "merge" && len(parents) != 2 || strategy != "merge" && len(parents) != 1 {
				t.Errorf("%s: a's commit has parents %v", strategy, parents)
			}
			// Landing again finds both landed, and moves nothing.
			again, err := Land(o, []Candidate{a, b})
			if err != nil {
				t.Fatal(err)
			}
			if !again[0].Already || !again[1].Already || again[1].Commit != out[1].Commit || testgit.RevParse(dir, "main") != main {
				t.Errorf("a second landing: %+v", again)
			}
			testgit.Fsck(t, dir)
		})
	}
}

// A conflict goes back alone, with its files and hunks; the rest lands.
func TestLandConflict(t *testing.T) {
	dir := repo(t)
	a := branch(t, dir, "task/a", "README.md", "from a\n")
	b := branch(t, dir, "task/b", "README.md", "from b\n")
	c := branch(t, dir, "task/c", "c.txt", "c\n")
	out, err := Land(opts(t, dir), []Candidate{a, b, c})
	if err != nil {
		t.Fatal(err)
	}
	landed(t, out, true, false, true)
	f := out[1].Failure
	if f == nil || f.Kind != "conflict" || len(f.Files) != 1 || f.Files[0] != "README.md" || !strings.Contains(f.Hunks, "<<<<<<<") || f.Base == "" {
		t.Errorf("b's failure %+v", f)
	}
}

// A red check over several is bisected: the culprit goes back with the
// check's output; the others land, each checked as it lands.
func TestLandBisect(t *testing.T) {
	dir := repo(t)
	var cands []Candidate
	for _, n := range []string{"a", "b", "c", "d"} {
		content := "fine\n"
		if n == "c" {
			content = "BROKEN\n"
		}
		cands = append(cands, branch(t, dir, "task/"+n, n+".txt", content))
	}
	o := opts(t, dir)
	o.Check = `! grep -l BROKEN *.txt && echo all good`
	out, err := Land(o, cands)
	if err != nil {
		t.Fatal(err)
	}
	landed(t, out, true, true, false, true)
	if f := out[2].Failure; f == nil || f.Kind != "check" || f.Exit != 1 || !strings.Contains(f.Output, "c.txt") {
		t.Errorf("c's failure %+v", f)
	}
	if strings.Contains(testgit.Git(t, dir, "ls-tree", "--name-only", "main"), "c.txt") {
		t.Errorf("the culprit landed")
	}
	// Every commit on main's first-parent line since the start passed the
	// check as it stands.
	for _, h := range strings.Fields(testgit.Git(t, dir, "rev-list", "--first-parent", "main", "^"+testgit.RevParse(dir, "main~3"))) {
		if files := testgit.Git(t, dir, "ls-tree", "--name-only", h); strings.Contains(files, "c.txt") {
			t.Errorf("%s holds the culprit", h)
		}
	}
}

// A base checked out in a worktree with changes makes the landing wait,
// and touches nothing there; once clean, the worktree is advanced with it.
func TestLandPersonCheckout(t *testing.T) {
	dir := repo(t)
	a := branch(t, dir, "task/a", "a.txt", "a\n")
	testgit.Git(t, dir, "checkout", "-q", "main")
	testgit.WriteFile(t, filepath.Join(dir, "README.md"), "the person's edit\n")
	before := testgit.RevParse(dir, "main")
	_, err := Land(opts(t, dir), []Candidate{a})
	var wait *WaitError
	if err == nil || !asWait(err, &wait) || !strings.Contains(wait.Error(), "README.md") {
		t.Fatalf("err = %v, want a wait naming README.md", err)
	}
	if testgit.RevParse(dir, "main") != before || testgit.ReadFile(t, filepath.Join(dir, "README.md")) != "the person's edit\n" {
		t.Fatal("the person's checkout was touched")
	}
	testgit.Git(t, dir, "checkout", "--", "README.md")
	out, err := Land(opts(t, dir), []Candidate{a})
	if err != nil {
		t.Fatal(err)
	}
	landed(t, out, true)
	if testgit.ReadFile(t, filepath.Join(dir, "a.txt")) != "a\n" || testgit.Git(t, dir, "status", "--porcelain", "--untracked-files=no") != "" {
		t.Errorf("the clean checkout was not advanced with the base: %q", testgit.Git(t, dir, "status", "--porcelain"))
	}
}

func asWait(err error, w **WaitError) bool {
	we, ok := err.(*WaitError)
	*w = we
	return ok
}

// The base moved while the check ran: the step starts again from the new
// tip, so the combination that lands is the one checked.
func TestLandBaseMoved(t *testing.T) {
	dir := repo(t)
	a := branch(t, dir, "task/a", "a.txt", "a\n")
	o := opts(t, dir)
	// The check moves main once, as another lander would.
	marker := filepath.Join(t.TempDir(), "moved")
	gd := filepath.Join(dir, ".git")
	o.Check = `if [ ! -e ` + marker + ` ]; then touch ` + marker + `; git --git-dir ` + gd + ` update-ref refs/heads/main $(git --git-dir ` + gd + ` commit-tree -p main -m other main^{tree}); fi`
	out, err := Land(o, []Candidate{a})
	if err != nil {
		t.Fatal(err)
	}
	landed(t, out, true)
	log := testgit.Git(t, dir, "log", "--first-parent", "--format=%s", "main")
	if !strings.HasPrefix(log, "Land "+a.Task) || !strings.Contains(log, "other") {
		t.Errorf("main's history %q: want the landing on top of the other commit", log)
	}
}

// One landing at a time per clone: a second lock without wait is refused
// while the first is held, and taken once it is released.
func TestLockOnePerClone(t *testing.T) {
	scratch := filepath.Join(t.TempDir(), "orch", "land", "wt")
	unlock, err := Lock(scratch, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Lock(scratch, false); err != ErrBusy {
		t.Fatalf("second lock: %v, want ErrBusy", err)
	}
	unlock()
	again, err := Lock(scratch, false)
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	again()
}

// A landing killed after the base moved and before the person's clean
// checkout followed leaves that checkout one landing behind: the next
// landing completes the follow (the reflog says the move was a landing,
// and the checkout holds exactly the base before it) instead of waiting on
// it forever. The same state made by a person's own change still waits.
func TestLandResumesFollow(t *testing.T) {
	for _, person := range []bool{false, true} {
		dir := repo(t)
		a := branch(t, dir, "task/a", "a.txt", "a\n")
		b := branch(t, dir, "task/b", "b.txt", "b\n")
		testgit.Git(t, dir, "checkout", "-q", "main")
		// What a landing killed midway leaves: the ref moved, the
		// checkout not.
		moved := testgit.Git(t, dir, "commit-tree", "-p", "main", "-p", a.Tip, "-m", "Land "+a.Task, a.Tip+"^{tree}")
		testgit.Git(t, dir, "update-ref", "-m", reflogMessage, "refs/heads/main", strings.TrimSpace(moved))
		if person {
			testgit.WriteFile(t, filepath.Join(dir, "README.md"), "the person's edit\n")
		}
		_, err := Land(opts(t, dir), []Candidate{b})
		if person {
			var wait *WaitError
			if !asWait(err, &wait) {
				t.Fatalf("with a person's change: err = %v, want a wait", err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if st := testgit.Git(t, dir, "status", "--porcelain", "--untracked-files=no"); st != "" || testgit.ReadFile(t, filepath.Join(dir, "b.txt")) != "b\n" {
			t.Errorf("the checkout did not follow both landings: %q", st)
		}
	}
}

// The repository's merge drivers apply: with shared.txt merged by git's
// union driver (.gitattributes on the base), two tasks that append to it
// both land, where without the attribute the second conflicts.
func TestLandMergeDriver(t *testing.T) {
	for _, union := range []bool{true, false} {
		dir := repo(t)
		testgit.Git(t, dir, "checkout", "-q", "main")
		testgit.WriteFile(t, filepath.Join(dir, "shared.txt"), "base\n")
		if union {
			testgit.WriteFile(t, filepath.Join(dir, ".gitattributes"), "shared.txt merge=union\n")
		}
		testgit.Git(t, dir, "add", "-A")
		testgit.Git(t, dir, "commit", "-q", "-m", "shared file")
		testgit.Git(t, dir, "checkout", "-q", "person")
		testgit.Git(t, dir, "reset", "-q", "--hard", "main")
		a := branch(t, dir, "task/a", "shared.txt", "base\na\n")
		b := branch(t, dir, "task/b", "shared.txt", "base\nb\n")
		out, err := Land(opts(t, dir), []Candidate{a, b})
		if err != nil {
			t.Fatal(err)
		}
		if union {
			landed(t, out, true, true)
			got := testgit.Git(t, dir, "show", "main:shared.txt")
			if lines := strings.Fields(got); !slices.Contains(lines, "a") || !slices.Contains(lines, "b") {
				t.Errorf("union merge: shared.txt is %q", got)
			}
		} else {
			landed(t, out, true, false)
			if out[1].Failure == nil || out[1].Failure.Kind != "conflict" || !strings.Contains(out[1].Failure.Hunks, "<<<<<<<") {
				t.Errorf("without the driver: %+v, want a conflict with its hunks", out[1].Failure)
			}
		}
	}
}

// An untracked file of the person's where the landing adds one makes the
// landing wait, before the ref moves; nothing of it is overwritten.
// So does an untracked file where the landing needs a directory.
func TestLandUntrackedInTheWay(t *testing.T) {
	for _, c := range []struct{ adds, mine string }{{"a.txt", "a.txt"}, {"d/a.txt", "d"}} {
		dir := repo(t)
		a := branch(t, dir, "task/a", c.adds, "a\n")
		testgit.Git(t, dir, "checkout", "-q", "main")
		testgit.WriteFile(t, filepath.Join(dir, c.mine), "the person's own file\n")
		before := testgit.RevParse(dir, "main")
		_, err := Land(opts(t, dir), []Candidate{a})
		var wait *WaitError
		if !asWait(err, &wait) || !strings.Contains(wait.Error(), c.adds) {
			t.Fatalf("%s: err = %v, want a wait naming %s", c.mine, err, c.adds)
		}
		if testgit.RevParse(dir, "main") != before || testgit.ReadFile(t, filepath.Join(dir, c.mine)) != "the person's own file\n" {
			t.Fatalf("%s: the person's checkout or main was touched", c.mine)
		}
	}
}

// Each landing's check sees exactly the merge that lands, whatever the
// check before it left in the scratch worktree: changed tracked files,
// untracked and ignored ones (b's and x's landings start from a's and b's
// mess), then a changed .gitattributes (x's check), which would give y's
// merge a merge driver the base does not have; and a conflict after a
// messy check (w). Each Land is a landing of its own, as orch land runs
// one after another.
func TestLandAfterAMessyCheck(t *testing.T) {
	dir := repo(t)
	testgit.Git(t, dir, "checkout", "-q", "main")
	testgit.WriteFile(t, filepath.Join(dir, "shared.txt"), "base\n")
	testgit.WriteFile(t, filepath.Join(dir, ".gitattributes"), "# no drivers\n")
	testgit.WriteFile(t, filepath.Join(dir, ".gitignore"), "*.log\n")
	testgit.Git(t, dir, "add", "-A")
	testgit.Git(t, dir, "commit", "-q", "-m", "shared file")
	testgit.Git(t, dir, "checkout", "-q", "person")
	testgit.Git(t, dir, "reset", "-q", "--hard", "main")
	o := opts(t, dir)
	o.Check = `test -z "$(git status --porcelain --ignored)" || { git status --porcelain --ignored; exit 1; }
echo junk >> README.md; echo out > build.log; mkdir -p d; echo x > d/y; git rm -q --cached a.txt 2>/dev/null
if git log -1 --format=%B | grep -q 'Merged task/x'; then echo 'shared.txt merge=union' >> .gitattributes; fi`
	land := func(c Candidate) Outcome {
		t.Helper()
		out, err := Land(o, []Candidate{c})
		if err != nil {
			t.Fatal(err)
		}
		return out[0]
	}
	y := branch(t, dir, "task/y", "shared.txt", "base\ny\n")
	w := branch(t, dir, "task/w", "b.txt", "w\n")
	for _, c := range []Candidate{
		branch(t, dir, "task/a", "a.txt", "a\n"),
		branch(t, dir, "task/b", "b.txt", "b\n"),
		branch(t, dir, "task/x", "shared.txt", "base\nx\n"),
	} {
		if out := land(c); !out.Landed {
			t.Fatalf("%s did not land: %+v", c.Task, out.Failure)
		}
	}
	// Against x's line, without the union driver the check wrote: a
	// conflict, with its hunks.
	out := land(y)
	if out.Landed || out.Failure == nil || out.Failure.Kind != "conflict" || !strings.Contains(out.Failure.Hunks, "<<<<<<<") {
		t.Fatalf("y: %+v, want a conflict with its hunks", out)
	}
	if out := land(branch(t, dir, "task/z", "z.txt", "z\n")); !out.Landed {
		t.Fatalf("z after the conflict: %+v", out.Failure)
	}
	// A conflict straight after a messy check (z's): git merge runs in a
	// worktree put back at the tip first.
	if out := land(w); out.Landed || out.Failure == nil || out.Failure.Kind != "conflict" || !slices.Equal(out.Failure.Files, []string{"b.txt"}) {
		t.Fatalf("w: %+v, want a conflict in b.txt", out.Failure)
	}
	if out := land(branch(t, dir, "task/v", "v.txt", "v\n")); !out.Landed {
		t.Fatalf("v after the conflict: %+v", out.Failure)
	}
	for file, want := range map[string]string{"README.md": "hello\n", "shared.txt": "base\nx\n", ".gitattributes": "# no drivers\n"} {
		if got := testgit.Git(t, dir, "show", "main:"+file) + "\n"; got != want {
			t.Errorf("main's %s = %q, want %q", file, got, want)
		}
	}
}
