package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/orch-tool/orch/gitstore/statecache"
)

// The concurrent rows: R reader processes loop the cold read of what a
// list needs (open or load, every summary decoded, close) while one writer
// process loops one-key writes, for a fixed time.
var swarmModes = []string{"format-journal", "format-base", "bolt-held", "bolt-reopen", "bolt-reopen-paced"}

var modeLabel = map[string]string{
	"format-journal":    "state cache: Load, a summary, Save (journal), Close",
	"format-base":       "state cache: Load, a summary, Save (whole base), Close",
	"bolt-held":         "bbolt: one open read-write for the run, an Update each",
	"bolt-reopen":       "bbolt: Open read-write, Update, Close, back to back",
	"bolt-reopen-paced": "bbolt: Open read-write, Update, Close, then a pause",
}

// swarmResult is what a reader or the writer reports.
type swarmResult struct {
	Lat      []float64 `json:"lat"`      // ms of each completed read or write
	Open     []float64 `json:"open"`     // ms of each bbolt Open, waiting included
	Locked   int       `json:"locked"`   // times the file was found locked just before an open
	Timeouts int       `json:"timeouts"` // opens that gave up (bolt.ErrTimeout)
	Bad      int       `json:"bad"`      // reads that saw the wrong number of summaries
	Ms       float64   `json:"ms"`       // the loop's length
}

func swarmRows(o *opts, w *workspace, rs []int, dur time.Duration, modes []string) error {
	fmt.Printf("Concurrent processes for %.0f s each: R readers looping the cold read of what a list needs (open or load, every tree entry, index entry and summary decoded, close) while one writer loops one-key writes; bbolt's writer with NoSync, its readers' open timeout %v; the paced writer pauses %v after each write. Reads/s are all readers' together; latencies in ms, median (p90); \"found locked\": a flock probe just before an open found the file locked, of all opens; \"waiting\": the share of the readers' time spent in bolt.Open.\n\n",
		dur.Seconds(), o.readerTO, o.pace)
	fmt.Println("| writer | R | reads/s | read ms | max | found locked | waiting | read timeouts | writes/s | write ms | max | writer found locked | write timeouts |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, mode := range modes {
		if modeLabel[mode] == "" {
			return fmt.Errorf("unknown mode %q (have %s)", mode, strings.Join(swarmModes, ", "))
		}
		for _, r := range rs {
			fmt.Fprintf(os.Stderr, "cachestore: %s, %d readers, %v (load %s)\n", mode, r, dur, loadavg1())
			if err := swarmRow(o, w, mode, r, dur); err != nil {
				return err
			}
		}
	}
	return nil
}

func swarmRow(o *opts, w *workspace, mode string, readers int, dur time.Duration) error {
	if err := copyFile(readPath(o.dir), swarmPath(o.dir)); err != nil {
		return err
	}
	b, err := os.ReadFile(boltReadPath(o.dir))
	if err != nil {
		return err
	}
	if err := os.WriteFile(boltSwarmPath(o.dir), b, 0o600); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	start := time.Now().Add(time.Second)
	end := start.Add(dur)
	args := func(role string) []string {
		return []string{"-role", role, "-mode", mode, "-dir", o.dir, "-ref", o.ref, "-taskpath", w.taskPath,
			"-expect", fmt.Sprint(w.n), "-start", fmt.Sprint(start.UnixNano()), "-end", fmt.Sprint(end.UnixNano()),
			"-pace", o.pace.String(), "-reader-timeout", o.readerTO.String()}
	}
	type proc struct {
		cmd      *exec.Cmd
		out, err bytes.Buffer
	}
	var procs []*proc
	for i := 0; i <= readers; i++ {
		role := "reader"
		if i == 0 {
			role = "writer" // first: the held writer opens before the readers start
		}
		p := &proc{cmd: exec.Command(self, args(role)...)}
		p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.err
		if err := p.cmd.Start(); err != nil {
			return err
		}
		procs = append(procs, p)
	}
	var wr swarmResult
	var rd []swarmResult
	var failed error
	for i, p := range procs {
		err := p.cmd.Wait()
		var res swarmResult
		if err == nil {
			err = json.Unmarshal(p.out.Bytes(), &res)
		}
		if err != nil && failed == nil {
			failed = fmt.Errorf("%s: %v: %s", strings.Join(p.cmd.Args[1:3], " "), err, strings.TrimSpace(p.err.String()))
		}
		if i == 0 {
			wr = res
		} else {
			rd = append(rd, res)
		}
	}
	if failed != nil {
		return failed
	}
	var lat, opens []float64
	locked, timeouts, bad, nopen := 0, 0, 0, 0
	var openMs, loopMs float64
	for _, r := range rd {
		lat = append(lat, r.Lat...)
		opens = append(opens, r.Open...)
		locked += r.Locked
		timeouts += r.Timeouts
		bad += r.Bad
		nopen += len(r.Open)
		loopMs += r.Ms
		for _, x := range r.Open {
			openMs += x
		}
	}
	secs := dur.Seconds()
	na := func(s string) string {
		if strings.HasPrefix(mode, "format") {
			return "n/a"
		}
		return s
	}
	fmt.Printf("| %s | %d | %.0f | %s | %s | %s | %s | %s | %.1f | %s | %s | %s | %s |\n", modeLabel[mode], readers,
		float64(len(lat))/secs, p50p90(lat), maxOf(lat),
		na(fmt.Sprintf("%d of %d", locked, nopen)), na(fmt.Sprintf("%.0f %%", 100*openMs/max(loopMs, 1))), na(fmt.Sprint(timeouts)),
		float64(len(wr.Lat))/secs, p50p90(wr.Lat), maxOf(wr.Lat),
		na(fmt.Sprint(wr.Locked)), na(fmt.Sprint(wr.Timeouts)))
	if bad > 0 {
		fmt.Printf("\n%d reads saw the wrong number of summaries\n\n", bad)
	}
	return nil
}

func p50p90(xs []float64) string {
	if len(xs) == 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f (%.1f)", pct(xs, 0.5), pct(xs, 0.9))
}

func maxOf(xs []float64) string {
	if len(xs) == 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f", pct(xs, 1))
}

func loadavg1() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}

// probe reports whether a flock of how (LOCK_SH or LOCK_EX) on the file
// openBolt opens the bolt file p within to, noting in res whether another
// process held its lock just before (probe, with how) and how long the
// open took since since; nil and no error when it timed out.
func openBolt(p string, how int, bo *bolt.Options, to time.Duration, since time.Time, res *swarmResult) (*bolt.DB, error) {
	if probe(p, how) {
		res.Locked++
	}
	bo.Timeout = to
	db, err := bolt.Open(p, 0o600, bo)
	res.Open = append(res.Open, msSince(since))
	if errors.Is(err, bolt.ErrTimeout) {
		res.Timeouts++
		return nil, nil
	}
	return db, err
}

// would wait now: whether an open by bbolt would find the file locked.
func probe(path string, how int) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	err = syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
	if err == nil {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		return false
	}
	return errors.Is(err, syscall.EWOULDBLOCK)
}

// timeout is at most d, and no later than end; 0 when too little is left
// for bbolt to try again (it sleeps 50 ms between tries of the lock): the
// loop is over.
func timeout(d time.Duration, end time.Time) time.Duration {
	if left := time.Until(end); left < d {
		d = left
	}
	if d < 60*time.Millisecond {
		return 0
	}
	return d
}

func reader(o *opts) error {
	start, end := time.Unix(0, o.start), time.Unix(0, o.end)
	time.Sleep(time.Until(start))
	var res swarmResult
	t0 := time.Now()
	for time.Now().Before(end) {
		t := time.Now()
		n := 0
		if strings.HasPrefix(o.mode, "format") {
			c := statecache.Load(swarmPath(o.dir), o.ref, true)
			n = readAll(c)
			c.Close()
		} else {
			p := boltSwarmPath(o.dir)
			to := timeout(o.readerTO, end)
			if to == 0 {
				break
			}
			db, err := openBolt(p, syscall.LOCK_SH, &bolt.Options{ReadOnly: true}, to, t, &res)
			if err != nil {
				return err
			}
			if db == nil {
				continue
			}
			err = db.View(func(tx *bolt.Tx) error {
				var err error
				n, err = boltReadAll(tx, true, true)
				return err
			})
			if cerr := db.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		}
		res.Lat = append(res.Lat, msSince(t))
		if n != o.expect {
			res.Bad++
		}
	}
	res.Ms = msSince(t0)
	return report(res)
}

func writer(o *opts) error {
	start, end := time.Unix(0, o.start), time.Unix(0, o.end)
	var res swarmResult
	var held *bolt.DB
	if o.mode == "bolt-held" {
		db, err := bolt.Open(boltSwarmPath(o.dir), 0o600, &bolt.Options{NoSync: true, Timeout: timeout(time.Until(end), end)})
		if err != nil {
			return err
		}
		defer db.Close()
		held = db
	}
	time.Sleep(time.Until(start))
	t0 := time.Now()
loop:
	for time.Now().Before(end) {
		t := time.Now()
		switch o.mode {
		case "format-journal", "format-base":
			p := swarmPath(o.dir)
			c := statecache.Load(p, o.ref, true)
			changeSummary(c, o.path)
			if err := c.Save(p); err != nil {
				return err
			}
			if o.mode == "format-base" {
				// Timed: the load and the base (saveBase's second part),
				// not the journal batch that lets Save write one.
				load := msSince(t)
				ms, err := timedBase(c, p, o.path, func() {})
				if err != nil {
					return err
				}
				c.Close()
				res.Lat = append(res.Lat, load+ms)
				continue
			}
			c.Close()
		case "bolt-held":
			if err := held.Update(func(tx *bolt.Tx) error { return boltPutSummary(tx, o.path) }); err != nil {
				return err
			}
		case "bolt-reopen", "bolt-reopen-paced":
			p := boltSwarmPath(o.dir)
			to := timeout(time.Second, end)
			if to == 0 {
				break loop
			}
			db, err := openBolt(p, syscall.LOCK_EX, &bolt.Options{NoSync: true}, to, time.Now(), &res)
			if err != nil {
				return err
			}
			if db == nil {
				continue
			}
			err = db.Update(func(tx *bolt.Tx) error { return boltPutSummary(tx, o.path) })
			if cerr := db.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		default:
			return fmt.Errorf("unknown mode %q", o.mode)
		}
		res.Lat = append(res.Lat, msSince(t))
		if o.mode == "bolt-reopen-paced" {
			time.Sleep(o.pace)
		}
	}
	res.Ms = msSince(t0)
	return report(res)
}
