package workflow

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/orch-tool/orch/config"
	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/gitstore/gitrepo"
	"github.com/orch-tool/orch/internal/text"
	"github.com/orch-tool/orch/prompt"
	"github.com/orch-tool/orch/taskfile"
)

// Options open an Engine.
type Options struct {
	// Store, when set, is a store opened already (orch doctor, once it has
	// moved the state branch): Open locks it, loads and reconciles as
	// always; Repo, Dir, StateBranch and InMemoryCache are then unused.
	Store       *gitstore.Store
	Repo        *gitrepo.Repo // found already (saves discovering it twice)
	Dir         string
	StateBranch string
	Actor       string
	Now         func() time.Time
	// NoReconcile skips syncing the view (completion uses it: it must be
	// fast and must not commit anything).
	NoReconcile bool
	// Optimistic lets the command run on the branch while the view is
	// scanned; the reconcile settles at the first commit or at Settle, and
	// gitstore.ErrViewChanged says the command must run again (see
	// gitstore.Store.Defer).
	Optimistic bool
	// Progress, when set, hears how far a long operation has got (see
	// Engine.Progress).
	Progress func(what string, done, total int)
	// InMemoryCache: see gitstore.Options.
	InMemoryCache bool
	// Signals are what the actor is judged by (docs/design.md §5.1); Verb names the
	// command, and ReadOnly says it changes nothing (the rule of a task's
	// worktree binds only commands that change something). With Verb
	// empty, no identity rule is applied (completion, tests).
	Signals  ActorSignals
	Verb     string
	ReadOnly bool
	// Fence is the run of orch run this process belongs to (nil: none):
	// see checkFence.
	Fence *Fence
	// HoldPolicyEdits keeps hand edits of policy files (config.yaml,
	// prompts/) out of the branch even for a human: orch run, which acts
	// for its agents, never commits what one of them may have written.
	HoldPolicyEdits bool
}

// Engine runs workflow operations on one repository. Open takes the store
// lock and reconciles the view; Close saves caches and releases the lock.
type Engine struct {
	Store *gitstore.Store
	// Tasks, when set, is what the rules read instead of Store (see
	// TaskIndex): unit tests run the rules over tasks in memory.
	Tasks  TaskIndex
	Actor  string
	Now    func() time.Time
	Config *config.Config
	// ConfigErr is set when config.yaml on the branch does not parse; the
	// defaults are used meanwhile and `orch check` reports it.
	ConfigErr  error
	Reconciled *gitstore.Reconciled
	// batching, during Engine.Batch, gathers the verbs' changes instead of
	// committing each.
	batching *[]pendingChange
	// Progress, when set, is told how far a long operation (a reconcile of
	// thousands of files, a sweep, stats over the event log) has got, with
	// done == total at the end. The command decides whether to show it.
	Progress func(what string, done, total int)
	// Kind is how the actor is governed, judged from Signals and the
	// roster (see KindOf); Verb is the command being run.
	Kind    ActorKind
	Signals ActorSignals
	Verb    string
	Fence   *Fence
	// holdPolicy: see Options.HoldPolicyEdits.
	holdPolicy bool
	// policyNotes say how the policy files this command committed changed.
	policyNotes []string

	clone           string // this clone's ID in event file names, once read
	archive         archiveIndex
	recordedRefusal bool // a refusal of authority was recorded already
	// remoteClaims are the remote's claim refs as claim --sync fetched
	// them (claimrefs.go).
	remoteClaims map[string]*remoteClaim
	// claimShare is this agent's share of the ready tasks when other
	// agents claim from the same remote (claim --sync sets it, see
	// claimShare): clones which fetched the same state do not all race for
	// the same next task.
	claimShare claimShare
}

// progress reports how far a long operation has got (see Progress).
func (e *Engine) progress(what string, done, total int) {
	if e.Progress != nil {
		e.Progress(what, done, total)
	}
}

// Open opens the repository around opts.Dir, locks the store and brings the
// view in step with the branch.
func Open(opts Options) (*Engine, error) {
	st := opts.Store
	if st == nil {
		var err error
		st, err = gitstore.Open(gitstore.Options{Repo: opts.Repo, Dir: opts.Dir, StateBranch: opts.StateBranch, InMemoryCache: opts.InMemoryCache, NoScan: opts.NoReconcile})
		if err != nil {
			return nil, err
		}
	}
	e := &Engine{Store: st, Actor: opts.Actor, Now: opts.Now, Progress: opts.Progress, Signals: opts.Signals, Verb: opts.Verb, Fence: opts.Fence, holdPolicy: opts.HoldPolicyEdits}
	st.Progress = opts.Progress
	if e.Now == nil {
		e.Now = func() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }
	}
	if err := st.Lock(); err != nil {
		return nil, err
	}
	e.loadConfig()
	if e.Config.Unknown() {
		// A newer orch's repository: this one must not decide claims or
		// write anything the old way beside the new. Reads go on, from the
		// branch as it is (a reconcile could commit a hand edit).
		if !opts.ReadOnly && !opts.NoReconcile {
			st.Close()
			return nil, formatError(e.Config.Format)
		}
		opts.NoReconcile = true
	}
	if st.Exists() {
		e.Signals.WorktreeTask = e.worktreeTask()
	}
	if opts.Verb != "" {
		if err := e.checkIdentity(opts.ReadOnly); err != nil {
			st.Close()
			return nil, err
		}
	}
	if opts.Optimistic && !opts.NoReconcile {
		st.Defer(e.policy())
		return e, nil
	}
	if !opts.NoReconcile {
		if err := e.reconcile(); err != nil {
			st.Close()
			return nil, err
		}
	}
	return e, nil
}

// formatError refuses a write to a repository whose format is newer than
// this orch knows.
func formatError(format int) error {
	return &RuleError{Rule: "repository_format", Next: Next{Advice: AdviseUpgradeOrch},
		Msg: fmt.Sprintf("this repository's state branch needs repository format %d (config.yaml: format: %d), and this orch knows formats up to %d: it changes nothing here, so that it never decides claims or writes state the old way beside the new", format, format, config.KnownFormat)}
}

// reconcile brings the view and the branch in step (Open does it, unless
// the command is optimistic: see Settle).
func (e *Engine) reconcile() error {
	if !e.Store.Exists() {
		return nil
	}
	rep, err := e.Store.Reconcile(e.policy())
	if err != nil {
		return err
	}
	e.Reconciled = rep
	for _, list := range [][]string{rep.Committed, rep.Pulled, rep.Restored} {
		for _, p := range list {
			if p == gitstore.ConfigFile {
				e.loadConfig() // a hand edit, or the branch, changed it
				return nil
			}
		}
	}
	return nil
}

// Settle finishes an optimistic command's reconcile (see Options.Optimistic)
// and records its report.
func (e *Engine) Settle() error {
	rep, err := e.Store.Settle()
	if rep != nil {
		e.Reconciled = rep
	}
	return err
}

// ViewChanged readies the engine to run a command again after
// gitstore.ErrViewChanged: the reconcile may have committed a hand edit of
// config.yaml.
func (e *Engine) ViewChanged() { e.loadConfig() }

// Close saves caches and releases the lock.
func (e *Engine) Close() error { return e.Store.Close() }

// Notes are things the store did that the user should hear about.
func (e *Engine) Notes() []string { return e.Store.Notes() }

// AllNotes are Notes and the warnings of the reconcile: hand edits that
// could not be committed, files in conflict, policy files held.
func (e *Engine) AllNotes() []string {
	notes := append(append([]string(nil), e.Notes()...), e.policyNotes...)
	if e.Reconciled != nil {
		for _, err := range e.Reconciled.Broken {
			notes = append(notes, fmt.Sprintf("warning: %v (not committed; orch check lists every problem)", err))
		}
		for p := range e.Reconciled.Conflicts {
			notes = append(notes, fmt.Sprintf("warning: %s/%s is in conflict with the state branch (orch check shows how)", gitstore.ViewDirName, p))
		}
		for _, err := range e.Reconciled.Held {
			notes = append(notes, "warning: "+err.Error())
		}
	}
	return notes
}

func (e *Engine) loadConfig() {
	e.Config, e.ConfigErr = config.Default(), nil
	defer func() { e.Kind = KindOf(e.Config, e.Actor, e.Signals) }()
	data, err := e.Store.Snapshot().Read(gitstore.ConfigFile)
	if err != nil {
		return
	}
	cfg, err := config.Parse(filepath.Join(gitstore.ViewDirName, gitstore.ConfigFile), data)
	if err != nil {
		e.ConfigErr = err
		return
	}
	e.Config = cfg
}

// RequireInit fails unless the state branch exists.
func (e *Engine) RequireInit() error {
	if !e.Store.Exists() {
		return &NotInitializedError{Ref: e.Store.Ref}
	}
	return nil
}

// Signature is the identity commits are made with: the actor, with the
// git user's email when the actor is the git user.
func (e *Engine) Signature() gitrepo.Signature {
	return ActorSignature(e.Store.Repo, e.Actor, e.Now())
}

// ActorSignature is Engine.Signature without an Engine (orch doctor's
// repairs): the identity actor's commits in repo are made with.
func ActorSignature(repo *gitrepo.Repo, actor string, when time.Time) gitrepo.Signature {
	email := ""
	if gn := repo.GitConfig("user", "name"); gn != "" && gn == actor {
		email = repo.GitConfig("user", "email")
	}
	if email == "" {
		email = strings.ReplaceAll(strings.ToLower(actor), " ", "-") + "@orch"
	}
	return gitrepo.Signature{Name: actor, Email: email, When: when}
}

func (e *Engine) policy() gitstore.Policy {
	return gitstore.Policy{
		Actor:          e.Signature(),
		PrepareNewTask: e.prepareHandMadeTask,
		CheckFile:      CheckFile,
		OrchFields:     e.keepOrchFields,
		CheckTask:      e.checkDependencies,
		Hold: func(path string) error {
			switch {
			case !isPolicyFile(path):
				return nil
			case e.holdPolicy:
				return fmt.Errorf("%s/%s: the change waits for a human's own command: orch run acts for its agents, and never commits a policy file (the file is kept as it is)", gitstore.ViewDirName, path)
			case e.IsHuman() && (e.Verb == "" || policyVerbs[e.Verb]):
				e.notePolicyChange(path)
				return nil
			case e.IsHuman():
				return fmt.Errorf("%s/%s has a change that is not committed: a policy file is committed on purpose, by orch check (which shows the change) or orch edit, not by whatever command runs next (the file is kept as it is)", gitstore.ViewDirName, path)
			}
			return fmt.Errorf("%s/%s: the change waits for a human: policy files (config.yaml, prompts/) are committed only by a human's command, and %s is an agent (the file is kept as it is)", gitstore.ViewDirName, path, e.Actor)
		},
		Event: func(snap *gitstore.Snapshot, id, path string) (gitstore.Change, error) {
			return e.eventChange(snap, Event{Time: taskfile.FormatTime(e.Now()), Task: id, Action: ActionNew, To: taskfile.Incoming, Actor: e.Actor},
				&NewData{Path: path, ByHand: true})
		},
	}
}

// policyVerbs are the commands by which a human commits a hand edit of a
// policy file: on purpose, having seen it. Any other command leaves the
// edit in the view with a warning, since an agent working in the main
// worktree may have made it, and the next command a person happens to run
// must not make it theirs.
var policyVerbs = map[string]bool{"check": true, "edit": true, "doctor": true, "init": true}

// notePolicyChange keeps, for the command's notes, how a policy file's
// hand edit that is about to be committed changes it: the person sees what
// they accepted.
func (e *Engine) notePolicyChange(path string) {
	was, _ := e.Store.Snapshot().Read(path)
	now, err := e.Store.ReadViewFile(path)
	if err != nil || string(was) == string(now) {
		return
	}
	e.policyNotes = append(e.policyNotes, fmt.Sprintf("%s/%s: the change committed:\n%s", gitstore.ViewDirName, path,
		strings.TrimRight(text.Visible(LineDiff(string(was), string(now))), "\n")))
}

// isPolicyFile reports whether a branch path is one only humans change.
func isPolicyFile(path string) bool {
	return path == gitstore.ConfigFile || strings.HasPrefix(path, gitstore.PromptsDir+"/")
}

// CheckFile validates a file of the state branch that is not a task.
func CheckFile(path string, data []byte) error {
	base := filepath.Base(path)
	dir := filepath.Base(filepath.Dir(path))
	switch {
	case base == gitstore.ConfigFile && dir == gitstore.ViewDirName:
		_, err := config.Parse(path, data)
		return err
	case dir == gitstore.EventsDir:
		for i, line := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
			if strings.TrimSpace(line) == "" {
				continue
			}
			if !json.Valid([]byte(line)) {
				return &taskfile.ParseError{Path: path, Line: i + 1, Msg: "not a JSON line"}
			}
		}
	case dir == gitstore.PromptsDir:
		return prompt.Check(path, data)
	}
	return nil
}

// prepareHandMadeTask completes a task file a person created in the view.
func (e *Engine) prepareHandMadeTask(path string, data []byte, taken func(string) bool) ([]byte, string, error) {
	f, err := taskfile.Parse(path, data)
	if err != nil {
		return nil, "", err
	}
	var edits []taskfile.Edit
	id := f.Task.ID
	switch {
	case id != "" && !taskfile.ValidID(id):
		return nil, "", &taskfile.ParseError{Path: path, Line: f.Line(taskfile.KeyID), Msg: fmt.Sprintf("id: %q is not a task ID; remove the line and orch assigns one", id)}
	case id == "" || taken(id):
		// No id yet, or a copy of another task's file: mint one.
		id = e.newID(taken)
		edits = append(edits, taskfile.Set(taskfile.KeyID, taskfile.String(id)))
	}
	if !f.Has(taskfile.KeyTitle) && f.Task.Title == "" {
		name := strings.TrimSuffix(filepath.Base(path), ".md")
		edits = append(edits, taskfile.Set(taskfile.KeyTitle, taskfile.String(name)))
	}
	if !f.Has(taskfile.KeyQueue) {
		edits = append(edits, taskfile.Set(taskfile.KeyQueue, taskfile.String(string(taskfile.Incoming))))
	}
	if !f.Has(taskfile.KeyCreated) {
		edits = append(edits, taskfile.Set(taskfile.KeyCreated, taskfile.Time(e.Now())))
	}
	out, err := f.Apply(edits...)
	if err != nil {
		return nil, "", err
	}
	if errs := out.Validate(); len(errs) > 0 {
		// Name the line of the person's file, not of the completed copy
		// (whose added id line shifts every line below it).
		for _, pe := range f.Validate() {
			if pe.Msg == errs[0].Msg {
				return nil, "", pe
			}
		}
		return nil, "", errs[0]
	}
	return out.Src, id, nil
}

// idAlphabet is Crockford's base32 in lower case: no i, l, o, u, so IDs
// survive being read aloud or typed from a screenshot.
const idAlphabet = "0123456789abcdefghjkmnpqrstvwxyz"

// newID mints a random task ID. IDs are random, never counted from a local
// maximum, so two clones never mint the same one.
func (e *Engine) newID(taken func(string) bool) string {
	prefix := "T"
	if e.Config != nil && e.Config.IDPrefix != "" {
		prefix = e.Config.IDPrefix
	}
	for {
		var b strings.Builder
		b.WriteString(prefix + "-")
		for i := 0; i < 6; i++ {
			n, _ := rand.Int(rand.Reader, big.NewInt(int64(len(idAlphabet))))
			b.WriteByte(idAlphabet[n.Int64()])
		}
		id := b.String()
		if taken == nil || !taken(id) {
			if e.Store.SummaryByID(id) == nil && !e.archived(id) {
				return id
			}
		}
	}
}

// Task is a task as the workflow hands it to verbs: the summary plus, when
// loaded, the parsed file.
type Task struct {
	*gitstore.Summary
	File *taskfile.File
}

// Find resolves a task reference: an exact ID, a unique ID prefix, or the
// random part of an ID ("4k9x" for T-4k9x2m). Hostile input (paths, refs,
// control characters) never matches and is never used as a path.
func (e *Engine) Find(ref string) (*gitstore.Summary, error) {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return nil, &UsageError{Msg: "no task given", Next: Next{Advice: AdvisePassTaskID}}
	}
	if s := e.tasks().SummaryByID(ref); s != nil {
		return s, nil
	}
	lower := strings.ToLower(ref)
	var ids []string
	seen := map[string]bool{}
	e.Store.EachTaskID(func(tid string, _ taskfile.Queue) {
		id := strings.ToLower(tid)
		if id == "" || seen[tid] {
			return
		}
		_, rnd, _ := strings.Cut(id, "-")
		if strings.HasPrefix(id, lower) || (!strings.Contains(lower, "-") && strings.HasPrefix(rnd, lower)) {
			seen[tid] = true
			ids = append(ids, tid)
		}
	})
	switch len(ids) {
	case 0:
		if a, err := e.findArchived(ref); err != nil || a != nil {
			if err != nil {
				return nil, err
			}
			return nil, &ArchivedError{Task: a, Next: Next{Advice: AdviseArchived, Task: a.Task.ID}}
		}
		// clipArg, not printable: Error() quotes with %q, which escapes
		// control characters once (printable would escape them twice).
		return nil, &NotFoundError{What: "task", Ref: clipArg(ref), Next: Next{Advice: AdviseListTasks}}
	case 1:
		return e.Store.SummaryByID(ids[0]), nil
	}
	sort.Strings(ids)
	return nil, &AmbiguousError{Prefix: clipArg(ref), Matches: ids}
}

// findForWorktree finds the task whose branch is checked out in the current
// worktree, for verbs whose task argument is omitted.
func (e *Engine) findForWorktree() (*gitstore.Summary, error) {
	br := e.Store.Repo.HeadBranch()
	if s := e.taskOfBranch(br, nil); s != nil {
		return s, nil
	}
	next := Next{Advice: AdvisePassTaskID}
	if br != "" {
		return nil, &UsageError{Msg: fmt.Sprintf("no task given, and the branch checked out here (%s) is no task's branch", br), Next: next}
	}
	return nil, &UsageError{Msg: "no task given, and no branch is checked out here", Next: next}
}

// taskOfBranch finds the task whose branch is br, among the tasks in queues
// (all when nil). orch names branches <prefix><id>-<slug>, so the id is
// tried first (a binary search); other names cost a walk.
func (e *Engine) taskOfBranch(br string, queues map[taskfile.Queue]bool) *gitstore.Summary {
	if br == "" {
		return nil
	}
	if rest, ok := strings.CutPrefix(br, e.Config.BranchPrefix); ok {
		for i := len(rest); i > 0; i = strings.LastIndexByte(rest[:i], '-') {
			if s := e.Store.SummaryByID(rest[:i]); s != nil && s.Task.Branch == br {
				return s
			}
		}
	}
	var found *gitstore.Summary
	e.Store.EachSummaryIn(queues, func(s *gitstore.Summary) {
		if found == nil && s.Task.Branch == br {
			found = s
		}
	})
	return found
}

// resolve finds a task by reference, or by the current worktree's branch
// when ref is empty.
func (e *Engine) resolve(ref string) (*gitstore.Summary, error) {
	if ref == "" {
		return e.findForWorktree()
	}
	return e.Find(ref)
}

// Lookup is what every verb with a task argument starts with: the store must
// be set up, and ref must name one task (or, empty, the current worktree's).
func (e *Engine) Lookup(ref string) (*gitstore.Summary, error) {
	if err := e.RequireInit(); err != nil {
		return nil, err
	}
	return e.resolve(ref)
}

// Load parses the committed file of a task.
func (e *Engine) Load(s *gitstore.Summary) (*Task, error) {
	data, err := e.Store.Snapshot().ReadAt(s.Path, s.Blob)
	if err != nil {
		return nil, err
	}
	f, err := taskfile.Parse(filepath.Join(gitstore.ViewDirName, s.Path), data)
	if err != nil {
		return nil, &InvalidFileError{Problems: []*taskfile.ParseError{asParseError(err, s.Path)}}
	}
	return &Task{Summary: s, File: f}, nil
}

func asParseError(err error, path string) *taskfile.ParseError {
	var pe *taskfile.ParseError
	if errors.As(err, &pe) {
		return pe
	}
	var ee *taskfile.EditError
	if errors.As(err, &ee) {
		// Its Error() starts with its own path: say the path once.
		return &taskfile.ParseError{Path: path, Msg: fmt.Sprintf("cannot change %q: %s", ee.Key, ee.Msg)}
	}
	return &taskfile.ParseError{Path: path, Msg: err.Error()}
}
