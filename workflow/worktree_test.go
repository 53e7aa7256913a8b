package workflow

import (
	"fmt"
	"testing"

	"github.com/orch-tool/orch/gitstore/gitrepo"
)

// What keeps a worktree is named in a line: the first few paths, how many
// more; the command that removes it anyway is one the shell runs as written.
func TestKeptFor(t *testing.T) {
	var files []gitrepo.WorktreeFile
	for i := range 7 {
		files = append(files, gitrepo.WorktreeFile{Path: fmt.Sprintf("f%d", i), State: "uncommitted"})
	}
	files = append(files, gitrepo.WorktreeFile{Path: "node_modules/", State: "ignored"})
	kept, hint := keptFor(files, "/tmp/it's here")
	if want := "7 uncommitted changes, 1 ignored file (f0, f1, f2, f3, f4, and 3 more)"; kept != want {
		t.Errorf("kept = %q, want %q", kept, want)
	}
	if want := `commit or stash them there, and move the ignored ones out, or remove the worktree anyway and lose them: git worktree remove --force '/tmp/it'\''s here'`; hint != want {
		t.Errorf("hint = %q, want %q", hint, want)
	}
	for in, want := range map[string]string{"/tmp/wt-1": "/tmp/wt-1", "/tmp/a b": "'/tmp/a b'", "/tmp/$x": "'/tmp/$x'", "": "''"} {
		if got := shellWord(in); got != want {
			t.Errorf("shellWord(%q) = %s, want %s", in, got, want)
		}
	}
}
