package e2e

import (
	"errors"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/gitstore/gitrepo"
	"github.com/orch-tool/orch/taskfile"
)

// tortureLong selects the long form of the kill -9 torture tests:
//
//	go test ./e2e -run Torture -torture.long
var tortureLong = flag.Bool("torture.long", false, "run the kill -9 torture tests at full length (thousands of kills)")

// tortureSize is how many orch processes a torture test starts, and how
// many at once.
func tortureSize() (starts, workers int) {
	switch {
	case *tortureLong:
		return 5000, 6
	case !fullSize():
		return 150, 3
	}
	return 450, 4
}

// tortureOp is one orch process of the storm.
type tortureOp struct {
	kind string // new, claim, submit, reject
	dir  string
	args []string
}

// tortureResult is how one process of the storm ended.
type tortureResult struct {
	op     tortureOp
	killed bool // ended by our SIGKILL
	code   int  // exit code when it exited
	stdout string
	stderr string
	delay  time.Duration
	id     string // task id it reported (exit 0)
	commit string // commit it reported (exit 0)
}

// transitionJSON is what new, claim, submit and reject print with --json:
// the task and the commit that recorded the change.
type transitionJSON struct {
	SchemaVersion int `json:"schema_version"`
	Task          struct {
		ID        string `json:"id"`
		Queue     string `json:"queue"`
		ClaimedBy string `json:"claimed_by"`
	} `json:"task"`
	Commit string `json:"commit"`
}

// tortureModel is what the storm knows of the tasks, from the answers of
// the processes that exited 0 (stale by design: it only steers which verbs
// are worth trying).
type tortureModel struct {
	mu       sync.Mutex
	rng      *rand.Rand
	queue    map[string]string // id -> queue
	claimant map[string]string // id -> claimed_by
	ids      []string
	hand     int
}

func (m *tortureModel) intn(n int) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.rng.Intn(n)
}

// pick returns a random known task in queue q.
func (m *tortureModel) pick(q string) (string, string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var in []string
	for _, id := range m.ids {
		if m.queue[id] == q {
			in = append(in, id)
		}
	}
	if len(in) == 0 {
		return "", "", false
	}
	id := in[m.rng.Intn(len(in))]
	return id, m.claimant[id], true
}

func (m *tortureModel) learn(out transitionJSON) {
	m.mu.Lock()
	defer m.mu.Unlock()
	id := out.Task.ID
	if _, ok := m.queue[id]; !ok {
		m.ids = append(m.ids, id)
	}
	m.queue[id] = out.Task.Queue
	m.claimant[id] = out.Task.ClaimedBy
}

// nextOp chooses the next process of the storm: mostly transitions that
// the known state makes legal, some that will be refused (refusals must
// change nothing either).
func (m *tortureModel) nextOp(w, i int, dirs []string) tortureOp {
	dir := dirs[m.intn(len(dirs))]
	roll := m.intn(100)
	switch {
	case roll < 25:
		if id, who, ok := m.pick("claimed"); ok {
			return tortureOp{"submit", dir, []string{"submit", id, "--json", "--agent", who, "-m", "done"}}
		}
	case roll < 40:
		if id, _, ok := m.pick("provisional"); ok {
			return tortureOp{"reject", dir, []string{"reject", id, "--json", "--agent", "lead", "-m", fmt.Sprintf("Needs work (w%d/%d).", w, i)}}
		}
	case roll < 65:
		return tortureOp{"claim", dir, []string{"claim", "--json", "--agent", fmt.Sprintf("agent-%d", m.intn(6))}}
	}
	return tortureOp{"new", dir, []string{"new", fmt.Sprintf("Torture w%d i%d", w, i), "--json", "--agent", fmt.Sprintf("agent-%d", w), "--label", "torture"}}
}

// handTask writes a new task file into the view the way an editor that
// saves atomically does (temp file + rename), as a person would while orch
// runs. The next orch command to reconcile commits it.
func (m *tortureModel) handTask(view string) (string, error) {
	m.mu.Lock()
	m.hand++
	n := m.hand
	m.mu.Unlock()
	title := fmt.Sprintf("Hand task %d", n)
	dir := filepath.Join(view, "tasks")
	tmp := filepath.Join(dir, fmt.Sprintf(".hand-%d.swp", n))
	if err := os.WriteFile(tmp, []byte("# "+title+"\n\nWritten by hand during the storm.\n"), 0o666); err != nil {
		return "", err
	}
	return title, os.Rename(tmp, filepath.Join(dir, fmt.Sprintf("hand-%d.md", n)))
}

// startKilled runs one orch process and sends it SIGKILL after delay
// (unless it ended first). A zero delay means: let it finish.
func (r *Repo) startKilled(op tortureOp, delay time.Duration) tortureResult {
	cmd := exec.Command(orchBin, op.args...)
	cmd.Dir = op.dir
	cmd.Env = r.Env
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	res := tortureResult{op: op, delay: delay, code: -1}
	if err := cmd.Start(); err != nil {
		res.stderr = err.Error()
		return res
	}
	var timer *time.Timer
	if delay > 0 {
		timer = time.AfterFunc(delay, func() { _ = cmd.Process.Kill() })
	}
	err := cmd.Wait()
	if timer != nil {
		timer.Stop()
	}
	res.stdout, res.stderr = out.String(), errb.String()
	if strings.Contains(res.stderr, "ref_locked") {
		res.stderr += r.refLockState()
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
		res.code = 0
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			res.killed = true
		} else {
			res.code = ee.ExitCode()
		}
	default:
		res.stderr += err.Error()
	}
	return res
}

// refLockState describes the state branch's .lock file and the note that
// names its owner, to say why a ref lock was not taken over.
func (r *Repo) refLockState() string {
	common := filepath.Join(r.Main, ".git")
	var b strings.Builder
	b.WriteString("\n(test) at " + time.Now().Format("15:04:05.000000"))
	for _, f := range []string{"refs/heads/orch.lock", "orch/ref-lock-owner.refs%2Fheads%2Forch", "orch/ref-lock-owner"} {
		p := filepath.Join(common, f)
		if fi, err := os.Stat(p); err == nil {
			data, _ := os.ReadFile(p)
			fmt.Fprintf(&b, "; %s: mtime %s, %q", f, fi.ModTime().Format("15:04:05.000000"), data)
		} else {
			fmt.Fprintf(&b, "; %s: absent", f)
		}
	}
	return b.String()
}

// tortureStats sums up a storm.
type tortureStats struct {
	starts, killed, ok, refused, other int
	byKind                             map[string]int // successes per verb
	codes                              map[int]int
	firstOther                         []string
}

func (s tortureStats) String() string {
	var kinds []string
	for k, n := range s.byKind {
		kinds = append(kinds, fmt.Sprintf("%s=%d", k, n))
	}
	sort.Strings(kinds)
	return fmt.Sprintf("%d processes: %d killed by SIGKILL, %d exited 0 (%s), %d refused or not found (exit 3/4), %d other failures %v",
		s.starts, s.killed, s.ok, strings.Join(kinds, " "), s.refused, s.other, s.codes)
}

// storm runs starts orch processes, workers at a time, each killed with
// SIGKILL after a random delay (a quarter of them run to the end), and
// writes hand-made task files into the view now and then. It returns every
// result and the titles of the hand-made tasks.
func (r *Repo) storm(t *testing.T, starts, workers int, dirs []string, seed int64) ([]tortureResult, []string, tortureStats) {
	m := &tortureModel{rng: rand.New(rand.NewSource(seed)), queue: map[string]string{}, claimant: map[string]string{}}
	view := filepath.Join(r.Main, ".orchestrator")
	var (
		mu      sync.Mutex
		results []tortureResult
		hands   []string
		next    int
		handErr error
	)
	take := func() (int, bool) {
		mu.Lock()
		defer mu.Unlock()
		if next >= starts {
			return 0, false
		}
		next++
		return next - 1, true
	}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for {
				i, ok := take()
				if !ok {
					return
				}
				if m.intn(20) == 0 {
					title, err := m.handTask(view)
					mu.Lock()
					if err != nil && handErr == nil {
						handErr = err
					}
					hands = append(hands, title)
					mu.Unlock()
				}
				op := m.nextOp(w, i, dirs)
				// Most processes die at a random moment of their life: from
				// before the runtime starts to after the ref update (an orch
				// transition takes 5-30 ms here, longer while waiting for
				// the lock); a quarter run to the end.
				var delay time.Duration
				if m.intn(4) != 0 {
					delay = time.Duration(1+m.intn(40_000)) * time.Microsecond
				}
				res := r.startKilled(op, delay)
				if res.code == 0 && !res.killed {
					var out transitionJSON
					if err := (Result{Args: op.args, Stdout: res.stdout}).JSON(&out); err == nil {
						res.id, res.commit = out.Task.ID, out.Commit
						m.learn(out)
					} else {
						res.stderr += "\n(test) " + err.Error()
					}
				}
				mu.Lock()
				results = append(results, res)
				mu.Unlock()
			}
		}(w)
	}
	wg.Wait()
	if handErr != nil {
		t.Errorf("writing a hand-made task file: %v", handErr)
	}
	st := tortureStats{starts: len(results), byKind: map[string]int{}, codes: map[int]int{}}
	for _, res := range results {
		switch {
		case res.killed:
			st.killed++
		case res.code == 0:
			st.ok++
			st.byKind[res.op.kind]++
		case res.code == 3 || res.code == 4:
			st.refused++
		default:
			st.other++
			st.codes[res.code]++
			if len(st.firstOther) < 5 {
				st.firstOther = append(st.firstOther, fmt.Sprintf("orch %s: exit %d: %s", strings.Join(res.op.args, " "), res.code, strings.TrimSpace(res.stderr)))
			}
		}
	}
	return results, hands, st
}

// recoverLock runs `orch list --json` until it succeeds: a killed orch may
// have left git's ref .lock file, which the next orch takes over once it
// can tell the owner is dead. It fails the test if that takes longer than
// a generous bound (a lock that never frees).
func (r *Repo) recoverLock(t *testing.T) Result {
	t.Helper()
	const bound = 90 * time.Second // > StaleRefLockAge + RefLockTimeout, on a loaded machine
	start := time.Now()
	var res Result
	tries := 0
	for time.Since(start) < bound {
		tries++
		res = r.Orch(r.Main, "list", "--json")
		if res.OK() {
			if tries > 1 {
				t.Logf("orch list succeeded after %d tries (%v); the first failures were lock waits", tries, time.Since(start).Round(time.Millisecond))
			}
			return res
		}
		if res.Code != 5 {
			t.Fatalf("after the storm: %v", res)
		}
		t.Logf("after the storm, try %d: %v", tries, res)
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("after the storm, no orch command succeeded within %v: a lock is held forever: %v", bound, res)
	return res
}

// checkAfterStorm checks everything a storm of kill -9 must leave intact.
// extra are commits that must also be on the state branch (moved there by
// someone other than orch).
func (r *Repo) checkAfterStorm(t *testing.T, results []tortureResult, hands []string, extra []string) {
	t.Helper()
	// 1. A later orch command succeeds, within a bounded time; it
	// reconciles the view.
	list := r.recoverLock(t)
	var doc struct {
		Tasks []TaskJSON `json:"tasks"`
	}
	if err := list.JSON(&doc); err != nil {
		t.Fatal(err)
	}

	// 2. Every process that reported success has its commit on the state
	// branch, with the trailers of what it did.
	log := r.StateLog()
	r.CheckLinear(log)
	byHash := map[string]StateCommit{}
	for _, c := range log {
		byHash[c.Hash] = c
	}
	listed := map[string]TaskJSON{}
	titles := map[string]int{}
	for _, tk := range doc.Tasks {
		if _, dup := listed[tk.ID]; dup {
			t.Errorf("orch list shows %s twice", tk.ID)
		}
		listed[tk.ID] = tk
		titles[tk.Title]++
		if tk.Problem != "" {
			t.Errorf("task %s (%s) has a problem after the storm: %s", tk.ID, tk.Path, tk.Problem)
		}
	}
	lost := 0
	for _, res := range results {
		if res.killed || res.code != 0 {
			continue
		}
		c, ok := byHash[res.commit]
		switch {
		case res.commit == "" || res.id == "":
			t.Errorf("orch %s exited 0 without reporting a task and a commit: %q", strings.Join(res.op.args, " "), res.stdout)
		case !ok:
			lost++
			if lost <= 10 {
				t.Errorf("LOST: orch %s exited 0, reporting commit %s for %s, which is not on refs/heads/orch", strings.Join(res.op.args, " "), res.commit, res.id)
			}
		case c.Task != res.id || c.Action != res.op.kind:
			t.Errorf("orch %s reported commit %s, but that commit says Orch-Task %q Orch-Action %q", strings.Join(res.op.args, " "), res.commit[:10], c.Task, c.Action)
		}
		if _, ok := listed[res.id]; !ok && res.id != "" {
			t.Errorf("orch %s exited 0 for %s, but orch list does not show it", strings.Join(res.op.args, " "), res.id)
		}
	}
	if lost > 0 {
		t.Errorf("%d successful transitions lost", lost)
	}
	state := r.RevList("refs/heads/orch")
	for _, h := range extra {
		if !state[h] {
			t.Errorf("LOST: commit %s, put on refs/heads/orch by git update-ref, is no longer reachable from it", h)
		}
	}
	// Hand-made tasks: each committed exactly once; no task duplicated.
	for _, title := range hands {
		if titles[title] != 1 {
			t.Errorf("the hand-made task %q is listed %d times, want once", title, titles[title])
		}
	}
	for title, n := range titles {
		if n > 1 {
			t.Errorf("title %q is listed %d times (a task duplicated)", title, n)
		}
	}

	// 3. The view is the branch: every mirrored file at the tip is in the
	// view with the same content, and the view holds nothing else.
	r.checkViewIsBranch(t)

	// 4. No file is half-written: every view file parses, and so does every
	// task at the tip.
	if res := r.Orch(r.Main, "check"); !res.OK() {
		t.Errorf("orch check after the storm: %v\n%s", res, res.Stdout)
	}
	// 5. No lock is left behind, and the object store is sound.
	r.checkNoRefLocks(t)
	r.logLeftovers(t)
	r.Fsck()
	r.StatusClean()
}

// checkViewIsBranch compares .orchestrator/ with the tip of the state
// branch, file by file.
func (r *Repo) checkViewIsBranch(t *testing.T) {
	t.Helper()
	tip := map[string]string{} // path -> blob
	out := r.Git(r.Main, "ls-tree", "-r", "-z", "--full-tree", "refs/heads/orch")
	for _, rec := range strings.Split(out, "\x00") {
		meta, path, ok := strings.Cut(rec, "\t")
		if !ok {
			continue
		}
		f := strings.Fields(meta)
		if len(f) != 3 || f[1] != "blob" {
			t.Errorf("state branch tip: unexpected entry %q", rec)
			continue
		}
		tip[path] = f[2]
	}
	view := filepath.Join(r.Main, ".orchestrator")
	seen := map[string]bool{}
	var leftovers []string
	err := filepath.WalkDir(view, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(strings.TrimPrefix(p, view+string(filepath.Separator)))
		if d.IsDir() || p == view {
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") {
			leftovers = append(leftovers, rel)
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		seen[rel] = true
		blob, ok := tip[rel]
		switch {
		case !ok:
			t.Errorf("view file %s is not on the state branch", rel)
		case gitrepo.HashBlob(data).String() != blob:
			t.Errorf("view file %s differs from the state branch (blob %s)", rel, blob[:10])
		}
		if strings.HasPrefix(rel, "tasks/") {
			if f, err := taskfile.Parse(rel, data); err != nil {
				t.Errorf("view file %s does not parse: %v", rel, err)
			} else if ps := f.Validate(); len(ps) > 0 {
				t.Errorf("view file %s is not valid: %v", rel, ps[0])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for path := range tip {
		if gitstore.Mirrored(path) && !seen[path] {
			t.Errorf("%s is on the state branch but not in the view", path)
		}
	}
	if len(leftovers) > 0 {
		sort.Strings(leftovers)
		t.Logf("the view holds %d hidden files left by killed processes (ignored by orch): %s", len(leftovers), strings.Join(leftovers[:min(len(leftovers), 5)], " "))
	}
}

// logLeftovers logs the temporary files killed processes left in the
// repository: harmless (orch and git ignore them; git gc prunes tmp_*
// objects after two weeks), but worth seeing.
func (r *Repo) logLeftovers(t *testing.T) {
	t.Helper()
	n := map[string]int{}
	_ = filepath.WalkDir(filepath.Join(r.Main, ".git"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		for _, prefix := range []string{"tmp_obj_", "tmp_flush_", ".cache-", "tmp_"} {
			if strings.HasPrefix(d.Name(), prefix) {
				n[prefix+"*"]++
				break
			}
		}
		return nil
	})
	if len(n) > 0 {
		t.Logf("temporary files left in .git by killed processes: %v", n)
	}
}

// checkNoRefLocks fails the test if a git .lock file is left in the
// repository once a later orch command has run. A lock a killed orch left
// is recognised once it is a second old (gitstore's leftByDeadOrch: a live
// git process gets that long), so when one is found, a further orch
// command runs a second later and the locks are looked for again.
func (r *Repo) checkNoRefLocks(t *testing.T) {
	t.Helper()
	locks := r.refLocks()
	if len(locks) > 0 {
		time.Sleep(1200 * time.Millisecond)
		if res := r.Orch(r.Main, "check"); !res.OK() {
			t.Errorf("orch check: %v\n%s", res, res.Stdout)
		}
		locks = r.refLocks()
	}
	for _, p := range locks {
		t.Errorf("lock file left behind: %s", p)
	}
}

// refLocks lists the .lock files in the repository's git directory.
func (r *Repo) refLocks() []string {
	var locks []string
	_ = filepath.WalkDir(filepath.Join(r.Main, ".git"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(d.Name(), ".lock") {
			locks = append(locks, p)
		}
		return nil
	})
	return locks
}

// TestTortureKill: many orch processes (new, claim, submit, reject, and
// hand-made task files in the view) are started and killed with SIGKILL at
// random moments. Every process that exited 0 has its commit on the state
// branch; afterwards one orch command brings the view to the branch tip,
// no file is half-written, no lock stays held, and git fsck is clean.
func TestTortureKill(t *testing.T) {
	starts, workers := tortureSize()
	r := NewRepo(t)
	dirs := append([]string{r.Main}, r.AddWorktrees("torture-wt-", 2)...)
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	start := time.Now()
	results, hands, st := r.storm(t, starts, workers, dirs, seed)
	t.Logf("storm: %v, %d hand-made task files, in %v", st, len(hands), time.Since(start).Round(time.Millisecond))
	if st.other > 0 {
		// Killed processes must not make the others fail: a lock a killed
		// orch left is taken over at once (a ref_locked failure here means
		// it was not), and a half-done transition is never visible.
		t.Errorf("%d orch processes that were not killed failed (exit other than 0, 3, 4); first:\n  %s", st.other, strings.Join(st.firstOther, "\n  "))
	}
	r.checkAfterStorm(t, results, hands, nil)
	if st.ok == 0 || st.killed == 0 {
		t.Errorf("the storm proved nothing: %d successes, %d kills", st.ok, st.killed)
	}
}

// TestTortureKillBesideGit is the same storm with git working on the same
// repository at once: `git gc --auto` (gc.auto=1, so it repacks over and
// over), `git pack-refs --all`, `git update-ref` of other refs, and a git
// user who moves the state branch itself with a compare-and-swap
// `git update-ref refs/heads/orch NEW OLD`, NEW a child of OLD that adds a
// message file (as a sync from another clone would). No commit may be
// lost: neither the commit of any orch process that exited 0, nor any
// commit git put on the branch.
func TestTortureKillBesideGit(t *testing.T) {
	starts, workers := tortureSize()
	r := NewRepo(t)
	r.Config("gc.auto", "1")
	r.Config("gc.autoPackLimit", "2")
	dirs := append([]string{r.Main}, r.AddWorktrees("torture-wt-", 2)...)
	toolWT := r.AddWorktree("tool-wt", "tool")
	mainBefore := r.RevParse("main")
	target := r.RevParse("HEAD")

	packLoop := StartLoop("git pack-refs --all", 1, 10*time.Millisecond, func(int) error { return r.GitStep(r.Main, "pack-refs", "--all") })
	gcLoop := StartLoop("git gc --auto", 1, 30*time.Millisecond, func(int) error { return r.GitStep(r.Main, "gc", "--auto", "--quiet") })
	var refMu sync.Mutex
	want := map[string]string{}
	refLoop := StartLoop("git update-ref", 1, 5*time.Millisecond, func(i int) error {
		ref := fmt.Sprintf("refs/torture/r%d", i%8)
		if err := r.GitStep(toolWT, "update-ref", "-m", "torture", ref, target); err != nil {
			return err
		}
		refMu.Lock()
		want[ref] = target
		refMu.Unlock()
		return r.GitStep(toolWT, "update-ref", fmt.Sprintf("refs/tags/torture-%d", i), target, "")
	})
	// The git user on the state branch. A lost compare-and-swap (orch
	// moved the branch, or holds its lock) is normal and only counted.
	var extraMu sync.Mutex
	var extra []string
	index := filepath.Join(r.Root, "mover-index")
	moverEnv := append(append([]string(nil), r.Env...), "GIT_INDEX_FILE="+index)
	gitOut := func(stdin string, args ...string) (string, error) {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = r.Main, moverEnv
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out)), nil
	}
	moved := 0
	moverLoop := StartLoop("git update-ref refs/heads/orch NEW OLD", 1, 20*time.Millisecond, func(i int) error {
		old, err := gitOut("", "rev-parse", "--verify", "refs/heads/orch")
		if err != nil {
			return err
		}
		blob, err := gitOut(fmt.Sprintf("# Note %d\n\nFrom a git user beside orch.\n", i), "hash-object", "-w", "--stdin")
		if err != nil {
			return err
		}
		os.Remove(index)
		if _, err := gitOut("", "read-tree", old); err != nil {
			return err
		}
		if _, err := gitOut("", "update-index", "--add", "--cacheinfo", "100644,"+blob+",messages/git-note-"+fmt.Sprint(i)+".md"); err != nil {
			return err
		}
		tree, err := gitOut("", "write-tree")
		if err != nil {
			return err
		}
		commit, err := gitOut("", "commit-tree", tree, "-p", old, "-m", fmt.Sprintf("git note %d", i))
		if err != nil {
			return err
		}
		if _, err := gitOut("", "update-ref", "-m", "git user", "refs/heads/orch", commit, old); err != nil {
			return err // lost the race: the commit is not on the branch, and need not be
		}
		extraMu.Lock()
		extra = append(extra, commit)
		moved++
		extraMu.Unlock()
		return nil
	})
	loops := []*Loop{packLoop, gcLoop, refLoop, moverLoop}
	t.Cleanup(func() {
		for _, l := range loops {
			l.Stop()
		}
	})

	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	start := time.Now()
	results, hands, st := r.storm(t, starts, workers, dirs, seed)
	StopAll(t, loops...)
	t.Logf("storm: %v, %d hand-made task files, %d commits put on refs/heads/orch by git update-ref, in %v",
		st, len(hands), moved, time.Since(start).Round(time.Millisecond))
	if st.other > 0 {
		// Killed processes must not make the others fail: a lock a killed
		// orch left is taken over at once (a ref_locked failure here means
		// it was not), and a half-done transition is never visible.
		t.Errorf("%d orch processes that were not killed failed (exit other than 0, 3, 4); first:\n  %s", st.other, strings.Join(st.firstOther, "\n  "))
	}
	t.Logf("git count-objects -v: %s", strings.Join(strings.Fields(r.Git(r.Main, "count-objects", "-v")), " "))

	r.checkAfterStorm(t, results, hands, extra)
	r.RefsKept(t, &refMu, want, mainBefore)
	if st.ok == 0 || st.killed == 0 {
		t.Errorf("the storm proved nothing: %d successes, %d kills", st.ok, st.killed)
	}
}

// TestKillAfterHandNewCommit replays, deterministically, a window the
// torture storm finds: orch commits a task a person created by hand in the
// view (adding its id and queue), and is killed after the ref update but
// before it rewrites the view file and saves its sync index. The view then
// holds the person's version (no frontmatter) beside a branch that has the
// task, and no sync record tells them apart. The next command must bring
// the view to the branch, not report the file as broken for ever.
func TestKillAfterHandNewCommit(t *testing.T) {
	r := NewRepo(t)
	r.MustOrch(r.Main, "list")
	hand := filepath.Join(r.Main, ".orchestrator", "tasks", "hand.md")
	content := []byte("# Made by hand\n\nSome body.\n")
	if err := os.WriteFile(hand, content, 0o666); err != nil {
		t.Fatal(err)
	}
	// The private state as the killed process found it (it never saved).
	priv := filepath.Join(r.Main, ".git", "orch")
	saved := filepath.Join(r.Root, "orch-private-before")
	if out, err := exec.Command("cp", "-a", priv, saved).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v: %s", err, out)
	}
	r.MustOrch(r.Main, "list") // commits hand.md with an id
	tip := r.RevParse("refs/heads/orch")
	// Undo what the killed process would not have done: the view write and
	// the sync index.
	if err := os.WriteFile(hand, content, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(priv); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", saved, priv).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v: %s", err, out)
	}

	res := r.MustOrch(r.Main, "list")
	if strings.Contains(res.Stderr, "warning") {
		t.Errorf("orch list after the kill: %s", res.Stderr)
	}
	if res := r.Orch(r.Main, "check"); !res.OK() {
		t.Errorf("orch check after the kill: %v\n%s", res, res.Stdout)
	}
	if got := r.RevParse("refs/heads/orch"); got != tip {
		t.Errorf("the state branch moved from %s to %s: the task was committed twice?", tip, got)
	}
	r.checkViewIsBranch(t)
	if n := len(r.List()); n != 1 {
		t.Errorf("orch list shows %d tasks, want 1", n)
	}
	r.Fsck()
}
