package e2e

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// handRaceLong selects the long form of the hand-edit race:
//
//	go test ./e2e -run HandEditsRace -handrace.long -v
var handRaceLong = flag.Bool("handrace.long", false, "run the hand-edit race at full length (minutes, thousands of saves)")

// handSaveKinds are the ways a person's editor saves a view file. Each adds
// one new line at the end of the file.
var handSaveKinds = []string{
	"append",  // printf 'line\n' >> file
	"rename",  // write a copy beside the file, rename it over the file
	"backup",  // rename the file to file~, write a new file, remove file~ (vim's writebackup)
	"inplace", // read, truncate, write the whole text (vim's backupcopy=yes)
	"twice",   // two appends with nothing between them (saving twice)
	"slow",    // cat >> file: open, a line, a pause, a line, close
}

// handRaceSetup is one run of the race.
type handRaceSetup struct {
	tasks, agents int
	// minGap and maxGap bound the pause between two saves of the person.
	minGap, maxGap time.Duration
	duration       time.Duration
}

// TestHandEditsRaceTransitions: agents loop claim → commit on the task's
// branch → submit → reject, each step a real orch process, while a person
// appends lines to the task files in the view with every kind of save, at
// 1–250 ms. Every line the person saved must end up on the state branch,
// or in a view file orch reports in conflict; after one quiet command the
// view equals the branch.
func TestHandEditsRaceTransitions(t *testing.T) {
	runs := []struct {
		name  string
		setup handRaceSetup
	}{
		{"one task", handRaceSetup{tasks: 1, agents: 1, minGap: time.Millisecond, maxGap: 40 * time.Millisecond, duration: time.Duration(scale(3000, 1200)) * time.Millisecond}},
		{"several tasks", handRaceSetup{tasks: 4, agents: 3, minGap: time.Millisecond, maxGap: 40 * time.Millisecond, duration: time.Duration(scale(3000, 1200)) * time.Millisecond}},
	}
	if *handRaceLong {
		runs = []struct {
			name  string
			setup handRaceSetup
		}{
			{"one task, 1-10 ms", handRaceSetup{tasks: 1, agents: 1, minGap: time.Millisecond, maxGap: 10 * time.Millisecond, duration: 60 * time.Second}},
			{"one task, 50-250 ms", handRaceSetup{tasks: 1, agents: 1, minGap: 50 * time.Millisecond, maxGap: 250 * time.Millisecond, duration: 60 * time.Second}},
			{"seven tasks, six agents", handRaceSetup{tasks: 7, agents: 6, minGap: time.Millisecond, maxGap: 50 * time.Millisecond, duration: 120 * time.Second}},
		}
	}
	for _, run := range runs {
		t.Run(run.name, func(t *testing.T) { runHandRace(t, run.setup) })
	}
}

func runHandRace(t *testing.T, s handRaceSetup) {
	r := NewRepo(t)
	// The loop never escalates or locks anyone out: the agents go round and
	// round for the whole run.
	cfgPath := filepath.Join(r.Main, ".orchestrator", "config.yaml")
	cfg, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	cfg = bytes.Replace(cfg, []byte("max_rejections: 3"), []byte("max_rejections: 100000"), 1)
	cfg = bytes.Replace(cfg, []byte("lockout: true"), []byte("lockout: false"), 1)
	if err := os.WriteFile(cfgPath, cfg, 0o666); err != nil {
		t.Fatal(err)
	}
	r.MustOrch(r.Main, "check")

	type task struct{ id, path string }
	tasks := make([]task, s.tasks)
	for i := range tasks {
		var out struct {
			Task struct {
				ID   string `json:"id"`
				Path string `json:"path"`
			} `json:"task"`
		}
		res := r.MustOrch(r.Main, "new", fmt.Sprintf("Hand race task %d", i), "--json")
		if err := res.JSON(&out); err != nil {
			t.Fatal(err)
		}
		tasks[i] = task{out.Task.ID, strings.TrimPrefix(out.Task.Path, ".orchestrator/")}
	}
	viewFile := func(tk task) string {
		return filepath.Join(r.Main, ".orchestrator", filepath.FromSlash(tk.path))
	}
	if _, err := os.Stat(viewFile(tasks[0])); err != nil {
		t.Fatalf("task path %q is not the view file: %v", tasks[0].path, err)
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var cycles, agentFails atomic.Int64
	var failMu sync.Mutex
	var fails []string
	fail := func(res Result) {
		agentFails.Add(1)
		failMu.Lock()
		if len(fails) < 5 {
			fails = append(fails, res.String())
		}
		failMu.Unlock()
	}
	stopped := func() bool {
		select {
		case <-stop:
			return true
		default:
			return false
		}
	}
	for a := 0; a < s.agents; a++ {
		wg.Add(1)
		go func(a int) {
			defer wg.Done()
			agent := fmt.Sprintf("agent-%d", a)
			for !stopped() {
				res := r.Orch(r.Main, "claim", "--json", "--agent", agent)
				if res.Code == 3 {
					time.Sleep(5 * time.Millisecond)
					continue
				}
				if !res.OK() {
					fail(res)
					time.Sleep(5 * time.Millisecond)
					continue
				}
				var out struct {
					Task   struct{ ID string } `json:"task"`
					Branch string              `json:"branch"`
				}
				if err := res.JSON(&out); err != nil {
					fail(res)
					continue
				}
				// A commit on the task's branch, made with plumbing so that
				// no worktree has to check the branch out.
				ref := "refs/heads/" + out.Branch
				ct := r.TryGit(r.Main, "commit-tree", "-p", ref, "-m", "work of "+agent, ref+"^{tree}")
				if !ct.OK() {
					fail(ct)
					continue
				}
				if up := r.TryGit(r.Main, "update-ref", ref, strings.TrimSpace(ct.Stdout)); !up.OK() {
					fail(up)
					continue
				}
				if res := r.Orch(r.Main, "submit", out.Task.ID, "--agent", agent); !res.OK() {
					fail(res)
					continue
				}
				if res := r.Orch(r.Main, "reject", out.Task.ID, "-m", "Another round, please.", "--agent", "lead"); !res.OK() {
					fail(res)
					continue
				}
				cycles.Add(1)
			}
		}(a)
	}

	// The person: one line at a time, to a random task, with a random kind
	// of save.
	lines := map[string][]string{} // task id -> lines saved
	kinds := map[string]int{}
	var personErr error
	personDone := make(chan struct{})
	go func() {
		defer close(personDone)
		rng := rand.New(rand.NewSource(time.Now().UnixNano()))
		n := 0
		for !stopped() {
			gap := s.minGap + time.Duration(rng.Int63n(int64(s.maxGap-s.minGap)+1))
			time.Sleep(gap)
			tk := tasks[rng.Intn(len(tasks))]
			kind := handSaveKinds[rng.Intn(len(handSaveKinds))]
			var saved []string
			if kind == "slow" {
				a, b := fmt.Sprintf("hand line %05d (%s)", n+1, kind), fmt.Sprintf("hand line %05d (%s)", n+2, kind)
				n += 2
				if err := slowAppend(viewFile(tk), a, b, gap); err != nil {
					personErr = fmt.Errorf("%s save of %s: %v", kind, tk.path, err)
					return
				}
				saved = append(saved, a, b)
			}
			for k := 0; kind != "slow" && (k < 1 || kind == "twice" && k < 2); k++ {
				n++
				line := fmt.Sprintf("hand line %05d (%s)", n, kind)
				if err := handSave(viewFile(tk), kind, line); err != nil {
					personErr = fmt.Errorf("%s save of %s: %v", kind, tk.path, err)
					return
				}
				saved = append(saved, line)
			}
			lines[tk.id] = append(lines[tk.id], saved...)
			kinds[kind]++
		}
	}()

	time.Sleep(s.duration)
	close(stop)
	wg.Wait()
	<-personDone
	if personErr != nil {
		t.Fatal(personErr)
	}

	// One quiet command commits what the last saves left in the view.
	check := r.Orch(r.Main, "check", "--json")
	var report struct {
		Problems []struct {
			Path string `json:"path"`
		} `json:"problems"`
	}
	_ = json.Unmarshal([]byte(check.Stdout), &report)
	conflicted := map[string]bool{}
	for _, c := range report.Problems {
		conflicted[c.Path] = true
	}

	made, onBranch, inConflict, lost, doubled := 0, 0, 0, 0, 0
	var lostLines []string
	for _, tk := range tasks {
		show := r.TryGit(r.Main, "show", "orch:"+tk.path)
		if !show.OK() {
			t.Fatal(show)
		}
		branch := show.Stdout
		view, err := os.ReadFile(viewFile(tk))
		if err != nil {
			t.Fatal(err)
		}
		reported := conflicted[".orchestrator/"+tk.path] || conflicted[tk.path]
		for _, l := range lines[tk.id] {
			made++
			switch {
			case strings.Contains(branch, l+"\n"):
				onBranch++
				if strings.Count(branch, l+"\n") > 1 {
					doubled++
				}
			case reported && bytes.Contains(view, []byte(l+"\n")):
				inConflict++
			default:
				lost++
				if len(lostLines) < 10 {
					where := "not in the view either"
					if bytes.Contains(view, []byte(l+"\n")) {
						where = "in the view"
					}
					lostLines = append(lostLines, tk.id+": "+l+" ("+where+")")
				}
			}
		}
		if !reported && string(view) != branch {
			t.Errorf("%s: the view differs from the branch after a quiet command and no conflict is reported\ncheck: %s", tk.path, check.Stdout)
		}
	}
	failMu.Lock()
	t.Logf("%d agent cycles (%d steps failed), %d saves %v: %d lines made, %d on the branch, %d in a reported conflict, %d lost, %d doubled",
		cycles.Load(), agentFails.Load(), len(kinds), kinds, made, onBranch, inConflict, lost, doubled)
	for _, f := range fails {
		t.Logf("agent step failed: %s", f)
	}
	failMu.Unlock()
	if lost > 0 {
		t.Errorf("%d of %d lines lost, first: %s\ncheck: %s", lost, made, strings.Join(lostLines, "; "), check.Stdout)
	}
	if doubled > 0 {
		t.Errorf("%d lines appear twice on the branch", doubled)
	}
	if cycles.Load() == 0 {
		t.Errorf("no agent finished a cycle")
	}
	r.Fsck()
}

// handSave adds line to the file at p the way an editor of that kind saves.
func handSave(p, kind, line string) error {
	switch kind {
	case "append", "twice":
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return err
		}
		_, werr := f.WriteString(line + "\n")
		return errorsJoin(werr, f.Close())
	}
	old, err := readRetry(p)
	if err != nil {
		return err
	}
	data := append(old, []byte(line+"\n")...)
	switch kind {
	case "rename":
		tmp := filepath.Join(filepath.Dir(p), "."+filepath.Base(p)+".swp")
		if err := os.WriteFile(tmp, data, 0o644); err != nil {
			return err
		}
		return os.Rename(tmp, p)
	case "backup":
		bak := p + "~"
		if err := os.Rename(p, bak); err != nil {
			return err
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return err
		}
		return os.Remove(bak)
	case "inplace":
		return os.WriteFile(p, data, 0o644)
	}
	return fmt.Errorf("unknown save kind %q", kind)
}

// slowAppend is a person typing into `cat >> file`: the file stays open
// for writing while orch runs.
func slowAppend(p, a, b string, pause time.Duration) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	_, err1 := f.WriteString(a + "\n")
	time.Sleep(pause)
	_, err2 := f.WriteString(b + "\n")
	return errorsJoin(errorsJoin(err1, err2), f.Close())
}

// readRetry reads p, waiting out the moment an editor-style save by orch or
// by the person has the file renamed away.
func readRetry(p string) ([]byte, error) {
	for i := 0; ; i++ {
		data, err := os.ReadFile(p)
		if err == nil || !os.IsNotExist(err) || i == 100 {
			return data, err
		}
		time.Sleep(time.Millisecond)
	}
}

func errorsJoin(a, b error) error {
	if a != nil {
		return a
	}
	return b
}
