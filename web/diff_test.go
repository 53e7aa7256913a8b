package web

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orch-tool/orch/workflow"
)

func TestParseDiff(t *testing.T) {
	out := "diff --git a/x.go b/x.go\n" +
		"index 1111111..2222222 100644\n" +
		"--- a/x.go\n" +
		"+++ b/x.go\n" +
		"@@ -1,3 +1,3 @@ func x() {\n" +
		" keep\n" +
		"--- a/looks-like-a-header\n" +
		"+diff --git a/in b/content\n" +
		" \n" +
		"\\ No newline at end of file\n" +
		"diff --git a/new b/new\n" +
		"new file mode 100644\n" +
		"--- /dev/null\n" +
		"+++ b/new\n" +
		"@@ -0,0 +1 @@\n" +
		"+esc\x1b]0;title\x07\n" +
		"diff --git a/old name b/new name\n" +
		"similarity index 100%\n" +
		"rename from old name\n" +
		"rename to new name\n" +
		"diff --git a/img.png b/img.png\n" +
		"Binary files a/img.png and b/img.png differ\n"
	files := parseDiff(out)
	if len(files) != 4 {
		t.Fatalf("%d files, want 4: %+v", len(files), files)
	}
	x := files[0]
	if x.Name() != "x.go" || x.Status != "modified" || x.Added != 1 || x.Removed != 1 || len(x.Hunks) != 1 {
		t.Errorf("x.go: %+v", x)
	}
	var kinds []string
	for _, l := range x.Hunks[0].Lines {
		kinds = append(kinds, l.Kind+":"+l.Text)
	}
	want := []string{"ctx:keep", "del:-- a/looks-like-a-header", "add:diff --git a/in b/content", "ctx:", "note:\\ No newline at end of file"}
	if strings.Join(kinds, "|") != strings.Join(want, "|") {
		t.Errorf("lines %q, want %q", kinds, want)
	}
	if l := x.Hunks[0].Lines[2]; l.New != 2 || l.Old != 0 {
		t.Errorf("the added line is numbered %d/%d, want -/2", l.Old, l.New)
	}
	if n := files[1]; n.Name() != "new" || n.Status != "added" || n.Hunks[0].Lines[0].Text != `esc\x1b]0;title\x07` {
		t.Errorf("new: %+v", n)
	}
	if r := files[2]; r.Status != "renamed" || r.Old != "old name" || r.New != "new name" {
		t.Errorf("rename: %+v", r)
	}
	if b := files[3]; b.Status != "binary" || b.Name() != "img.png" {
		t.Errorf("binary: %+v", b)
	}
	// A hunk header that does not parse leaves no hunk open: what follows
	// is not read as its lines.
	if f := parseDiff("diff --git a/a b/a\n@@ nonsense @@\n+x\n"); len(f) != 1 || len(f[0].Hunks) != 0 || f[0].Added != 0 {
		t.Errorf("a bad hunk header: %+v", f)
	}
}

// provisionalWithWork submits T-3vfp8e (claimed by agent-b in the example)
// with a commit on its branch whose file name and text are hostile, and a
// submit note. It returns the branch.
func provisionalWithWork(t *testing.T, dir string) string {
	t.Helper()
	var branch string
	as(t, dir, "lead", func(e *workflow.Engine) error {
		branch = e.Store.SummaryByID("T-3vfp8e").Task.Branch
		return nil
	})
	if branch == "" {
		t.Fatal("T-3vfp8e has no branch in the example")
	}
	wt := filepath.Join(t.TempDir(), "wt")
	if strings.TrimSpace(git(t, dir, "branch", "--list", branch)) == "" {
		git(t, dir, "branch", branch, "HEAD")
	}
	git(t, dir, "worktree", "add", wt, branch)
	name := `<img src=x onerror=alert(1)>.txt`
	if err := os.WriteFile(filepath.Join(wt, name), []byte("<script>alert('diff')</script>\nplain line\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	git(t, wt, "add", "-A")
	git(t, wt, "commit", "-q", "-m", "hostile work")
	as(t, dir, "agent-b", func(e *workflow.Engine) error {
		_, err := e.Submit("T-3vfp8e", workflow.SubmitOptions{Note: "Look at the <b>settings</b> migration first."})
		return err
	})
	return branch
}

func TestTaskDiff(t *testing.T) {
	dir := exampleRepo(t)
	ts := startServer(t, dir, testOptions(dir, "lead"))
	provisionalWithWork(t, dir)
	for _, path := range []string{"/task/T-3vfp8e", "/task/T-3vfp8e/diff"} {
		code, body := ts.get(t, nil, path)
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d\n%s", path, code, clipBody(body))
		}
		mustContain(t, path, body, `aria-label="diff"`,
			"&lt;img src=x onerror=alert(1)&gt;.txt", "&lt;script&gt;alert(&#39;diff&#39;)&lt;/script&gt;",
			`<tr class="add">`, "plain line", "+2")
		mustNotContain(t, path, body, "<img src=x", "<script>alert")
	}
	// A task with no branch of its own says so, and the page is no 404.
	code, body := ts.get(t, nil, "/task/T-9mwq4c/diff")
	if code != http.StatusOK {
		t.Fatalf("GET /task/T-9mwq4c/diff: %d", code)
	}
	mustContain(t, "diff of an incoming task", body, "No diff:")
	// An open task not under review has no diff on its page.
	_, body = ts.get(t, nil, "/task/T-9mwq4c")
	mustNotContain(t, "incoming task", body, `aria-label="diff"`)
}

// TestTaskDiffLanded: a task that landed shows the commit that holds its
// work against the base before it, whether or not its branch is left.
func TestTaskDiffLanded(t *testing.T) {
	dir := exampleRepo(t)
	branch := provisionalWithWork(t, dir)
	git(t, dir, "merge", "-q", "--no-ff", "-m", "land it", branch)
	landed := strings.TrimSpace(git(t, dir, "rev-parse", "HEAD"))
	git(t, dir, "worktree", "remove", "--force", worktreeOf(t, dir, branch))
	git(t, dir, "branch", "-D", branch)
	as(t, dir, "lead", func(e *workflow.Engine) error {
		tk := e.Store.SummaryByID("T-3vfp8e").Task
		tk.LandedCommit = landed
		d := taskDiff(e, &tk)
		// The example's own commit on the branch, and the hostile one.
		if d.Missing != "" || d.What != "as it landed" || d.To != landed || len(d.Files) != 2 || d.Files[0].Name() != "<img src=x onerror=alert(1)>.txt" {
			t.Errorf("the landed diff: %+v", d)
		}
		// Without landed_commit, the branch gone: said, not an error.
		tk.LandedCommit = ""
		if d := taskDiff(e, &tk); d.Missing == "" || !strings.Contains(d.Missing, branch) {
			t.Errorf("no branch: %+v", d)
		}
		return nil
	})
}

// worktreeOf is the worktree that has branch checked out.
func worktreeOf(t *testing.T, dir, branch string) string {
	t.Helper()
	var wt string
	for _, l := range strings.Split(git(t, dir, "worktree", "list", "--porcelain"), "\n") {
		if p, ok := strings.CutPrefix(l, "worktree "); ok {
			wt = p
		}
		if l == "branch refs/heads/"+branch {
			return wt
		}
	}
	t.Fatalf("no worktree has %s", branch)
	return ""
}

// FuzzParseDiff: whatever a branch holds, parsing its diff does not panic,
// and no text it yields holds a control character.
func FuzzParseDiff(f *testing.F) {
	f.Add("diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n")
	f.Add("diff --git a/x b/x\n@@ -0,0 +1,2 @@\n+\x1b[2J\n\n\\ No newline at end of file\n")
	f.Add("diff --git a/x b/x\n@@ -1,99999999999999999999 +1 @@\n")
	f.Fuzz(func(t *testing.T, out string) {
		for _, file := range parseDiff(out) {
			texts := append([]string{file.Old, file.New}, file.Header...)
			for _, h := range file.Hunks {
				texts = append(texts, h.Head)
				for _, l := range h.Lines {
					texts = append(texts, l.Text)
				}
			}
			for _, s := range texts {
				if strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 && r != '\t' || r == 0x7f }) {
					t.Fatalf("a control character in %q", s)
				}
			}
		}
	})
}
