package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/orch-tool/orch/answer"
	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/internal/testgit"
	"github.com/orch-tool/orch/taskfile"
	"github.com/orch-tool/orch/workflow"
)

// listRepo is a repository with the example's tasks (every queue), n more
// written by hand, and tasks that are odd in the ways a task object can
// be: custom frontmatter keys, an invalid file, text JSON must escape, a
// dependency that is not done.
func listRepo(t *testing.T, n int) string {
	t.Helper()
	repo := testgit.EmptyRepo(t)
	orchOK(t, repo, "init", "--example")
	dir := filepath.Join(repo, ".orchestrator", "tasks")
	for i := range n {
		id := fmt.Sprintf("T-s%05d", i)
		labels := "[bulk]"
		if i%3 == 0 {
			labels = "[bulk, x]"
		}
		testgit.WriteFile(t, filepath.Join(dir, id+"-bulk.md"), fmt.Sprintf(
			"---\nid: %s\ntitle: Bulk task %d \"quoted\" <b>&amp;</b> é\nqueue: incoming\npriority: P%d\nlabels: %s\ncreated: 2026-03-01T10:%02d:%02dZ\n---\nBody %d.\n",
			id, i, i%4, labels, i/60%60, i%60, i))
	}
	testgit.WriteFile(t, filepath.Join(dir, "T-cust01-custom.md"),
		"---\nid: T-cust01\ntitle: Custom keys\nqueue: incoming\nestimate: 3\nteam: {name: core, size: 4}\ntags_extra: [a, b]\ndepends_on: [T-s00001]\n---\nBody.\n")
	orchOK(t, repo, "list") // commits the hand-written files
	// Invalid files reach the branch only past orch (a hand edit that
	// does not validate is not committed): a git user commits them.
	commitWithGit(t, repo, map[string]string{
		"tasks/T-bad001-broken.md":   "---\nid: T-bad001\ntitle: [unclosed\nqueue: incoming\n---\nBody.\n",
		"tasks/T-bad002-no-queue.md": "---\nid: T-bad002\ntitle: No such queue\nqueue: nowhere\nfavourite: tea\n---\nBody.\n",
	})
	return repo
}

// commitWithGit commits files (path: content) to the state branch with
// git's plumbing and a private index.
func commitWithGit(t *testing.T, repo string, files map[string]string) {
	t.Helper()
	env := []string{"GIT_INDEX_FILE=" + filepath.Join(t.TempDir(), "index")}
	git := func(stdin string, args ...string) string {
		t.Helper()
		out, err := testgit.Run(repo, env, stdin, args...)
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(out)
	}
	git("", "read-tree", "orch")
	for path, content := range files {
		blob := git(content, "hash-object", "-w", "--stdin")
		git("", "update-index", "--add", "--cacheinfo", "100644,"+blob+","+path)
	}
	commit := git("", "commit-tree", "-p", "orch", "-m", "invalid task files, with git", git("", "write-tree"))
	git("", "update-ref", "refs/heads/orch", commit)
}

// orchOK runs orch in repo and returns its stdout; it fails the test on a
// non-zero exit.
func orchOK(t *testing.T, repo string, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	if code := Main(append([]string{"-C", repo, "--agent", "tester"}, args...), strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("orch %v: exit %d\n%s", args, code, errb.String())
	}
	return out.String()
}

// bufferedTaskList is orch list's JSON answer as it was rendered before it
// streamed: the whole document in memory, its second half on another
// goroutine. The streamed answer must be the same, byte for byte.
func bufferedTaskList(mask answer.Mask, e *workflow.Engine, tasks []*gitstore.Summary) []byte {
	ready := make([]bool, len(tasks))
	for i, s := range tasks {
		if s.Problem == "" {
			ready[i] = e.Ready(s)
		}
	}
	var fields []json.RawMessage
	if mask.ShowsFields() {
		fields = e.TaskFieldsOf(tasks)
	}
	render := func(b []byte, lo, hi int) []byte {
		for i := lo; i < hi; i++ {
			if i > 0 {
				b = append(b, ',')
			}
			f := workflow.NoFields
			if fields != nil {
				f = fields[i]
			}
			j := answer.NewTask(tasks[i], ready[i], f, mask)
			b = j.AppendJSON(b)
		}
		return b
	}
	half := len(tasks)
	if len(tasks) >= 512 {
		half = len(tasks) / 2
	}
	var second []byte
	done := make(chan struct{})
	go func() {
		defer close(done)
		second = render(nil, half, len(tasks))
		second = append(second, "]}\n"...)
	}()
	first := append(answer.AppendHead(nil), `,"count":`+strconv.Itoa(len(tasks))+`,"tasks":[`...)
	first = render(first, 0, half)
	<-done
	return append(first, second...)
}

// orch list --json streams its answer, and it is byte for byte what the
// renderer that held the whole document wrote: over every queue, more
// than 512 tasks (where that renderer split the work in two) and more
// chunks of tasks than writeTaskList keeps (it reuses them), custom keys,
// an invalid file, text to escape, and with --json=FIELDS, --jq, filters
// and an empty list.
func TestListJSONStreamedAsBefore(t *testing.T) {
	repo := listRepo(t, 800)
	if 800 <= (2*listChunksInFlight+1)*listChunkTasks {
		t.Fatal("too few tasks to reuse a chunk")
	}
	cases := []struct {
		args   []string
		filter workflow.ListFilter
		names  []string // --json=FIELDS
		jq     string
		shows  []string // what the answer must hold, for the case to test anything
	}{
		{args: []string{"--json"}, shows: []string{`"estimate":3`, `"id":"T-bad002"`, `"favourite":"tea"`, `"path":".orchestrator/tasks/T-bad001-broken.md"`, `\"quoted\" \u003cb\u003e\u0026amp;`, `"queue":"claimed"`, `"count":8`}},
		{args: []string{"--json=id,title,fields,problem,ready"}, names: []string{"id", "title", "fields", "problem", "ready"}},
		{args: []string{"--json=count"}, names: []string{"count"}, shows: []string{`{"schema_version":2,"count":8`}},
		{args: []string{"--jq", `.tasks[] | select(.fields != {}) | .id`}, jq: `.tasks[] | select(.fields != {}) | .id`, shows: []string{"T-cust01\n"}},
		{args: []string{"--json", "--queue", "failed", "--queue", "done"}, filter: workflow.ListFilter{Queues: []taskfile.Queue{taskfile.Failed, taskfile.Done}}},
		{args: []string{"--json", "--label", "nosuchlabel"}, filter: workflow.ListFilter{Labels: []string{"nosuchlabel"}}, shows: []string{`"count":0,"tasks":[]}`}},
		{args: []string{"--json", "--ready"}, filter: workflow.ListFilter{Ready: true}},
		{args: []string{"--json", "--label", "x", "--sort", "title"}, filter: workflow.ListFilter{Labels: []string{"x"}, Sort: "title"}},
		{args: []string{"--json", "--search", "custom"}, filter: workflow.ListFilter{Search: "custom"}},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			got := orchOK(t, repo, append([]string{"list"}, c.args...)...)

			if c.filter.Sort == "" {
				c.filter.Sort = "claim"
			}
			e, err := workflow.Open(workflow.Options{Dir: repo, Actor: "tester", Verb: "list", ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			var sel answer.Selection
			if c.names != nil {
				if sel, err = answer.Select(reflect.TypeOf(listAnswer{}), c.names); err != nil {
					t.Fatal(err)
				}
			}
			listed, err := e.List(c.filter)
			if err != nil {
				t.Fatal(err)
			}
			doc := bufferedTaskList(sel.Tasks, e, listed)
			var want bytes.Buffer
			var jq *answer.JQ
			if c.jq != "" {
				if jq, err = answer.CompileJQ(c.jq); err != nil {
					t.Fatal(err)
				}
			}
			if f := answer.NewFilter(&want, sel.Keys, jq); f != nil {
				if _, err := f.Write(doc); err != nil {
					t.Fatal(err)
				}
			} else {
				want.Write(doc)
			}
			if got != want.String() {
				t.Errorf("orch list %s: the streamed answer differs from the buffered one\n got: %.600s\nwant: %.600s", strings.Join(c.args, " "), got, want.String())
			}
			for _, w := range c.shows {
				if !strings.Contains(want.String(), w) {
					t.Errorf("the buffered answer does not hold %s: %.600s", w, want.String())
				}
			}
		})
	}
}

// writeSizes records the size of each write.
type writeSizes struct {
	bytes.Buffer
	sizes []int
}

func (w *writeSizes) Write(p []byte) (int, error) {
	w.sizes = append(w.sizes, len(p))
	return w.Buffer.Write(p)
}

// orch list --json writes its answer as it goes, through a buffer of fixed
// size, instead of making the whole document first: no write is larger
// than the buffer, however many tasks there are.
func TestListJSONWritesInPieces(t *testing.T) {
	repo := listRepo(t, 300)
	var out writeSizes
	var errb bytes.Buffer
	if code := Main([]string{"-C", repo, "list", "--json"}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("exit %d\n%s", code, errb.String())
	}
	var doc struct{ Count int }
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil || doc.Count < 300 {
		t.Fatalf("count %d, err %v", doc.Count, err)
	}
	largest := 0
	for _, n := range out.sizes {
		largest = max(largest, n)
	}
	if largest > listBuffer || len(out.sizes) < out.Len()/listBuffer {
		t.Errorf("%d bytes in %d writes, the largest %d bytes: want writes of at most %d bytes", out.Len(), len(out.sizes), largest, listBuffer)
	}
}

// failingWriter takes n writes, then fails every one.
type failingWriter struct{ n int }

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.n == 0 {
		return 0, errors.New("no space left on device")
	}
	w.n--
	return len(p), nil
}

// A write that fails (a closed pipe, a full disk) ends orch list --json
// with that error, wherever in the list it comes: the decoding and the
// writing run on two goroutines, and neither may be left blocked on the
// other.
func TestListJSONWriteFails(t *testing.T) {
	repo := listRepo(t, 800)
	for _, n := range []int{0, 1, 3} {
		var errb bytes.Buffer
		done := make(chan int)
		go func() {
			done <- Main([]string{"-C", repo, "list", "--json"}, strings.NewReader(""), &failingWriter{n: n}, &errb)
		}()
		select {
		case code := <-done:
			if code == 0 || !strings.Contains(errb.String(), "no space left on device") {
				t.Errorf("after %d writes: exit %d, stderr %q: want the write's error", n, code, errb.String())
			}
		case <-time.After(time.Minute):
			t.Fatalf("after %d writes: orch list --json still running a minute after its output failed", n)
		}
	}
}
