// Command swarm measures many agents claiming at once: N processes, each in
// its own linked worktree of the repository, run `orch claim --json` in a
// loop until orch answers "nothing to claim" (exit 3). It prints the
// aggregate claims per second and checks what the race must never break:
// every task claimed at most once, one commit per claim on the state
// branch, and `git fsck` clean.
//
//	swarm -repo DIR -orch BIN [-agents 16] [-tsv]
//
// The repository is consumed (its incoming tasks end up claimed): run it on
// a copy.
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
	"strconv"
	"strings"
	"sync"
	"time"
)

func main() {
	repo := flag.String("repo", "", "the repository (consumed: use a copy)")
	bin := flag.String("orch", "orch", "the orch binary")
	agents := flag.Int("agents", 16, "concurrent claimers, one worktree each")
	tsv := flag.Bool("tsv", false, "print \"claims<TAB>seconds<TAB>claims_per_second<TAB>double_claims<TAB>lost_commits<TAB>fsck\" only")
	flag.Parse()
	if *repo == "" || *agents < 1 {
		fmt.Fprintln(os.Stderr, "usage: swarm -repo DIR -orch BIN [-agents N] [-tsv]")
		os.Exit(2)
	}
	abs, err := filepath.Abs(*bin)
	if err == nil && strings.ContainsRune(*bin, os.PathSeparator) {
		*bin = abs
	}
	before := revCount(*repo)
	var dirs []string
	for i := 0; i < *agents; i++ {
		wt := filepath.Join(filepath.Dir(*repo), filepath.Base(*repo)+"-swarm", "agent-"+strconv.Itoa(i))
		if _, err := os.Stat(wt); err != nil {
			run(*repo, "git", "worktree", "add", "-q", "--detach", wt)
		}
		dirs = append(dirs, wt)
	}

	var (
		mu      sync.Mutex
		claimed = map[string]int{}
		claims  int
		fails   []string
		wg      sync.WaitGroup
	)
	start := time.Now()
	for i, wt := range dirs {
		wg.Add(1)
		go func(agent, wt string) {
			defer wg.Done()
			for {
				cmd := exec.Command(*bin, "claim", "--json", "--agent", agent)
				cmd.Dir = wt
				var out, errb bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &errb
				err := cmd.Run()
				var ee *exec.ExitError
				if errors.As(err, &ee) && ee.ExitCode() == 3 {
					return // nothing left to claim
				}
				if err != nil {
					mu.Lock()
					fails = append(fails, fmt.Sprintf("%s: %v: %s", agent, err, strings.TrimSpace(errb.String())))
					mu.Unlock()
					return
				}
				var res struct {
					Task struct {
						ID string `json:"id"`
					} `json:"task"`
				}
				if err := json.Unmarshal(out.Bytes(), &res); err != nil || res.Task.ID == "" {
					mu.Lock()
					fails = append(fails, fmt.Sprintf("%s: unreadable answer %q", agent, out.String()))
					mu.Unlock()
					return
				}
				mu.Lock()
				claimed[res.Task.ID]++
				claims++
				mu.Unlock()
			}
		}("agent-"+strconv.Itoa(i), wt)
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()

	doubles := 0
	for _, n := range claimed {
		if n > 1 {
			doubles += n - 1
		}
	}
	commits := revCount(*repo) - before
	lost := claims - commits // every reported claim is one commit
	fsck := "clean"
	if out, err := exec.Command("git", "-C", *repo, "fsck", "--no-progress", "--no-dangling").CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
		fsck = "FAILED: " + strings.TrimSpace(string(out))
	}
	rate := float64(claims) / elapsed
	if *tsv {
		fmt.Printf("%d\t%.2f\t%.1f\t%d\t%d\t%s\n", claims, elapsed, rate, doubles, lost, fsck)
	} else {
		fmt.Printf("%d agents: %d claims in %.2f s = %.1f claims/s; double claims %d; commits missing %d; git fsck %s\n",
			*agents, claims, elapsed, rate, doubles, lost, fsck)
	}
	for _, f := range fails {
		fmt.Fprintln(os.Stderr, "swarm: "+f)
	}
	if len(fails) > 0 || doubles > 0 || lost != 0 || fsck != "clean" {
		os.Exit(1)
	}
}

func revCount(repo string) int {
	out, err := exec.Command("git", "-C", repo, "rev-list", "--count", "refs/heads/orch").Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, "swarm: git rev-list:", err)
		os.Exit(1)
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(out)))
	return n
}

func run(dir string, name string, args ...string) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "swarm: %s %s: %v: %s\n", name, strings.Join(args, " "), err, out)
		os.Exit(1)
	}
}
