package workflow

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/orch-tool/orch/config"
	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/gitstore/statecache"
	"github.com/orch-tool/orch/internal/testgit"
	"github.com/orch-tool/orch/taskfile"
)

// The two backends of the rule suite (rule_suite_test.go).

func TestRulesMemory(t *testing.T) { ruleSuite(t, newMemWorld) }

func TestRulesRepository(t *testing.T) { ruleSuite(t, newRepoWorld) }

// seedFile is the text of a seeded task file.
func seedFile(tk seedTask) (path string, src []byte) {
	fm := tk.fm
	if !strings.Contains(fm, "queue:") {
		fm += "\nqueue: incoming"
	}
	if !strings.Contains(fm, "created:") {
		fm += "\ncreated: 2026-11-01T00:00:00Z"
	}
	return gitstore.TasksDir + "/" + tk.id + ".md",
		fmt.Appendf(nil, "---\nid: %s\ntitle: Task %s\n%s\n---\n# Task %s\n\nDo it.\n", tk.id, tk.id, strings.TrimSpace(fm), tk.id)
}

// signalsOf are the signals a process acting as by shows: ORCH_AGENT for
// an agent, --agent otherwise.
func signalsOf(by who) ActorSignals {
	if by.agent {
		return ActorSignals{Source: "ORCH_AGENT", EnvAgent: by.name}
	}
	return ActorSignals{Source: "--agent"}
}

// ---- memory ----------------------------------------------------------------

// memIndex is a TaskIndex over task files held in memory.
type memIndex struct {
	byID   map[string]*gitstore.Summary
	order  []string         // IDs as added
	broken map[string]error // path -> a hand edit that does not parse
}

func (m *memIndex) SummaryByID(id string) *gitstore.Summary { return m.byID[id] }

func (m *memIndex) QueueByID(id string) (taskfile.Queue, bool) {
	if s := m.byID[id]; s != nil {
		return s.Task.Queue, true
	}
	return "", false
}

func (m *memIndex) EachSummaryWhile(fn func(*gitstore.Summary) bool) {
	for _, id := range m.order {
		if !fn(m.byID[id]) {
			return
		}
	}
}

func (m *memIndex) EachSummaryHeaderIn(queues map[taskfile.Queue]bool, fn func(*gitstore.SummaryHeader)) {
	for _, id := range m.order {
		if s := m.byID[id]; len(queues) == 0 || queues[s.Task.Queue] {
			fn(statecache.HeaderOf(s))
		}
	}
}

func (m *memIndex) BrokenFile(path string) error               { return m.broken[path] }
func (m *memIndex) Conflicted(path string) []taskfile.Conflict { return nil }
func (m *memIndex) ReadRef(string) (plumbing.Hash, error)      { return plumbing.ZeroHash, nil }

// memWorld runs the rules over a memIndex: an Engine with no store and no
// repository. A verb runs its step as the repository's does, through
// Engine.step; what the repository would commit, memory keeps.
type memWorld struct {
	t     *testing.T
	cfg   *config.Config
	idx   *memIndex
	files map[string]*taskfile.File // by path
}

func newMemWorld(t *testing.T, configYAML string, tasks ...seedTask) ruleWorld {
	t.Helper()
	cfg := config.Default()
	if configYAML != "" {
		var err error
		if cfg, err = config.Parse("config.yaml", []byte(configYAML)); err != nil {
			t.Fatal(err)
		}
	}
	w := &memWorld{t: t, cfg: cfg, idx: &memIndex{byID: map[string]*gitstore.Summary{}, broken: map[string]error{}}, files: map[string]*taskfile.File{}}
	for _, tk := range tasks {
		path, src := seedFile(tk)
		f, err := taskfile.Parse(path, src)
		if err != nil {
			t.Fatalf("%s: %v\n%s", tk.id, err, src)
		}
		w.put(f)
	}
	return w
}

// put keeps f as its task's file, summed up as the store sums up a file
// it reads (the default priority, a problem when it does not validate).
func (w *memWorld) put(f *taskfile.File) {
	s := &gitstore.Summary{Path: f.Path, Task: f.Task}
	if p, ok := taskfile.NormalizePriority(s.Task.Priority); ok {
		s.Task.Priority = p
	} else if s.Task.Priority == "" {
		s.Task.Priority = taskfile.DefaultPriority
	}
	if errs := f.Validate(); len(errs) > 0 {
		s.Problem, s.ProblemLine = errs[0].Msg, errs[0].Line
	}
	if _, ok := w.idx.byID[s.Task.ID]; !ok {
		w.idx.order = append(w.idx.order, s.Task.ID)
	}
	w.idx.byID[s.Task.ID], w.files[f.Path] = s, f
}

func (w *memWorld) engine(by who) *Engine {
	sig := signalsOf(by)
	return &Engine{Tasks: w.idx, Actor: by.name, Kind: KindOf(w.cfg, by.name, sig), Signals: sig, Verb: "test", Config: w.cfg, Now: func() time.Time { return ruleNow }}
}

func (w *memWorld) load(s *gitstore.Summary) (*Task, error) {
	return &Task{Summary: s, File: w.files[s.Path]}, nil
}

// run is a transition on id: e.step, then what the commit would write.
// It returns the change and the inbox messages it wrote about id.
func (w *memWorld) run(e *Engine, id string, verb Action, fn func(*Task) (*change, error)) (*change, int, error) {
	s := w.idx.SummaryByID(id)
	if s == nil {
		w.t.Fatalf("no task %s", id)
	}
	c, _, _, err := e.step(s, w.load, verb, true, fn)
	if err != nil {
		return nil, 0, err
	}
	if c.file != nil {
		w.put(c.file)
	}
	inbox := 0
	for _, x := range c.extra {
		if strings.HasPrefix(x.Path, gitstore.MessagesDir+"/") && strings.HasSuffix(x.Path, "-"+id+".md") {
			inbox++
		}
	}
	return c, inbox, nil
}

func (w *memWorld) claim(by who, opts ClaimOptions) (string, error) {
	e := w.engine(by)
	id, roles, err := e.claimTarget(opts)
	if err != nil {
		return "", err
	}
	// The branch is the repository's: here only its name.
	branch := func(t *Task) (string, bool, string, func() error, error) {
		if t.Task.Branch != "" {
			return t.Task.Branch, true, "", nil, nil
		}
		return e.branchName(&t.Task, t.Path), false, "", nil, nil
	}
	if _, _, err := w.run(e, id, ActionClaim, e.claimStep(roles, branch, &ClaimResult{})); err != nil {
		return "", err
	}
	return id, nil
}

func (w *memWorld) whyNot(by who, id string) string {
	e := w.engine(by)
	roles, err := e.agentRoles("")
	if err != nil {
		w.t.Fatal(err)
	}
	rule, _ := e.whyNot(w.idx.SummaryByID(id), roles)
	return rule
}

func (w *memWorld) reject(by who, id string) (*ruleOutcome, error) {
	e := w.engine(by)
	text := "Not yet: the start does not snap."
	rj := rejection{Sources: []taskfile.Source{{From: by.name + " via orch reject", Time: ruleNow, Text: text}}, Summary: text}
	c, inbox, err := w.run(e, id, ActionReject, e.rejectStep(ActionReject, rj))
	if err != nil {
		return nil, err
	}
	esc := escalationReason(c.data)
	return &ruleOutcome{to: c.file.Task.Queue, task: w.task(id), escalated: esc, inbox: inbox}, nil
}

func (w *memWorld) review(by who, id string, in *ReviewInput) (*ruleOutcome, error) {
	e := w.engine(by)
	out := &ReviewResult{}
	c, inbox, err := w.run(e, id, ActionReview, e.reviewStep(in, out))
	if err != nil {
		return nil, err
	}
	return &ruleOutcome{to: c.file.Task.Queue, task: w.task(id), escalated: out.Escalated, inbox: inbox, noProgress: out.NoProgressCount, progress: out.Progress}, nil
}

func (w *memWorld) approve(by who, id string) error {
	e := w.engine(by)
	_, _, err := w.run(e, id, ActionApprove, e.approveStep("APPROVED", "", nil))
	return err
}

// humanVerb: the rule the verbs apply before their transition (the
// transitions themselves are not rules of the suite).
func (w *memWorld) humanVerb(by who, verb, id string) error {
	return w.engine(by).requireHuman(verb, id, verb+" of a task")
}

func (w *memWorld) task(id string) taskfile.Task { return w.idx.SummaryByID(id).Task }

func (w *memWorld) resubmit(id string, by who) {
	f := w.files[w.idx.SummaryByID(id).Path]
	worked := f.Task.WorkedBy
	if !slices.Contains(worked, by.name) {
		worked = append(worked, by.name)
	}
	f, err := f.Apply(taskfile.Set(taskfile.KeyQueue, taskfile.String(string(taskfile.Provisional))),
		taskfile.Set(taskfile.KeySubmittedBy, taskfile.String(by.name)), taskfile.Set(taskfile.KeyWorkedBy, taskfile.ListOf(worked)))
	if err != nil {
		w.t.Fatal(err)
	}
	w.put(f)
}

func (w *memWorld) breakFile(id string) {
	w.idx.broken[w.idx.SummaryByID(id).Path] = errors.New("line 3: bad YAML")
}

// ---- repository ----------------------------------------------------------

// repoWorld is a temporary repository with orch set up; each call opens
// an Engine as the actor, as one orch command does, and runs the verb.
type repoWorld struct {
	t   *testing.T
	dir string
}

func newRepoWorld(t *testing.T, config string, tasks ...seedTask) ruleWorld {
	t.Helper()
	testgit.SetHome(t, "tester", "t@example.com")
	w := &repoWorld{t: t, dir: testgit.MakeRepo(t)}
	e := w.open(who{"tester", false})
	if _, err := e.Init(InitOptions{}); err != nil {
		t.Fatal(err)
	}
	// The situation is committed as it is, as a fixture: config.yaml and
	// the task files.
	var changes []gitstore.Change
	if config != "" {
		changes = append(changes, gitstore.Change{Path: gitstore.ConfigFile, Data: []byte(config)})
	}
	for _, tk := range tasks {
		path, src := seedFile(tk)
		changes = append(changes, gitstore.Change{Path: path, Data: src})
	}
	w.commit(e, changes)
	e.Close()
	return w
}

func (w *repoWorld) open(by who) *Engine {
	w.t.Helper()
	e, err := Open(Options{Dir: w.dir, Actor: by.name, Signals: signalsOf(by), Verb: "test", Now: func() time.Time { return ruleNow }})
	if err != nil {
		w.t.Fatal(err)
	}
	if e.ConfigErr != nil {
		w.t.Fatal(e.ConfigErr)
	}
	return e
}

// as runs fn with an Engine opened as by.
func (w *repoWorld) as(by who, fn func(e *Engine) error) error {
	e := w.open(by)
	defer e.Close()
	return fn(e)
}

func (w *repoWorld) commit(e *Engine, changes []gitstore.Change) {
	if _, err := e.Store.Update(func(*gitstore.Snapshot) (*gitstore.CommitRequest, error) {
		return &gitstore.CommitRequest{Changes: changes, Message: "the rule suite's situation", Author: e.Signature()}, nil
	}); err != nil {
		w.t.Fatal(err)
	}
}

// events reads the event log in the view.
func (w *repoWorld) events() []Event {
	files, _ := filepath.Glob(filepath.Join(w.dir, gitstore.ViewDirName, gitstore.EventsDir, "*.jsonl"))
	var out []Event
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			w.t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var ev Event
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				w.t.Fatalf("%s: %v", f, err)
			}
			out = append(out, ev)
		}
	}
	return out
}

// checkRecorded: an agent's refusal by an authority rule is an event for
// the lead (orch inbox).
func (w *repoWorld) checkRecorded(by who, verb string, err error) {
	switch ruleOf(err) {
	case "authority", "reviewer", "reviewer_scope", "self_review":
	default:
		return
	}
	for _, ev := range w.events() {
		d, _ := ev.Payload()
		if a, ok := d.(*AuthorityData); ok && ev.Actor == by.name && a.Verb == verb {
			if !by.agent {
				w.t.Errorf("a human's refused %s was recorded as an attempt", verb)
			}
			return
		}
	}
	if by.agent {
		w.t.Errorf("%s's refused %s was not recorded", by.name, verb)
	}
}

// outcome reads what the newest event of verb on id says.
func (w *repoWorld) outcome(id, verb string, to taskfile.Queue) *ruleOutcome {
	out := &ruleOutcome{to: to, task: w.task(id)}
	for _, ev := range w.events() {
		if ev.Task == id && string(ev.Action) == verb {
			d, _ := ev.Payload()
			out.escalated = escalationReason(d)
		}
	}
	msgs, _ := filepath.Glob(filepath.Join(w.dir, gitstore.ViewDirName, gitstore.MessagesDir, "*-"+id+".md"))
	out.inbox = len(msgs)
	return out
}

func (w *repoWorld) claim(by who, opts ClaimOptions) (id string, err error) {
	err = w.as(by, func(e *Engine) error {
		c, err := e.Claim(opts)
		if err == nil {
			id = c.Task.Task.ID
		}
		return err
	})
	return id, err
}

func (w *repoWorld) whyNot(by who, id string) (rule string) {
	w.as(by, func(e *Engine) error {
		roles, err := e.agentRoles("")
		if err != nil {
			w.t.Fatal(err)
		}
		rule, _ = e.whyNot(e.Store.SummaryByID(id), roles)
		return nil
	})
	return rule
}

func (w *repoWorld) reject(by who, id string) (*ruleOutcome, error) {
	before := w.outcome(id, "reject", "").inbox
	var to taskfile.Queue
	err := w.as(by, func(e *Engine) error {
		res, err := e.Reject(id, "Not yet: the start does not snap.")
		if err == nil {
			to = res.To
		}
		return err
	})
	w.checkRecorded(by, "reject", err)
	if err != nil {
		return nil, err
	}
	out := w.outcome(id, "reject", to)
	out.inbox -= before
	return out, nil
}

func (w *repoWorld) review(by who, id string, in *ReviewInput) (*ruleOutcome, error) {
	before := w.outcome(id, "review", "").inbox
	var res *ReviewResult
	err := w.as(by, func(e *Engine) (err error) {
		res, err = e.Review(id, in)
		return err
	})
	w.checkRecorded(by, "review", err)
	if err != nil {
		return nil, err
	}
	out := w.outcome(id, "review", res.To)
	if out.escalated != res.Escalated {
		w.t.Errorf("review: the result says escalated %q, the event %q", res.Escalated, out.escalated)
	}
	out.inbox -= before
	out.noProgress, out.progress = res.NoProgressCount, res.Progress
	return out, nil
}

func (w *repoWorld) approve(by who, id string) error {
	err := w.as(by, func(e *Engine) error {
		_, err := e.Approve(id, "")
		return err
	})
	w.checkRecorded(by, "approve", err)
	return err
}

func (w *repoWorld) humanVerb(by who, verb, id string) error {
	err := w.as(by, func(e *Engine) (err error) {
		switch verb {
		case "requeue":
			_, err = e.Requeue(id, "")
		case "unlock":
			_, err = e.Unlock(id, "agent-a")
		default:
			w.t.Fatalf("no human verb %s", verb)
		}
		return err
	})
	w.checkRecorded(by, verb, err)
	return err
}

func (w *repoWorld) task(id string) (tk taskfile.Task) {
	w.as(lead, func(e *Engine) error {
		tk = e.Store.SummaryByID(id).Task
		return nil
	})
	return tk
}

// resubmit: by answers the review in one session (claim, respond to each
// blocking issue of the newest round, pause) and does the work in the
// next (claim, a commit on the task's branch, submit).
func (w *repoWorld) resubmit(id string, by who) {
	w.as(by, func(e *Engine) error {
		if _, err := e.Claim(ClaimOptions{Task: id}); err != nil {
			w.t.Fatalf("%s claims %s: %v", by.name, id, err)
		}
		t, err := e.Load(e.Store.SummaryByID(id))
		if err != nil {
			w.t.Fatal(err)
		}
		if rounds := t.File.FeedbackRounds(); len(rounds) > 0 {
			for _, src := range rounds[0].Sources {
				for _, is := range src.Issues {
					if is.Blocking && !is.Resolved {
						if _, err := e.Respond(id, is.ID, "fixed", "Invalidated on every write path.", ""); err != nil {
							w.t.Fatalf("%s answers %s: %v", by.name, is.ID, err)
						}
					}
				}
			}
		}
		if _, err := e.Pause(id, "answered; the fix comes next"); err != nil {
			w.t.Fatal(err)
		}
		return nil
	})
	w.as(by, func(e *Engine) error {
		c, err := e.Claim(ClaimOptions{Task: id})
		if err != nil {
			w.t.Fatalf("%s claims %s again: %v", by.name, id, err)
		}
		tip := testgit.Git(w.t, w.dir, "commit-tree", "-p", c.Branch, "-m", "work by "+by.name, c.Branch+"^{tree}")
		testgit.Git(w.t, w.dir, "update-ref", "refs/heads/"+c.Branch, tip)
		if _, err := e.Submit(id, SubmitOptions{}); err != nil {
			w.t.Fatalf("%s submits %s: %v", by.name, id, err)
		}
		return nil
	})
}

// breakFile writes the view copy of id's file as a person might leave it:
// YAML that does not parse, which orch keeps and does not commit.
func (w *repoWorld) breakFile(id string) {
	path, _ := seedFile(seedTask{id: id})
	p := filepath.Join(w.dir, gitstore.ViewDirName, filepath.FromSlash(path))
	if err := os.WriteFile(p, []byte("---\nid: "+id+"\ntitle: [unclosed\n---\n"), 0o666); err != nil {
		w.t.Fatal(err)
	}
}
