// Package land moves approved work onto the base branch through a checked
// merge: git's own merge machinery (the git CLI, so that the repository's
// merge drivers, attributes and hooks apply) in a scratch worktree of the
// clone, the project's check on the merged result, and a compare-and-swap
// of the base ref from the tip the merge started at. A combination that
// was not checked never lands: when the base moved meanwhile, the step
// starts again from the new tip. It never touches a person's checkout but
// as git merge --ff-only would (a clean worktree that has the base checked
// out is advanced; one with changes makes the landing wait).
//
// It knows nothing of tasks' queues: workflow records what it did (the
// landed commit, or the failure that sends the work back).
package land

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/orch-tool/orch/internal/text"
	"github.com/orch-tool/orch/internal/trace"
)

// Candidate is one approved task's work, in landing order.
type Candidate struct {
	Task   string
	Title  string
	Branch string
	Tip    string // the branch's commit to land (full hash)
}

// Options say where and how to land.
type Options struct {
	// CommonDir is the repository's git dir (its common dir).
	CommonDir string
	// CheckedOut lists the worktrees that have ref checked out now
	// (gitrepo's CheckedOutIn, from git's own files).
	CheckedOut func(ref string) []string
	Base       string // the base branch ("main")
	Strategy   string // merge, squash or rebase
	// Check runs by sh -c in the scratch worktree on the merged result;
	// "" lands without one.
	Check        string
	CheckTimeout time.Duration
	// Scratch is the clone's scratch worktree, guarded by the landing
	// lock (Lock) at <Scratch>.lock.
	Scratch string
	// Name and Email make the landing commits (the lead's).
	Name, Email string
	// Remote, when set, is where the base branch is pushed: the push is
	// the commit point, leased on the remote tip the merge started at.
	Remote string
	// Env is the check's environment (orch's own).
	Env []string
	// Attempts bounds the restarts after the base moved under a step.
	Attempts int
}

// Outcome is what became of one candidate.
type Outcome struct {
	Task    string
	Landed  bool
	Commit  string // the base's commit that holds the work (landed)
	Already bool   // it had landed before (a landing whose record was lost)
	Check   string // "passed", "none"
	Failure *Failure
}

// Failure says why a candidate did not land: the work goes back.
type Failure struct {
	Kind    string   // "conflict" or "check"; "pr_conflict" with land.mode: github (GitHub says the pull request conflicts)
	Base    string   // the base commit the work met
	Files   []string // conflict: the conflicting files
	Hunks   string   // conflict: their conflicting hunks (clipped)
	Command string   // check: the command
	Exit    int      // check: its exit status (-1: killed by check_timeout)
	Output  string   // check: the tail of its output; pr_conflict: what GitHub said
	PR      int      // pr_conflict: the pull request
}

// ErrMoved says the base kept moving under every try.
var ErrMoved = errors.New("the base branch moved under every landing attempt")

// The trailers of a landing commit: the task and the branch tip it landed,
// so that a landing whose record was lost (a crash between the ref and the
// state) is found, never landed twice.
const (
	TrailerTask = "Orch-Landed-Task"
	TrailerTip  = "Orch-Landed-Tip"
)

// Land lands the candidates on the base, in order, as one step: each is
// merged onto the base's tip (one after another, each keeping its own
// commit), the check runs once on the result, and the base moves to it by
// compare-and-swap. A candidate that conflicts goes back alone; a red check
// over several is bisected, so that the culprit goes back and the rest
// land. It returns each candidate's outcome, in order. The caller holds
// the landing lock (Lock).
func Land(o Options, cands []Candidate) ([]Outcome, error) {
	if o.Attempts <= 0 {
		o.Attempts = 20
	}
	wt, err := o.scratch()
	if err != nil {
		return nil, err
	}
	l := &lander{o: o, wt: wt}
	out := make([]Outcome, len(cands))
	for i, c := range cands {
		out[i].Task = c.Task
	}
	return out, l.land(cands, out)
}

type lander struct {
	o  Options
	wt string
	// head is the scratch worktree's HEAD: the tip it was reset to, then
	// each merge onto it.
	head string
	// loose says the worktree's tracked files may still hold what the
	// last check changed (reset kept a worktree at the tip): only
	// mergeTree's forced checkout may follow, or force.
	loose bool
}

// land lands cands (writing their outcomes) from the base's tip now.
func (l *lander) land(cands []Candidate, out []Outcome) error {
	for attempt := 0; ; attempt++ {
		if attempt >= l.o.Attempts {
			return ErrMoved
		}
		tip, history, err := l.baseTip()
		if err != nil {
			return err
		}
		// Landed already: a record lost after the base moved.
		left := make([]int, 0, len(cands))
		for i, c := range cands {
			if commit := landedIn(history, c); commit != "" {
				out[i] = Outcome{Task: c.Task, Landed: true, Already: true, Commit: commit, Check: "passed"}
				continue
			}
			left = append(left, i)
		}
		if len(left) == 0 {
			return nil
		}
		moved, err := l.step(tip, cands, left, out)
		if err != nil || !moved {
			return err
		}
	}
}

// step tries the candidates left (indices of cands) on tip: merges, check,
// swap. moved says the base moved under it (try again from the new tip).
func (l *lander) step(tip string, cands []Candidate, left []int, out []Outcome) (moved bool, err error) {
	if err := l.reset(tip); err != nil {
		return false, err
	}
	var merged []int
	commits := map[int]string{}
	for _, i := range left {
		c := cands[i]
		commit, fail, err := l.merge(tip, c)
		if err != nil {
			return false, err
		}
		if fail != nil {
			out[i] = Outcome{Task: c.Task, Failure: fail}
			continue
		}
		merged = append(merged, i)
		commits[i] = commit
	}
	if len(merged) == 0 {
		return false, nil
	}
	head := commits[merged[len(merged)-1]]
	check := "none"
	if l.o.Check != "" {
		fail, err := l.check(tip)
		if err != nil {
			return false, err
		}
		if fail != nil {
			if len(merged) == 1 {
				out[merged[0]] = Outcome{Task: cands[merged[0]].Task, Failure: fail}
				return false, nil
			}
			// Bisect: the first half on its own, then the rest on
			// whatever the base is then.
			half := len(merged) / 2
			first := make([]Candidate, half)
			for k, i := range merged[:half] {
				first[k] = cands[i]
			}
			fo := make([]Outcome, half)
			if err := l.land(first, fo); err != nil {
				return false, err
			}
			for k, i := range merged[:half] {
				out[i] = fo[k]
			}
			rest := make([]Candidate, len(merged)-half)
			for k, i := range merged[half:] {
				rest[k] = cands[i]
			}
			ro := make([]Outcome, len(rest))
			if err := l.land(rest, ro); err != nil {
				return false, err
			}
			for k, i := range merged[half:] {
				out[i] = ro[k]
			}
			return false, nil
		}
		check = "passed"
	}
	ok, err := l.advance(tip, head)
	if err != nil || !ok {
		return !ok && err == nil, err
	}
	for _, i := range merged {
		out[i] = Outcome{Task: cands[i].Task, Landed: true, Commit: commits[i], Check: check}
	}
	return false, nil
}

// baseTip is the commit the step starts from: the remote's base (fetched
// now) when the push is the commit point, else the local base; with its
// first-parent history since the branches' tips were approved, for
// landedIn (one git log says both).
func (l *lander) baseTip() (tip, history string, err error) {
	ref := "refs/heads/" + l.o.Base
	if l.o.Remote != "" {
		ref = "refs/remotes/" + l.o.Remote + "/" + l.o.Base
		if _, err := l.git("", "fetch", "--quiet", "--no-tags", l.o.Remote, "+refs/heads/"+l.o.Base+":"+ref); err != nil {
			return "", "", fmt.Errorf("cannot fetch %s from %s: %w", l.o.Base, l.o.Remote, err)
		}
	}
	out, err := l.git("", "log", "--first-parent", "-n", "500", "--format=%H%x00%B%x01", ref+"^{commit}", "--")
	tip, _, _ = strings.Cut(out, "\x00")
	if err != nil || len(tip) < 40 {
		return "", "", fmt.Errorf("the base branch %s does not exist (%s)", l.o.Base, ref)
	}
	return tip, out, nil
}

func (l *lander) rev(ref string) (string, error) {
	out, err := l.git("", "rev-parse", "--verify", "--quiet", ref+"^{commit}")
	if err != nil {
		return "", fmt.Errorf("the base branch %s does not exist (%s)", l.o.Base, ref)
	}
	return strings.TrimSpace(out), nil
}

// landedIn finds, in the base's first-parent history (baseTip's), the
// commit that landed c's tip already ("" if none).
func landedIn(history string, c Candidate) string {
	for _, entry := range strings.Split(history, "\x01") {
		h, msg, ok := strings.Cut(strings.TrimSpace(entry), "\x00")
		if ok && strings.Contains(msg, "\n"+TrailerTask+": "+c.Task+"\n") && strings.Contains(msg+"\n", "\n"+TrailerTip+": "+c.Tip+"\n") {
			return h
		}
	}
	return ""
}

// message is a landing commit's message: it names the task.
func message(c Candidate, extra string) string {
	m := fmt.Sprintf("Land %s: %s\n\n", c.Task, text.Clip(text.OneLine(c.Title), 200))
	if extra != "" {
		m += extra + "\n\n"
	}
	return m + TrailerTask + ": " + c.Task + "\n" + TrailerTip + ": " + c.Tip + "\n"
}

// merge merges c onto the scratch worktree's HEAD with the strategy, and
// returns the new HEAD, or the conflict that stopped it.
func (l *lander) merge(base string, c Candidate) (string, *Failure, error) {
	head := l.head
	var stderr string
	var err error
	switch l.o.Strategy {
	case "squash":
		stderr, err = l.git(l.wt, "merge", "--squash", "--no-verify", c.Tip)
		if err == nil {
			stderr, err = l.git(l.wt, "commit", "--quiet", "--allow-empty", "--no-verify", "-m", message(c, "Squashed from "+c.Branch+"."))
		}
	case "rebase":
		// The branch's commits replayed on HEAD, the last one naming the
		// task; the base then fast-forwards to it.
		stderr, err = l.git(l.wt, "rebase", "--quiet", "--no-autostash", head, c.Tip)
		if err == nil {
			var msg string
			if msg, err = l.git(l.wt, "log", "-1", "--format=%B"); err == nil {
				stderr, err = l.git(l.wt, "commit", "--quiet", "--amend", "--no-verify", "-m", strings.TrimRight(msg, "\n")+"\n\n"+TrailerTask+": "+c.Task+"\n"+TrailerTip+": "+c.Tip+"\n")
			}
		}
	default:
		if commit, ok, err := l.mergeTree(head, c); err != nil || ok {
			l.head = commit
			return commit, nil, err
		}
		// It conflicts: git merge says where, in the worktree, which must
		// be exactly at head for it.
		if l.loose {
			if err := l.force(head); err != nil {
				return "", nil, err
			}
		}
		stderr, err = l.git(l.wt, "merge", "--quiet", "--no-ff", "--no-verify", "-m", message(c, "Merged "+c.Branch+"."), c.Tip)
	}
	if err == nil {
		out, err := l.git(l.wt, "rev-parse", "HEAD")
		l.head = strings.TrimSpace(out)
		return l.head, nil, err
	}
	files, _ := l.git(l.wt, "diff", "--name-only", "--diff-filter=U")
	if strings.TrimSpace(files) == "" && !strings.Contains(stderr, "CONFLICT") {
		_ = l.undo(head)
		return "", nil, fmt.Errorf("git could not merge %s: %v: %s", c.Branch, err, text.Clip(strings.TrimSpace(stderr), 400))
	}
	hunks, _ := l.git(l.wt, "diff")
	f := &Failure{Kind: "conflict", Base: base, Files: strings.Fields(files), Hunks: clipLines(hunks, 120, 16<<10)}
	if len(f.Files) == 0 {
		f.Hunks = clipLines(stderr, 40, 8<<10)
	}
	return "", f, l.undo(head)
}

// mergeTree merges c onto head as git merge --no-ff would, with git's own
// merge machinery (merge-ort, run in the scratch worktree, whose
// .gitattributes are the base's, so that the repository's merge drivers
// apply) but without git merge's bookkeeping around the worktree (it saves
// a stash of the whole worktree first); the worktree then moves to the
// result. ok is false when it conflicts: nothing moved.
func (l *lander) mergeTree(head string, c Candidate) (commit string, ok bool, err error) {
	out, err := l.git(l.wt, "merge-tree", "--write-tree", "--no-messages", head, c.Tip)
	if err != nil {
		var ge *GitError
		if errors.As(err, &ge) && exitCode(ge.Err) == 1 {
			return "", false, nil
		}
		return "", false, err
	}
	tree := strings.TrimSpace(out)
	out, err = l.git(l.wt, "commit-tree", tree, "-p", head, "-p", c.Tip, "-m", message(c, "Merged "+c.Branch+"."))
	if err != nil {
		return "", false, err
	}
	commit = strings.TrimSpace(out)
	if _, err := l.git(l.wt, "checkout", "--quiet", "--detach", "--force", commit); err != nil {
		return "", false, err
	}
	l.loose = false
	return commit, true, nil
}

// inTheWay lists the untracked files of worktree wt that the move from tip
// to head would overwrite: those at the paths it adds. (git read-tree -n
// says the same by reading the whole index; this reads only what the
// landing adds.)
func (l *lander) inTheWay(wt, tip, head string) ([]string, error) {
	out, err := l.git("", "diff", "--name-only", "--no-renames", "-z", "--diff-filter=A", tip, head)
	if err != nil {
		return nil, err
	}
	var in []string
	for _, p := range strings.Split(out, "\x00") {
		if p == "" {
			continue
		}
		// Anything there, or a file where the path needs a directory
		// (ENOTDIR), is in the way.
		if _, err := os.Lstat(filepath.Join(wt, filepath.FromSlash(p))); !errors.Is(err, fs.ErrNotExist) {
			in = append(in, "?? "+p)
		}
	}
	return in, nil
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// undo leaves the scratch worktree at head again after a failed merge.
func (l *lander) undo(head string) error {
	_, _ = l.git(l.wt, "merge", "--abort")
	_, _ = l.git(l.wt, "rebase", "--abort")
	if _, err := l.git(l.wt, "checkout", "--quiet", "--detach", "--force", head); err != nil {
		return err
	}
	_, err := l.git(l.wt, "reset", "--quiet", "--hard", head)
	return err
}

// check runs the project's check on the scratch worktree: nil when green.
func (l *lander) check(base string) (*Failure, error) {
	timeout := l.o.CheckTimeout
	if timeout <= 0 {
		timeout = 20 * time.Minute
	}
	code, output, err := RunCheck(l.wt, l.o.Check, l.o.Env, timeout)
	trace.Phase("land: check")
	if err != nil {
		return nil, err
	}
	if code == 0 {
		return nil, nil
	}
	return &Failure{Kind: "check", Base: base, Command: l.o.Check, Exit: code, Output: output}, nil
}

// Supervisor, when set, is the command that runs a check in its place:
// orch sets it to its own supervisor (orch __supervise, as orch run's
// agents have), so that the check's processes end with orch, kill -9
// included. Unset (this package's tests), the check is a process group of
// its own, ended at its timeout and when it exits.
var Supervisor []string

// checkGrace is how long a supervised check has between SIGTERM and
// SIGKILL once its time is up or orch is gone.
const checkGrace = time.Second

// RunCheck runs cmd by sh -c in dir, in a process group of its own ended
// at timeout (under Supervisor when set), and returns its exit status (-1
// when killed at timeout) and the tail of its output. err is for a check
// that could not start.
func RunCheck(dir, cmd string, env []string, timeout time.Duration) (int, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	supervised := len(Supervisor) > 0
	c := exec.Command("/bin/sh", "-c", cmd)
	if supervised {
		args := append(append([]string{}, Supervisor[1:]...), strconv.Itoa(os.Getpid()), checkGrace.String(), cmd)
		c = exec.Command(Supervisor[0], args...)
	} else {
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	}
	c.Dir = dir
	c.Env = env
	var buf bytes.Buffer
	c.Stdout, c.Stderr = &buf, &buf
	if err := c.Start(); err != nil {
		return 0, "", fmt.Errorf("cannot start the check %q: %w", cmd, err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	var werr error
	killed := false
	select {
	case werr = <-done:
	case <-ctx.Done():
		killed = true
		if supervised {
			_ = c.Process.Signal(syscall.SIGTERM) // it ends the check's group
		} else {
			_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		}
		werr = <-done
	}
	if !supervised {
		_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL) // what it left behind
	}
	code := 0
	var ee *exec.ExitError
	switch {
	case killed:
		code = -1
	case errors.As(werr, &ee):
		code = ee.ExitCode()
		if code < 0 {
			code = 128
		}
	case werr != nil:
		return 0, "", werr
	}
	return code, clipLines(text.Visible(buf.String()), 40, 8<<10), nil
}

// advance moves the base from tip to head by compare-and-swap; ok is false
// when the base moved meanwhile. With a remote the leased push is the
// commit point; the local base then follows when it can. A worktree that
// has the base checked out is advanced as git merge --ff-only would, or
// the landing waits when it has changes.
func (l *lander) advance(tip, head string) (bool, error) {
	wts := l.baseWorktrees()
	for _, w := range wts {
		if changes := l.changes(w); len(changes) > 0 && !l.resume(w) {
			return false, &WaitError{Base: l.o.Base, Worktree: w, Changes: changes}
		}
	}
	if l.o.Remote != "" {
		ref := "refs/heads/" + l.o.Base
		stderr, err := l.git("", "push", "--quiet", "--force-with-lease="+ref+":"+tip, l.o.Remote, head+":"+ref)
		if err != nil {
			if lostRace(stderr) {
				return false, nil
			}
			return false, fmt.Errorf("cannot push %s to %s: %v: %s", l.o.Base, l.o.Remote, err, text.Clip(strings.TrimSpace(stderr), 300))
		}
		_, _ = l.git("", "update-ref", "refs/remotes/"+l.o.Remote+"/"+l.o.Base, head)
		local, err := l.rev("refs/heads/" + l.o.Base)
		if err != nil || local != tip && !l.isAncestor(local, head) {
			return true, nil // the local base has work of its own: left as it is
		}
		tip = local
	}
	for _, w := range wts {
		// An untracked file where the landing adds one stops it before
		// the ref moves (the worktree is clean otherwise: changes above).
		if in, err := l.inTheWay(w, tip, head); err != nil || len(in) > 0 {
			if err != nil {
				in = []string{err.Error()}
			}
			return false, &WaitError{Base: l.o.Base, Worktree: w, Changes: in}
		}
	}
	if _, err := l.git("", "update-ref", "-m", reflogMessage, "refs/heads/"+l.o.Base, head, tip); err != nil {
		return false, nil // moved under us: the compare-and-swap lost
	}
	for _, w := range wts {
		if out, err := l.follow(w, tip, head); err != nil {
			return true, fmt.Errorf("the base moved to %s, but %s could not follow (%s): run git status there", head[:12], w, text.Clip(strings.TrimSpace(out), 200))
		}
	}
	return true, nil
}

func lostRace(stderr string) bool {
	for _, s := range []string{"stale info", "non-fast-forward", "fetch first", "cannot lock ref", "failed to update ref", "but expected", "incorrect old value"} {
		if strings.Contains(stderr, s) {
			return true
		}
	}
	return false
}

func (l *lander) isAncestor(a, b string) bool {
	_, err := l.git("", "merge-base", "--is-ancestor", a, b)
	return err == nil
}
