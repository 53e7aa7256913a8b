package gitstore

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/orch-tool/orch/taskfile"
)

// The state cache lives in <common dir>/orch/ and holds what every command
// would otherwise rebuild: the state branch's trees (for tree surgery
// without reading a 10,000-entry tree), the parsed summary of every task
// (for list and claim without parsing 10,000 files) and the view's sync
// index (for reconciling with stat calls instead of reads). It is a pure
// cache: a missing, stale or corrupt file is detected (version, ref, tip,
// checksum) and rebuilt from the branch and the view.
const cacheMagic = "orch-state-cache v6\n"

// Summary is what orch knows about a task without reading its file again.
type Summary struct {
	Path        string
	Blob        plumbing.Hash
	Task        taskfile.Task
	Problem     string // why the committed file does not parse, if it does not
	ProblemLine int
}

// indexEntry is the view's sync index for one path: the blob last written to
// or read from the view, and the file's stat data at that moment.
type indexEntry struct {
	blob  plumbing.Hash
	size  int64
	mtime int64
	ctime int64
	ino   uint64
	racy  bool            // stat taken too close to a write to be trusted
	prev  []plumbing.Hash // older blobs this path had in the view, newest first
	// conflictW and conflictR are set while the view file is in conflict:
	// the view's and the branch's blobs when the conflict was found.
	conflictW, conflictR plumbing.Hash
}

type stateCache struct {
	ref       string
	tip       plumbing.Hash
	root      plumbing.Hash
	dirs      map[string]*dirTree
	summaries map[string]*Summary // by path
	index     map[string]*indexEntry
}

func newStateCache(ref string) *stateCache {
	return &stateCache{ref: ref, dirs: map[string]*dirTree{}, summaries: map[string]*Summary{}, index: map[string]*indexEntry{}}
}

type enc struct{ b []byte }

func (e *enc) uv(v uint64)          { e.b = binary.AppendUvarint(e.b, v) }
func (e *enc) sv(v int64)           { e.b = binary.AppendVarint(e.b, v) }
func (e *enc) str(s string)         { e.uv(uint64(len(s))); e.b = append(e.b, s...) }
func (e *enc) hash(h plumbing.Hash) { e.b = append(e.b, h[:]...) }

// time keeps the instant exactly: a presence flag (the Unix epoch is a
// valid time, not "unset"), the seconds and the nanoseconds.
func (e *enc) time(t time.Time) {
	if t.IsZero() {
		e.uv(0)
		return
	}
	e.uv(1)
	e.sv(t.Unix())
	e.uv(uint64(t.Nanosecond()))
}
func (e *enc) strs(l []string) {
	e.uv(uint64(len(l)))
	for _, s := range l {
		e.str(s)
	}
}

type dec struct {
	b   []byte
	err error
}

var errCorrupt = errors.New("corrupt cache")

func (d *dec) uv() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errCorrupt
		d.b = nil
		return 0
	}
	d.b = d.b[n:]
	return v
}
func (d *dec) sv() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = errCorrupt
		d.b = nil
		return 0
	}
	d.b = d.b[n:]
	return v
}
func (d *dec) str() string {
	n := d.uv()
	if n > uint64(len(d.b)) {
		d.err = errCorrupt
		d.b = nil
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}
func (d *dec) hash() (h plumbing.Hash) {
	if len(d.b) < len(h) {
		d.err = errCorrupt
		d.b = nil
		return
	}
	copy(h[:], d.b)
	d.b = d.b[len(h):]
	return
}
func (d *dec) time() time.Time {
	if d.uv() == 0 {
		return time.Time{}
	}
	sec := d.sv()
	return time.Unix(sec, int64(d.uv()%1e9)).UTC()
}
func (d *dec) strs() []string {
	n := d.uv()
	if n > uint64(len(d.b)) {
		d.err = errCorrupt
		d.b = nil
		return nil
	}
	if n == 0 {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = d.str()
	}
	return out
}

func encodeTask(e *enc, t *taskfile.Task) {
	e.str(t.ID)
	e.str(t.Title)
	e.str(string(t.Queue))
	e.str(t.Priority)
	e.str(t.Role)
	e.str(t.Branch)
	e.str(t.BaseBranch)
	e.uv(uint64(t.PRNumber))
	e.uv(uint64(t.RejectionCount))
	e.uv(uint64(t.NoProgress))
	e.uv(uint64(t.Attempts))
	e.str(t.ClaimedBy)
	e.time(t.ClaimedAt)
	e.str(t.SubmittedBy)
	e.time(t.SubmittedAt)
	e.str(t.AssignedTo)
	e.strs(t.LockedOut)
	e.strs(t.DependsOn)
	e.strs(t.Labels)
	e.time(t.Created)
	e.str(t.RejectedAt)
}

func decodeTask(d *dec, t *taskfile.Task) {
	t.ID = d.str()
	t.Title = d.str()
	t.Queue = taskfile.Queue(d.str())
	t.Priority = d.str()
	t.Role = d.str()
	t.Branch = d.str()
	t.BaseBranch = d.str()
	t.PRNumber = int(d.uv())
	t.RejectionCount = int(d.uv())
	t.NoProgress = int(d.uv())
	t.Attempts = int(d.uv())
	t.ClaimedBy = d.str()
	t.ClaimedAt = d.time()
	t.SubmittedBy = d.str()
	t.SubmittedAt = d.time()
	t.AssignedTo = d.str()
	t.LockedOut = d.strs()
	t.DependsOn = d.strs()
	t.Labels = d.strs()
	t.Created = d.time()
	t.RejectedAt = d.str()
}

func (c *stateCache) encode() []byte {
	e := &enc{b: make([]byte, 0, 256*(len(c.summaries)+1)+64*len(c.index))}
	e.b = append(e.b, cacheMagic...)
	e.str(c.ref)
	e.hash(c.tip)
	e.hash(c.root)
	e.uv(uint64(len(c.dirs)))
	for path, d := range c.dirs {
		e.str(path)
		e.hash(d.hash)
		e.uv(uint64(len(d.entries)))
		for _, en := range d.entries {
			e.str(en.name)
			e.uv(uint64(en.mode))
			e.hash(en.hash)
		}
	}
	e.uv(uint64(len(c.summaries)))
	for _, s := range c.summaries {
		e.str(s.Path)
		e.hash(s.Blob)
		e.str(s.Problem)
		e.uv(uint64(s.ProblemLine))
		encodeTask(e, &s.Task)
	}
	e.uv(uint64(len(c.index)))
	for path, ie := range c.index {
		e.str(path)
		e.hash(ie.blob)
		e.sv(ie.size)
		e.sv(ie.mtime)
		e.sv(ie.ctime)
		e.uv(ie.ino)
		if ie.racy {
			e.uv(1)
		} else {
			e.uv(0)
		}
		e.uv(uint64(len(ie.prev)))
		for _, p := range ie.prev {
			e.hash(p)
		}
		e.hash(ie.conflictW)
		e.hash(ie.conflictR)
	}
	e.b = binary.LittleEndian.AppendUint32(e.b, crc32.ChecksumIEEE(e.b))
	return e.b
}

func decodeStateCache(b []byte) (*stateCache, error) {
	if len(b) < len(cacheMagic)+4 || string(b[:len(cacheMagic)]) != cacheMagic {
		return nil, errCorrupt
	}
	body, sum := b[:len(b)-4], binary.LittleEndian.Uint32(b[len(b)-4:])
	if crc32.ChecksumIEEE(body) != sum {
		return nil, errCorrupt
	}
	d := &dec{b: body[len(cacheMagic):]}
	c := newStateCache(d.str())
	c.tip = d.hash()
	c.root = d.hash()
	nd := d.uv()
	for i := uint64(0); i < nd && d.err == nil; i++ {
		path := d.str()
		dt := &dirTree{hash: d.hash()}
		ne := d.uv()
		if ne > uint64(len(d.b)) {
			return nil, errCorrupt
		}
		dt.entries = make([]treeEntry, ne)
		for j := range dt.entries {
			dt.entries[j] = treeEntry{name: d.str(), mode: uint32(d.uv()), hash: d.hash()}
		}
		c.dirs[path] = dt
	}
	ns := d.uv()
	for i := uint64(0); i < ns && d.err == nil; i++ {
		s := &Summary{Path: d.str(), Blob: d.hash(), Problem: d.str(), ProblemLine: int(d.uv())}
		decodeTask(d, &s.Task)
		c.summaries[s.Path] = s
	}
	ni := d.uv()
	for i := uint64(0); i < ni && d.err == nil; i++ {
		path := d.str()
		ie := &indexEntry{blob: d.hash(), size: d.sv(), mtime: d.sv(), ctime: d.sv(), ino: d.uv(), racy: d.uv() == 1}
		np := d.uv()
		if np > 16 {
			return nil, errCorrupt
		}
		for j := uint64(0); j < np; j++ {
			ie.prev = append(ie.prev, d.hash())
		}
		ie.conflictW, ie.conflictR = d.hash(), d.hash()
		c.index[path] = ie
	}
	if d.err != nil || len(d.b) != 0 {
		return nil, errCorrupt
	}
	return c, nil
}

func loadStateCache(path, ref string) *stateCache {
	b, err := os.ReadFile(path)
	if err != nil {
		return newStateCache(ref)
	}
	c, err := decodeStateCache(b)
	if err != nil || c.ref != ref {
		return newStateCache(ref)
	}
	return c
}

// save writes the cache atomically. It is not fsynced: losing it costs a
// rebuild, never data.
func (c *stateCache) save(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o777); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".cache-")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(c.encode()); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}
