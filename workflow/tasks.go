package workflow

import (
	"bytes"
	"cmp"
	"container/heap"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/gitstore/gitrepo"
	"github.com/orch-tool/orch/internal/lazyregexp"
	"github.com/orch-tool/orch/taskfile"
)

// InitResult reports what init did.
type InitResult struct {
	Created      bool     // the state branch was created
	Added        []string // files added to the branch
	Commit       plumbing.Hash
	ExcludeAdded bool
	View         string
	BaseBranch   string // the base_branch written into a new config.yaml ("" when none was written)
}

// InitOptions are orch init's choices.
type InitOptions struct {
	// Example adds the files of the embedded example the branch lacks.
	Example fs.FS
	// BaseBranch is the base_branch of a new config.yaml; "" takes the
	// branch checked out here (a repository whose branch is master gets
	// base_branch: master), else main.
	BaseBranch string
}

// Init creates the state branch (idempotent). With opts.Example, the files
// of the embedded example that the branch lacks are added.
func (e *Engine) Init(opts InitOptions) (*InitResult, error) {
	example := opts.Example
	res := &InitResult{View: e.Store.View}
	base := opts.BaseBranch
	if base == "" {
		if base = e.Store.Repo.HeadBranch(); base == "" || base == strings.TrimPrefix(e.Store.Ref, "refs/heads/") {
			base = DefaultConfig().BaseBranch
		}
	}
	if !gitrepo.ValidRefName("refs/heads/" + base) {
		return nil, &UsageError{Msg: fmt.Sprintf("--base %q is not a valid branch name", printable(base)), Hint: "orch init --base main"}
	}
	// The base branch goes into the config orch writes (the default one,
	// or the example's): every task branch starts there.
	withBase := func(cfg []byte) []byte {
		res.BaseBranch = base
		return []byte(strings.Replace(string(cfg), "base_branch: main", "base_branch: "+base, 1))
	}
	snap := e.Store.Snapshot()
	var changes []gitstore.Change
	if _, ok := snap.Get(gitstore.ConfigFile); !ok && !e.Store.Exists() {
		changes = append(changes, gitstore.Change{Path: gitstore.ConfigFile, Data: withBase([]byte(DefaultConfigYAML))})
	}
	if example != nil {
		err := fs.WalkDir(example, ".", func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			if _, ok := snap.Get(p); ok {
				return nil
			}
			if p == gitstore.ConfigFile && e.Store.Exists() {
				return nil
			}
			data, err := fs.ReadFile(example, p)
			if err != nil {
				return err
			}
			if p == gitstore.ConfigFile {
				data = withBase(data)
			}
			for i := range changes {
				if changes[i].Path == p {
					changes[i].Data = data
					return nil
				}
			}
			changes = append(changes, gitstore.Change{Path: p, Data: data})
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	res.Created = !e.Store.Exists()
	if len(changes) > 0 {
		msg := "orch: init\n\nCreate the orch state branch.\n\nOrch-Action: init\nOrch-Actor: " + e.Actor + "\n"
		if !res.Created {
			msg = "orch: add example\n\nAdd the example tasks.\n\nOrch-Action: init\nOrch-Actor: " + e.Actor + "\n"
		}
		h, err := e.Store.Update(func(*gitstore.Snapshot) (*gitstore.CommitRequest, error) {
			return &gitstore.CommitRequest{Changes: changes, Message: msg, Author: e.Signature()}, nil
		})
		if err != nil {
			return nil, err
		}
		res.Commit = h
		for _, c := range changes {
			res.Added = append(res.Added, c.Path)
		}
		sort.Strings(res.Added)
	}
	e.loadConfig()
	if e.Store.View != "" {
		added, err := ensureExclude(e.Store.Repo.CommonDir)
		if err != nil {
			return nil, err
		}
		res.ExcludeAdded = added
		if _, err := e.Store.Reconcile(e.policy()); err != nil {
			return nil, err
		}
		// An empty tasks/ is where a person creates a task by hand.
		_ = os.MkdirAll(filepath.Join(e.Store.View, gitstore.TasksDir), 0o777)
	}
	return res, nil
}

// ensureExclude adds /.orchestrator/ to info/exclude so that the view never
// shows in `git status` of any worktree.
func ensureExclude(commonDir string) (bool, error) {
	p := filepath.Join(commonDir, "info", "exclude")
	cur, err := os.ReadFile(p)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, err
	}
	entry := "/" + gitstore.ViewDirName + "/"
	for _, line := range strings.Split(string(cur), "\n") {
		if strings.TrimSpace(line) == entry || strings.TrimSpace(line) == "/"+gitstore.ViewDirName {
			return false, nil
		}
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o777); err != nil {
		return false, err
	}
	var b bytes.Buffer
	b.Write(cur)
	if len(cur) > 0 && !bytes.HasSuffix(cur, []byte("\n")) {
		b.WriteByte('\n')
	}
	b.WriteString("# orch's view of its state branch (see orch help)\n" + entry + "\n")
	return true, os.WriteFile(p, b.Bytes(), 0o666)
}

// NewTask describes a task to create.
type NewTask struct {
	Title     string
	Priority  string
	Role      string
	Assign    string
	DependsOn []string
	Labels    []string
	Body      string
}

// New creates a task in incoming.
func (e *Engine) New(nt NewTask) (*Result, error) {
	if err := checkTexts(namedText{"the body (--body or -F)", nt.Body}); err != nil {
		return nil, err
	}
	if err := e.RequireInit(); err != nil {
		return nil, err
	}
	f, err := e.renderTask(nt, nil)
	if err != nil {
		return nil, err
	}
	id, title, prio := f.Task.ID, f.Task.Title, f.Task.Priority
	h, err := e.Store.Update(func(snap *gitstore.Snapshot) (*gitstore.CommitRequest, error) {
		ev, err := e.eventChange(snap, Event{Time: taskfile.FormatTime(e.Now()), Task: id, Action: "new", To: string(taskfile.Incoming), Actor: e.Actor,
			Data: map[string]any{"title": title, "priority": prio}})
		if err != nil {
			return nil, err
		}
		return &gitstore.CommitRequest{
			Changes: []gitstore.Change{{Path: f.Path, Data: f.Src}, ev},
			Message: commitMessage(id, "new", "", taskfile.Incoming, e.Actor, "New task: "+title),
			Author:  e.Signature(),
		}, nil
	})
	if err != nil {
		return nil, err
	}
	return &Result{Task: e.Store.Summary(f.Path), Commit: h, To: taskfile.Incoming}, nil
}

// renderTask validates a new task and renders its file (Path is the path on
// the state branch). taken lists IDs minted earlier in the same commit.
func (e *Engine) renderTask(nt NewTask, taken map[string]bool) (*taskfile.File, error) {
	title := oneLine(nt.Title)
	if title == "" {
		return nil, &UsageError{Msg: "a task needs a title", Hint: `orch new "Fix the login redirect"`}
	}
	if len(title) > 200 {
		return nil, &UsageError{Msg: "the title is longer than 200 characters", Hint: "put the detail in the body (--body or -F)"}
	}
	// Control characters (terminal escapes) would reach every listing.
	if strings.IndexFunc(title, func(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) }) >= 0 {
		return nil, &UsageError{Msg: fmt.Sprintf("the title %q contains control characters", clipArg(title)), Hint: "use plain text"}
	}
	prio := taskfile.DefaultPriority
	if nt.Priority != "" {
		p, ok := taskfile.NormalizePriority(nt.Priority)
		if !ok {
			return nil, &UsageError{Msg: fmt.Sprintf("%q is not a priority", printable(nt.Priority)), Hint: "use P0..P3 or critical, high, medium, low"}
		}
		prio = p
	}
	role := nt.Role
	if role == "" {
		role = e.Config.DefaultRole
	}
	for _, n := range append([]string{role, nt.Assign}, nt.Labels...) {
		if n != "" && !taskfile.ValidName(n) {
			return nil, &UsageError{Msg: fmt.Sprintf("%q is not a valid name", printable(n)), Hint: "names are letters, digits, spaces and . _ - + @, up to 64 characters"}
		}
	}
	var deps []string
	for _, d := range nt.DependsOn {
		if taken[d] {
			deps = append(deps, d)
			continue
		}
		s, err := e.Find(d)
		if err != nil {
			return nil, err
		}
		deps = append(deps, s.Task.ID)
	}
	if strings.ContainsRune(nt.Body, 0) {
		return nil, &UsageError{Msg: "the body contains a NUL byte"}
	}
	id := e.NewID(func(id string) bool { return taken[id] })
	p := gitstore.TasksDir + "/" + id + "-" + taskfile.Slug(title) + ".md"
	fields := []taskfile.Edit{
		taskfile.Set(taskfile.KeyID, taskfile.String(id)),
		taskfile.Set(taskfile.KeyTitle, taskfile.String(title)),
		taskfile.Set(taskfile.KeyQueue, taskfile.String(string(taskfile.Incoming))),
		taskfile.Set(taskfile.KeyPriority, taskfile.String(prio)),
		taskfile.Set(taskfile.KeyCreated, taskfile.Time(e.Now())),
	}
	if role != "" {
		fields = append(fields, taskfile.Set(taskfile.KeyRole, taskfile.String(role)))
	}
	if nt.Assign != "" {
		fields = append(fields, taskfile.Set(taskfile.KeyAssignedTo, taskfile.String(nt.Assign)))
	}
	if len(deps) > 0 {
		fields = append(fields, taskfile.Set(taskfile.KeyDependsOn, taskfile.ListOf(deps)))
	}
	if len(nt.Labels) > 0 {
		fields = append(fields, taskfile.Set(taskfile.KeyLabels, taskfile.ListOf(nt.Labels)))
	}
	f, err := taskfile.Render(p, fields, nt.Body)
	if err != nil {
		return nil, err
	}
	if errs := f.Validate(); len(errs) > 0 {
		return nil, &InvalidFileError{Problems: errs}
	}
	return f, nil
}

// ListFilter selects tasks for List. Every field given must match.
type ListFilter struct {
	Queues []taskfile.Queue
	Ready  bool // only tasks a claim by the actor could take now
	// Labels: the task has every one of them.
	Labels []string
	// Role, ClaimedBy: exactly this (the task's role, default_role when
	// it names none).
	Role, ClaimedBy string
	// Priorities: one of them (P0..P3).
	Priorities []string
	// Search: in the title or the body, ignoring case.
	Search string
	// Sort: claim (the default: by queue in board order, then claim
	// order), priority, created (newest first), id, title.
	Sort string
}

// ListSorts are the orders List knows.
var ListSorts = []string{"claim", "priority", "created", "id", "title"}

// ClaimQueueOrder is the claim order's first key, and the one place it is
// written: a claim takes rejected work first (the branch and the feedback
// are waiting), then work another agent paused, then new work. Within a
// queue: priority (P0 first), then age (oldest first), then id
// (cmpClaimKeys). The help text and the docs are built from it
// (ClaimOrderText).
var ClaimQueueOrder = []taskfile.Queue{taskfile.Rejected, taskfile.NeedsContinuation, taskfile.Incoming}

// ClaimOrderText says the claim order in words.
func ClaimOrderText() string {
	s := make([]string, len(ClaimQueueOrder))
	for i, q := range ClaimQueueOrder {
		s[i] = string(q)
	}
	return strings.Join(s, ", then ") + " (with it, a claim whose lease ran out); within a queue by priority (P0 first), then age (oldest first), then id"
}

var claimQueueRank = func() map[taskfile.Queue]int {
	m := map[taskfile.Queue]int{}
	for i, q := range ClaimQueueOrder {
		m[q] = i
	}
	// A claim whose lease ran out is work another agent stopped: it comes
	// with needs_continuation (whyNot passes over a live one).
	m[taskfile.Claimed] = m[taskfile.NeedsContinuation]
	return m
}()

// claimQueues are the queues a claim takes from (those of claimQueueRank).
var claimQueues = func() map[taskfile.Queue]bool {
	m := map[taskfile.Queue]bool{}
	for q := range claimQueueRank {
		m[q] = true
	}
	return m
}()

func queueRank(q taskfile.Queue) int {
	for i, k := range taskfile.Queues {
		if k == q {
			return i
		}
	}
	return len(taskfile.Queues)
}

// DepsDone reports whether every dependency of t is done, and lists those
// that are not.
func (e *Engine) DepsDone(t *taskfile.Task) (bool, []string) {
	var pending []string
	for _, d := range t.DependsOn {
		if q, ok := e.tasks().QueueByID(d); !ok || q != taskfile.Done {
			pending = append(pending, d)
		}
	}
	return len(pending) == 0, pending
}

// Ready reports whether a claim could take t now (ignoring who claims).
func (e *Engine) Ready(t *taskfile.Task) bool {
	if _, ok := claimQueueRank[t.Queue]; !ok {
		return false
	}
	if t.Queue == taskfile.Claimed {
		if s := e.tasks().SummaryByID(t.ID); s == nil || !e.leaseExpired(s) {
			return false
		}
	}
	ok, _ := e.DepsDone(t)
	return ok
}

// List returns the tasks that pass the filter: by queue in board order, and
// in claim order within a queue (or in claim order overall with Ready).
func (e *Engine) List(f ListFilter) []*gitstore.Summary {
	want := map[taskfile.Queue]bool{}
	for _, q := range f.Queues {
		want[q] = true
	}
	if f.Ready {
		// Only the claim queues can be ready: the others are not decoded.
		only := map[taskfile.Queue]bool{}
		for q := range claimQueues {
			if len(want) == 0 || want[q] {
				only[q] = true
			}
		}
		if len(only) == 0 {
			return nil
		}
		want = only
	}
	var out []*gitstore.Summary
	// Ready means what a claim by the actor would take, by the one rule
	// claim applies (whyNot): queue, dependencies, role, assignment,
	// lockout, and a view file that can be changed.
	roles, _ := e.agentRoles("")
	search := strings.ToLower(strings.TrimSpace(f.Search))
	e.Store.EachSummaryIn(want, func(s *gitstore.Summary) {
		if !e.listMatch(s, &f) {
			return
		}
		if f.Ready {
			if rule, _ := e.whyNot(s, roles); rule != "" {
				return
			}
		}
		if search != "" && !strings.Contains(strings.ToLower(s.Task.Title), search) {
			// The body only when the title does not match: it is read
			// from the branch.
			t, err := e.Load(s)
			if err != nil || !strings.Contains(strings.ToLower(string(t.File.Body())), search) {
				return
			}
		}
		out = append(out, s)
	})
	SortClaimOrder(out, !f.Ready)
	switch f.Sort {
	case "priority":
		slices.SortStableFunc(out, func(a, b *gitstore.Summary) int {
			return cmp.Compare(taskfile.PriorityRank(a.Task.Priority), taskfile.PriorityRank(b.Task.Priority))
		})
	case "created":
		slices.SortStableFunc(out, func(a, b *gitstore.Summary) int { return b.Task.Created.Compare(a.Task.Created) })
	case "id":
		slices.SortStableFunc(out, func(a, b *gitstore.Summary) int { return cmp.Compare(a.Task.ID, b.Task.ID) })
	case "title":
		slices.SortStableFunc(out, func(a, b *gitstore.Summary) int {
			return cmp.Compare(strings.ToLower(a.Task.Title), strings.ToLower(b.Task.Title))
		})
	}
	return out
}

// listMatch applies the filter's fields that the summary alone answers.
func (e *Engine) listMatch(s *gitstore.Summary, f *ListFilter) bool {
	t := &s.Task
	for _, l := range f.Labels {
		if !contains(t.Labels, l) {
			return false
		}
	}
	if f.Role != "" && roleOf(t, e.Config) != f.Role {
		return false
	}
	if f.ClaimedBy != "" && t.ClaimedBy != f.ClaimedBy {
		return false
	}
	if len(f.Priorities) > 0 && !contains(f.Priorities, t.Priority) {
		return false
	}
	return true
}

// claimKey is a task's place in claim order, computed once per task
// (comparing raw fields in the sort's comparator cost more than the rest of
// orch list at 10,000 tasks).
type claimKey struct {
	board, claim, prio int
	created            int64
	id, path           string
	i                  int // the task's index in the list being sorted
}

func newClaimKey(q taskfile.Queue, priority string, created time.Time, id, path string, byQueue bool) claimKey {
	k := claimKey{claim: 9, prio: taskfile.PriorityRank(priority), created: math.MaxInt64, id: id, path: path}
	if r, ok := claimQueueRank[q]; ok {
		k.claim = r
	}
	if byQueue {
		k.board = queueRank(q)
	}
	if !created.IsZero() {
		k.created = created.UnixNano()
	}
	return k
}

func cmpClaimKeys(a, b claimKey) int {
	switch {
	case a.board != b.board:
		return cmp.Compare(a.board, b.board)
	case a.claim != b.claim:
		return cmp.Compare(a.claim, b.claim)
	case a.prio != b.prio:
		return cmp.Compare(a.prio, b.prio)
	case a.created != b.created:
		return cmp.Compare(a.created, b.created)
	}
	if c := cmp.Compare(a.id, b.id); c != 0 {
		return c
	}
	return cmp.Compare(a.path, b.path)
}

// SortClaimOrder sorts tasks in claim order (cmpClaimKeys), by queue in board
// order first when byQueue is set.
func SortClaimOrder(list []*gitstore.Summary, byQueue bool) {
	keys := make([]claimKey, len(list))
	for i, s := range list {
		keys[i] = newClaimKey(s.Task.Queue, s.Task.Priority, s.Task.Created, s.Task.ID, s.Path, byQueue)
		keys[i].i = i
	}
	slices.SortFunc(keys, cmpClaimKeys)
	sorted := make([]*gitstore.Summary, len(list))
	for j, k := range keys {
		sorted[j] = list[k.i]
	}
	copy(list, sorted)
}

// claimQueue hands out tasks not yet decoded in claim order, sorting only
// as far as it is asked: a claim usually takes the first (a heap's O(n)
// set-up instead of sorting thousands of open tasks).
type claimQueue struct {
	keys []claimKey
	list []*gitstore.SummaryHeader
}

func newClaimQueue(list []*gitstore.SummaryHeader) *claimQueue {
	q := &claimQueue{keys: make([]claimKey, len(list)), list: list}
	for i, h := range list {
		q.keys[i] = newClaimKey(h.Queue, h.Priority, h.Created, h.ID, h.Path, false)
		q.keys[i].i = i
	}
	heap.Init(q)
	return q
}

// next returns the next task in claim order, nil after the last.
func (q *claimQueue) next() *gitstore.SummaryHeader {
	if len(q.keys) == 0 {
		return nil
	}
	return q.list[heap.Pop(q).(claimKey).i]
}

func (q *claimQueue) Len() int           { return len(q.keys) }
func (q *claimQueue) Less(i, j int) bool { return cmpClaimKeys(q.keys[i], q.keys[j]) < 0 }
func (q *claimQueue) Swap(i, j int)      { q.keys[i], q.keys[j] = q.keys[j], q.keys[i] }
func (q *claimQueue) Push(x any)         { q.keys = append(q.keys, x.(claimKey)) }
func (q *claimQueue) Pop() any {
	k := q.keys[len(q.keys)-1]
	q.keys = q.keys[:len(q.keys)-1]
	return k
}

// EditTarget is a file `orch edit` works on.
type EditTarget struct {
	Path string // path on the state branch
	ID   string // task id, if a task
	Data []byte
	Base plumbing.Hash
	// FromCopy says the edit is a file made earlier (orch edit --from), not
	// an edit of Data: its base is the version it was made from.
	FromCopy bool
}

// EditStart resolves what to edit: a task reference, "config", or a file of
// the state branch such as prompts/reviewer.md.
func (e *Engine) EditStart(ref string) (*EditTarget, error) {
	if err := e.RequireInit(); err != nil {
		return nil, err
	}
	snap := e.Store.Snapshot()
	p := ""
	id := ""
	switch {
	case ref == "config" || ref == gitstore.ConfigFile:
		p = gitstore.ConfigFile
	case strings.Contains(ref, "/"):
		clean := path.Clean(ref)
		if clean != ref || !gitstore.Mirrored(clean) || strings.HasPrefix(clean, gitstore.TasksDir+"/") {
			return nil, &UsageError{Msg: fmt.Sprintf("%q is not a file orch edits", printable(ref)), Hint: "edit a task by ID, or config, or prompts/<role>.md"}
		}
		p = clean
	default:
		s, err := e.Resolve(ref)
		if err != nil {
			return nil, err
		}
		p, id = s.Path, s.Task.ID
	}
	if isPolicyFile(p) {
		if err := e.requireHuman("edit", "", "changing "+p+" (policy files are a human's)"); err != nil {
			return nil, err
		}
	}
	t := &EditTarget{Path: p, ID: id}
	if h, ok := snap.Get(p); ok {
		data, err := snap.ReadBlob(h)
		if err != nil {
			return nil, err
		}
		t.Data, t.Base = data, h
	} else if p == gitstore.ConfigFile {
		t.Data = []byte(DefaultConfigYAML)
	}
	return t, nil
}

// EditFinish commits an edited copy of an EditTarget. When the branch moved
// while the editor was open, the edit is merged with those changes: a
// person's edit never undoes orch's.
func (e *Engine) EditFinish(t *EditTarget, edited []byte) (*Result, error) {
	if err := e.RequireInit(); err != nil {
		return nil, err
	}
	view := filepath.Join(gitstore.ViewDirName, t.Path)
	snap := e.Store.Snapshot()
	cur, curOK := snap.Get(t.Path)
	var curData []byte
	if curOK {
		var err error
		if curData, err = snap.ReadBlob(cur); err != nil {
			return nil, err
		}
	}
	result := edited
	if strings.HasPrefix(t.Path, gitstore.TasksDir+"/") {
		ef, err := taskfile.Parse(view, edited)
		if err != nil {
			return nil, &InvalidFileError{Problems: []*taskfile.ParseError{asParseError(err, view)}}
		}
		if errs := ef.Validate(); len(errs) > 0 {
			return nil, &InvalidFileError{Problems: errs}
		}
		if perr := taskfile.CheckIDKept(view, ef, t.ID); perr != nil {
			return nil, &InvalidFileError{Problems: []*taskfile.ParseError{perr}}
		}
		if !curOK {
			return nil, &ConflictError{Msg: fmt.Sprintf("%s was removed from the state branch while you edited it", t.ID), Hint: "orch log " + t.ID + " shows what happened"}
		}
		rf, err := taskfile.Parse(view, curData)
		if err != nil {
			return nil, &ConflictError{Msg: fmt.Sprintf("%s changed on the state branch while you edited it", t.ID), Hint: "run orch edit " + t.ID + " again"}
		}
		// One rule for every hand edit (DESIGN §2): a three-way merge from
		// the version the person started from. For an editor that is the
		// version it was opened on; for a copy, the version it was made
		// from, found in the task's history.
		bf, err := taskfile.Parse(view, t.Data)
		if err != nil {
			return nil, err
		}
		if t.FromCopy {
			if older := e.editBase(t.Path, ef); older != nil {
				bf = older
			}
		}
		if !bytes.Equal(bf.Src, curData) {
			merged, conflicts, err := taskfile.Merge3(bf, ef, rf)
			if err != nil {
				return nil, err
			}
			if len(conflicts) > 0 {
				return nil, &ConflictError{Msg: conflictText(t.ID, conflicts), Hint: "run orch edit " + t.ID + " again: it starts from the new version"}
			}
			result = merged.Src
		}
		mf, err := taskfile.Parse(view, result)
		if err != nil {
			return nil, err
		}
		if err := e.checkDependencies(mf); err != nil {
			return nil, &InvalidFileError{Problems: []*taskfile.ParseError{asParseError(err, view)}}
		}
		if changed := e.handChangedFields(mf, rf); len(changed) > 0 {
			return nil, &RuleError{Rule: "orch_owned", Msg: fmt.Sprintf("%s: an edit may not change %s: orch-owned fields change only through verbs", t.ID, strings.Join(changed, ", ")),
				Hint: e.verbsFor(changed, mf, t.ID) + "; edit again leaving those fields as they are"}
		}
	} else {
		if err := CheckFile(view, edited); err != nil {
			return nil, &InvalidFileError{Problems: []*taskfile.ParseError{asParseError(err, view)}}
		}
		if curOK && cur != t.Base {
			text, ok := taskfile.MergeText(string(t.Data), string(edited), string(curData))
			if !ok {
				return nil, &ConflictError{Msg: fmt.Sprintf("%s changed on the state branch while you edited it, in the same lines", t.Path), Hint: "run orch edit again"}
			}
			result = []byte(text)
		}
	}
	if curOK && bytes.Equal(result, curData) {
		return &Result{Commit: snap.Tip}, nil
	}
	if e.Store.BrokenFile(t.Path) != nil || e.Store.Conflicted(t.Path) != nil {
		return nil, &ConflictError{Msg: fmt.Sprintf("%s has an uncommitted hand edit in the view that orch cannot commit", view), Hint: "fix or delete the view file first (orch check shows the problem)"}
	}
	id, action := t.ID, "edit"
	msg := commitMessage(id, action, "", "", e.Actor, "Edited with orch edit.")
	if id == "" {
		msg = "orch: edit " + t.Path + "\n\nEdited with orch edit.\n\nOrch-Action: edit\nOrch-Actor: " + e.Actor + "\n"
	}
	h, err := e.Store.Update(func(*gitstore.Snapshot) (*gitstore.CommitRequest, error) {
		return &gitstore.CommitRequest{Changes: []gitstore.Change{{Path: t.Path, Data: result}}, Message: msg, Author: e.Signature()}, nil
	})
	if err != nil {
		return nil, err
	}
	res := &Result{Commit: h}
	if id != "" {
		res.Task = e.Store.Summary(t.Path)
	}
	return res, nil
}

func conflictText(id string, cs []taskfile.Conflict) string {
	var parts []string
	for _, c := range cs {
		if c.Key == "" {
			parts = append(parts, "the body (the same lines changed on both sides)")
		} else {
			parts = append(parts, fmt.Sprintf("%s (yours: %s, branch: %s)", c.Key, c.Ours, c.Theirs))
		}
	}
	return fmt.Sprintf("%s changed on the state branch while you edited it, and both changed %s", id, strings.Join(parts, "; "))
}

// Problem is one thing `orch check` reports.
type Problem struct {
	Path string `json:"path"`
	Line int    `json:"line,omitempty"`
	Kind string `json:"kind"` // invalid | uncommitted | conflict | config | dependency | recovered | view | ignored | held
	Msg  string `json:"message"`
}

func (p Problem) String() string {
	if p.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", p.Path, p.Line, p.Msg)
	}
	return fmt.Sprintf("%s: %s", p.Path, p.Msg)
}

// Check validates every task, the config, the view and the dependencies.
func (e *Engine) Check() []Problem {
	var out []Problem
	view := func(p string) string { return filepath.Join(gitstore.ViewDirName, p) }
	if e.ConfigErr != nil {
		pe := asParseError(e.ConfigErr, view(gitstore.ConfigFile))
		out = append(out, Problem{Path: pe.Path, Line: pe.Line, Kind: "config", Msg: pe.Msg})
	}
	if err := e.Store.ViewErr; err != nil {
		out = append(out, Problem{Path: gitstore.ViewDirName, Kind: "view", Msg: err.Error()})
	}
	for _, f := range e.Store.IgnoredViewFiles() {
		out = append(out, Problem{Path: f.Path, Kind: "ignored", Msg: f.Why})
	}
	for p, err := range e.Store.Held() {
		out = append(out, Problem{Path: view(p), Kind: "held", Msg: err.Error()})
	}
	broken, conflicts := e.Store.ViewProblems()
	for p, err := range broken {
		var ps taskfile.Problems
		if errors.As(err, &ps) {
			for _, pe := range ps {
				out = append(out, Problem{Path: view(p), Line: pe.Line, Kind: "uncommitted", Msg: pe.Msg + " (not committed; the state branch keeps the last good version)"})
			}
			continue
		}
		pe := asParseError(err, view(p))
		out = append(out, Problem{Path: view(p), Line: pe.Line, Kind: "uncommitted", Msg: pe.Msg + " (not committed; the state branch keeps the last good version)"})
	}
	for p, cs := range conflicts {
		id := strings.TrimSuffix(path.Base(p), ".md")
		if s := e.Store.Summary(p); s != nil && s.Task.ID != "" {
			id = s.Task.ID
		}
		out = append(out, Problem{Path: view(p), Kind: "conflict", Msg: conflictText(id, cs)})
	}
	ids := map[string]string{}
	for _, s := range e.Store.Summaries() {
		if s.Problem != "" {
			out = append(out, Problem{Path: view(s.Path), Line: s.ProblemLine, Kind: "invalid", Msg: s.Problem})
			continue
		}
		if other, dup := ids[s.Task.ID]; dup {
			out = append(out, Problem{Path: view(s.Path), Line: 0, Kind: "invalid", Msg: fmt.Sprintf("id %s is also used by %s", s.Task.ID, view(other))})
		}
		ids[s.Task.ID] = s.Path
	}
	for _, s := range e.Store.Summaries() {
		for _, d := range s.Task.DependsOn {
			if e.Store.SummaryByID(d) == nil {
				out = append(out, Problem{Path: view(s.Path), Kind: "dependency", Msg: fmt.Sprintf("depends_on: %s is not a task", d)})
			}
		}
	}
	out = append(out, e.dependencyCycles()...)
	for _, r := range e.Store.Recovered() {
		out = append(out, Problem{Path: r, Kind: "recovered", Msg: "a save that raced orch, kept here: copy what you need into the task file, then delete this file"})
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Path != out[j].Path {
			return out[i].Path < out[j].Path
		}
		return out[i].Line < out[j].Line
	})
	return out
}

// checkDependencies refuses a hand edit whose depends_on closes a cycle
// with the tasks on the branch (DESIGN §2: kept out, reported like a file
// that does not parse).
func (e *Engine) checkDependencies(f *taskfile.File) error {
	if cycle := e.cycleThrough(f.Task.ID, f.Task.DependsOn); cycle != nil {
		return &taskfile.ParseError{Path: f.Path, Line: f.Line(taskfile.KeyDependsOn),
			Msg: "depends_on: forms a cycle: " + strings.Join(cycle, " -> ") + " (not committed: a task in a cycle never becomes ready)"}
	}
	return nil
}

// cycleThrough returns a dependency cycle that id's depends_on (deps)
// would close, or nil: a path from one of deps back to id.
func (e *Engine) cycleThrough(id string, deps []string) []string {
	if id == "" {
		return nil
	}
	seen := map[string]bool{}
	var walk func(at string, path []string) []string
	walk = func(at string, path []string) []string {
		if at == id {
			return append(path, at)
		}
		if seen[at] {
			return nil
		}
		seen[at] = true
		s := e.Store.SummaryByID(at)
		if s == nil {
			return nil
		}
		for _, d := range s.Task.DependsOn {
			if c := walk(d, append(path, at)); c != nil {
				return c
			}
		}
		return nil
	}
	for _, d := range deps {
		if c := walk(d, []string{id}); c != nil {
			return c
		}
	}
	return nil
}

func (e *Engine) dependencyCycles() []Problem {
	const (
		white = iota
		grey
		black
	)
	color := map[string]int{}
	var out []Problem
	var visit func(id string, stack []string)
	visit = func(id string, stack []string) {
		color[id] = grey
		s := e.Store.SummaryByID(id)
		if s != nil {
			for _, d := range s.Task.DependsOn {
				switch color[d] {
				case grey:
					cycle := append(append([]string{}, stack...), id, d)
					out = append(out, Problem{Path: filepath.Join(gitstore.ViewDirName, s.Path), Kind: "dependency", Msg: "depends_on forms a cycle: " + strings.Join(cycle[indexOf(cycle, d):], " -> ")})
				case white:
					visit(d, append(stack, id))
				}
			}
		}
		color[id] = black
	}
	for _, s := range e.Store.Summaries() {
		if s.Task.ID != "" && color[s.Task.ID] == white {
			visit(s.Task.ID, nil)
		}
	}
	return out
}

func indexOf(l []string, s string) int {
	for i, x := range l {
		if x == s {
			return i
		}
	}
	return 0
}

// LogEntry is one commit of the state branch, read from its trailers.
type LogEntry struct {
	Commit  string    `json:"commit"`
	Time    time.Time `json:"time"`
	Task    string    `json:"task,omitempty"`
	Action  string    `json:"action,omitempty"`
	From    string    `json:"from,omitempty"`
	To      string    `json:"to,omitempty"`
	Actor   string    `json:"actor,omitempty"`
	Subject string    `json:"subject"`
	// LockedOut is the author a rejection locked out of the task, and
	// Unlocked the agent an unlock let back in (Reviewer Lockout
	// Protocol, "Lockout Logs": who, not only that it happened).
	LockedOut string `json:"locked_out,omitempty"`
	Unlocked  string `json:"unlocked,omitempty"`
}

// Log reads the history of the state branch (of one task when id is set),
// newest first, at most limit entries (0: all).
func (e *Engine) Log(id string, limit int) ([]LogEntry, error) {
	if err := e.RequireInit(); err != nil {
		return nil, err
	}
	var out []LogEntry
	err := e.Store.Walk(func(c *gitrepo.CommitInfo) bool {
		tr := c.Trailers()
		if id != "" && tr["Orch-Task"] != id && !contains(strings.Fields(tr["Orch-Created"]), id) {
			return true
		}
		out = append(out, LogEntry{
			Commit: c.Hash.String(), Time: c.Author.When.UTC(), Task: tr["Orch-Task"], Action: tr["Orch-Action"],
			From: tr["Orch-From"], To: tr["Orch-To"], Actor: tr["Orch-Actor"], Subject: c.Subject(),
			LockedOut: lockedOutBy(c.Message, tr), Unlocked: tr["Orch-Unlocked"],
		})
		return limit <= 0 || len(out) < limit
	})
	return out, err
}

// lockedOutSentence is how a rejection's commit body has always said whom
// it locked out: a paragraph of its own.
var lockedOutSentence = lazyregexp.New(`^(.+) is locked out of this task\.$`)

// lockedOutBy names whom a rejection commit locked out: its Orch-Locked-Out
// trailer, or, in commits made before the trailer existed, the body's
// sentence. Only rejections are read, and only whole paragraphs after the
// first: the first ("Rejection #n by lead: ...") carries the reviewer's
// words, which could say anything.
func lockedOutBy(msg string, tr map[string]string) string {
	if who := tr["Orch-Locked-Out"]; who != "" {
		return who
	}
	if tr["Orch-Round"] == "" || (tr["Orch-Action"] != "reject" && tr["Orch-Action"] != "review") {
		return ""
	}
	paras := strings.Split(strings.ReplaceAll(msg, "\r\n", "\n"), "\n\n")
	// paras[0] is the subject, paras[1] the rejection's summary.
	for i := 2; i < len(paras); i++ {
		if m := lockedOutSentence().FindStringSubmatch(paras[i]); m != nil && taskfile.ValidPersonName(m[1]) {
			return m[1]
		}
	}
	return ""
}
