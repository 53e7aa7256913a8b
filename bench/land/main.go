// Command land measures landing (docs/design.md §8): what `orch land`
// costs per task against merging by hand, and how land.batch multiplies the
// throughput of a slow check.
//
//	land -orch BIN [-baseline BIN] [-runs 20] [-warmup 2] [-files 5000]
//	     [-history 1000] [-tasks 1000] [-throughput 40] [-check 'sleep 2']
//	     [-batches 1,4] [-cost=false] [-v] [-keep]
//
// Every repository is of the same realistic size: a main branch of -files
// source files with -history commits (git fast-import), orch init, and a
// state branch of -tasks tasks in the realistic mix of every queue
// (bench/repogen, appended to what orch init wrote). The approved tasks are
// made by the orch binary as an agent and a lead would make them: orch new,
// orch claim --worktree, a commit in the worktree adding a file of its own
// (so that no two conflict), orch submit, orch approve.
//
// Cost per task, with the trivial check land.check: "true", twice: without
// a remote (`orch land` against `git merge --no-ff <branch>`) and with a
// local bare remote (`orch land --push` against `git merge --no-ff <branch>
// && git push origin main`). Each pair shares one repository, whose main is
// checked out in a clean checkout (a person's, which orch land advances as
// git merge --ff-only would; the hand merge happens there). The hand
// branches are cut from main with plumbing when the approved tasks are
// made, so both sides merge work forked from the same base. A third side,
// the floor, lands more hand branches with the fewest bare git commands
// that check the merge they land (landFloor): what no checked landing can
// cost less than, whatever drives it; the last column is a side's median
// less the floor's (docs/design.md §11 bounds orch's). The sides take
// turns going first, so a busy moment of the machine falls on all; a
// ratio is the median of a side over the median of the hand version's, in
// the same run. With -baseline, another orch binary (an older build) lands
// as many tasks in the same repository, its turn rotating with the others,
// for a row of its own.
// A landing may leave the deletion of the landed worktree's files to a
// process of its own (the trash in the repository's private dir): before
// the next timing the program waits, untimed, until the trash is empty, so
// that the deletion falls on neither side, and says how long it waited.
//
// Throughput: -throughput approved tasks that do not conflict, land.check
// set to -check, `orch land --all` once at each land.batch of -batches, in
// a fresh repository each, without a remote: the wall time and the tasks
// per minute.
//
// Every landing is verified: orch's answer says landed, the approved
// commit (or the hand branch) is an ancestor of main (and of the remote's
// main with a remote), every task is done, and main's tree holds every
// task's file. Anything else ends the program with exit status 1.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/orch-tool/orch/bench/internal/machine"

	"github.com/orch-tool/orch/bench/repogen"
)

type opts struct {
	bin      string
	baseline string // -baseline: another orch binary, "" for none
	files    int
	history  int
	tasks    int
	env      []string
}

func main() {
	bin := flag.String("orch", "orch", "the orch binary")
	baseline := flag.String("baseline", "", "another orch binary to time in the same repositories (cost per task)")
	runs := flag.Int("runs", 20, "timed landings of each kind (cost per task)")
	warm := flag.Int("warmup", 2, "untimed landings of each kind first")
	files := flag.Int("files", 5000, "source files on main")
	history := flag.Int("history", 1000, "commits of history on main")
	tasks := flag.Int("tasks", 1000, "tasks on the state branch besides the approved ones")
	through := flag.Int("throughput", 40, "approved tasks of the throughput rows (0 skips them)")
	checkCmd := flag.String("check", "sleep 2", "land.check of the throughput rows")
	batches := flag.String("batches", "1,4", "land.batch values of the throughput rows")
	cost := flag.Bool("cost", true, "measure the cost per task")
	flag.BoolVar(&verbose, "v", false, "print each landing's times on stderr")
	keep := flag.Bool("keep", false, "keep the repositories (their directory is printed on stderr)")
	flag.Parse()
	abs, err := machine.Binary(*bin)
	check(err)
	tmp, err := os.MkdirTemp("", "orch-land-bench-")
	check(err)
	if *keep {
		fmt.Fprintln(os.Stderr, "land: the repositories are in", tmp)
	} else {
		cleanup = func() { os.RemoveAll(tmp) }
		defer cleanup()
	}
	loadStart := machine.Loadavg()
	o := opts{bin: abs, files: *files, history: *history, tasks: *tasks, env: isolated(tmp)}
	if *baseline != "" {
		o.baseline, err = machine.Binary(*baseline)
		check(err)
	}

	var costLines, throughLines []string
	if *cost {
		for _, remote := range []bool{false, true} {
			costLines = append(costLines, costRows(o, tmp, remote, *runs, *warm)...)
		}
	}
	if *through > 0 {
		var first float64
		for _, f := range strings.Split(*batches, ",") {
			b, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || b < 1 {
				fail("-batches: %q is not a batch size", f)
			}
			secs, cpu := throughput(o, tmp, b, *through, *checkCmd)
			line := fmt.Sprintf("| `orch land --all`, land.batch: %d, land.check: %q | %d | %.1f s | %.1f | %.1f s |", b, *checkCmd, *through, secs, float64(*through)/secs*60, cpu)
			if first == 0 {
				first = secs
				line += " 1.00× |"
			} else {
				line += fmt.Sprintf(" %.2f× |", first/secs)
			}
			throughLines = append(throughLines, line)
		}
	}
	fmt.Printf("%s; %s; %d cores; main: %d files, %d commits; state branch: %d tasks besides the approved ones; load average %s at the start, %s at the end\n\n",
		version(o, o.bin), strings.TrimSpace(string(out(o, "", "git", "--version"))), runtime.NumCPU(), *files, *history, *tasks, loadStart, machine.Loadavg())
	if *cost {
		fmt.Printf("Cost per task, land.check: \"true\" (%d runs after %d warm-ups, alternating):\n\n", *runs, *warm)
		fmt.Println("| landing | median ms | p90 ms | ratio to by hand | median CPU ms | CPU ratio | over the floor ms |")
		fmt.Println("|---|---:|---:|---:|---:|---:|---:|")
		for _, l := range costLines {
			fmt.Println(l)
		}
		fmt.Println()
	}
	if *through > 0 {
		fmt.Println("Throughput, without a remote:")
		fmt.Println()
		fmt.Println("| landing | tasks | wall time | tasks/min | CPU time | speed-up |")
		fmt.Println("|---|---:|---:|---:|---:|---:|")
		for _, l := range throughLines {
			fmt.Println(l)
		}
	}
}

// isolated is the environment of every child: only the repositories' own
// config and a fixed identity, none of the user's.
func isolated(tmp string) []string {
	home := filepath.Join(tmp, "home")
	check(os.MkdirAll(home, 0o777))
	check(os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[user]\n\tname = bench\n\temail = bench@example.com\n[init]\n\tdefaultBranch = main\n"), 0o666))
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "HOME" || k == "XDG_CONFIG_HOME" || k == "GIT_DIR" || k == "GIT_WORK_TREE" || k == "GIT_INDEX_FILE":
		case strings.HasPrefix(k, "ORCH_"):
		default:
			env = append(env, kv)
		}
	}
	return append(env, "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "GIT_CONFIG_NOSYSTEM=1")
}

// costRows lands runs+warm approved tasks one `orch land` at a time and as
// many hand branches by git merge --no-ff (and git push with a remote),
// and as many approved tasks by the -baseline binary, their turns
// rotating, and returns the table rows.
func costRows(o opts, tmp string, remote bool, runs, warm int) []string {
	name := "cost-local"
	if remote {
		name = "cost-remote"
	}
	dir := makeRepo(o, tmp, name, remote)
	setConfig(o, dir, map[string]string{"check": `"true"`})
	n := runs + warm
	bins := []string{o.bin}
	if o.baseline != "" {
		bins = append(bins, o.baseline)
	}
	fmt.Fprintf(os.Stderr, "land: %s: making %d approved tasks and %d hand branches\n", name, n*len(bins), n)
	// Each orch landing lands the next approved task, in approval order.
	ids, tips := approved(o, dir, "cost", n*len(bins))
	next := 0
	landNext := func(bin string) (float64, float64) {
		ms, cpu := landOrch(o, bin, dir, ids[next], tips[next], remote)
		next++
		return ms, cpu
	}
	hand, floor := make([]string, n), make([]string, n)
	for i := range hand {
		hand[i] = handBranch(o, dir, i)
		floor[i] = handBranch(o, dir, n+i)
	}
	scratch := filepath.Join(tmp, name+"-floor")
	out(o, dir, "git", "worktree", "add", "--quiet", "--detach", scratch, "main")
	fmt.Fprintf(os.Stderr, "land: %s: timing\n", name)
	type side struct {
		label     string
		land      func(i int) (ms, cpu float64)
		wall, cpu []float64
	}
	handLabel, orchLabel := "`git merge --no-ff <branch>` by hand", "`orch land`"
	floorLabel := "a checked merge in bare git commands (the floor)"
	if remote {
		handLabel, orchLabel = "`git merge --no-ff <branch> && git push origin main` by hand", "`orch land --push`"
		floorLabel += ", with git push"
	}
	var waits []float64
	sides := []*side{
		{label: handLabel, land: func(i int) (float64, float64) { return landHand(o, dir, hand[i], remote) }},
		{label: floorLabel, land: func(i int) (float64, float64) { return landFloor(o, dir, scratch, floor[i], remote) }},
		{label: orchLabel, land: func(i int) (float64, float64) {
			ms, cpu := landNext(o.bin)
			waits = append(waits, settle(dir))
			return ms, cpu
		}},
	}
	if o.baseline != "" {
		sides = append(sides, &side{label: orchLabel + " (baseline " + filepath.Base(o.baseline) + ")", land: func(i int) (float64, float64) {
			ms, cpu := landNext(o.baseline)
			settle(dir)
			return ms, cpu
		}})
	}
	for i := 0; i < n; i++ {
		var said []string
		for k := range sides {
			sd := sides[(i+k)%len(sides)] // each side first in turn
			ms, cpu := sd.land(i)
			said = append(said, fmt.Sprintf("%s %.1f ms (CPU %.1f)", sd.label, ms, cpu))
			if i >= warm {
				sd.wall, sd.cpu = append(sd.wall, ms), append(sd.cpu, cpu)
			}
		}
		if verbose {
			fmt.Fprintf(os.Stderr, "land: %s run %d: %s\n", name, i, strings.Join(said, ", "))
		}
	}
	verify(o, dir, ids, tips, remote)
	for _, h := range append(hand, floor...) {
		if !ancestor(o, dir, "refs/heads/"+h, "refs/heads/main") {
			fail("%s: hand branch %s is not in main", name, h)
		}
	}
	for _, sd := range sides {
		sort.Float64s(sd.wall)
		sort.Float64s(sd.cpu)
	}
	sort.Float64s(waits)
	hm, hc := median(sides[0].wall), median(sides[0].cpu)
	fm := median(sides[1].wall)
	rows := []string{fmt.Sprintf("| %s | %.1f | %.1f | 1.00 | %.1f | 1.00 | |", handLabel, hm, percentile(sides[0].wall, 0.9), hc)}
	for _, sd := range sides[1:] {
		om, oc := median(sd.wall), median(sd.cpu)
		rows = append(rows, fmt.Sprintf("| %s | %.1f | %.1f | **%.2f×** | %.1f | %.2f× | %.1f |", sd.label, om, percentile(sd.wall, 0.9), om/hm, oc, oc/hc, om-fm))
	}
	if w := median(waits); w > 0 {
		fmt.Fprintf(os.Stderr, "land: %s: after each `orch land`, the deletion it left to a process of its own: median %.0f ms, p90 %.0f ms (untimed)\n", name, w, percentile(waits, 0.9))
	}
	return rows
}

// settle waits until the trash in dir's private dir (the files of landed
// worktrees a landing left to a process of its own to delete) is empty,
// and returns how long that took in ms.
func settle(dir string) float64 {
	trash := filepath.Join(dir, ".git", "orch", "trash")
	start := time.Now()
	for {
		ents, err := os.ReadDir(trash)
		if err != nil || len(ents) == 0 {
			return float64(time.Since(start).Microseconds()) / 1000
		}
		if time.Since(start) > time.Minute {
			fail("%s: the trash still holds %d entries after a minute", dir, len(ents))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// throughput lands n approved tasks with land.batch b and land.check cmd by
// one orch land --all, and returns its wall time and CPU time (its own and
// its children's, the check's sleep included) in seconds.
func throughput(o opts, tmp string, b, n int, cmd string) (float64, float64) {
	name := fmt.Sprintf("batch-%d", b)
	dir := makeRepo(o, tmp, name, false)
	setConfig(o, dir, map[string]string{"check": strconv.Quote(cmd), "batch": strconv.Itoa(b)})
	fmt.Fprintf(os.Stderr, "land: %s: making %d approved tasks\n", name, n)
	ids, tips := approved(o, dir, "through", n)
	fmt.Fprintf(os.Stderr, "land: %s: orch land --all\n", name)
	ans, wall, cpu := timed(o, dir, o.bin, "land", "--all", "--json")
	var a landAnswer
	if err := json.Unmarshal(ans, &a); err != nil {
		fail("%s: orch land --all --json: %v: %s", name, err, ans)
	}
	landed := 0
	for _, t := range a.Tasks {
		if t.Outcome != "landed" || t.Check != "passed" {
			fail("%s: %s: outcome %s, check %s (%s)", name, t.Task, t.Outcome, t.Check, t.Why)
		}
		landed++
	}
	if landed != n {
		fail("%s: orch land --all landed %d of %d tasks", name, landed, n)
	}
	verify(o, dir, ids, tips, false)
	return wall / 1000, cpu / 1000
}

type landAnswer struct {
	Waiting string `json:"waiting"`
	Tasks   []struct {
		Task    string `json:"task"`
		Outcome string `json:"outcome"`
		Commit  string `json:"commit"`
		Check   string `json:"check"`
		Why     string `json:"why"`
	} `json:"tasks"`
}

// landOrch lands one approved task (id, approved commit tip) by orch land
// (the binary bin) and returns its wall time and CPU time in ms.
func landOrch(o opts, bin, dir, id, tip string, remote bool) (float64, float64) {
	args := []string{"land", "--json"}
	if remote {
		args = append(args, "--push")
	}
	ans, ms, cpu := timed(o, dir, bin, args...)
	var a landAnswer
	if err := json.Unmarshal(ans, &a); err != nil {
		fail("orch land --json: %v: %s", err, ans)
	}
	if len(a.Tasks) != 1 || a.Tasks[0].Task != id || a.Tasks[0].Outcome != "landed" {
		fail("orch land did not land %s: %s", id, ans)
	}
	if !ancestor(o, dir, tip, "refs/heads/main") {
		fail("orch land said %s landed, but its approved commit %s is not in main", id, tip)
	}
	return ms, cpu
}

// landHand merges branch into main in the person's checkout as a person
// would (and pushes it with a remote), and returns the wall time and CPU
// time in ms: the sum of the steps, as a shell's && would run them.
func landHand(o opts, dir, branch string, remote bool) (float64, float64) {
	_, ms, cpu := timed(o, dir, "git", "merge", "--quiet", "--no-ff", "-m", "Merge "+branch, branch)
	if remote {
		_, pms, pcpu := timed(o, dir, "git", "push", "--quiet", "origin", "main")
		ms, cpu = ms+pms, cpu+pcpu
	}
	return ms, cpu
}

// landFloor lands branch with the fewest git commands that keep a
// landing's guarantees, as a script would: the merge as a tree (merge-tree,
// commit-tree), its files in the scratch worktree and the check there (sh
// -c true), the person's checkout found clean (status), main moved by
// compare-and-swap from the tip merged with (update-ref), the checkout
// advanced (read-tree -u -m); with a remote, git push, which refuses a
// remote that moved. None of orch's own work is in it: no state, no
// record, no clean of the scratch worktree, no landed worktree to check.
// It returns the sum of the steps' wall and CPU times in ms.
func landFloor(o opts, dir, scratch, branch string, remote bool) (float64, float64) {
	var ms, cpu float64
	step := func(in string, args ...string) string {
		b, m, c := timed(o, in, args[0], args[1:]...)
		ms, cpu = ms+m, cpu+c
		return strings.TrimSpace(string(b))
	}
	tip := step(dir, "git", "rev-parse", "refs/heads/main")
	tree := step(scratch, "git", "merge-tree", "--write-tree", "--no-messages", tip, branch)
	merged := step(dir, "git", "commit-tree", tree, "-p", tip, "-p", branch, "-m", "Merge "+branch)
	step(scratch, "git", "checkout", "--quiet", "--force", "--detach", merged)
	step(scratch, "sh", "-c", "true")
	if s := step(dir, "git", "status", "--porcelain", "--untracked-files=no"); s != "" {
		fail("the floor's checkout is not clean: %s", s)
	}
	step(dir, "git", "update-ref", "refs/heads/main", merged, tip)
	step(dir, "git", "read-tree", "-u", "-m", tip, merged)
	if remote {
		step(dir, "git", "push", "--quiet", "origin", "main")
	}
	return ms, cpu
}

// verify checks that every task is done and its work is on main (and on
// the remote's main): the approved commit an ancestor, its file in main's
// tree; and git fsck.
func verify(o opts, dir string, ids, tips []string, remote bool) {
	done := map[string]bool{}
	for _, id := range strings.Fields(string(out(o, dir, o.bin, "list", "--queue", "done", "--json", "--jq", ".tasks[].id"))) {
		done[strings.Trim(id, `"`)] = true
	}
	tree := string(out(o, dir, "git", "ls-tree", "-r", "--name-only", "refs/heads/main", "landbench/"))
	heads := []string{"refs/heads/main"}
	if remote {
		r := strings.TrimSpace(string(out(o, dir, "git", "--git-dir", dir+".git", "rev-parse", "refs/heads/main")))
		heads = append(heads, r)
	}
	for i, id := range ids {
		if !done[id] {
			fail("%s: task %s is not done", dir, id)
		}
		for _, h := range heads {
			if !ancestor(o, dir, tips[i], h) {
				fail("%s: task %s's approved commit %s is not in %s", dir, id, tips[i], h)
			}
		}
		if !strings.Contains(tree, "landbench/"+id+".txt\n") {
			fail("%s: main's tree lacks landbench/%s.txt", dir, id)
		}
	}
	out(o, dir, "git", "fsck", "--no-progress")
}

func ancestor(o opts, dir, a, b string) bool {
	cmd := exec.Command("git", "merge-base", "--is-ancestor", a, b)
	cmd.Dir, cmd.Env = dir, o.env
	return cmd.Run() == nil
}

// makeRepo makes a repository of the realistic size in tmp/name, with main
// checked out, and with remote a bare clone of it as origin.
func makeRepo(o opts, tmp, name string, remote bool) string {
	dir := filepath.Join(tmp, name)
	fmt.Fprintf(os.Stderr, "land: %s: generating main (%d files, %d commits) and %d tasks\n", name, o.files, o.history, o.tasks)
	check(os.MkdirAll(dir, 0o777))
	out(o, dir, "git", "init", "-q", "-b", "main")
	mainHistory(o, dir)
	out(o, dir, "git", "reset", "-q", "--hard", "main")
	out(o, dir, o.bin, "init")
	if o.tasks > 0 {
		if _, err := repogen.Generate(dir, repogen.Options{Tasks: o.tasks, Commits: 100, Append: true, Env: o.env}); err != nil {
			fail("%s: repogen: %v", name, err)
		}
	}
	out(o, dir, o.bin, "list") // the view and the caches, once
	if remote {
		bare := dir + ".git"
		out(o, tmp, "git", "init", "-q", "--bare", bare)
		out(o, dir, "git", "remote", "add", "origin", bare)
		out(o, dir, "git", "push", "--quiet", "origin", "main")
		out(o, dir, "git", "fetch", "--quiet", "origin")
		out(o, dir, "git", "branch", "--quiet", "--set-upstream-to=origin/main", "main")
	}
	return dir
}

// mainHistory writes main with git fast-import: o.files source files in
// directories of 50, then o.history-1 commits that each change one file.
func mainHistory(o opts, dir string) {
	var b bytes.Buffer
	path := func(i int) string { return fmt.Sprintf("src/pkg%03d/file%04d.go", i/50, i) }
	body := func(i, rev int) string {
		var s strings.Builder
		fmt.Fprintf(&s, "package pkg%03d\n\n// File %d, revision %d.\n", i/50, i, rev)
		for f := 0; f < 12; f++ {
			fmt.Fprintf(&s, "\nfunc F%d_%d(x int) int {\n\tif x > %d {\n\t\treturn x - %d\n\t}\n\treturn x * %d\n}\n", i, f, f*7+rev, f+i%13, f+3)
		}
		return s.String()
	}
	when := time.Now().Add(-time.Duration(o.history) * time.Hour).Unix()
	commit := func(n int, msg string) {
		fmt.Fprintf(&b, "commit refs/heads/main\nmark :%d\ncommitter bench <bench@example.com> %d +0000\ndata %d\n%s\n", n, when+int64(n)*3600, len(msg), msg)
		if n > 1 {
			fmt.Fprintf(&b, "from :%d\n", n-1)
		}
	}
	commit(1, "Initial import")
	for i := 0; i < o.files; i++ {
		s := body(i, 0)
		fmt.Fprintf(&b, "M 100644 inline %s\ndata %d\n%s\n", path(i), len(s), s)
	}
	for n := 2; n <= o.history; n++ {
		i := (n * 7919) % max(o.files, 1)
		commit(n, fmt.Sprintf("Change file %d", i))
		s := body(i, n)
		fmt.Fprintf(&b, "M 100644 inline %s\ndata %d\n%s\n", path(i), len(s), s)
	}
	cmd := exec.Command("git", "fast-import", "--quiet")
	cmd.Dir, cmd.Env, cmd.Stdin = dir, o.env, &b
	if msg, err := cmd.CombinedOutput(); err != nil {
		fail("git fast-import: %v: %s", err, msg)
	}
}

// setConfig edits the land: section of config.yaml in the view as a person
// would, lets orch commit it, and checks the state branch holds it.
func setConfig(o opts, dir string, set map[string]string) {
	p := filepath.Join(dir, ".orchestrator", "config.yaml")
	data, err := os.ReadFile(p)
	check(err)
	lines := strings.Split(string(data), "\n")
	inLand := false
	found := map[string]bool{}
	for i, l := range lines {
		if !strings.HasPrefix(l, " ") && l != "" {
			inLand = strings.HasPrefix(l, "land:")
			continue
		}
		for k, v := range set {
			if inLand && strings.HasPrefix(l, "  "+k+":") {
				lines[i] = "  " + k + ": " + v
				found[k] = true
			}
		}
	}
	for k := range set {
		if !found[k] {
			fail("%s: no land.%s in config.yaml", p, k)
		}
	}
	check(os.WriteFile(p, []byte(strings.Join(lines, "\n")), 0o666))
	out(o, dir, o.bin, "check")
	committed := string(out(o, dir, "git", "show", "refs/heads/orch:config.yaml"))
	for k, v := range set {
		if !strings.Contains(committed, "\n  "+k+": "+v+"\n") {
			fail("%s: the state branch's config.yaml lacks land.%s: %s", dir, k, v)
		}
	}
}

// approved makes n approved tasks, each adding landbench/<id>.txt, and
// returns their IDs and approved commits. Then, a second on, it refreshes
// each worktree's index (git update-index --refresh), as the agent's own
// git commands would over the minutes a task takes: git wrote the index in
// the second it checked the files out, so every entry is racily clean
// until an index is written later, and the first git status would read
// and hash all the files again, which no real landing pays.
func approved(o opts, dir, label string, n int) (ids, tips []string) {
	var wts []string
	defer func() {
		time.Sleep(time.Second)
		for _, wt := range wts {
			out(o, wt, "git", "update-index", "-q", "--refresh")
		}
	}()
	for i := 0; i < n; i++ {
		id := jq(o, dir, "new", fmt.Sprintf("Land bench %s %d", label, i), "--json", "--jq", ".task.id")
		wt := jq(o, dir, "claim", "--task", id, "--agent", "impl-1", "--worktree", "--json", "--jq", ".worktree")
		wts = append(wts, wt)
		check(os.MkdirAll(filepath.Join(wt, "landbench"), 0o777))
		check(os.WriteFile(filepath.Join(wt, "landbench", id+".txt"), []byte("work of "+id+"\n"), 0o666))
		out(o, wt, "git", "add", "landbench")
		out(o, wt, "git", "commit", "-q", "-m", "Add landbench/"+id+".txt")
		out(o, wt, o.bin, "submit", id, "--agent", "impl-1", "-m", "adds a file")
		out(o, dir, o.bin, "approve", id, "--agent", "lead", "-m", "ok")
		ids = append(ids, id)
		tips = append(tips, jq(o, dir, "show", id, "--json", "--jq", ".task.approved_commit"))
	}
	return ids, tips
}

// handBranch makes branch hand-<i> from main with one commit adding
// landbench/hand-<i>.txt, with plumbing (no checkout).
func handBranch(o opts, dir string, i int) string {
	name := fmt.Sprintf("hand-%d", i)
	idx := filepath.Join(dir, ".git", "bench-index")
	env := append(append([]string{}, o.env...), "GIT_INDEX_FILE="+idx)
	run := func(stdin string, args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = dir, env
		cmd.Stdin = strings.NewReader(stdin)
		var eb bytes.Buffer
		cmd.Stderr = &eb
		b, err := cmd.Output()
		if err != nil {
			fail("git %s: %v: %s", strings.Join(args, " "), err, eb.String())
		}
		return strings.TrimSpace(string(b))
	}
	blob := run("work of "+name+"\n", "hash-object", "-w", "--stdin")
	run("", "read-tree", "refs/heads/main")
	run("", "update-index", "--add", "--cacheinfo", "100644,"+blob+",landbench/"+name+".txt")
	tree := run("", "write-tree")
	c := run("Add landbench/"+name+".txt\n", "commit-tree", tree, "-p", "refs/heads/main")
	run("", "branch", name, c)
	check(os.Remove(idx))
	return name
}

func jq(o opts, dir string, args ...string) string {
	return strings.Trim(strings.TrimSpace(string(out(o, dir, o.bin, args...))), `"`)
}

// timed runs name in dir as out does, and returns its stdout, wall time
// and CPU time (user + system, its own and that of the children it waited
// for) in ms.
func timed(o opts, dir, name string, args ...string) ([]byte, float64, float64) {
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, o.env
	var ob, eb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &ob, &eb
	start := time.Now()
	err := cmd.Run()
	ms := float64(time.Since(start).Microseconds()) / 1000
	if err != nil {
		fail("%s %s (in %s): %v\n%s%s", name, strings.Join(args, " "), dir, err, ob.String(), eb.String())
	}
	cpu := float64((cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Microseconds()) / 1000
	return ob.Bytes(), ms, cpu
}

// out runs name in dir and returns its stdout; any failure ends the
// program.
func out(o opts, dir, name string, args ...string) []byte {
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, o.env
	var ob, eb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &ob, &eb
	if err := cmd.Run(); err != nil {
		fail("%s %s (in %s): %v\n%s%s", name, strings.Join(args, " "), dir, err, ob.String(), eb.String())
	}
	return ob.Bytes()
}

func version(o opts, bin string) string {
	cmd := exec.Command(bin, "version")
	cmd.Env = o.env
	b, _ := cmd.Output()
	if f := strings.Fields(string(b)); len(f) > 0 {
		return strings.Join(f, " ")
	}
	return "?"
}

func median(s []float64) float64 {
	if len(s) == 0 {
		return math.NaN()
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func percentile(s []float64, p float64) float64 {
	if len(s) == 0 {
		return math.NaN()
	}
	i := int(math.Ceil(p*float64(len(s)))) - 1
	return s[max(i, 0)]
}

func check(err error) {
	if err != nil {
		fail("%v", err)
	}
}

// verbose prints each landing's times (-v).
var verbose bool

// cleanup removes the repositories (unless -keep), also on the way out
// of a failure.
var cleanup = func() {}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "land: FAILED: "+format+"\n", args...)
	cleanup()
	os.Exit(1)
}
