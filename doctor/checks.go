package doctor

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/orch-tool/orch/config"
	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/gitstore/gitrepo"
	"github.com/orch-tool/orch/internal/text"
	"github.com/orch-tool/orch/taskfile"
	"github.com/orch-tool/orch/workflow"
)

func (d *diagnosis) checkStateBranch() {
	cu, repo, ref := d.cu, d.st.Repo, d.st.Ref
	switch {
	case cu.tipErr != nil:
		hint := "repair the ref with git (git fsck, git reflog); orch cannot work until it is readable"
		if h := repo.LastReflogCommit(ref); !h.IsZero() && repo.HasObject(h) {
			hint = fmt.Sprintf("its reflog last recorded %s; if that is the state you want: git update-ref %s %s", shortHash(h), ref, h)
		}
		d.add(CheckStateBranch, StatusProblem, fmt.Sprintf("%s cannot be read: %v", ref, cu.tipErr), hint, nil)
	case cu.tip.IsZero():
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
		d.add(CheckStateBranch, StatusOK, fmt.Sprintf("%s at %s", ref, shortHash(cu.tip)), "", nil)
	}
}

func (d *diagnosis) checkObjects() {
	cu := d.cu
	if cu.tipErr != nil || cu.tip.IsZero() {
		d.add(CheckObjects, StatusOK, "nothing to check (no state branch)", "", nil)
		return
	}
	hint := "run git fsck; in a partial or shallow clone, fetch the state branch again (orch sync)"
	if cu.snapErr != nil {
		d.add(CheckObjects, StatusProblem, fmt.Sprintf("the tip %s cannot be read: %v", shortHash(cu.tip), cu.snapErr), hint, nil)
		return
	}
	h := cu.objects()
	if len(h.missing) > 0 {
		d.add(CheckObjects, StatusProblem, fmt.Sprintf("%d file(s) of the tip lack their objects: %s", len(h.missing), strings.Join(clip(h.missing, 3), ", ")), hint, h.missing)
		return
	}
	d.add(CheckObjects, StatusOK, fmt.Sprintf("tip commit %s, %d tree(s) and %d file(s) present", shortHash(cu.tip), h.trees, h.files), "", nil)
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
		items = append(items, fmt.Sprintf("%s is held by %s for more than %s", d.show(lt.Path), holder, lockWait))
		hints = append(hints, "wait for that command to end; if it hangs, stop it (the kernel releases the lock)")
	} else if d.lockErr != nil {
		items = append(items, fmt.Sprintf("the orch lock cannot be taken: %v", d.lockErr))
	}
	var fresh []string
	for _, l := range refLocks(d.st) {
		if l.stale {
			items = append(items, fmt.Sprintf("%s is stale (%s)", d.show(l.path), l.why))
			d.staleLocks = append(d.staleLocks, l.path)
			fixable = true
		} else {
			fresh = append(fresh, fmt.Sprintf("%s is %s", d.show(l.path), l.why))
		}
	}
	if p, pid, stale := d.st.Repo.StaleLockOwnerNote(); stale {
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
		minAge = staleTempAge
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
	h := cu.cacheHealth()
	if cu.tipErr != nil || cu.tip.IsZero() || h.tip.IsZero() || h.tip == cu.tip || d.st.Contains(cu.tip, h.tip) {
		d.add(CheckHistory, StatusOK, "the state branch contains every transition orch saw", "", nil)
		return
	}
	mb := d.st.MovedBackwards(d.st.Ref, h.tip, cu.tip)
	d.backwards = mb
	var items []string
	for _, c := range mb.Dropped {
		items = append(items, shortHash(c.Hash)+" "+c.Subject())
	}
	if mb.More > 0 {
		items = append(items, fmt.Sprintf("... and %d more", mb.More))
	}
	restore := fmt.Sprintf("orch doctor --restore-tip puts %s back at %s (the dropped transitions return)", d.branch(), shortHash(h.tip))
	if mb.Diverged {
		restore = fmt.Sprintf("%s has commits of its own since, so it cannot simply go back: merge %s into it with git, then orch doctor --accept-rewind", d.branch(), shortHash(h.tip))
	}
	d.add(CheckHistory, StatusProblem, fmt.Sprintf("moved backwards: %s is at %s, which does not contain %s, the tip orch saw last; %d transition(s) dropped",
		d.branch(), shortHash(cu.tip), shortHash(h.tip), len(mb.Dropped)+mb.More),
		"a person decides: "+restore+"; or orch doctor --accept-rewind keeps it where it is (orch forgets them). Every other command refuses to write until then", items)
}

func (d *diagnosis) checkCache() {
	cu := d.cu
	h := cu.cacheHealth()
	name := d.show(h.path)
	switch {
	case d.backwards != nil:
		d.add(CheckCache, StatusOK, fmt.Sprintf("%s describes %s (see history)", name, shortHash(h.tip)), "", nil)
	case len(h.corrupt) > 0:
		d.rebuildCache, d.reconcile = true, true
		d.add(CheckCache, StatusProblem, fmt.Sprintf("%s cannot be trusted: %s", name, strings.Join(h.corrupt, "; ")),
			"run orch doctor --fix (rebuilds it from the branch, keeping the view's sync index when it can be read)", nil)
	case cu.tipErr != nil:
		d.add(CheckCache, StatusOK, "not checked: the state branch cannot be read", "", nil)
	case !h.exists && cu.tip.IsZero():
		d.add(CheckCache, StatusOK, "no cache (nothing to cache yet)", "", nil)
	case !h.exists:
		d.reconcile = true
		d.add(CheckCache, StatusProblem, fmt.Sprintf("%s is missing", name), "run orch doctor --fix, or any orch command (it rebuilds it from the branch)", nil)
	case h.stale:
		d.reconcile = true
		at := "no commit"
		if !h.tip.IsZero() {
			at = shortHash(h.tip)
		}
		now := "gone"
		if !cu.tip.IsZero() {
			now = "at " + shortHash(cu.tip)
		}
		d.add(CheckCache, StatusProblem, fmt.Sprintf("%s describes %s, but the branch is %s (moved outside orch)", name, at, now),
			"run orch doctor --fix, or any orch command (it catches up)", nil)
	case cu.snapErr != nil:
		d.add(CheckCache, StatusOK, fmt.Sprintf("%s describes the branch tip %s (its trees not verified: the tip cannot be read)", name, shortHash(cu.tip)), "", nil)
	default:
		d.add(CheckCache, StatusOK, fmt.Sprintf("%s matches the branch tip %s (%d task(s))", name, shortHash(cu.tip), h.tasks), "", nil)
	}
}

// noView explains why a check has no view to look at ("" when there is one).
func (d *diagnosis) noView() string {
	st := d.st
	switch {
	case st.View != "" && (d.cu.tipErr != nil || d.cu.tip.IsZero()):
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
	driftMissing:    "missing from the view (the reconcile restores it from the branch)",
	driftBehind:     "older than the branch (the reconcile updates it)",
	driftEdited:     "edited by hand, not committed yet (the reconcile commits it, merging if the branch changed too)",
	driftExtra:      "made by hand, not on the branch yet (the reconcile commits it)",
	driftRemoved:    "removed on the branch, still in the view (the reconcile removes it)",
	driftStaleIndex: "differs from the branch, but the sync index says it is unchanged, so no command would notice (--fix has the reconcile read it)",
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
	if d.cu.snapErr != nil {
		d.add(CheckView, StatusOK, "not checked: the tip cannot be read (see objects)", "", nil)
		return
	}
	drift := d.cu.viewDrift()
	if len(drift) == 0 {
		d.add(CheckView, StatusOK, "the view is in step with the branch", "", nil)
		return
	}
	var items []string
	broken := 0
	for _, v := range drift {
		what := driftText[v.kind]
		if v.kind == driftUnreadable {
			what = fmt.Sprintf("cannot be read: %v", v.err)
			broken++
		}
		if v.kind == driftStaleIndex {
			d.staleIndex = append(d.staleIndex, v.path)
		}
		if v.data != nil {
			if err := checkViewFile(v.path, v.data); err != nil {
				what += "; but it does not parse, so it stays uncommitted until fixed: " + text.OneLine(err.Error())
				broken++
			}
		}
		items = append(items, d.showView(v.path)+": "+what)
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
	if d.cu.snapErr != nil {
		d.add(CheckConflicts, StatusOK, "not checked: the tip cannot be read (see objects)", "", nil)
		return
	}
	cfs := d.cu.conflicts()
	if len(cfs) == 0 {
		d.add(CheckConflicts, StatusOK, "no file in conflict", "", nil)
		return
	}
	var items []string
	open := 0
	example := ""
	for _, cf := range cfs {
		name := d.showView(cf.path)
		if cf.changed {
			d.reconcile = true
			items = append(items, name+": changed since the conflict was found (your resolution): the reconcile commits it")
			continue
		}
		open++
		resolve := fmt.Sprintf("git show %s:%s > %s", d.branch(), cf.path, name)
		if cf.branchGone {
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

func describeConflicts(cf conflictedFile) string {
	if cf.branchGone {
		return "edited in the view, removed from the state branch"
	}
	var parts []string
	for _, c := range cf.conflicts {
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
