package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/orch-tool/orch/bench/repogen"
	"github.com/orch-tool/orch/taskfile"

	"github.com/orch-tool/orch/internal/testgit"
)

// orchBin is the orch binary under test, built once by TestMain.
var orchBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "orch-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	// ORCH_E2E_BIN: a binary built beforehand (to run the tests as a user
	// who cannot run go build).
	if orchBin = os.Getenv("ORCH_E2E_BIN"); orchBin == "" {
		orchBin, err = buildOrch(dir)
	}
	if err != nil {
		os.RemoveAll(dir)
		fmt.Fprintln(os.Stderr, "e2e: building orch:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// moduleRoot finds the directory of go.mod: `go env GOMOD`, else "..".
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if gomod := strings.TrimSpace(string(out)); err == nil && gomod != "" && gomod != os.DevNull {
		return filepath.Dir(gomod), nil
	}
	root, err := filepath.Abs("..")
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		return "", fmt.Errorf("cannot find the module root (go env GOMOD failed, and ../go.mod is missing)")
	}
	return root, nil
}

// buildOrch builds ./cmd/orch into dir and returns the binary's path.
func buildOrch(dir string) (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "orch")
	// As make build builds it: static, no symbol tables (which also makes
	// the link a second shorter).
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, "./cmd/orch")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/orch: %v\n%s", err, out)
	}
	return bin, nil
}

// Result is one finished process.
type Result struct {
	Args   []string
	Dir    string
	Stdout string
	Stderr string
	Code   int   // exit code; -1 if the process could not run or was killed
	Err    error // why it could not run, or was killed
}

// OK reports whether the process exited 0.
func (r Result) OK() bool { return r.Code == 0 && r.Err == nil }

func (r Result) String() string {
	s := fmt.Sprintf("%s (in %s): exit %d", strings.Join(r.Args, " "), r.Dir, r.Code)
	if r.Err != nil {
		s += fmt.Sprintf(" (%v)", r.Err)
	}
	if e := strings.TrimSpace(r.Stderr); e != "" {
		s += "\nstderr: " + e
	}
	return s
}

// JSON decodes the process's stdout.
func (r Result) JSON(v any) error {
	if err := json.Unmarshal([]byte(r.Stdout), v); err != nil {
		return fmt.Errorf("%s: stdout is not JSON (%v): %q", strings.Join(r.Args, " "), err, r.Stdout)
	}
	return nil
}

// Repo is a real repository in a temp dir, with its own HOME (so no
// user or system git config leaks in) and any number of linked worktrees.
type Repo struct {
	t    testing.TB
	Root string // temp dir holding home/, repo/ and the linked worktrees
	Home string
	Main string // the main worktree
	Env  []string

	mu        sync.Mutex
	worktrees []string
}

// NewRepo creates a repository with one commit on main and runs `orch
// init`. Every process the Repo starts gets its environment.
func NewRepo(t testing.TB) *Repo {
	t.Helper()
	return NewRepoIn(t, tempDir(t))
}

// NewRepoIn is NewRepo in the directory root (which the caller removes).
func NewRepoIn(t testing.TB, root string) *Repo {
	t.Helper()
	return newRepo(t, root, "e2e", "init")
}

// NewExampleRepo is the repository make demo starts from: orch init
// --example (tasks in every queue, review feedback, a refusal), by a
// person called lead, the example's reviewer.
func NewExampleRepo(t testing.TB) *Repo {
	t.Helper()
	return newRepo(t, tempDir(t), "lead", "init", "--example")
}

// newRepo makes the repository in root, for a git user called user, and
// runs orch with initArgs.
func newRepo(t testing.TB, root, user string, initArgs ...string) *Repo {
	t.Helper()
	r := &Repo{t: t, Root: root, Home: filepath.Join(root, "home"), Main: filepath.Join(root, "repo")}
	for _, d := range []string{r.Home, r.Main} {
		if err := os.MkdirAll(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	home, err := testgit.Home(r.Home, user, user+"@example.com")
	if err != nil {
		t.Fatal(err)
	}
	r.Env = append(testEnv(), home...)
	r.worktrees = []string{r.Main}
	r.Git(r.Main, "init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(r.Main, "README.md"), []byte("# e2e\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	r.Git(r.Main, "add", "README.md")
	r.Git(r.Main, "commit", "-q", "-m", "base")
	r.MustOrch(r.Main, initArgs...)
	return r
}

// tempDir makes a directory for one test's repository and worktrees, and
// removes it when the test ends.
//
// It is on a tmpfs (/dev/shm) when there is a writable one, unless
// ORCH_E2E_TMPDIR names another place (ORCH_E2E_TMPDIR=/tmp runs on disk).
// These tests check concurrency (no lost commit, no duplicate, fsck clean),
// not durability: no test can pull the plug. On disk, every orch commit
// pays its fsyncs inside the lock that serialises orch processes, and on a
// slow virtual disk (5-40 ms an fsync) the 8×50 race alone takes minutes;
// on tmpfs fsync is free and the whole package runs in well under a minute.
// Every other system call, and so every interleaving that matters, is the
// same.
func tempDir(t testing.TB) string {
	t.Helper()
	base := os.Getenv("ORCH_E2E_TMPDIR")
	if base == "" {
		if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() && unix.Access("/dev/shm", unix.W_OK) == nil {
			base = "/dev/shm"
		}
	}
	if base == "" {
		return t.TempDir()
	}
	dir, err := os.MkdirTemp(base, "orch-e2e-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("removing %s: %v", dir, err)
		}
	})
	return dir
}

// testEnv is the parent's environment without anything that would change
// how git or orch behave (the caller adds a private git home).
func testEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(k, "GIT_"), strings.HasPrefix(k, "ORCH_"),
			k == "HOME", k == "XDG_CONFIG_HOME", k == "EMAIL", k == "EDITOR", k == "VISUAL":
			continue
		}
		env = append(env, kv)
	}
	return append(env,
		"GIT_TERMINAL_PROMPT=0",
		"NO_COLOR=1",
		"TERM=dumb",
		"LC_ALL=C",
	)
}

// Run runs a command in dir and waits for it.
func (r *Repo) Run(dir, name string, args ...string) Result {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = r.Env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	res := Result{Args: append([]string{filepath.Base(name)}, args...), Dir: dir, Stdout: out.String(), Stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ee.Exited():
		res.Code = ee.ExitCode()
	default:
		res.Code, res.Err = -1, err
	}
	return res
}

// Orch runs the orch binary under test.
func (r *Repo) Orch(dir string, args ...string) Result { return r.Run(dir, orchBin, args...) }

// MustOrch runs orch and fails the test unless it exits 0. Safe to call
// only from the test's goroutine.
func (r *Repo) MustOrch(dir string, args ...string) Result {
	r.t.Helper()
	res := r.Orch(dir, args...)
	if !res.OK() {
		r.t.Fatalf("%v", res)
	}
	return res
}

// TryGit runs git and returns the result, whatever it is.
func (r *Repo) TryGit(dir string, args ...string) Result { return r.Run(dir, "git", args...) }

// Git runs git, fails the test unless it exits 0, and returns its trimmed
// stdout. Safe to call only from the test's goroutine.
func (r *Repo) Git(dir string, args ...string) string {
	r.t.Helper()
	res := r.TryGit(dir, args...)
	if !res.OK() {
		r.t.Fatalf("%v", res)
	}
	return strings.TrimSpace(res.Stdout)
}

// AddWorktree creates a linked worktree <Root>/<name> on a new branch
// started from main.
func (r *Repo) AddWorktree(name, branch string) string {
	r.t.Helper()
	p := filepath.Join(r.Root, name)
	r.Git(r.Main, "worktree", "add", "-q", "-b", branch, p, "main")
	r.mu.Lock()
	r.worktrees = append(r.worktrees, p)
	r.mu.Unlock()
	return p
}

// AddWorktrees creates n linked worktrees <prefix><i> on branches
// <prefix><i> and returns their paths.
func (r *Repo) AddWorktrees(prefix string, n int) []string {
	r.t.Helper()
	out := make([]string, n)
	for i := range out {
		out[i] = r.AddWorktree(fmt.Sprintf("%s%d", prefix, i), fmt.Sprintf("%s%d", prefix, i))
	}
	return out
}

// Worktrees returns the main worktree and every linked one made by
// AddWorktree.
func (r *Repo) Worktrees() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.worktrees...)
}

// Config sets a git config value of the repository.
func (r *Repo) Config(key, value string) {
	r.t.Helper()
	r.Git(r.Main, "config", key, value)
}

// SeedTasks adds n tasks in queue q to the state branch in one commit
// (written by git fast-import, so 1,000 tasks take a fraction of a second)
// and returns their IDs. The next orch command brings the view in line.
func (r *Repo) SeedTasks(n int, q taskfile.Queue) []string {
	r.t.Helper()
	res, err := repogen.Generate(r.Main, repogen.Options{Tasks: n, Commits: 1, Append: true, Queue: q, Seed: time.Now().UnixNano(), Env: r.Env, Validate: true})
	if err != nil {
		r.t.Fatal(err)
	}
	return res.ByQueue(q)
}

// TaskJSON is a task as `orch list --json` prints it (the fields the tests
// read).
type TaskJSON struct {
	ID        string `json:"id"`
	Title     string `json:"title"`
	Queue     string `json:"queue"`
	Priority  string `json:"priority"`
	ClaimedBy string `json:"claimed_by"`
	Path      string `json:"path"`
	Problem   string `json:"problem"`
}

// List runs `orch list --json` (with extra arguments) and returns the
// tasks, checking that count and the list agree.
func (r *Repo) List(args ...string) []TaskJSON {
	r.t.Helper()
	res := r.MustOrch(r.Main, append([]string{"list", "--json"}, args...)...)
	var doc struct {
		SchemaVersion int        `json:"schema_version"`
		Count         int        `json:"count"`
		Tasks         []TaskJSON `json:"tasks"`
	}
	if err := res.JSON(&doc); err != nil {
		r.t.Fatal(err)
	}
	if doc.SchemaVersion != 2 || doc.Count != len(doc.Tasks) {
		r.t.Fatalf("orch list --json: schema_version %d, count %d, %d tasks", doc.SchemaVersion, doc.Count, len(doc.Tasks))
	}
	return doc.Tasks
}

// StateCommit is one commit of the state branch.
type StateCommit struct {
	Hash    string
	Parents []string
	Action  string // Orch-Action trailer
	Task    string // Orch-Task trailer
	Subject string
}

// StateLog returns the commits reachable from the state branch, newest
// first.
func (r *Repo) StateLog() []StateCommit {
	r.t.Helper()
	out := r.Git(r.Main, "log", "--format=%H%x1f%P%x1f%(trailers:key=Orch-Action,valueonly,separator=%x2C)%x1f%(trailers:key=Orch-Task,valueonly,separator=%x2C)%x1f%s%x1e", "refs/heads/orch")
	var cs []StateCommit
	for _, rec := range strings.Split(out, "\x1e") {
		rec = strings.TrimSpace(rec)
		if rec == "" {
			continue
		}
		f := strings.Split(rec, "\x1f")
		if len(f) != 5 {
			r.t.Fatalf("git log: unexpected record %q", rec)
		}
		cs = append(cs, StateCommit{Hash: f[0], Parents: strings.Fields(f[1]), Action: strings.TrimSpace(f[2]), Task: strings.TrimSpace(f[3]), Subject: f[4]})
	}
	return cs
}

// CheckLinear fails the test unless the state branch is one line of
// commits from a single root (no merges, every commit has one parent but
// the first).
func (r *Repo) CheckLinear(log []StateCommit) {
	r.t.Helper()
	for i, c := range log {
		want := 1
		if i == len(log)-1 {
			want = 0
		}
		if len(c.Parents) != want {
			r.t.Errorf("state commit %s (%s) has %d parents, want %d", c.Hash[:10], c.Subject, len(c.Parents), want)
			continue
		}
		if want == 1 && c.Parents[0] != log[i+1].Hash {
			r.t.Errorf("state commit %s is not on the first-parent line", c.Hash[:10])
		}
	}
}

// Fsck fails the test unless `git fsck --strict` is clean. Dangling
// objects are not corruption (a commit built on a tip that then moved is
// left dangling, as git itself leaves them) and are only logged.
func (r *Repo) Fsck() {
	r.t.Helper()
	res := r.TryGit(r.Main, "fsck", "--strict", "--no-progress", "--no-dangling")
	if !res.OK() || strings.TrimSpace(res.Stdout) != "" || strings.TrimSpace(res.Stderr) != "" {
		r.t.Errorf("git fsck --strict is not clean: %v\nstdout: %s", res, res.Stdout)
	}
	if d := r.TryGit(r.Main, "fsck", "--no-progress", "--dangling"); d.OK() {
		if n := strings.Count(d.Stdout, "dangling "); n > 0 {
			r.t.Logf("git fsck: %d dangling objects (not an error)", n)
		}
	}
}

// StatusClean fails the test unless `git status --porcelain` is empty in
// every worktree.
func (r *Repo) StatusClean() {
	r.t.Helper()
	for _, wt := range r.Worktrees() {
		res := r.TryGit(wt, "status", "--porcelain", "--untracked-files=all")
		if !res.OK() || strings.TrimSpace(res.Stdout) != "" {
			r.t.Errorf("git status in %s is not clean: %v\n%s", wt, res, res.Stdout)
		}
	}
}

// RevParse returns the commit a ref points at ("" if it does not exist).
func (r *Repo) RevParse(ref string) string {
	res := r.TryGit(r.Main, "rev-parse", "--verify", "-q", ref+"^{commit}")
	return strings.TrimSpace(res.Stdout)
}

// RevList returns the set of commits reachable from ref.
func (r *Repo) RevList(ref string) map[string]bool {
	r.t.Helper()
	set := map[string]bool{}
	for _, h := range strings.Fields(r.Git(r.Main, "rev-list", ref)) {
		set[h] = true
	}
	return set
}

// ViewTaskFiles lists the task files in the view (.orchestrator/tasks).
func (r *Repo) ViewTaskFiles() []string {
	r.t.Helper()
	ents, err := os.ReadDir(filepath.Join(r.Main, ".orchestrator", "tasks"))
	if err != nil {
		r.t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".md") {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out
}

// RunWorkers starts n workers at the same moment (a common barrier) and has
// worker w call fn(w, i) for i in 0..iters-1, one after the other. fn
// normally starts one process and returns its Result. It returns every
// result, results[w][i]. fn runs on other goroutines: it must not call
// t.Fatal.
func RunWorkers(n, iters int, fn func(w, i int) Result) [][]Result {
	return RunWorkersUntil(n, func(w, i int) (Result, bool) {
		return fn(w, i), i+1 < iters
	})
}

// RunWorkersUntil is RunWorkers for loops of unknown length: worker w calls
// fn(w, 0), fn(w, 1), ... until fn returns false (for example when `orch
// claim` exits 3, nothing left to claim). The last result is kept too.
func RunWorkersUntil(n int, fn func(w, i int) (Result, bool)) [][]Result {
	results := make([][]Result, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < n; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			<-start
			for i := 0; ; i++ {
				res, more := fn(w, i)
				results[w] = append(results[w], res)
				if !more {
					return
				}
			}
		}(w)
	}
	close(start)
	wg.Wait()
	return results
}

// Flatten returns every result of RunWorkers in one list.
func Flatten(results [][]Result) []Result {
	var out []Result
	for _, rs := range results {
		out = append(out, rs...)
	}
	return out
}

// Loop runs a step over and over on its own goroutine, beside the workers
// under test, until Stop (and at least Min times).
type Loop struct {
	Name  string
	Min   int
	Pause time.Duration // between steps

	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex
	n    int
	fail []string
}

// StartLoop starts calling step(i) for i = 0, 1, ..., pausing between
// steps (on 2 cores, background git processes that never pause mostly slow
// the orch processes down, which are serialised by their lock, without
// making the race any tighter). A step returning an error is counted and
// recorded; the loop goes on.
func StartLoop(name string, min int, pause time.Duration, step func(i int) error) *Loop {
	l := &Loop{Name: name, Min: min, Pause: pause, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		for i := 0; ; i++ {
			if i >= l.Min {
				select {
				case <-l.stop:
					return
				default:
				}
			}
			err := step(i)
			l.mu.Lock()
			l.n++
			if err != nil && len(l.fail) < 1000 {
				l.fail = append(l.fail, err.Error())
			}
			l.mu.Unlock()
			if l.Pause > 0 {
				select {
				case <-l.stop:
					if i+1 >= l.Min {
						return
					}
				case <-time.After(l.Pause):
				}
			}
		}
	}()
	return l
}

// Stop asks the loop to end after its current step (once it has run Min
// steps) and waits for it. It returns the number of steps and the errors.
// Stop may be called more than once.
func (l *Loop) Stop() (int, []string) {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n, append([]string(nil), l.fail...)
}

// StopAll stops every loop and logs what each did.
func StopAll(t testing.TB, loops ...*Loop) {
	t.Helper()
	for _, l := range loops {
		n, fails := l.Stop()
		msg := fmt.Sprintf("background %s: %d runs, %d failed", l.Name, n, len(fails))
		if len(fails) > 0 {
			msg += "; first failure: " + firstLine(fails[0])
		}
		t.Log(msg)
	}
}

// GitStep wraps a git command as a loop step.
func (r *Repo) GitStep(dir string, args ...string) error {
	res := r.TryGit(dir, args...)
	if !res.OK() {
		return errors.New(res.String())
	}
	return nil
}

// Failures returns a readable summary of the results that did not exit 0
// (at most max of them), and how many there were.
func Failures(results []Result, max int) (string, int) {
	var b strings.Builder
	n := 0
	for _, r := range results {
		if r.OK() {
			continue
		}
		n++
		if n <= max {
			b.WriteString("\n  " + strings.ReplaceAll(r.String(), "\n", "\n    "))
		}
	}
	return b.String(), n
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	if i := strings.Index(s, "stderr: "); i >= 0 {
		e, _, _ := strings.Cut(s[i:], "\n")
		return l + " " + e
	}
	return l
}

// NewOutput is `orch new --json`.
type NewOutput struct {
	Task   TaskJSON `json:"task"`
	Commit string   `json:"commit"`
}

// fullSize is set by ORCH_E2E_FULL=1, as make test (and so CI) sets it:
// the races at full size. Without it, in the everyday go test ./..., they
// run small: the same processes and checks over fewer workers and tasks.
// -short keeps them small either way.
func fullSize() bool { return os.Getenv("ORCH_E2E_FULL") != "" && !testing.Short() }

// scale returns full at full size, else small.
func scale(full, small int) int {
	if fullSize() {
		return full
	}
	return small
}

// GitCommitter is the git user of a race test: commits on a branch in its
// own worktree, in a loop, beside orch.
type GitCommitter struct {
	Loop *Loop
	mu   sync.Mutex
	made []string
}

// StartGitCommitter commits in worktree wt, at least min times and for as
// long as the test's orch processes run (until StopAll).
func (r *Repo) StartGitCommitter(wt string, min int) *GitCommitter {
	g := &GitCommitter{}
	g.Loop = StartLoop("git commit in "+filepath.Base(wt), min, 5*time.Millisecond, func(i int) error {
		name := fmt.Sprintf("file-%03d.txt", i%50)
		if err := os.WriteFile(filepath.Join(wt, name), []byte(fmt.Sprintf("change %d\n", i)), 0o666); err != nil {
			return err
		}
		if err := r.GitStep(wt, "add", name); err != nil {
			return err
		}
		msg := fmt.Sprintf("side commit %d", i)
		if err := r.GitStep(wt, "commit", "-q", "-m", msg); err != nil {
			return err
		}
		g.mu.Lock()
		g.made = append(g.made, msg)
		g.mu.Unlock()
		return nil
	})
	return g
}

// Made returns the messages of the commits made so far.
func (g *GitCommitter) Made() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.made...)
}

// RefsKept checks what a git CLI beside orch must find afterwards: each
// unrelated ref at the value its last successful git update-ref wrote
// (want, guarded by mu), and main where it was.
func (r *Repo) RefsKept(t *testing.T, mu *sync.Mutex, want map[string]string, mainBefore string) {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	for ref, v := range want {
		if got := r.RevParse(ref); got != v {
			t.Errorf("%s is %s, want %s (the last successful git update-ref)", ref, got, v)
		}
	}
	if got := r.RevParse("main"); got != mainBefore {
		t.Errorf("main moved from %s to %s", mainBefore, got)
	}
}
