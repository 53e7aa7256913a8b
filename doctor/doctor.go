package doctor

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/gitstore/gitrepo"
	"github.com/orch-tool/orch/gitstore/statecache"
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
	cu     *checkup
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
	release, err := st.DoctorLock(false, lockWait)
	if err != nil {
		d.lockErr = err
	} else {
		defer release()
	}
	d.cu = newCheckup(st)
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

func clip(l []string, n int) []string {
	if len(l) <= n {
		return l
	}
	return append(append([]string{}, l[:n]...), fmt.Sprintf("and %d more", len(l)-n))
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
	release, err := st.DoctorLock(true, lockWait)
	if err != nil {
		fail(CheckStaleLock, "nothing repaired: %v", err)
		return done, failed, nil
	}
	for _, p := range d.staleLocks {
		if ok, err := removeStaleRefLock(st, p); err != nil {
			fail(CheckStaleLock, "cannot remove %s: %v", d.show(p), err)
		} else if ok {
			did(CheckStaleLock, "removed %s", d.show(p))
		}
	}
	if d.staleNote {
		if err := st.Repo.RemoveStaleLockOwnerNote(); err != nil {
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
		if kept, err := statecache.Rebuild(st.CachePath(), st.Ref); err != nil {
			fail(CheckCache, "cannot rebuild it: %v", err)
		} else if kept {
			did(CheckCache, "rebuilt it from the branch (the view's sync index kept)")
		} else {
			did(CheckCache, "rebuilt it from the branch (the sync index could not be read: view files were compared with the branch again)")
		}
	}
	if len(d.staleIndex) > 0 {
		if err := distrustViewStat(st, d.staleIndex); err != nil {
			fail(CheckView, "cannot update the sync index: %v", err)
		}
	}
	release()
	if (d.exclude || created) && st.View != "" {
		if added, err := st.ExcludeView(); err != nil {
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
