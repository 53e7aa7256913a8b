package workflow

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orch-tool/orch/internal/testgit"
	"github.com/orch-tool/orch/taskfile"
)

// scopeRepo is a repository with config.yaml as given and one submitted
// task per entry of tasks (title -> labels), claimed and submitted by
// agent-a. It returns the directory and the tasks' IDs by title.
func scopeRepo(t *testing.T, config string, tasks map[string][]string) (string, map[string]string) {
	t.Helper()
	dir, _ := doctorRepo(t)
	if err := os.WriteFile(filepath.Join(dir, ".orchestrator", "config.yaml"), []byte(config), 0o666); err != nil {
		t.Fatal(err)
	}
	e := openCheck(t, dir, "tester") // a human commits the config
	ids := map[string]string{}
	for title, labels := range tasks {
		r, err := e.New(NewTask{Title: title, Labels: labels})
		if err != nil {
			t.Fatal(err)
		}
		ids[title] = r.Task.Task.ID
	}
	e.Close()
	for _, id := range ids {
		a := openAs(t, dir, "agent-a", true)
		c, err := a.Claim(ClaimOptions{Task: id})
		if err != nil {
			t.Fatal(err)
		}
		testgit.Git(t, dir, "update-ref", "refs/heads/"+c.Branch, testgit.Git(t, dir, "commit-tree", "-p", c.Branch, "-m", "work", c.Branch+"^{tree}"))
		if _, err := a.Submit(id, SubmitOptions{}); err != nil {
			t.Fatal(err)
		}
		a.Close()
	}
	return dir, ids
}

// openAs opens the repository as name: an agent (ORCH_AGENT set) or not.
// openCheck opens the repository as orch check does for the human name:
// the command by which a person commits a hand edit of config.yaml.
func openCheck(t *testing.T, dir, name string) *Engine {
	t.Helper()
	e, err := Open(Options{Dir: dir, Actor: name, Signals: ActorSignals{Source: "--agent"}, Verb: "check"})
	if err != nil {
		t.Fatal(err)
	}
	if e.ConfigErr != nil {
		t.Fatal(e.ConfigErr)
	}
	return e
}

func openAs(t *testing.T, dir, name string, agent bool) *Engine {
	t.Helper()
	sig := ActorSignals{Source: "--agent"}
	if agent {
		sig = ActorSignals{Source: "ORCH_AGENT", EnvAgent: name}
	}
	e, err := Open(Options{Dir: dir, Actor: name, Signals: sig, Verb: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if e.ConfigErr != nil {
		t.Fatal(e.ConfigErr)
	}
	return e
}

// events reads every event of the view's event log.
func events(t *testing.T, dir string) []Event {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, ".orchestrator", "events", "*.jsonl"))
	var out []Event
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var ev Event
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			out = append(out, ev)
		}
	}
	return out
}

// payload is an event's data.
func payload(t *testing.T, ev *Event) EventData {
	t.Helper()
	d, err := ev.Payload()
	if err != nil {
		t.Fatalf("%s event: %v", ev.Action, err)
	}
	return d
}

// TestReviewerScopeRefusesOutside: a scoped agent reviewer is refused
// every review verb on a task outside its scope, through the authority
// path (a RuleError, an authority.refused event), and nothing changes.
func TestReviewerScopeRefusesOutside(t *testing.T) {
	dir, ids := scopeRepo(t, "base_branch: main\nreview:\n  reviewers:\n    - lead\n    - {name: qa, labels: [tests]}\n", map[string][]string{"API": nil})
	id := ids["API"]
	e := openAs(t, dir, "qa", true)
	defer e.Close()
	verbs := map[string]func() error{
		"reject":  func() error { _, err := e.Reject(id, "no tests"); return err },
		"approve": func() error { _, err := e.Approve(id, ""); return err },
		"review": func() error {
			_, err := e.Review(id, &ReviewInput{Issues: []ReviewIssue{{Severity: "HIGH", Title: "no tests"}}})
			return err
		},
	}
	for verb, run := range verbs {
		e.recordedRefusal = false // each attempt is its own record
		err := run()
		var re *RuleError
		if !errors.As(err, &re) || re.Rule != "reviewer_scope" {
			t.Fatalf("%s: got %v, want the reviewer_scope refusal", verb, err)
		}
		want := "qa may not " + verb + " " + id + ": review.reviewers scopes qa to tasks labelled tests, and " + id + " is of role implementer, with no label"
		if re.Msg != want {
			t.Errorf("%s: message %q, want %q", verb, re.Msg, want)
		}
		if re.Next.Advice != AdviseOutsideScope {
			t.Errorf("%s: next %+v, want %s", verb, re.Next, AdviseOutsideScope)
		}
	}
	if s := e.Store.SummaryByID(id); s.Task.Queue != taskfile.Provisional {
		t.Errorf("the task moved to %s", s.Task.Queue)
	}
	refused := map[string]bool{}
	for _, ev := range events(t, dir) {
		if d, ok := payload(t, &ev).(*AuthorityData); ok && d.Rule == "reviewer_scope" && ev.Actor == "qa" {
			refused[d.Verb] = true
		}
	}
	if len(refused) != 3 {
		t.Errorf("authority.refused events for %v, want reject, approve and review", refused)
	}
}

// TestReviewerScopeRecordsGround: inside its scope a scoped reviewer acts,
// and the event and commit say on what ground; an unscoped reviewer and a
// human record none.
func TestReviewerScopeRecordsGround(t *testing.T) {
	cfg := "base_branch: main\nreview:\n  reviewers:\n    - lead\n    - {name: qa, labels: [tests]}\n    - {name: boss, labels: [nothing]}\nhumans: [tester, boss]\n"
	dir, ids := scopeRepo(t, cfg, map[string][]string{"Tests": {"ui", "tests"}, "API": nil, "Docs": nil})

	e := openAs(t, dir, "qa", true)
	if _, err := e.Reject(ids["Tests"], "the retry path has no test"); err != nil {
		t.Fatal(err)
	}
	e.Close()
	e = openAs(t, dir, "lead", true)
	if _, err := e.Approve(ids["API"], ""); err != nil {
		t.Fatal(err)
	}
	e.Close()
	e = openAs(t, dir, "boss", false) // a human: a scope does not bind
	if e.Kind != KindHuman {
		t.Fatalf("boss is %s", e.Kind)
	}
	if _, err := e.Approve(ids["Docs"], ""); err != nil {
		t.Fatal(err)
	}
	e.Close()

	grounds := map[string]string{}
	for _, ev := range events(t, dir) {
		switch d := payload(t, &ev).(type) {
		case *RejectData:
			grounds[ev.Task] = d.Ground
		case *ApproveData:
			grounds[ev.Task] = d.Ground
		}
	}
	if len(grounds) != 3 || grounds[ids["Tests"]] != "label tests" || grounds[ids["API"]] != "" || grounds[ids["Docs"]] != "" {
		t.Errorf("grounds %v", grounds)
	}
	e = openAs(t, dir, "tester", false)
	defer e.Close()
	entries, err := e.Log(ids["Tests"], 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Action != "reject" || entries[0].LockedOut != "agent-a" {
		t.Errorf("log %+v", entries)
	}
}
