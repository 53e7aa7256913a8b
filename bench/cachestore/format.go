package main

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/orch-tool/orch/gitstore/gitrepo"
	"github.com/orch-tool/orch/gitstore/statecache"
)

// The state cache's side: the file and its journal, through statecache's
// own Load and Save.

// The files of the work directory.
func readPath(dir string) string    { return filepath.Join(dir, "read", "state") }   // never written
func journalPath(dir string) string { return filepath.Join(dir, "readj", "state") }  // with a journal near its limit
func quarterPath(dir string) string { return filepath.Join(dir, "readq", "state") }  // with a quarter of that
func writePath(dir string) string   { return filepath.Join(dir, "write", "state") }  // the journal saves'
func basePath(dir string) string    { return filepath.Join(dir, "writeb", "state") } // the base saves'
func swarmPath(dir string) string   { return filepath.Join(dir, "swarm", "state") }  // the concurrent rows'

// workspace is what setup found and made.
type workspace struct {
	n, nIndex, nDirs, maxDir int
	formatSize, boltSize     int64
	boltUsed                 int64 // of boltSize, the pages in use
	journalSize, quarterSize int64 // of readj's and readq's journals
	version                  string
	taskPath, taskID         string
}

// setup copies the cache file into the work directory, loads it, and
// writes the bbolt file and the copy with a journal.
func setup(o *opts, cache string) (*workspace, error) {
	for _, d := range []string{"read", "readj", "readq", "write", "writeb", "swarm"} {
		if err := os.MkdirAll(filepath.Join(o.dir, d), 0o777); err != nil {
			return nil, err
		}
	}
	if err := copyFile(cache, readPath(o.dir)); err != nil {
		return nil, err
	}
	// A base without a journal: load the copy and write it again as a
	// base (a save with the journal gone, see saveBase).
	c := statecache.Load(readPath(o.dir), o.ref, true)
	if c.Summaries.Len() == 0 {
		return nil, fmt.Errorf("%s: no summaries for %s (is it a state cache of that branch?)", cache, o.ref)
	}
	w := &workspace{n: c.Summaries.Len(), nIndex: c.Index.Len(), nDirs: len(c.Dirs), version: formatVersion()}
	for _, d := range c.Dirs {
		w.maxDir = max(w.maxDir, len(d.Entries))
	}
	// The task the lookups and writes are about: one in the middle, in a
	// file named after its id (orch's naming, which ByNamedID relies on).
	sorted := c.Summaries.Sorted()
	for i := len(sorted) / 2; i < len(sorted); i++ {
		if r := sorted[i]; statecache.NamedFor(taskDir(r.Path), r.Path, r.ID) {
			w.taskPath, w.taskID = strings.Clone(r.Path), strings.Clone(r.ID) // c is closed below
			break
		}
	}
	if w.taskPath == "" {
		return nil, fmt.Errorf("%s: no task in a file named after its id", cache)
	}
	if err := boltBuild(c, boltReadPath(o.dir)); err != nil {
		return nil, err
	}
	c.Close()
	if err := flattenBase(readPath(o.dir), o.ref, w.taskPath); err != nil {
		return nil, err
	}
	fi, err := os.Stat(readPath(o.dir))
	if err != nil {
		return nil, err
	}
	w.formatSize = fi.Size()
	if fi, err = os.Stat(boltReadPath(o.dir)); err != nil {
		return nil, err
	}
	w.boltSize = fi.Size()
	if w.boltUsed, err = boltUsed(boltReadPath(o.dir)); err != nil {
		return nil, err
	}
	// The copy with a journal: transitions saved until the next would
	// pass the limit at which Save writes a base (a sixteenth of the base).
	if err := copyFile(readPath(o.dir), journalPath(o.dir)); err != nil {
		return nil, err
	}
	// On the way, a copy at a quarter of the limit.
	limit := max(w.formatSize/16, 64<<10)
	for i := 0; ; i++ {
		jp := statecache.JournalPath(journalPath(o.dir))
		before := fileSize(jp)
		if w.quarterSize == 0 && before >= limit/4 {
			if err := copyFile(journalPath(o.dir), quarterPath(o.dir)); err != nil {
				return nil, err
			}
			w.quarterSize = before
		}
		c := statecache.Load(journalPath(o.dir), o.ref, false)
		transition(c, w.taskPath, i)
		if err := c.Save(journalPath(o.dir)); err != nil {
			return nil, err
		}
		after := fileSize(jp)
		if after <= before || after+(after-before) >= limit {
			w.journalSize = after
			break
		}
	}
	return w, nil
}

// flattenBase writes the cache at path as a base without a journal: a save
// that finds the journal it read gone writes a base (journal.go).
func flattenBase(path, ref, task string) error {
	c := statecache.Load(path, ref, true)
	defer c.Close()
	changeSummary(c, task)
	if err := c.Save(path); err != nil {
		return err
	}
	return saveBase(c, path, task)
}

// saveBase saves c as a whole new base, exactly as Save writes one when the
// journal is full: it puts a changed summary, appends it to the journal,
// puts it again, removes the journal and saves (the journal this cache read
// is gone, so Save writes a base). The second part is what it times.
func saveBase(c *statecache.Cache, path, task string) error {
	if err := c.Save(path); err != nil { // a journal this cache has read
		return err
	}
	_, err := timedBase(c, path, task, func() {})
	return err
}

// timedBase puts change() and the summary, then writes the base, timed.
func timedBase(c *statecache.Cache, path, task string, change func()) (float64, error) {
	change()
	changeSummary(c, task)
	t := time.Now()
	if err := os.Remove(statecache.JournalPath(path)); err != nil {
		return 0, err
	}
	if err := c.Save(path); err != nil {
		return 0, err
	}
	ms := msSince(t)
	if fileSize(statecache.JournalPath(path)) >= 0 {
		return 0, fmt.Errorf("%s: the save appended to a journal instead of writing a base", path)
	}
	return ms, nil
}

func fileSize(p string) int64 {
	fi, err := os.Stat(p)
	if err != nil {
		return -1
	}
	return fi.Size()
}

func taskDir(path string) string {
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		return path[:i]
	}
	return ""
}

func randHash() (h plumbing.Hash) {
	_, _ = rand.Read(h[:])
	return h
}

// changeSummary puts the summary of path again with a new blob (what every
// transition does to the task it moves): the same size, new bytes.
func changeSummary(c *statecache.Cache, path string) {
	s := *c.Summaries.Get(path).Summary()
	s.Blob = randHash()
	c.PutSummary(&s)
}

// transition changes in c what a transition of the task at path changes:
// the tip and root, the task's entry in its directory and the directory's
// in the root, its summary and its sync-index entry. (orch's tree surgery
// makes the new trees; that part is not the cache's and is not timed.)
func transition(c *statecache.Cache, path string, i int) {
	c.Tip, c.Root = randHash(), randHash()
	dir, name := taskDir(path), path[len(taskDir(path))+1:]
	child := setEntry(c, dir, name, randHash())
	parent, pname := "", dir
	if j := strings.LastIndexByte(dir, '/'); j >= 0 {
		parent, pname = dir[:j], dir[j+1:]
	}
	setEntry(c, parent, pname, child)
	if parent != "" { // a deeper directory: the root changes too
		setEntry(c, "", strings.SplitN(dir, "/", 2)[0], randHash())
	}
	changeSummary(c, path)
	if ie := c.Index.Get(path); ie != nil {
		n := *ie
		n.Mtime += int64(i + 1)
		n.Blob = randHash()
		n.MarkChanged()
		c.PutIndex(path, &n)
	}
}

// setEntry replaces directory dir by a copy with name's hash set; it
// returns the new directory's hash.
func setEntry(c *statecache.Cache, dir, name string, h plumbing.Hash) plumbing.Hash {
	old := c.Dirs[dir]
	if old == nil {
		return randHash()
	}
	n := &gitrepo.Tree{Hash: randHash(), Entries: append([]gitrepo.TreeEntry(nil), old.Entries...)}
	for k := range n.Entries {
		if n.Entries[k].Name == name {
			n.Entries[k].Hash = h
		}
	}
	c.Dirs[dir] = n
	return n.Hash
}

// readAll decodes every summary of a loaded cache, as `orch list --json`
// does (into one scratch summary), and returns how many it saw.
func readAll(c *statecache.Cache) int {
	var scratch statecache.Summary
	n := 0
	c.Summaries.Each(func(r *statecache.Record) {
		if s := r.Read(&scratch); s.Task.ID != "" || s.Problem != "" {
			n++
		}
	})
	return n
}

// formatOp is one single-process operation on the state cache file.
func formatOp(o *opts) (childResult, error) {
	var r childResult
	t := time.Now()
	switch o.op {
	case "f-read", "f-read-journal", "f-read-quarter":
		p := readPath(o.dir)
		switch o.op {
		case "f-read-journal":
			p = journalPath(o.dir)
		case "f-read-quarter":
			p = quarterPath(o.dir)
		}
		c := statecache.Load(p, o.ref, true)
		r.OpenMs = msSince(t)
		r.N = readAll(c)
		c.Close()
	case "f-path", "f-id":
		c := statecache.Load(readPath(o.dir), o.ref, true)
		r.OpenMs = msSince(t)
		t1 := time.Now()
		var rec *statecache.Record
		if o.op == "f-path" {
			rec = c.Summaries.Get(o.path)
		} else {
			rec = c.Summaries.ByNamedID(taskDir(o.path), o.id)
		}
		var scratch statecache.Summary
		if rec != nil && rec.Read(&scratch).Task.ID == o.id {
			r.N = 1
		}
		r.LookupUs = float64(time.Since(t1).Nanoseconds()) / 1e3
		c.Close()
	case "f-save", "f-save-base", "f-tr", "f-tr-base":
		p := writePath(o.dir)
		if strings.HasSuffix(o.op, "-base") {
			p = basePath(o.dir)
		}
		c := statecache.Load(p, o.ref, true)
		r.OpenMs = msSince(t)
		r.N = c.Summaries.Len()
		change := func() {}
		if strings.HasPrefix(o.op, "f-tr") {
			change = func() { transition(c, o.path, int(time.Now().UnixNano()%1000)) }
		}
		if strings.HasSuffix(o.op, "-base") {
			// A journal this cache has read: its save then writes a base.
			changeSummary(c, o.path)
			if err := c.Save(p); err != nil {
				return r, err
			}
			ms, err := timedBase(c, p, o.path, change)
			if err != nil {
				return r, err
			}
			r.Ms = ms
		} else {
			change()
			changeSummary(c, o.path)
			t1 := time.Now()
			if err := c.Save(p); err != nil {
				return r, err
			}
			r.Ms = msSince(t1)
		}
		c.Close()
		return r, nil
	default:
		return r, fmt.Errorf("unknown operation %q", o.op)
	}
	r.Ms = msSince(t)
	return r, nil
}
