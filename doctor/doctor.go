package doctor

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/orch-tool/orch/config"
	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/gitstore/gitrepo"
	"github.com/orch-tool/orch/internal/text"
	"github.com/orch-tool/orch/taskfile"
	"github.com/orch-tool/orch/workflow"
)

// The checks, in the order they are reported and repaired.
const (
	CheckStateBranch = "state_branch"
	CheckHistory     = "history"
	CheckObjects     = "objects"
	CheckStaleLock   = "stale_lock"
	CheckTempFiles   = "temp_files"
	CheckCache       = "cache"
	CheckView        = "view"
	CheckConflicts   = "conflicts"
	CheckCheckedOut  = "checked_out"
	CheckExclude     = "exclude"
	CheckPrivate     = "private_files"
	CheckClaims      = "claims"
)

// checkOrder lists every check, in report order.
var checkOrder = []string{CheckStateBranch, CheckHistory, CheckObjects, CheckStaleLock, CheckTempFiles, CheckCache, CheckView, CheckConflicts, CheckCheckedOut, CheckExclude, CheckPrivate, CheckClaims}

// Check statuses.
const (
	StatusOK      = "ok"
	StatusProblem = "problem"
	StatusFixed   = "fixed"
)

// Check is the outcome of one check.
type Check struct {
	Check  string   `json:"check"`
	Status string   `json:"status"` // ok | problem | fixed
	Detail string   `json:"detail"`
	Hint   string   `json:"hint"`
	Items  []string `json:"items,omitempty"` // one line per file or lock, when there are several
	// Fixable: orch doctor --fix repairs the problem.
	Fixable bool `json:"-"`
}

// Report is what orch doctor found (and fixed).
type Report struct {
	OK     bool    `json:"ok"`
	Checks []Check `json:"checks"`
	// Notes are what the reconcile run by a repair did (files restored,
	// hand edits committed), for the command to print on stderr.
	Notes []string `json:"-"`
}

// Problems counts the checks whose problem remains.
func (r *Report) Problems() int {
	n := 0
	for _, c := range r.Checks {
		if c.Status == StatusProblem {
			n++
		}
	}
	return n
}

// Fixable counts the problems orch doctor --fix repairs.
func (r *Report) Fixable() int {
	n := 0
	for _, c := range r.Checks {
		if c.Status == StatusProblem && c.Fixable {
			n++
		}
	}
	return n
}

// UnhealthyError: orch doctor found problems that remain (exit 1).
type UnhealthyError struct {
	Problems int
	Fixable  int  // how many of them orch doctor --fix repairs
	Fixed    bool // doctor ran with --fix
}

func (e *UnhealthyError) Error() string {
	if e.Fixed {
		return fmt.Sprintf("%d problem(s) remain that orch doctor --fix cannot repair", e.Problems)
	}
	return fmt.Sprintf("%d problem(s) found", e.Problems)
}

// Options configure Run.
type Options struct {
	Repo        *gitrepo.Repo
	Dir         string
	StateBranch string
	Actor       string
	Now         func() time.Time
	// Fix repairs what can be repaired; without it nothing changes.
	Fix bool
	// RestoreTip puts a state branch that moved backwards back at the tip
	// orch saw last; AcceptRewind keeps it where it is (docs/design.md §1.4: history
	// only moves forward unless a person says otherwise).
	RestoreTip, AcceptRewind bool
}

// Run checks the repository and, with opts.Fix, repairs it.
func Run(opts Options) (*Report, error) {
	if opts.Now == nil {
		opts.Now = func() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }
	}
	st, err := gitstore.Open(gitstore.Options{Repo: opts.Repo, Dir: opts.Dir, StateBranch: opts.StateBranch})
	if err != nil {
		return nil, err
	}
	base, _ := filepath.Abs(opts.Dir)
	before := diagnose(st, base)
	if opts.RestoreTip || opts.AcceptRewind {
		return rewind(opts, st, before)
	}
	if !opts.Fix || before.healthy() {
		return before.report(), nil
	}
	done, failed, notes := repair(opts, st, before)
	st, err = gitstore.Open(gitstore.Options{Repo: st.Repo, StateBranch: opts.StateBranch})
	if err != nil {
		return nil, err
	}
	after := diagnose(st, base)
	rep := &Report{Notes: notes}
	for i, c := range after.checks {
		was := before.checks[i]
		did := done[c.Check]
		switch {
		case c.Status == StatusProblem:
			if len(did) > 0 {
				c.Detail += " (after: " + strings.Join(did, "; ") + ")"
			}
		case was.Status == StatusProblem || len(did) > 0:
			c.Status, c.Hint, c.Items = StatusFixed, "", was.Items
			c.Detail = was.Detail
			if len(did) > 0 {
				c.Detail += " -> " + strings.Join(did, "; ")
			}
		}
		if f := failed[c.Check]; len(f) > 0 {
			c.Detail += " (failed: " + strings.Join(f, "; ") + ")"
		}
		rep.Checks = append(rep.Checks, c)
	}
	rep.OK = rep.Problems() == 0
	return rep, nil
}

// diagnosis is one read-only pass: the checks, and what a repair needs.
type diagnosis struct {
	st     *gitstore.Store
	base   string // where the command runs: paths are shown relative to it
	cu     *gitstore.Checkup
	checks []Check

	lockErr      error // the orch lock could not be taken to look
	staleLocks   []string
	staleNote    bool
	temps        []string
	remote       *gitrepo.RemoteStateRef // create the branch from it
	fetchFrom    []string                // remotes that may have the branch
	rebuildCache bool
	staleIndex   []string
	reconcile    bool // the normal open (lock, load, reconcile) repairs something
	exclude      bool
	backwards    *gitstore.ErrMovedBackwards
	notRegular   []string
}

func (d *diagnosis) healthy() bool {
	for _, c := range d.checks {
		if c.Status != StatusOK {
			return false
		}
	}
	return len(d.fetchFrom) == 0
}

func (d *diagnosis) report() *Report {
	rep := &Report{Checks: d.checks}
	rep.OK = rep.Problems() == 0
	return rep
}

func diagnose(st *gitstore.Store, base string) *diagnosis {
	d := &diagnosis{st: st, base: base}
	release, err := st.DoctorLock(false)
	if err != nil {
		d.lockErr = err
	} else {
		defer release()
	}
	d.cu = st.Checkup()
	d.checkStateBranch()
	d.checkHistory()
	d.checkObjects()
	d.checkLocks()
	d.checkTemps()
	d.checkCache()
	d.checkView()
	d.checkConflicts()
	d.checkCheckedOut()
	d.checkExclude()
	d.checkPrivate()
	d.checkClaims()
	return d
}

// checkPrivate names what in <common dir>/orch/ is not a regular file (a
// FIFO, a directory at lock): every command refuses to use it.
func (d *diagnosis) checkPrivate() {
	bad := d.st.NotRegularPrivateFiles()
	if len(bad) == 0 {
		d.add(CheckPrivate, StatusOK, "every file of "+d.show(d.st.PrivDir())+" is a regular file", "", nil)
		return
	}
	var items []string
	for _, b := range bad {
		items = append(items, d.show(b.Path)+" is "+b.Kind)
		d.notRegular = append(d.notRegular, b.Path)
	}
	d.add(CheckPrivate, StatusProblem, fmt.Sprintf("%d path(s) of orch's private state are not regular files: %s", len(items), strings.Join(clip(items, 3), ", ")),
		"run orch doctor --fix (removes them; orch makes the files again)", items)
}

// rewind restores the tip orch saw last, or accepts the branch where it is.
func rewind(opts Options, st *gitstore.Store, d *diagnosis) (*Report, error) {
	mb := d.backwards
	if mb == nil {
		return nil, &workflow.RuleError{Rule: "not_rewound", Msg: "the state branch has not moved backwards: there is nothing to restore or accept", Hint: "orch doctor shows every check"}
	}
	var note string
	switch {
	case opts.RestoreTip && mb.Diverged:
		return nil, &workflow.RuleError{Rule: "diverged", Msg: fmt.Sprintf("%s has commits of its own since %s: putting it back would drop them", d.branch(), shortHash(mb.Seen)),
			Hint: fmt.Sprintf("merge %s into %s with git, then orch doctor --accept-rewind", shortHash(mb.Seen), d.branch())}
	case opts.RestoreTip:
		if err := st.Repo.UpdateRef(gitrepo.RefUpdate{Name: st.Ref, Old: mb.Now, New: mb.Seen, Who: opts.Actor + " <" + opts.Actor + "@orch>", Message: "orch doctor --restore-tip"}); err != nil {
			return nil, err
		}
		note = fmt.Sprintf("restored %s to %s: %d transition(s) are back", d.branch(), shortHash(mb.Seen), len(mb.Dropped)+mb.More)
	default:
		st.AcceptRewind = true
		note = fmt.Sprintf("accepted %s at %s: %d transition(s) dropped from orch's memory (git reflog %s still has them)", d.branch(), shortHash(mb.Now), len(mb.Dropped)+mb.More, d.branch())
	}
	// The normal open over this store: lock, load (recording the tip orch
	// now sees) and reconcile the view with it.
	eng, err := workflow.Open(workflow.Options{Store: st, Actor: opts.Actor, Now: opts.Now})
	if err != nil {
		return nil, err
	}
	notes := append([]string{note}, eng.Notes()...)
	if err := eng.Close(); err != nil {
		return nil, err
	}
	st2, err := gitstore.Open(gitstore.Options{Repo: st.Repo, StateBranch: opts.StateBranch})
	if err != nil {
		return nil, err
	}
	rep := diagnose(st2, d.base).report()
	rep.Notes = notes
	return rep, nil
}

// fixHint starts the hint of every problem that orch doctor --fix repairs.
const fixHint = "run orch doctor --fix"

func (d *diagnosis) add(check, status, detail, hint string, items []string) {
	d.checks = append(d.checks, Check{Check: check, Status: status, Detail: detail, Hint: hint, Items: items,
		Fixable: status == StatusProblem && strings.HasPrefix(hint, fixHint)})
}

// show names a file the way the person running orch would type it:
// relative to where they are when that is below it, else in full.
func (d *diagnosis) show(abs string) string {
	if d.base != "" {
		if rel, err := filepath.Rel(d.base, abs); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return rel
		}
	}
	return abs
}

// showView names a view file (p is its path on the state branch).
func (d *diagnosis) showView(p string) string {
	return d.show(filepath.Join(d.st.View, filepath.FromSlash(p)))
}

func (d *diagnosis) branch() string { return strings.TrimPrefix(d.st.Ref, "refs/heads/") }

func viewName(p string) string { return filepath.ToSlash(filepath.Join(gitstore.ViewDirName, p)) }

func shortHash(h plumbing.Hash) string { return h.String()[:7] }

func summarizeItems(n int, what string, items []string) string {
	if len(items) == 1 {
		return items[0]
	}
	return fmt.Sprintf("%d %s: %s", n, what, strings.Join(clip(items, 3), "; "))
}

// oneLine puts a text that may span lines (an error, a conflicting value)
// on one line of the report.

func clip(l []string, n int) []string {
	if len(l) <= n {
		return l
	}
	return append(append([]string{}, l[:n]...), fmt.Sprintf("and %d more", len(l)-n))
}

func (d *diagnosis) checkStateBranch() {
	cu, repo, ref := d.cu, d.st.Repo, d.st.Ref
	switch {
	case cu.TipErr != nil:
		hint := "repair the ref with git (git fsck, git reflog); orch cannot work until it is readable"
		if h := repo.LastReflogCommit(ref); !h.IsZero() && repo.HasObject(h) {
			hint = fmt.Sprintf("its reflog last recorded %s; if that is the state you want: git update-ref %s %s", shortHash(h), ref, h)
		}
		d.add(CheckStateBranch, StatusProblem, fmt.Sprintf("%s cannot be read: %v", ref, cu.TipErr), hint, nil)
	case cu.Tip.IsZero():
		for _, r := range repo.RemoteStateRefs(ref) {
			if !repo.HasObject(r.Commit) {
				continue
			}
			r := r
			d.remote = &r
			d.reconcile = true
			d.add(CheckStateBranch, StatusProblem,
				fmt.Sprintf("no %s in this clone, but %s has it (%s)", ref, r.Ref, shortHash(r.Commit)),
				fmt.Sprintf("run orch doctor --fix (creates %s from %s), or orch sync %s", d.branch(), r.Ref, r.Remote), nil)
			return
		}
		if rems := repo.Remotes(); len(rems) > 0 {
			d.fetchFrom = rems
			d.add(CheckStateBranch, StatusOK,
				fmt.Sprintf("orch is not set up in this clone (no %s, and no remote-tracking copy)", ref),
				fmt.Sprintf("orch init sets it up; if %s has one, orch doctor --fix or orch sync %s fetches it", rems[0], rems[0]), nil)
			return
		}
		d.add(CheckStateBranch, StatusOK, fmt.Sprintf("orch is not set up in this repository (no %s)", ref), "orch init sets it up", nil)
	default:
		d.add(CheckStateBranch, StatusOK, fmt.Sprintf("%s at %s", ref, shortHash(cu.Tip)), "", nil)
	}
}

func (d *diagnosis) checkObjects() {
	cu := d.cu
	if cu.TipErr != nil || cu.Tip.IsZero() {
		d.add(CheckObjects, StatusOK, "nothing to check (no state branch)", "", nil)
		return
	}
	hint := "run git fsck; in a partial or shallow clone, fetch the state branch again (orch sync)"
	if cu.SnapErr != nil {
		d.add(CheckObjects, StatusProblem, fmt.Sprintf("the tip %s cannot be read: %v", shortHash(cu.Tip), cu.SnapErr), hint, nil)
		return
	}
	h := cu.Objects()
	if len(h.Missing) > 0 {
		d.add(CheckObjects, StatusProblem, fmt.Sprintf("%d file(s) of the tip lack their objects: %s", len(h.Missing), strings.Join(clip(h.Missing, 3), ", ")), hint, h.Missing)
		return
	}
	d.add(CheckObjects, StatusOK, fmt.Sprintf("tip commit %s, %d tree(s) and %d file(s) present", shortHash(cu.Tip), h.Trees, h.Files), "", nil)
}

func (d *diagnosis) checkLocks() {
	var items, hints []string
	fixable := false
	var lt *gitstore.ErrLockTimeout
	if errors.As(d.lockErr, &lt) {
		holder := "another orch process"
		if lt.Holder != "" {
			holder = "another orch process (" + lt.Holder + ")"
		}
		items = append(items, fmt.Sprintf("%s is held by %s for more than %s", d.show(lt.Path), holder, gitstore.DoctorLockWait()))
		hints = append(hints, "wait for that command to end; if it hangs, stop it (the kernel releases the lock)")
	} else if d.lockErr != nil {
		items = append(items, fmt.Sprintf("the orch lock cannot be taken: %v", d.lockErr))
	}
	var fresh []string
	for _, l := range d.st.RefLockFiles() {
		if l.Stale {
			items = append(items, fmt.Sprintf("%s is stale (%s)", d.show(l.Path), l.Why))
			d.staleLocks = append(d.staleLocks, l.Path)
			fixable = true
		} else {
			fresh = append(fresh, fmt.Sprintf("%s is %s", d.show(l.Path), l.Why))
		}
	}
	if p, pid, stale := d.st.StaleLockOwnerNote(); stale {
		items = append(items, fmt.Sprintf("%s names orch process %d, which is gone", d.show(p), pid))
		d.staleNote = true
		fixable = true
	}
	if fixable {
		hints = append([]string{"run orch doctor --fix (removes what a killed process left)"}, hints...)
	}
	if len(items) == 0 {
		if len(fresh) > 0 {
			d.add(CheckStaleLock, StatusOK, strings.Join(fresh, "; "), "if no git command is running, run orch doctor --fix again in "+gitrepo.StaleRefLockAge().String(), nil)
			return
		}
		d.add(CheckStaleLock, StatusOK, "no stale lock files", "", nil)
		return
	}
	items = append(items, fresh...)
	var list []string
	if len(items) > 1 {
		list = items
	}
	d.add(CheckStaleLock, StatusProblem, summarizeItems(len(items), "lock problems", items), strings.Join(hints, "; "), list)
}

func (d *diagnosis) checkTemps() {
	minAge := time.Duration(0)
	if d.lockErr != nil {
		minAge = gitstore.StaleTempAge
	}
	d.temps = d.st.TempFiles(minAge)
	if len(d.temps) == 0 {
		d.add(CheckTempFiles, StatusOK, "no temp files left behind", "", nil)
		return
	}
	items := make([]string, len(d.temps))
	for i, p := range d.temps {
		items[i] = d.show(p)
	}
	d.add(CheckTempFiles, StatusProblem, fmt.Sprintf("%d temp file(s) left by a killed process: %s", len(items), strings.Join(clip(items, 3), ", ")),
		"run orch doctor --fix (removes them)", items)
}

// checkHistory finds a state branch that no longer contains the tip orch
// saw last (docs/design.md §1.4). It is no repair of --fix's: a person chooses.
func (d *diagnosis) checkHistory() {
	cu := d.cu
	h := cu.Cache()
	if cu.TipErr != nil || cu.Tip.IsZero() || h.Tip.IsZero() || h.Tip == cu.Tip || d.st.Contains(cu.Tip, h.Tip) {
		d.add(CheckHistory, StatusOK, "the state branch contains every transition orch saw", "", nil)
		return
	}
	mb := d.st.MovedBackwards(d.st.Ref, h.Tip, cu.Tip)
	d.backwards = mb
	var items []string
	for _, c := range mb.Dropped {
		items = append(items, shortHash(c.Hash)+" "+c.Subject())
	}
	if mb.More > 0 {
		items = append(items, fmt.Sprintf("... and %d more", mb.More))
	}
	restore := fmt.Sprintf("orch doctor --restore-tip puts %s back at %s (the dropped transitions return)", d.branch(), shortHash(h.Tip))
	if mb.Diverged {
		restore = fmt.Sprintf("%s has commits of its own since, so it cannot simply go back: merge %s into it with git, then orch doctor --accept-rewind", d.branch(), shortHash(h.Tip))
	}
	d.add(CheckHistory, StatusProblem, fmt.Sprintf("moved backwards: %s is at %s, which does not contain %s, the tip orch saw last; %d transition(s) dropped",
		d.branch(), shortHash(cu.Tip), shortHash(h.Tip), len(mb.Dropped)+mb.More),
		"a person decides: "+restore+"; or orch doctor --accept-rewind keeps it where it is (orch forgets them). Every other command refuses to write until then", items)
}

func (d *diagnosis) checkCache() {
	cu := d.cu
	h := cu.Cache()
	name := d.show(h.Path)
	switch {
	case d.backwards != nil:
		d.add(CheckCache, StatusOK, fmt.Sprintf("%s describes %s (see history)", name, shortHash(h.Tip)), "", nil)
	case len(h.Corrupt) > 0:
		d.rebuildCache, d.reconcile = true, true
		d.add(CheckCache, StatusProblem, fmt.Sprintf("%s cannot be trusted: %s", name, strings.Join(h.Corrupt, "; ")),
			"run orch doctor --fix (rebuilds it from the branch, keeping the view's sync index when it can be read)", nil)
	case cu.TipErr != nil:
		d.add(CheckCache, StatusOK, "not checked: the state branch cannot be read", "", nil)
	case !h.Exists && cu.Tip.IsZero():
		d.add(CheckCache, StatusOK, "no cache (nothing to cache yet)", "", nil)
	case !h.Exists:
		d.reconcile = true
		d.add(CheckCache, StatusProblem, fmt.Sprintf("%s is missing", name), "run orch doctor --fix, or any orch command (it rebuilds it from the branch)", nil)
	case h.Stale:
		d.reconcile = true
		at := "no commit"
		if !h.Tip.IsZero() {
			at = shortHash(h.Tip)
		}
		now := "gone"
		if !cu.Tip.IsZero() {
			now = "at " + shortHash(cu.Tip)
		}
		d.add(CheckCache, StatusProblem, fmt.Sprintf("%s describes %s, but the branch is %s (moved outside orch)", name, at, now),
			"run orch doctor --fix, or any orch command (it catches up)", nil)
	case cu.SnapErr != nil:
		d.add(CheckCache, StatusOK, fmt.Sprintf("%s describes the branch tip %s (its trees not verified: the tip cannot be read)", name, shortHash(cu.Tip)), "", nil)
	default:
		d.add(CheckCache, StatusOK, fmt.Sprintf("%s matches the branch tip %s (%d task(s))", name, shortHash(cu.Tip), h.Tasks), "", nil)
	}
}

// noView explains why a check has no view to look at ("" when there is one).
func (d *diagnosis) noView() string {
	st := d.st
	switch {
	case st.View != "" && (d.cu.TipErr != nil || d.cu.Tip.IsZero()):
		return "nothing to check (no state branch)"
	case st.View != "":
		return ""
	case st.Repo.Bare || st.Repo.MainWorkTree == "":
		return "nothing to check (a bare repository has no view)"
	case st.ViewOwner != "":
		return fmt.Sprintf("nothing to check (the view belongs to %s; %s has none: orch edit makes hand edits)", st.ViewOwner, st.Ref)
	}
	return "nothing to check (no view)"
}

var driftText = map[string]string{
	gitstore.DriftMissing:    "missing from the view (the reconcile restores it from the branch)",
	gitstore.DriftBehind:     "older than the branch (the reconcile updates it)",
	gitstore.DriftEdited:     "edited by hand, not committed yet (the reconcile commits it, merging if the branch changed too)",
	gitstore.DriftExtra:      "made by hand, not on the branch yet (the reconcile commits it)",
	gitstore.DriftRemoved:    "removed on the branch, still in the view (the reconcile removes it)",
	gitstore.DriftStaleIndex: "differs from the branch, but the sync index says it is unchanged, so no command would notice (--fix has the reconcile read it)",
}

func (d *diagnosis) checkView() {
	if d.backwards != nil {
		d.add(CheckView, StatusOK, "not checked: the state branch moved backwards (see history)", "", nil)
		return
	}
	if err := d.st.ViewErr; err != nil {
		d.add(CheckView, StatusProblem, err.Error(), "move it away as the message says; --fix does not touch it (it may be yours)", nil)
		return
	}
	if why := d.noView(); why != "" {
		d.add(CheckView, StatusOK, why, "", nil)
		return
	}
	if d.cu.SnapErr != nil {
		d.add(CheckView, StatusOK, "not checked: the tip cannot be read (see objects)", "", nil)
		return
	}
	drift := d.cu.ViewDrift()
	if len(drift) == 0 {
		d.add(CheckView, StatusOK, "the view is in step with the branch", "", nil)
		return
	}
	var items []string
	broken := 0
	for _, v := range drift {
		what := driftText[v.Kind]
		if v.Kind == gitstore.DriftUnreadable {
			what = fmt.Sprintf("cannot be read: %v", v.Err)
			broken++
		}
		if v.Kind == gitstore.DriftStaleIndex {
			d.staleIndex = append(d.staleIndex, v.Path)
		}
		if v.Data != nil {
			if err := checkViewFile(v.Path, v.Data); err != nil {
				what += "; but it does not parse, so it stays uncommitted until fixed: " + text.OneLine(err.Error())
				broken++
			}
		}
		items = append(items, d.showView(v.Path)+": "+what)
	}
	d.reconcile = true
	hint := "run orch doctor --fix: it runs the reconcile every orch command runs (restores, updates and removes view files, commits hand edits)"
	if broken > 0 {
		hint += fmt.Sprintf("; %d file(s) cannot be committed until fixed (orch check shows where)", broken)
	}
	if broken == len(items) {
		// Only files that do not parse: --fix has nothing to do (it never
		// guesses what a person meant), so the hint says what does.
		what := "a file that does not parse: fix it"
		if broken > 1 {
			what = fmt.Sprintf("%d files that do not parse: fix them", broken)
		}
		hint = "orch doctor --fix cannot repair " + what + " at the line shown (orch check shows where), then run orch doctor again"
	}
	var list []string
	if len(items) > 1 {
		list = items
	}
	d.add(CheckView, StatusProblem, summarizeItems(len(items), "view files out of step with the branch", items), hint, list)
}

// checkViewFile validates a hand-edited or hand-made view file the way the
// reconcile will before committing it.
func checkViewFile(p string, data []byte) error {
	name := viewName(p)
	if strings.HasPrefix(p, gitstore.TasksDir+"/") && strings.HasSuffix(p, ".md") {
		f, err := taskfile.Parse(name, data)
		if err != nil {
			return err
		}
		if f.Task.ID == "" {
			return nil // made by hand: orch completes it
		}
		if errs := f.Validate(); len(errs) > 0 {
			return errs[0]
		}
		return nil
	}
	return workflow.CheckFile(name, data)
}

func (d *diagnosis) checkConflicts() {
	if why := d.noView(); why != "" {
		d.add(CheckConflicts, StatusOK, why, "", nil)
		return
	}
	if d.cu.SnapErr != nil {
		d.add(CheckConflicts, StatusOK, "not checked: the tip cannot be read (see objects)", "", nil)
		return
	}
	cfs := d.cu.Conflicts()
	if len(cfs) == 0 {
		d.add(CheckConflicts, StatusOK, "no file in conflict", "", nil)
		return
	}
	var items []string
	open := 0
	example := ""
	for _, cf := range cfs {
		name := d.showView(cf.Path)
		if cf.Changed {
			d.reconcile = true
			items = append(items, name+": changed since the conflict was found (your resolution): the reconcile commits it")
			continue
		}
		open++
		resolve := fmt.Sprintf("git show %s:%s > %s", d.branch(), cf.Path, name)
		if cf.BranchGone {
			resolve = "rm " + name
		}
		if example == "" {
			example = resolve
		}
		items = append(items, fmt.Sprintf("%s: %s; to take the branch's version: %s", name, describeConflicts(cf), resolve))
	}
	hint := fmt.Sprintf("doctor does not pick a side: edit the file to the version you want and run any orch command (orch check), or take the branch's version (%s)", example)
	if open == 0 {
		hint = "run orch doctor --fix, or any orch command (the reconcile commits the resolution)"
	}
	var list []string
	if len(items) > 1 {
		list = items
	}
	d.add(CheckConflicts, StatusProblem, summarizeItems(len(items), "files in conflict", items), hint, list)
}

func describeConflicts(cf gitstore.ConflictedFile) string {
	if cf.BranchGone {
		return "edited in the view, removed from the state branch"
	}
	var parts []string
	for _, c := range cf.Conflicts {
		if c.Key == "" {
			parts = append(parts, "the body")
		} else {
			parts = append(parts, fmt.Sprintf("%s (yours: %s, branch: %s)", c.Key, text.OneLine(c.Ours), text.OneLine(c.Theirs)))
		}
	}
	if len(parts) == 0 {
		return "both changed it"
	}
	return "both changed " + strings.Join(parts, ", ")
}

func (d *diagnosis) checkCheckedOut() {
	wts := d.st.Repo.CheckedOutIn(d.st.Ref)
	if len(wts) == 0 {
		d.add(CheckCheckedOut, StatusOK, fmt.Sprintf("%s is not checked out in any worktree", d.st.Ref), "", nil)
		return
	}
	var fixes []string
	for _, wt := range wts {
		fixes = append(fixes, fmt.Sprintf("git -C %q switch --detach", wt))
	}
	d.add(CheckCheckedOut, StatusProblem,
		fmt.Sprintf("%s is checked out in %s: orch refuses to write to it", d.st.Ref, strings.Join(wts, ", ")),
		"move those worktrees off the branch ("+strings.Join(fixes, "; ")+", or git worktree remove them)", nil)
}

// checkClaims says how claims across machines are decided on each remote
// this clone shares the state branch with (from the last fetch: doctor does
// not reach the network), and how to move to claim refs as the arbiter.
func (d *diagnosis) checkClaims() {
	var lines []string
	arbiter := config.ArbiterStateBranch
	if data, err := d.st.ReadAtTip(gitstore.ConfigFile); err == nil {
		if cfg, err := config.Parse(gitstore.ConfigFile, data); err == nil {
			arbiter = cfg.ClaimArbiter
		}
	}
	hint := ""
	for _, rs := range d.st.Repo.RemoteStateRefs(d.st.Ref) {
		claims, err := d.st.Repo.FetchedClaims(rs.Remote)
		if err != nil {
			continue
		}
		layout := "one ref (the state branch alone; no claim refs seen)"
		if len(claims) > 0 {
			layout = fmt.Sprintf("claim refs (%d under refs/orch/claims/ at the last fetch)", len(claims))
		}
		lines = append(lines, rs.Remote+": "+layout)
		if arbiter == config.ArbiterStateBranch {
			hint = "claims are answered once the state branch holds them; once every clone runs an orch that knows claim refs, orch doctor --migrate-claims (a human's step) and orch sync: claims then stop waiting for each other"
		}
	}
	if len(lines) == 0 {
		d.add(CheckClaims, StatusOK, "no remote shares the state branch: claims are decided here", "", nil)
		return
	}
	d.add(CheckClaims, StatusOK, "claim_arbiter "+arbiter+"; "+strings.Join(lines, "; "), hint, nil)
}

func (d *diagnosis) checkExclude() {
	if why := d.noView(); why != "" {
		d.add(CheckExclude, StatusOK, why, "", nil)
		return
	}
	p := filepath.Join(d.st.Repo.CommonDir, "info", "exclude")
	if excludesView(p) {
		d.add(CheckExclude, StatusOK, fmt.Sprintf("%s lists /%s/", d.show(p), gitstore.ViewDirName), "", nil)
		return
	}
	d.exclude = true
	d.add(CheckExclude, StatusProblem, fmt.Sprintf("%s lacks /%s/: the view shows in git status", d.show(p), gitstore.ViewDirName),
		"run orch doctor --fix (adds it, as orch init does)", nil)
}

func excludesView(path string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	entry := "/" + gitstore.ViewDirName
	for _, line := range strings.Split(string(b), "\n") {
		if l := strings.TrimSpace(line); l == entry+"/" || l == entry {
			return true
		}
	}
	return false
}

// repair fixes what the diagnosis found, in order: under the exclusive orch
// lock what only doctor can fix (stale locks and temp files, a missing
// branch, an untrustworthy cache, sync-index entries that lie), then the
// normal open (lock, load, reconcile) for the rest. It returns what it did,
// by check, and the reconcile's notes.
func repair(opts Options, st *gitstore.Store, d *diagnosis) (done, failed map[string][]string, notes []string) {
	done, failed = map[string][]string{}, map[string][]string{}
	did := func(check, format string, a ...any) { done[check] = append(done[check], fmt.Sprintf(format, a...)) }
	fail := func(check, format string, a ...any) { failed[check] = append(failed[check], fmt.Sprintf(format, a...)) }
	// What is not a regular file goes first: a FIFO or a directory at the
	// lock would stop the rest.
	for _, p := range d.notRegular {
		if err := os.Remove(p); err != nil {
			fail(CheckPrivate, "cannot remove %s: %v", d.show(p), err)
		} else {
			did(CheckPrivate, "removed %s", d.show(p))
		}
	}
	release, err := st.DoctorLock(true)
	if err != nil {
		fail(CheckStaleLock, "nothing repaired: %v", err)
		return done, failed, nil
	}
	for _, p := range d.staleLocks {
		if ok, err := st.RemoveStaleRefLock(p); err != nil {
			fail(CheckStaleLock, "cannot remove %s: %v", d.show(p), err)
		} else if ok {
			did(CheckStaleLock, "removed %s", d.show(p))
		}
	}
	if d.staleNote {
		if err := st.RemoveStaleLockOwnerNote(); err != nil {
			fail(CheckStaleLock, "%v", err)
		} else {
			did(CheckStaleLock, "removed the stale ref-lock-owner note")
		}
	}
	if len(d.temps) > 0 {
		n := 0
		for _, p := range st.TempFiles(0) {
			if err := st.RemoveTempFile(p); err != nil {
				fail(CheckTempFiles, "%v", err)
			} else {
				n++
			}
		}
		did(CheckTempFiles, "removed %d file(s)", n)
	}
	created := false
	who := workflow.ActorSignature(st.Repo, opts.Actor, opts.Now()).String()
	switch {
	case d.remote != nil:
		err := st.Repo.UpdateRef(gitrepo.RefUpdate{Name: st.Ref, New: d.remote.Commit, Who: who, Message: "orch doctor: create from " + d.remote.Ref})
		if err != nil {
			fail(CheckStateBranch, "cannot create %s: %v", st.Ref, err)
		} else {
			created = true
			did(CheckStateBranch, "created %s at %s from %s", st.Ref, shortHash(d.remote.Commit), d.remote.Ref)
		}
	case len(d.fetchFrom) > 0:
		for _, rem := range d.fetchFrom {
			h, err := st.Repo.Fetch(rem, st.Ref)
			if err != nil || h.IsZero() {
				continue
			}
			err = st.Repo.UpdateRef(gitrepo.RefUpdate{Name: st.Ref, New: h, Who: who, Message: "orch doctor: create from " + gitrepo.TrackingRef(rem, st.Ref)})
			if err != nil {
				fail(CheckStateBranch, "cannot create %s: %v", st.Ref, err)
			} else {
				created = true
				did(CheckStateBranch, "fetched it from %s and created %s at %s", rem, st.Ref, shortHash(h))
			}
			break
		}
	}
	if d.rebuildCache {
		if kept, err := st.RebuildCache(); err != nil {
			fail(CheckCache, "cannot rebuild it: %v", err)
		} else if kept {
			did(CheckCache, "rebuilt it from the branch (the view's sync index kept)")
		} else {
			did(CheckCache, "rebuilt it from the branch (the sync index could not be read: view files were compared with the branch again)")
		}
	}
	if len(d.staleIndex) > 0 {
		if err := st.DistrustViewStat(d.staleIndex); err != nil {
			fail(CheckView, "cannot update the sync index: %v", err)
		}
	}
	release()
	if (d.exclude || created) && st.View != "" {
		if added, err := workflow.EnsureExclude(st.Repo.CommonDir); err != nil {
			fail(CheckExclude, "cannot add /%s/: %v", gitstore.ViewDirName, err)
		} else if added {
			did(CheckExclude, "added /%s/", gitstore.ViewDirName)
		}
	}
	if !d.reconcile && !created {
		return done, failed, nil
	}
	// The normal open: lock, load (the cache catches up or is rebuilt),
	// reconcile the view; close saves the cache.
	eng, err := workflow.Open(workflow.Options{Repo: st.Repo, StateBranch: opts.StateBranch, Actor: opts.Actor, Now: opts.Now})
	if err != nil {
		fail(CheckView, "the reconcile failed: %v", err)
		return done, failed, nil
	}
	if r := eng.Reconciled; r != nil {
		var parts []string
		for _, x := range []struct {
			n    int
			what string
		}{{len(r.Restored), "restored"}, {len(r.Pulled), "updated from the branch"}, {len(r.Removed), "removed"}, {len(r.Committed), "committed"}} {
			if x.n > 0 {
				parts = append(parts, fmt.Sprintf("%s %d file(s)", x.what, x.n))
			}
		}
		if len(parts) > 0 {
			did(CheckView, "ran the reconcile: %s", strings.Join(parts, ", "))
		} else if len(d.staleIndex) > 0 || len(d.viewProblems()) > 0 {
			did(CheckView, "ran the reconcile")
		}
	}
	if err := eng.Close(); err != nil {
		fail(CheckCache, "cannot save it: %v", err)
	}
	return done, failed, eng.Notes()
}

func (d *diagnosis) viewProblems() []string {
	for _, c := range d.checks {
		if c.Check == CheckView && c.Status == StatusProblem {
			return []string{c.Detail}
		}
	}
	return nil
}
