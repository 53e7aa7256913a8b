package statecache

import (
	"encoding/binary"
	"errors"
	"slices"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/orch-tool/orch/gitstore/gitrepo"
	"github.com/orch-tool/orch/taskfile"
)

// The state cache's file format: enc writes it, dec reads it, and the
// encode and decode functions below give each record its layout.

type enc struct{ b []byte }

func (e *enc) uv(v uint64)          { e.b = binary.AppendUvarint(e.b, v) }
func (e *enc) sv(v int64)           { e.b = binary.AppendVarint(e.b, v) }
func (e *enc) str(s string)         { e.uv(uint64(len(s))); e.b = append(e.b, s...) }
func (e *enc) hash(h plumbing.Hash) { e.b = append(e.b, h[:]...) }

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

// dec reads the cache. Its strings are copies; a record's undecoded rest
// is a slice of buf (buf is never written after loading).
type dec struct {
	buf []byte
	pos int
	err error
}

var errCorrupt = errors.New("corrupt cache")

func (d *dec) fail() {
	d.err = errCorrupt
	d.pos = len(d.buf)
}

func (d *dec) uv() uint64 {
	v, n := binary.Uvarint(d.buf[d.pos:])
	if n <= 0 {
		d.fail()
		return 0
	}
	d.pos += n
	return v
}

func (d *dec) sv() int64 {
	v, n := binary.Varint(d.buf[d.pos:])
	if n <= 0 {
		d.fail()
		return 0
	}
	d.pos += n
	return v
}

func (d *dec) str() string {
	n := d.uv()
	if n > uint64(len(d.buf)-d.pos) {
		d.fail()
		return ""
	}
	if n == 0 {
		return ""
	}
	s := string(d.buf[d.pos : d.pos+int(n)])
	d.pos += int(n)
	return s
}

func (d *dec) hash() (h plumbing.Hash) {
	if len(d.buf)-d.pos < len(h) {
		d.fail()
		return
	}
	copy(h[:], d.buf[d.pos:])
	d.pos += len(h)
	return
}

func (d *dec) time() time.Time {
	if d.uv() == 0 {
		return time.Time{}
	}
	sec := d.sv()
	return time.Unix(sec, int64(d.uv()%1e9)).UTC()
}

// strs reads a list of strings into dst's array, grown when it lacks room.
func (d *dec) strs(dst []string) []string {
	n := d.uv()
	if n > uint64(len(d.buf)-d.pos) {
		d.fail()
		return nil
	}
	if n == 0 {
		return dst[:0] // nil when dst is
	}
	out := slices.Grow(dst[:0], int(n))[:n]
	for i := range out {
		out[i] = d.str()
	}
	return out
}

// encodeTask writes a task; ID, queue, priority and created come first
// because they are a summary's header (see decodeSummaryHeader): what
// claim order sorts by.
func encodeTask(e *enc, t *taskfile.Task) {
	e.str(t.ID)
	e.str(string(t.Queue))
	e.str(t.Priority)
	e.time(t.Created)
	e.str(t.Title)
	e.str(t.Role)
	e.str(t.Branch)
	e.str(t.BaseBranch)
	e.uv(uint64(t.PRNumber))
	e.uv(uint64(t.RejectionCount))
	e.uv(uint64(t.NoProgress))
	e.uv(uint64(t.Attempts))
	e.str(t.ClaimedBy)
	e.time(t.ClaimedAt)
	e.time(t.HeartbeatAt)
	e.str(t.SubmittedBy)
	e.time(t.SubmittedAt)
	e.str(t.AssignedTo)
	e.strs(t.LockedOut)
	e.strs(t.WorkedBy)
	e.strs(t.GitHubReviews)
	e.strs(t.DependsOn)
	e.strs(t.Labels)
	e.str(t.RejectedAt)
	e.uv(uint64(t.Crashes))
	e.str(t.ReviewClaimedBy)
	e.time(t.ReviewClaimedAt)
	e.uv(uint64(t.ReviewAttempts))
	e.time(t.FinishedAt)
	e.time(t.ApprovedAt)
	e.str(t.ApprovedCommit)
	e.str(t.LandedCommit)
	e.uv(uint64(t.LandFailures))
	e.str(t.CheckedCommit)
}

// decodeTask decodes a task into t, filling its lists' arrays again (see
// SummaryHeader.Read).
func decodeTask(d *dec, t *taskfile.Task) {
	decodeTaskHeader(d, t)
	t.Title = d.str()
	t.Role = d.str()
	t.Branch = d.str()
	t.BaseBranch = d.str()
	t.PRNumber = int(d.uv())
	t.RejectionCount = int(d.uv())
	t.NoProgress = int(d.uv())
	t.Attempts = int(d.uv())
	t.ClaimedBy = d.str()
	t.ClaimedAt = d.time()
	t.HeartbeatAt = d.time()
	t.SubmittedBy = d.str()
	t.SubmittedAt = d.time()
	t.AssignedTo = d.str()
	t.LockedOut = d.strs(t.LockedOut)
	t.WorkedBy = d.strs(t.WorkedBy)
	t.GitHubReviews = d.strs(t.GitHubReviews)
	t.DependsOn = d.strs(t.DependsOn)
	t.Labels = d.strs(t.Labels)
	t.RejectedAt = d.str()
	t.Crashes = int(d.uv())
	t.ReviewClaimedBy = d.str()
	t.ReviewClaimedAt = d.time()
	t.ReviewAttempts = int(d.uv())
	t.FinishedAt = d.time()
	t.ApprovedAt = d.time()
	t.ApprovedCommit = d.str()
	t.LandedCommit = d.str()
	t.LandFailures = int(d.uv())
	t.CheckedCommit = d.str()
}

// decodeTaskHeader reads the fields encodeTask writes first.
func decodeTaskHeader(d *dec, t *taskfile.Task) {
	t.ID = d.str()
	t.Queue = taskfile.Queue(d.str())
	t.Priority = d.str()
	t.Created = d.time()
}

// Index entry flags.
const (
	ieRacy     = 1
	ieConflict = 2
)

// encodeDir writes a directory: path, tree id and entries.
func encodeDir(e *enc, path string, d *gitrepo.Tree) {
	e.str(path)
	e.hash(d.Hash)
	e.uv(uint64(len(d.Entries)))
	for _, en := range d.Entries {
		e.str(en.Name)
		e.uv(uint64(en.Mode))
		e.hash(en.Hash)
	}
}

// decodeDir reads what encodeDir wrote (nil on a corrupt count).
func decodeDir(d *dec) (string, *gitrepo.Tree) {
	path, dt, ne := decodeDirHead(d)
	if dt == nil {
		return path, nil
	}
	dt.Entries = make([]gitrepo.TreeEntry, ne)
	for j := range dt.Entries {
		dt.Entries[j] = d.entry()
	}
	return path, dt
}

// decodeDirHead reads a directory's path, tree id and number of entries,
// which follow; the tree is nil when the number cannot be right.
func decodeDirHead(d *dec) (string, *gitrepo.Tree, int) {
	path := d.str()
	dt := &gitrepo.Tree{Hash: d.hash()}
	ne := d.uv()
	// An entry takes at least 22 bytes (a name length, a mode, a hash):
	// damage cannot make this allocate more than about twice the file.
	if ne > uint64(len(d.buf)-d.pos)/22 {
		d.fail()
		return path, nil, 0
	}
	return path, dt, int(ne)
}

// skipDir reads a directory as decodeDir does, without making its entries:
// it only steps over them (a tenth of decoding them).
func skipDir(d *dec) (string, *gitrepo.Tree) {
	path, dt, ne := decodeDirHead(d)
	for range ne {
		d.skip(d.uv()) // the name
		d.uv()         // the mode
		d.skip(uint64(len(plumbing.Hash{})))
	}
	return path, dt
}

// skip steps over n bytes.
func (d *dec) skip(n uint64) {
	if n > uint64(len(d.buf)-d.pos) {
		d.fail()
		return
	}
	d.pos += int(n)
}

// entry reads one directory entry.
func (d *dec) entry() gitrepo.TreeEntry {
	return gitrepo.TreeEntry{Name: d.str(), Mode: uint32(d.uv()), Hash: d.hash()}
}

// SummaryFormat names the encoding AppendSummary writes: a file of
// summaries (the archive's cache) starts with it, so that one written in
// another format is made again.
const SummaryFormat = cacheMagic

// AppendSummary appends s's record, as the state cache file holds it, to
// b. (bench/cachestore puts these same records in bbolt, to compare the
// two stores on equal terms.)
func AppendSummary(b []byte, s *Summary) []byte {
	e := &enc{b: b}
	encodeSummary(e, s)
	return e.b
}

// ReadSummary decodes the record AppendSummary wrote at the start of b
// into s and returns the bytes after it; ok is false when b does not start
// with a whole record.
func ReadSummary(b []byte, s *Summary) (rest []byte, ok bool) {
	d := &dec{buf: b}
	decodeSummary(d, s)
	if d.err != nil {
		return nil, false
	}
	return b[d.pos:], true
}

// encodeSummary writes a task summary: its length, then path, blob,
// problem, task and custom fields, so that a reader can decode the header and skip the rest.
func encodeSummary(e *enc, s *Summary) {
	body := &enc{b: make([]byte, 0, 256)}
	body.str(s.Path)
	body.hash(s.Blob)
	body.str(s.Problem)
	body.uv(uint64(s.ProblemLine))
	encodeTask(body, &s.Task)
	body.str(string(s.Fields))
	e.uv(uint64(len(body.b)))
	e.b = append(e.b, body.b...)
}

// record reads the length of a length-prefixed record and returns a decoder
// of its bytes and where it ends; ok is false on a corrupt length. (The
// decoder is a value: one allocation per record was a visible part of
// decoding the summaries.)
func (d *dec) record() (body dec, end int, ok bool) {
	n := d.uv()
	if n > uint64(len(d.buf)-d.pos) {
		d.fail()
		return dec{}, 0, false
	}
	end = d.pos + int(n)
	return dec{buf: d.buf[:end], pos: d.pos}, end, true
}

// decodeSumRec reads what encodeSummary wrote into a record: its header,
// with raw keeping the record's bytes for Record.summary (and for writing it
// back unchanged).
func decodeSumRec(d *dec, r *Record) {
	start := d.pos
	body, end, ok := d.record()
	if !ok {
		return
	}
	r.Path = body.str()
	body.hash() // the blob (Record.Blob)
	body.str()  // problem
	body.uv()   // its line
	r.ID = body.str()
	r.Queue = taskfile.Queue(body.str())
	r.Priority = body.str()
	r.Created = CreatedKey(body.time())
	if body.err != nil {
		d.fail()
		return
	}
	d.pos = end
	r.rawBytes = d.buf[start:end:end]
	r.rec = r
}

// decodeSummary reads a whole summary record.
func decodeSummary(d *dec, s *Summary) {
	body, end, ok := d.record()
	if !ok {
		return
	}
	s.Path, s.Blob, s.Problem, s.ProblemLine = body.str(), body.hash(), body.str(), int(body.uv())
	decodeTask(&body, &s.Task)
	s.Fields = nil
	if f := body.str(); f != "" {
		s.Fields = []byte(f)
	}
	if body.err != nil || body.pos != end {
		d.fail()
		return
	}
	d.pos = end
}

// encodeIndexEntry writes one sync-index entry (without its path).
func encodeIndexEntry(e *enc, ie *IndexEntry) {
	e.hash(ie.Blob)
	e.sv(ie.Size)
	e.sv(ie.Mtime)
	e.sv(ie.Ctime)
	e.uv(ie.Ino)
	flags := uint64(0)
	if ie.Racy {
		flags |= ieRacy
	}
	if !ie.ConflictW.IsZero() || !ie.ConflictR.IsZero() {
		flags |= ieConflict
	}
	e.uv(flags)
	e.uv(uint64(len(ie.Prev)))
	for _, p := range ie.Prev {
		e.hash(p)
	}
	if flags&ieConflict != 0 {
		e.hash(ie.ConflictW)
		e.hash(ie.ConflictR)
	}
}

// decodeIndexEntry reads what encodeIndexEntry wrote.
func decodeIndexEntry(d *dec, ie *IndexEntry) {
	start := d.pos
	ie.Blob, ie.Size, ie.Mtime, ie.Ctime, ie.Ino = d.hash(), d.sv(), d.sv(), d.sv(), d.uv()
	flags := d.uv()
	ie.Racy = flags&ieRacy != 0
	np := d.uv()
	if np > 16 {
		d.fail()
		return
	}
	// A scratch entry decoded into again and again reuses its Prev.
	prev := ie.Prev[:0]
	if np == 0 {
		prev = nil
	}
	for j := uint64(0); j < np; j++ {
		prev = append(prev, d.hash())
	}
	ie.Prev = prev
	ie.ConflictW, ie.ConflictR = plumbing.ZeroHash, plumbing.ZeroHash
	if flags&ieConflict != 0 {
		ie.ConflictW, ie.ConflictR = d.hash(), d.hash()
	}
	ie.raw = nil
	if d.err == nil {
		ie.raw = d.buf[start:d.pos:d.pos]
	}
}
