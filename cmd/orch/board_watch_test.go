package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orch-tool/orch/internal/testgit"
)

// cacheMappings counts this process's mappings of files under dir.
func cacheMappings(t *testing.T, dir string) int {
	t.Helper()
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Skip("no /proc/self/maps here")
	}
	n := 0
	for _, l := range strings.Split(string(maps), "\n") {
		if strings.Contains(l, dir) {
			n++
		}
	}
	return n
}

// board --watch opens the store once per board: it must not map the state
// cache each time (a mapping lives as long as the process; about 4 MB each
// at 10,000 tasks).
func TestBoardWatchKeepsNoMappingPerBoard(t *testing.T) {
	repo := filepath.Join(t.TempDir(), "repo")
	git := func(args ...string) string { t.Helper(); return testgit.Git(t, repo, args...) }
	if err := os.MkdirAll(repo, 0o777); err != nil {
		t.Fatal(err)
	}
	git("init", "-q", "-b", "main")
	git("commit", "-q", "--allow-empty", "-m", "base")
	run := func(args ...string) {
		t.Helper()
		var out, errb bytes.Buffer
		if code := Main(append([]string{"-C", repo}, args...), strings.NewReader(""), &out, &errb); code != 0 {
			t.Fatalf("orch %v: exit %d\n%s", args, code, errb.String())
		}
	}
	run("init")
	for _, title := range []string{"One", "Two", "Three"} {
		run("new", title)
	}
	private := filepath.Join(git("rev-parse", "--absolute-git-dir"), "orch")
	before := cacheMappings(t, private)

	const boards = 12
	done := make(chan struct{})
	var out bytes.Buffer
	go func() {
		var errb bytes.Buffer
		if code := Main([]string{"-C", repo, "board", "--watch", "--interval", "2ms", "--watch-count", "12"}, strings.NewReader(""), &out, &errb); code != 0 {
			t.Errorf("board --watch: exit %d\n%s", code, errb.String())
		}
		close(done)
	}()
	// Move the state branch (with git, another process) until every board
	// is drawn.
	for i := 0; ; i++ {
		select {
		case <-done:
			after := cacheMappings(t, private)
			if got := strings.Count(out.String(), "incoming"); got < boards {
				t.Fatalf("%d boards drawn, want %d:\n%s", got, boards, out.String())
			}
			if after > before+1 {
				t.Errorf("board --watch left %d mappings of the state cache after %d boards (before: %d)", after, boards, before)
			}
			return
		case <-time.After(15 * time.Millisecond):
		}
		tip := git("rev-parse", "refs/heads/orch")
		next := git("commit-tree", tip+"^{tree}", "-p", tip, "-m", "move")
		git("update-ref", "refs/heads/orch", next, tip)
		if i > 2000 {
			t.Fatal("board --watch did not finish")
		}
	}
}
