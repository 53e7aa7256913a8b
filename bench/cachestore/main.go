// Command cachestore measures orch's state cache (gitstore/statecache: one
// mapped file per state branch, with a journal) against an embedded store,
// bbolt, holding the same records (issue 45; bench/README.md, "The state
// cache against an embedded store").
//
//	cd bench/cachestore && go run . -orch ../../bin/orch           # make bench-cache
//	go run . -cache /path/to/repo/.git/orch/state -readers 1,4,16 -seconds 5
//
// It takes the state cache of a bench repository: with -orch, it writes one
// of -tasks tasks with bench/repogen and runs `orch list` there once, which
// builds the cache; with -cache, it uses that file. It copies the file into
// a work directory and loads it; a bbolt file is then written with the same
// records: the trees (a bucket per directory, a key per entry), the
// summaries (path → the record statecache.AppendSummary writes, the bytes
// the cache file holds) and the sync index (path → the entry as the cache
// file encodes it). Then, each operation in a fresh process (the program
// runs itself), alternating the operations:
//
//   - the cold read of everything `orch list` needs: statecache.Load, mapped,
//     and every summary decoded, against a read-only bbolt open, every tree
//     entry, index entry and summary decoded (and the summaries alone);
//   - a lookup by path and by id;
//   - a save after one summary changed (a journal batch, and the whole base
//     as Save writes it when the journal is full), against a bbolt Update
//     of one key, with and without fsync (NoSync); and the same for what a
//     transition changes (tip, two directory entries, a summary, an index
//     entry).
//
// Last, R reader processes (-readers) loop that cold read while one writer
// process loops one-key writes for -seconds: reads/s, read and write
// latency, and how often a bbolt open found the file locked (bbolt flocks
// the file, exclusive for a read-write open, shared for a read-only one,
// and retries every 50 ms).
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/orch-tool/orch/bench/internal/machine"
	"github.com/orch-tool/orch/bench/repogen"
	"github.com/orch-tool/orch/gitstore/statecache"
)

// opts are the flags; a child process gets the ones it needs.
type opts struct {
	role     string
	op       string
	mode     string
	dir      string
	ref      string
	path     string // the task a lookup or write is about
	id       string
	expect   int
	start    int64 // unix ns: a swarm process starts its loop then
	end      int64
	pace     time.Duration
	readerTO time.Duration
}

func main() {
	var o opts
	orch := flag.String("orch", "", "orch binary: generate a repository of -tasks tasks and let `orch list` build its cache")
	cache := flag.String("cache", "", "an existing state cache file to measure (instead of -orch)")
	tasks := flag.Int("tasks", 10000, "tasks in the generated repository")
	work := flag.String("work", "", "work directory (default: a temp dir, removed at the end)")
	runs := flag.Int("runs", 20, "fresh processes per single-process operation")
	warm := flag.Int("warmup", 2, "untimed rounds first")
	readers := flag.String("readers", "1,4,16", "reader process counts for the concurrent rows")
	seconds := flag.Float64("seconds", 5, "length of each concurrent row")
	modes := flag.String("modes", strings.Join(swarmModes, ","), "concurrent rows to run")
	flag.StringVar(&o.role, "role", "", "internal: child, reader or writer")
	flag.StringVar(&o.op, "op", "", "internal")
	flag.StringVar(&o.mode, "mode", "", "internal")
	flag.StringVar(&o.dir, "dir", "", "internal")
	flag.StringVar(&o.ref, "ref", "refs/heads/orch", "the state branch the cache is of")
	flag.StringVar(&o.path, "taskpath", "", "internal")
	flag.StringVar(&o.id, "taskid", "", "internal")
	flag.IntVar(&o.expect, "expect", 0, "internal")
	flag.Int64Var(&o.start, "start", 0, "internal")
	flag.Int64Var(&o.end, "end", 0, "internal")
	flag.DurationVar(&o.pace, "pace", 50*time.Millisecond, "the pause between writes in the paced rows")
	flag.DurationVar(&o.readerTO, "reader-timeout", time.Second, "bbolt's open timeout for a reader")
	flag.Parse()

	var err error
	switch o.role {
	case "child":
		err = child(&o)
	case "reader":
		err = reader(&o)
	case "writer":
		err = writer(&o)
	case "":
		err = run(&o, *orch, *cache, *tasks, *work, *runs, *warm, *readers, *seconds, *modes)
	default:
		err = fmt.Errorf("unknown role %q", o.role)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "cachestore:", err)
		os.Exit(1)
	}
}

func run(o *opts, orch, cache string, tasks int, work string, runs, warm int, readers string, seconds float64, modes string) error {
	if (orch == "") == (cache == "") {
		return errors.New("give -orch BINARY (generate a repository) or -cache FILE")
	}
	if work == "" {
		d, err := os.MkdirTemp("", "orch-cachestore.")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		work = d
	}
	if err := os.MkdirAll(work, 0o777); err != nil {
		return err
	}
	o.dir = work
	loadStart := machine.Loadavg()
	if orch != "" {
		bin, err := machine.Binary(orch)
		if err != nil {
			return err
		}
		if cache, err = generate(filepath.Join(work, "repo"), tasks, bin); err != nil {
			return err
		}
	}
	w, err := setup(o, cache)
	if err != nil {
		return err
	}
	fmt.Printf("cachestore: %d summaries, %d index entries, %d directories (the largest %d entries); state cache %.2f MB, bbolt %.2f MB (%.2f MB of pages in use); %s; the task looked up and written: %s\n",
		w.n, w.nIndex, w.nDirs, w.maxDir, mb(w.formatSize), mb(w.boltSize), mb(w.boltUsed), w.version, w.taskPath)
	fmt.Printf("load average %s at the start\n\n", loadStart)

	if runs > 0 {
		if err := singleRows(o, w, runs, warm); err != nil {
			return err
		}
		fmt.Printf("\nload average %s after the single-process rows\n\n", machine.Loadavg())
	}
	rs, err := parseInts(readers)
	if err != nil {
		return err
	}
	if len(rs) > 0 && seconds > 0 {
		if err := swarmRows(o, w, rs, time.Duration(seconds*float64(time.Second)), strings.Split(modes, ",")); err != nil {
			return err
		}
		fmt.Printf("\nload average %s at the end\n", machine.Loadavg())
	}
	return nil
}

// generate writes a repository of n tasks as bench/gen does and runs `orch
// list` there, which builds the state cache; it returns the cache's path.
func generate(dir string, n int, orch string) (string, error) {
	fmt.Fprintf(os.Stderr, "cachestore: generating %d tasks in %s\n", n, dir)
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return "", err
	}
	env := append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir+"/.home", "XDG_CONFIG_HOME="+dir+"/.home/.config")
	sh := func(name string, args ...string) error {
		cmd := exec.Command(name, args...)
		cmd.Dir, cmd.Env = dir, env
		var eb bytes.Buffer
		cmd.Stdout, cmd.Stderr = io.Discard, &eb
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(eb.String()))
		}
		return nil
	}
	for _, a := range [][]string{{"init", "-q", "-b", "main"}, {"config", "user.name", "bench"}, {"config", "user.email", "bench@example.com"}} {
		if err := sh("git", a...); err != nil {
			return "", err
		}
	}
	if _, err := repogen.Generate(dir, repogen.Options{Tasks: n, Commits: 100, Main: true, Env: env}); err != nil {
		return "", err
	}
	if err := sh("git", "reset", "-q", "--hard", "main"); err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir+"/.home", 0o777); err != nil {
		return "", err
	}
	if err := sh(orch, "list"); err != nil {
		return "", err
	}
	p := filepath.Join(dir, ".git", "orch", "state")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("orch list wrote no state cache: %v", err)
	}
	return p, nil
}

// childResult is what a child process reports on its stdout.
type childResult struct {
	Ms       float64 `json:"ms"`        // the operation, measured in the process
	OpenMs   float64 `json:"open_ms"`   // of which opening or loading
	LookupUs float64 `json:"lookup_us"` // a lookup alone, after the open
	N        int     `json:"n"`         // records seen (a check)
	HWM      float64 `json:"hwm"`       // peak RSS, MB (VmHWM)
}

// hwm is the process's peak RSS in MB (/proc/self/status, VmHWM). The
// rusage of a child is no good here: Linux carries the parent's peak into
// a child's ru_maxrss across fork and exec, and the parent holds the cache.
func hwm() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			var kb float64
			fmt.Sscanf(strings.TrimSpace(v), "%f", &kb)
			return kb / 1024
		}
	}
	return 0
}

// runChild runs the program as a child and returns its report, its wall
// time (start to exit) and its peak RSS.
func runChild(args []string) (childResult, float64, float64, error) {
	self, err := os.Executable()
	if err != nil {
		return childResult{}, 0, 0, err
	}
	cmd := exec.Command(self, args...)
	var out, eb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &eb
	t := time.Now()
	err = cmd.Run()
	wall := msSince(t)
	if err != nil {
		return childResult{}, 0, 0, fmt.Errorf("%s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(eb.String()))
	}
	var r childResult
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		return r, 0, 0, fmt.Errorf("%s: %v: %q", strings.Join(args, " "), err, out.String())
	}
	return r, wall, r.HWM, nil
}

func report(v any) error { return json.NewEncoder(os.Stdout).Encode(v) }

func msSince(t time.Time) float64 { return float64(time.Since(t).Nanoseconds()) / 1e6 }

func mb(n int64) float64 { return float64(n) / (1 << 20) }

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		var n int
		if _, err := fmt.Sscanf(f, "%d", &n); err != nil || n < 1 {
			return nil, fmt.Errorf("bad count %q", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// copyFile copies src to dst (a journal beside it too, when there is one).
func copyFile(src, dst string) error {
	for _, s := range []string{"", ".journal"} {
		b, err := os.ReadFile(src + s)
		if errors.Is(err, os.ErrNotExist) && s != "" {
			_ = os.Remove(dst + s)
			continue
		}
		if err != nil {
			return err
		}
		if err := os.WriteFile(dst+s, b, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// The format's version, for the report.
func formatVersion() string { return strings.TrimSpace(statecache.SummaryFormat) }
