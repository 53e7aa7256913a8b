// Command fleet measures claims across clones (issue 21): N clones of one
// bare remote on the local disk, one agent per clone looping
// `orch claim --sync --json` until orch answers "nothing to claim" (exit 3),
// with git's fetch, push and ls-remote delayed by a latency wrapper put
// first on the agents' PATH. For each latency and each N it prints claims
// per second, the p50 and p99 latency of a successful claim, the give-ups
// (exit 5: every attempt lost the race) and other failures, the CPU time a
// claim costs (orch, git and the local remote's receive side, all calls
// counted, the lost races' too) and how many cores the agents kept busy
// (that CPU time over the row's wall time: near the machine's core count,
// the row is bound by the CPU, not by the protocol), and checks
// what the race must never break: every task claimed at most once (in the
// answers, and in the remote's final state), every clone converging on one
// state tip after `orch sync`, and `git fsck` clean on the remote.
//
//	go run ./bench/fleet -orch bin/orch [-clones 1,2,4,8] [-latency 0,150ms] [-tasks 120] [-tsv] [-keep DIR]
//
// Each row starts from scratch: a new repository with `orch init` and
// -tasks `orch new` tasks (all ready, no roster), pushed to a new bare
// remote, N clones of it, and `orch sync` once in each clone (untimed,
// without the delay). The latency wrapper is a `git` shell script that
// sleeps before fetch, push and ls-remote (wherever the subcommand is, past
// git's global options such as -C DIR or --git-dir DIR) and then runs the
// real git by its absolute path; it is on the agents' PATH at 0 ms too, so
// that the rows differ only by the delay. It only drives the orch binary,
// so it measures whatever claim protocol that binary implements.
//
// Progress and a detail line per row go to stderr; the table goes to
// stdout. The exit status is 1 when an invariant broke (a double claim, a
// claim missing from the remote, clones not converging, fsck) or a row
// failed to run.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/orch-tool/orch/bench/internal/machine"

	"github.com/orch-tool/orch/internal/text"
)

// Exit codes of orch (docs/design.md §9) the loop tells apart.
const (
	exitNothing  = 3 // nothing to claim: the agent is done
	exitConflict = 5 // every attempt lost the race: a give-up
)

// maxConsecutiveFailures stops an agent whose claims fail otherwise (not a
// give-up) this many times in a row: something is broken, not busy.
const maxConsecutiveFailures = 5

type config struct {
	orch    string // absolute path of the orch binary
	git     string // absolute path of the real git
	tasks   int
	timeout time.Duration
	arbiter string   // claim_arbiter for config.yaml ("": the default)
	base    []string // environment of every command
	work    string   // the run's directory
}

func main() {
	bin := flag.String("orch", "", "the orch binary (required)")
	clonesF := flag.String("clones", "1,2,4,8", "comma-separated numbers of clones (one agent each)")
	latF := flag.String("latency", "0,150ms", "comma-separated delays added to each git fetch, push and ls-remote")
	tasks := flag.Int("tasks", 120, "ready tasks in each row's repository")
	tsv := flag.Bool("tsv", false, "print a tab-separated header line and one line per row instead of the markdown table")
	keep := flag.String("keep", "", "keep the repositories in this directory (default: a temp dir, removed at the end)")
	timeout := flag.Duration("timeout", 15*time.Minute, "per row: agents start no new claim after this")
	arbiter := flag.String("arbiter", "", "claim_arbiter written to config.yaml (state_branch or claim_ref; empty: the default)")
	flag.Parse()
	if *bin == "" || flag.NArg() > 0 || *tasks < 1 {
		fmt.Fprintln(os.Stderr, "usage: fleet -orch BIN [-clones 1,2,4,8] [-latency 0,150ms] [-tasks 120] [-tsv] [-keep DIR] [-timeout 15m]")
		os.Exit(2)
	}
	clones, err := parseInts(*clonesF)
	if err != nil {
		fatal(fmt.Errorf("-clones: %v", err))
	}
	lats, err := parseDurations(*latF)
	if err != nil {
		fatal(fmt.Errorf("-latency: %v", err))
	}

	c := &config{tasks: *tasks, timeout: *timeout, arbiter: *arbiter}
	if c.orch, err = machine.Binary(*bin); err != nil {
		fatal(err)
	}
	if c.git, err = exec.LookPath("git"); err != nil {
		fatal(err)
	}
	if c.git, err = filepath.Abs(c.git); err != nil {
		fatal(err)
	}
	if *keep != "" {
		if err := os.MkdirAll(*keep, 0o777); err != nil {
			fatal(err)
		}
		c.work, err = filepath.Abs(*keep)
	} else {
		c.work, err = os.MkdirTemp("", "orch-fleet.")
		cleanup = func() { os.RemoveAll(c.work) }
	}
	if err != nil {
		fatal(err)
	}
	if c.base, err = isolatedEnv(c.work); err != nil {
		fatal(err)
	}

	loadStart := machine.Loadavg()
	var rows []*row
	failed := false
	for _, lat := range lats {
		for _, n := range clones {
			fmt.Fprintf(os.Stderr, "fleet: %d clone(s), %s, %d tasks\n", n, fmtLatency(lat), c.tasks)
			r, err := c.runRow(n, lat)
			if err != nil {
				fmt.Fprintf(os.Stderr, "fleet: %d clone(s), %s: %v\n", n, fmtLatency(lat), err)
				failed = true
				continue
			}
			r.detail(os.Stderr)
			if !r.ok(c.tasks) {
				failed = true
			}
			rows = append(rows, r)
		}
	}

	if *tsv {
		fmt.Println(strings.Join(columns, "\t"))
		for _, r := range rows {
			fmt.Println(strings.Join(r.cells(), "\t"))
		}
	} else {
		fmt.Printf("orch %s; %s; %d cores; %d ready tasks per row; load average %s at the start, %s at the end; %s\n\n",
			c.version(), c.gitVersion(), runtime.NumCPU(), c.tasks, loadStart, machine.Loadavg(), time.Now().Format("2006-01-02"))
		fmt.Println("| " + strings.Join(columns, " | ") + " |")
		fmt.Println("|" + strings.Repeat("---:|", len(columns)))
		for _, r := range rows {
			fmt.Println("| " + strings.Join(r.cells(), " | ") + " |")
		}
	}
	cleanup()
	if failed {
		os.Exit(1)
	}
}

// cleanup removes the run's temp directory (not a -keep directory).
var cleanup = func() {}

var columns = []string{"clones", "latency", "claims", "seconds", "claims/s", "p50 ms", "p99 ms", "remote ops/claim",
	"CPU ms/claim", "cores busy", "give-ups", "other failures", "double claims", "remote claims", "converged", "fsck"}

// row is one (latency, N) measurement.
type row struct {
	clones    int
	latency   time.Duration
	claims    int // successful claim answers
	seconds   float64
	lat       []float64     // wall time of each successful claim, ms
	giveups   int           // exit 5
	fails     int           // any other failure: exit code not 0, 3 or 5, an unreadable answer, an answer naming another agent
	retries   int           // claims undone after a lost race (orch's notes, in every call)
	remOps    int           // fetch, push and ls-remote calls through the wrapper
	cpu       time.Duration // user and system time of every claim call, with the git processes it waited for (the remote's side included)
	doubles   int           // extra claims of a task, by any evidence
	remote    int           // tasks claimed in the remote's final state
	claimRefs int           // refs under refs/orch/claims/ on the remote at the end
	conv      bool
	fsck      string
	notes     []string // what went wrong, for the detail line
}

func (r *row) cells() []string {
	sort.Float64s(r.lat)
	rate, ops, cpu, busy := 0.0, "-", "-", "-"
	if r.seconds > 0 {
		rate = float64(r.claims) / r.seconds
		busy = fmt.Sprintf("%.2f", r.cpu.Seconds()/r.seconds)
	}
	if r.claims > 0 {
		ops = fmt.Sprintf("%.1f", float64(r.remOps)/float64(r.claims))
		cpu = fmt.Sprintf("%.0f", float64(r.cpu.Milliseconds())/float64(r.claims))
	}
	conv := "yes"
	if !r.conv {
		conv = "NO"
	}
	return []string{
		strconv.Itoa(r.clones), fmtLatency(r.latency), strconv.Itoa(r.claims),
		fmt.Sprintf("%.1f", r.seconds), fmt.Sprintf("%.1f", rate),
		fmtMs(percentile(r.lat, 50)), fmtMs(percentile(r.lat, 99)), ops, cpu, busy,
		strconv.Itoa(r.giveups), strconv.Itoa(r.fails), strconv.Itoa(r.doubles),
		strconv.Itoa(r.remote), conv, r.fsck,
	}
}

func (r *row) ok(tasks int) bool {
	return r.doubles == 0 && r.conv && r.fsck == "clean" && r.remote == r.claims && r.claims == tasks && r.fails == 0
}

func (r *row) detail(w *os.File) {
	sort.Float64s(r.lat)
	fmt.Fprintf(w, "fleet:   %d claims in %.1f s; claim ms p50 %s p90 %s p99 %s max %s; %d claims undone after a lost race; %d give-ups; %d other failures; %d remote ops; %d claim refs on the remote\n",
		r.claims, r.seconds, fmtMs(percentile(r.lat, 50)), fmtMs(percentile(r.lat, 90)), fmtMs(percentile(r.lat, 99)), fmtMs(percentile(r.lat, 100)),
		r.retries, r.giveups, r.fails, r.remOps, r.claimRefs)
	for _, n := range r.notes {
		fmt.Fprintln(w, "fleet:   "+n)
	}
}

func (r *row) note(format string, a ...any) {
	r.notes = append(r.notes, fmt.Sprintf(format, a...))
}

// runRow builds the repositories of one row, runs the agents and checks
// the result.
func (c *config) runRow(n int, lat time.Duration) (*row, error) {
	dir := filepath.Join(c.work, fmt.Sprintf("n%d-%dms", n, lat.Milliseconds()))
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, err
	}
	remote, clones, err := c.setup(dir, n)
	if err != nil {
		return nil, err
	}
	wrapper := filepath.Join(dir, "latency-bin")
	gitlog := filepath.Join(dir, "remote-ops.log")
	if err := c.writeWrapper(wrapper, lat); err != nil {
		return nil, err
	}
	if err := c.checkWrapper(wrapper, remote, lat); err != nil {
		return nil, err
	}
	agentEnv := append(envWithout(c.base, "PATH", "FLEET_GITLOG"),
		"PATH="+wrapper+string(os.PathListSeparator)+os.Getenv("PATH"), "FLEET_GITLOG="+gitlog)

	r := &row{clones: n, latency: lat}
	claimedBy := map[string][]string{} // task -> agents, from the answers
	callLog, err := os.Create(filepath.Join(dir, "calls.log"))
	if err != nil {
		return nil, err
	}
	defer callLog.Close()
	var mu sync.Mutex
	var wg sync.WaitGroup
	deadline := time.Now().Add(c.timeout)
	start := time.Now()
	for i, clone := range clones {
		wg.Add(1)
		go func(agent, clone string) {
			defer wg.Done()
			consecutive := 0
			for {
				if time.Now().After(deadline) {
					mu.Lock()
					r.note("%s: stopped at the -timeout (%s)", agent, c.timeout)
					mu.Unlock()
					return
				}
				cmd := exec.Command(c.orch, "claim", "--sync", "--json")
				cmd.Dir = clone
				// A full slice expression: each command's environment
				// is a copy, never agentEnv's spare capacity, which the
				// agents' goroutines would share.
				cmd.Env = append(agentEnv[:len(agentEnv):len(agentEnv)], "ORCH_AGENT="+agent)
				var out, errb bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &errb
				t0 := time.Now()
				err := cmd.Run()
				ms := float64(time.Since(t0).Microseconds()) / 1000
				code := 0
				var ee *exec.ExitError
				if errors.As(err, &ee) {
					code = ee.ExitCode()
				} else if err != nil {
					code = -1
				}
				mu.Lock()
				if ps := cmd.ProcessState; ps != nil {
					// wait4's usage of a child includes the children it
					// waited for: git push, and the receive-pack of the
					// local remote that push waited for.
					r.cpu += ps.UserTime() + ps.SystemTime()
				}
				// agent, start and end (ms since the row started), exit
				// code, stdout, stderr: the evidence when a check fails.
				fmt.Fprintf(callLog, "%s\t%.1f\t%.1f\t%d\t%s\t%s\n", agent, msSince(start, t0), msSince(start, t0)+ms, code,
					text.OneLine(out.String()), text.OneLine(errb.String()))
				r.retries += strings.Count(errb.String(), "undid the claim")
				switch {
				case code == exitNothing:
					mu.Unlock()
					return
				case code == exitConflict:
					r.giveups++
					consecutive = 0
				case code != 0:
					r.fails++
					consecutive++
					r.note("%s: exit %d: %s", agent, code, oneLine(errb.String()+" "+out.String()))
				default:
					var res struct {
						Task struct {
							ID        string `json:"id"`
							ClaimedBy string `json:"claimed_by"`
						} `json:"task"`
					}
					if jerr := json.Unmarshal(out.Bytes(), &res); jerr != nil || res.Task.ID == "" {
						r.fails++
						consecutive++
						r.note("%s: unreadable answer %q", agent, oneLine(out.String()))
						break
					}
					if res.Task.ClaimedBy != agent {
						r.fails++
						r.note("%s: the answer claims %s for %q", agent, res.Task.ID, res.Task.ClaimedBy)
					}
					consecutive = 0
					r.claims++
					r.lat = append(r.lat, ms)
					claimedBy[res.Task.ID] = append(claimedBy[res.Task.ID], agent)
				}
				stop := consecutive >= maxConsecutiveFailures
				if stop {
					r.note("%s: stopped after %d failures in a row", agent, consecutive)
				}
				mu.Unlock()
				if stop {
					return
				}
			}
		}("agent-"+strconv.Itoa(i), clone)
	}
	wg.Wait()
	r.seconds = time.Since(start).Seconds()
	r.remOps = countLines(gitlog)

	c.verify(r, remote, clones, claimedBy)
	return r, nil
}

// setup makes the origin repository with its tasks, the bare remote and
// the n clones, each synced once.
func (c *config) setup(dir string, n int) (string, []string, error) {
	origin := filepath.Join(dir, "origin")
	remote := filepath.Join(dir, "remote.git")
	if err := os.MkdirAll(origin, 0o777); err != nil {
		return "", nil, err
	}
	if err := os.WriteFile(filepath.Join(origin, "README.md"), []byte("# fleet bench\n"), 0o666); err != nil {
		return "", nil, err
	}
	steps := [][]string{
		{c.git, "init", "-q", "-b", "main"},
		{c.git, "add", "README.md"},
		{c.git, "commit", "-q", "-m", "fleet bench: first commit"},
		{c.orch, "init"},
	}
	for _, s := range steps {
		if _, err := c.run(origin, nil, s...); err != nil {
			return "", nil, err
		}
	}
	if c.arbiter != "" {
		// A person's edit of the config, committed by the next command.
		cfg := filepath.Join(origin, ".orchestrator", "config.yaml")
		data, err := os.ReadFile(cfg)
		if err != nil {
			return "", nil, err
		}
		// orch init wrote every key with its default: change that line.
		edited := regexp.MustCompile(`(?m)^claim_arbiter: [a-z_]+`).ReplaceAllLiteralString(string(data), "claim_arbiter: "+c.arbiter)
		if err := os.WriteFile(cfg, []byte(edited), 0o666); err != nil {
			return "", nil, err
		}
	}
	for i := 1; i <= c.tasks; i++ {
		if _, err := c.run(origin, nil, c.orch, "new", fmt.Sprintf("Fleet task %03d", i)); err != nil {
			return "", nil, err
		}
	}
	if _, err := c.run(dir, nil, c.git, "init", "-q", "--bare", "-b", "main", remote); err != nil {
		return "", nil, err
	}
	if _, err := c.run(origin, nil, c.git, "push", "-q", remote, "main", "orch"); err != nil {
		return "", nil, err
	}
	var clones []string
	for i := 0; i < n; i++ {
		clone := filepath.Join(dir, "clone-"+strconv.Itoa(i))
		if _, err := c.run(dir, nil, c.git, "clone", "-q", remote, clone); err != nil {
			return "", nil, err
		}
		// The first orch command of a clone creates its state branch
		// from origin's and writes the view: done here, untimed.
		if _, err := c.run(clone, []string{"ORCH_AGENT=agent-" + strconv.Itoa(i)}, c.orch, "sync"); err != nil {
			return "", nil, err
		}
		clones = append(clones, clone)
	}
	return remote, clones, nil
}

// writeWrapper writes dir/git: sleep before fetch, push and ls-remote,
// then the real git.
func (c *config) writeWrapper(dir string, lat time.Duration) error {
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return err
	}
	sleep := ":"
	if lat > 0 {
		sleep = fmt.Sprintf("sleep %.3f", lat.Seconds())
	}
	script := `#!/bin/sh
# bench/fleet's latency wrapper: delays git's remote operations.
sub=
skip=
for a in "$@"; do
	if [ -n "$skip" ]; then skip=; continue; fi
	case $a in
	-C|-c|--git-dir|--work-tree|--namespace|--config-env|--super-prefix) skip=1 ;;
	-*) ;;
	*) sub=$a; break ;;
	esac
done
case $sub in
fetch|push|ls-remote)
	[ -n "$FLEET_GITLOG" ] && echo "$sub" >>"$FLEET_GITLOG"
	` + sleep + `
	;;
esac
exec ` + shQuote(c.git) + ` "$@"
`
	return os.WriteFile(filepath.Join(dir, "git"), []byte(script), 0o777)
}

// checkWrapper times `git --git-dir REMOTE ls-remote REMOTE` through the
// wrapper (the global-option form orch uses): it must take the delay.
func (c *config) checkWrapper(dir, remote string, lat time.Duration) error {
	cmd := exec.Command(filepath.Join(dir, "git"), "--git-dir", remote, "ls-remote", remote)
	cmd.Env = c.base
	t0 := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("latency wrapper: %v: %s", err, out)
	}
	if d := time.Since(t0); d < lat {
		return fmt.Errorf("latency wrapper: ls-remote took %s, less than %s", d, lat)
	}
	return nil
}

// verify checks the row's invariants: no task claimed twice, every clone
// on one state tip after two rounds of `orch sync`, git fsck clean on the
// remote. A task's claims are counted from every source: the answers, the
// remote's final state (claimed_by, worked_by, attempts) and the claim
// events of its event logs; two agents named anywhere, or two claims of
// one source, are a double claim.
func (c *config) verify(r *row, remote string, clones []string, claimedBy map[string][]string) {
	type evidence struct {
		agents map[string]bool
		most   int // the most claims one source counts
		why    []string
	}
	tasks := map[string]*evidence{}
	add := func(id string, n int, why string, agents ...string) {
		e := tasks[id]
		if e == nil {
			e = &evidence{agents: map[string]bool{}}
			tasks[id] = e
		}
		for _, a := range agents {
			if a != "" {
				e.agents[a] = true
			}
		}
		e.most = max(e.most, n)
		e.why = append(e.why, why)
	}
	for id, agents := range claimedBy {
		add(id, len(agents), "answered to "+strings.Join(agents, ", "), agents...)
	}

	// Two rounds of sync (no delay): the first brings every clone's last
	// claims to the remote, the second brings the remote to every clone.
	for round := 1; round <= 2; round++ {
		for i, clone := range clones {
			if out, err := c.run(clone, []string{"ORCH_AGENT=agent-" + strconv.Itoa(i)}, c.orch, "sync", "--json"); err != nil {
				r.note("sync %d in clone-%d: %v %s", round, i, err, oneLine(out))
			}
		}
	}
	tip, err := c.run(remote, nil, c.git, "rev-parse", "refs/heads/orch")
	r.conv = err == nil
	for i, clone := range clones {
		t, err := c.run(clone, nil, c.git, "rev-parse", "refs/heads/orch")
		if err != nil || strings.TrimSpace(t) != strings.TrimSpace(tip) {
			r.conv = false
			r.note("clone-%d's orch is %s, the remote's %s", i, short(t), short(tip))
		}
	}

	// The remote's final state, read in clone-0 after the syncs.
	out, err := c.run(clones[0], nil, c.orch, "list", "--json")
	var list struct {
		Tasks []struct {
			ID        string   `json:"id"`
			Queue     string   `json:"queue"`
			ClaimedBy string   `json:"claimed_by"`
			WorkedBy  []string `json:"worked_by"`
			Attempts  int      `json:"attempts"`
		} `json:"tasks"`
	}
	if err == nil {
		err = json.Unmarshal([]byte(out), &list)
	}
	if err != nil {
		r.note("orch list --json in clone-0: %v", err)
	}
	for _, t := range list.Tasks {
		if t.ClaimedBy == "" {
			if len(claimedBy[t.ID]) > 0 {
				r.note("%s was answered to %s but is %s, unclaimed, on the remote", t.ID, claimedBy[t.ID][0], t.Queue)
			}
			continue
		}
		r.remote++
		add(t.ID, max(len(t.WorkedBy), t.Attempts, 1),
			fmt.Sprintf("claimed_by %s, worked_by %v, attempts %d on the remote", t.ClaimedBy, t.WorkedBy, t.Attempts),
			append([]string{t.ClaimedBy}, t.WorkedBy...)...)
		if len(claimedBy[t.ID]) == 0 {
			r.note("%s is claimed by %s on the remote, but no answer claimed it", t.ID, t.ClaimedBy)
		}
	}

	// The event logs on the remote's state branch.
	events, conflicts, err := c.events(remote)
	if err != nil {
		r.note("event logs: %v", err)
	}
	for id, actors := range events {
		add(id, len(actors), fmt.Sprintf("claim events on the remote by %s", strings.Join(actors, ", ")), actors...)
	}
	if conflicts > 0 {
		r.note("%d sync.conflict events on the remote", conflicts)
	}

	ids := make([]string, 0, len(tasks))
	for id := range tasks {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		e := tasks[id]
		if n := max(e.most, len(e.agents)); n > 1 {
			r.doubles += n - 1
			r.note("double claim of %s: %s", id, strings.Join(e.why, "; "))
		}
	}

	// Claim refs (refs/orch/claims/<id>), where the binary keeps them:
	// counted for the detail line only, their layout is the binary's.
	if refs, err := c.run(remote, nil, c.git, "for-each-ref", "--format=%(refname)", "refs/orch/claims/"); err == nil {
		r.claimRefs = len(strings.Fields(refs))
	}

	r.fsck = "clean"
	fout, ferr := c.run(remote, nil, c.git, "fsck", "--no-progress", "--no-dangling")
	if ferr != nil || strings.TrimSpace(fout) != "" {
		r.fsck = "FAILED"
		r.note("git fsck: %v %s", ferr, oneLine(fout))
	}
}

// events returns the actors of the claim events of each task, and the
// number of sync.conflict events, in the event logs of the remote's state
// branch (events/*.jsonl).
func (c *config) events(remote string) (map[string][]string, int, error) {
	names, err := c.run(remote, nil, c.git, "ls-tree", "-r", "--name-only", "refs/heads/orch", "--", "events")
	if err != nil {
		return nil, 0, err
	}
	claims, conflicts := map[string][]string{}, 0
	for _, name := range strings.Fields(names) {
		body, err := c.run(remote, nil, c.git, "cat-file", "blob", "refs/heads/orch:"+name)
		if err != nil {
			return claims, conflicts, err
		}
		for _, line := range strings.Split(body, "\n") {
			var ev struct {
				Task   string `json:"task"`
				Action string `json:"action"`
				Actor  string `json:"actor"`
			}
			if json.Unmarshal([]byte(line), &ev) != nil {
				continue
			}
			switch ev.Action {
			case "claim":
				claims[ev.Task] = append(claims[ev.Task], ev.Actor)
			case "sync.conflict":
				conflicts++
			}
		}
	}
	return claims, conflicts, nil
}

// run runs a command without the latency wrapper and returns its stdout;
// the error carries stderr.
func (c *config) run(dir string, env []string, args ...string) (string, error) {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	cmd.Env = append(append([]string{}, c.base...), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s %s: %v: %s", filepath.Base(args[0]), strings.Join(args[1:], " "), err, oneLine(errb.String()))
	}
	return out.String(), nil
}

func (c *config) version() string {
	out, err := c.run(c.work, nil, c.orch, "version")
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(strings.SplitN(out, "\n", 2)[0])
}

func (c *config) gitVersion() string {
	out, err := c.run(c.work, nil, c.git, "--version")
	if err != nil {
		return "git ?"
	}
	return strings.TrimSpace(out)
}
