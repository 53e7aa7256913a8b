package gitstore

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orch-tool/orch/internal/testgit"
)

const benchTasks = 10_000

func benchID(i int) string { return fmt.Sprintf("T-b%05d", i) }

// benchRepo builds a repository whose state branch holds benchTasks task
// files (with git fast-import), mirrors it in the view, and ages the view
// files so that their stat data is trusted.
func benchRepo(b *testing.B) string {
	b.Helper()
	dir := testgit.MakeRepo(b)
	testgit.WriteFile(b, filepath.Join(dir, ".git", "info", "exclude"), "/"+ViewDirName+"/\n")
	var in bytes.Buffer
	in.WriteString("commit refs/heads/orch\ncommitter Bench <bench@orch> 1770372000 +0000\ndata 10\norch: init\n")
	add := func(p, content string) {
		fmt.Fprintf(&in, "M 100644 inline %s\ndata %d\n%s\n", p, len(content), content)
	}
	add(ConfigFile, "id_prefix: T\n")
	add("prompts/implementer.md", "Do the work.\n")
	for i := 0; i < benchTasks; i++ {
		id := benchID(i)
		add(taskPath(id), taskDoc(id, "Benchmark task "+id, "incoming", strings.Repeat("Some words of context. ", 10)))
	}
	in.WriteString("\n")
	if _, err := testgit.Run(dir, nil, in.String(), "fast-import", "--quiet"); err != nil {
		b.Fatal(err)
	}
	// Write the view, then age it past the racy window and let orch
	// record trusted stat data.
	st := openStore(b, dir)
	if _, err := st.Reconcile(testPolicy()); err != nil {
		b.Fatal(err)
	}
	closeStore(b, st)
	old := time.Now().Add(-time.Hour)
	err := filepath.Walk(filepath.Join(dir, ViewDirName), func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			err = os.Chtimes(p, old, old)
		}
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	st = openStore(b, dir)
	if rep, err := st.Reconcile(testPolicy()); err != nil || !emptyReport(rep) {
		b.Fatalf("aged view: %+v, %v", rep, err)
	}
	closeStore(b, st)
	if n := len(scratchSummaries(b, dir, "refs/heads/orch")); n != benchTasks {
		b.Fatalf("%d tasks", n)
	}
	return dir
}

// BenchmarkCommit measures one transition-sized commit (a task file and an
// event line) on a state branch of 10,000 tasks: alone on an open store,
// and as a whole command (open, lock, commit, close).
func BenchmarkCommit(b *testing.B) {
	dir := benchRepo(b)
	change := func(i int) []Change {
		id := benchID(i % benchTasks)
		q := "claimed"
		if (i/benchTasks)%2 == 1 {
			q = "incoming"
		}
		return []Change{
			{Path: taskPath(id), Data: []byte(taskDoc(id, "Benchmark task "+id, q, strings.Repeat("Some words of context. ", 10)))},
			{Path: "events/bench.jsonl", Data: []byte(fmt.Sprintf("{\"i\":%d}\n", i))},
		}
	}
	n := 0
	b.Run("commit", func(b *testing.B) {
		st := openStore(b, dir)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, err := st.Commit(&CommitRequest{Changes: change(n), Message: "bench", Author: testActor}); err != nil {
				b.Fatal(err)
			}
			n++
		}
		b.StopTimer()
		closeStore(b, st)
	})
	b.Run("open-lock-commit-close", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			st, err := Open(Options{Dir: dir})
			if err != nil {
				b.Fatal(err)
			}
			if err := st.Lock(); err != nil {
				b.Fatal(err)
			}
			if _, err := st.Commit(&CommitRequest{Changes: change(n), Message: "bench", Author: testActor}); err != nil {
				b.Fatal(err)
			}
			if err := st.Close(); err != nil {
				b.Fatal(err)
			}
			n++
		}
	})
}

// BenchmarkReconcileUnchanged measures a command's view sync when none of
// the 10,000 view files changed: open, lock, reconcile, close.
func BenchmarkReconcileUnchanged(b *testing.B) {
	dir := benchRepo(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		st, err := Open(Options{Dir: dir})
		if err != nil {
			b.Fatal(err)
		}
		if err := st.Lock(); err != nil {
			b.Fatal(err)
		}
		rep, err := st.Reconcile(testPolicy())
		if err != nil || !emptyReport(rep) {
			b.Fatalf("reconcile: %+v, %v", rep, err)
		}
		if err := st.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
