package statecache

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"
	"unsafe"

	"github.com/go-git/go-git/v5/plumbing"
	"golang.org/x/sys/unix"

	"github.com/orch-tool/orch/gitstore/gitrepo"
	"github.com/orch-tool/orch/gitstore/privfile"
	"github.com/orch-tool/orch/internal/trace"
	"github.com/orch-tool/orch/taskfile"
)

// cacheMagic starts every cache file; the version changes with the format,
// and a file of another version is rebuilt.
const cacheMagic = "orch-state-cache v19\n"

// Cache is the state cache of one state branch, as loaded: what it
// describes (Tip, Root, Dirs), the task summaries and the view's sync
// index. The store changes it in place; Save records what changed.
type Cache struct {
	// Tip is the commit the cache describes, Root its tree and Dirs the
	// directories of that tree by path ("" for the root).
	Tip       plumbing.Hash
	Root      plumbing.Hash
	Dirs      map[string]*gitrepo.Tree
	Summaries Summaries // read here, changed through PutSummary and DropSummary
	Index     Index     // read here, changed through PutIndex and DropIndex

	raw     []byte  // the file as loaded: decoded strings point into it
	mapping []byte  // raw, when it is a mapping of the file (see Close)
	gen     [8]byte // ties a journal to its base file
	ref     string

	// rawDirs are the base file's directories as read: while Dirs still
	// holds the same Tree (a changed directory is a new one), it is written
	// back as the bytes it was read from.
	rawDirs map[string]rawDir

	// What changed since the base and journal were read (see journal.go).
	loadedDirs   map[string]*gitrepo.Tree
	loadedTip    plumbing.Hash
	delSummaries map[string]bool
	delIndex     map[string]bool
	journalSize  int64
	journalRaw   [][]byte // journal batches as read: decoded strings point into them

	overlays map[string]*dirOverlay
}

type rawDir struct {
	tree *gitrepo.Tree
	raw  []byte
	// undecoded: tree's entries are still only in raw (decodeCacheDirs),
	// until the journal's changes to them are known (see flushOverlay and
	// decodeDirEntries).
	undecoded bool
}

// Empty is the cache of state branch ref when there is no usable file:
// the store fills it from the branch.
func Empty(ref string) *Cache { return newCache(ref) }

func newCache(ref string) *Cache {
	return &Cache{ref: ref, Dirs: map[string]*gitrepo.Tree{},
		loadedDirs: map[string]*gitrepo.Tree{}, delSummaries: map[string]bool{}, delIndex: map[string]bool{}}
}

// PutSummary adds or replaces a summary; it returns its record.
func (c *Cache) PutSummary(s *Summary) *Record {
	r := newRecord(s)
	c.Summaries.put(r)
	return r
}

// DropSummary removes a summary.
func (c *Cache) DropSummary(p string) {
	c.Summaries.drop(p)
	c.delSummaries[p] = true
}

// PutIndex adds or replaces the sync-index entry of path p.
func (c *Cache) PutIndex(p string, ie *IndexEntry) { c.Index.put(p, ie) }

// DropIndex removes the sync-index entry of path p.
func (c *Cache) DropIndex(p string) {
	c.Index.drop(p)
	c.delIndex[p] = true
}

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

// dec reads the cache. Strings point into buf instead of being copied (buf
// is never written after loading), which makes loading 10,000 summaries cost
// a few allocations instead of a few hundred thousand.
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
	s := unsafe.String(&d.buf[d.pos], int(n))
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

// decodeDirEntries decodes the entries of the directories decodeCacheDirs
// read but left undecoded, unless the journal replaced them since.
func (c *Cache) decodeDirEntries() {
	for path, r := range c.rawDirs {
		if !r.undecoded {
			continue
		}
		if c.Dirs[path] != r.tree {
			delete(c.rawDirs, path) // replaced by the journal
			continue
		}
		_, dt := decodeDir(&dec{buf: r.raw}) // read whole by decodeCacheDirs
		r.tree.Entries = dt.Entries
		r.undecoded = false
		c.rawDirs[path] = r
	}
}

// encodeSummary writes a task summary: its length, then path, blob,
// problem and task, so that a reader can decode the header and skip the rest.
func encodeSummary(e *enc, s *Summary) {
	body := &enc{b: make([]byte, 0, 256)}
	body.str(s.Path)
	body.hash(s.Blob)
	body.str(s.Problem)
	body.uv(uint64(s.ProblemLine))
	encodeTask(body, &s.Task)
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
// back unchanged). The header's queue and (normal) priority are constants;
// its other strings point into d's bytes.
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
	r.rawData, r.rawLen = &d.buf[start], uint32(end-start) // a record is at least minRecord bytes
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

// encode writes the cache. Summaries and directories that did not change
// since the cache was loaded are copied as the bytes they were loaded from.
func (c *Cache) encode() []byte {
	size := len(c.raw) + 256
	if size < 1<<16 {
		size = 1 << 16
	}
	e := &enc{b: make([]byte, 0, size)}
	e.b = append(e.b, cacheMagic...)
	e.b = append(e.b, c.gen[:]...)
	e.str(c.ref)
	e.hash(c.Tip)
	e.hash(c.Root)
	e.uv(uint64(len(c.Dirs)))
	for path, d := range c.Dirs {
		if r, ok := c.rawDirs[path]; ok && r.tree == d {
			e.b = append(e.b, r.raw...)
			continue
		}
		encodeDir(e, path, d)
	}
	// Summaries in list order (see cmpListOrder), then their places in
	// path order, by which they are looked up (see Summaries); index
	// entries in path order: loaded, a slab searched by path (see Index),
	// in the order of the branch's trees, which the view comparison walks.
	e.uv(uint64(c.Summaries.n))
	for i, r := range c.Summaries.InListOrder() {
		r.pos = int32(i)
		if raw := r.raw(); raw != nil {
			e.b = append(e.b, raw...)
			continue
		}
		encodeSummary(e, r.s)
	}
	for _, r := range c.Summaries.Sorted() {
		e.b = binary.LittleEndian.AppendUint32(e.b, uint32(r.pos))
	}
	e.uv(uint64(c.Index.n))
	c.Index.sorted(func(path string, ie *IndexEntry) {
		e.str(path)
		encodeIndexEntry(e, ie)
	})
	e.b = binary.LittleEndian.AppendUint32(e.b, checksum(e.b))
	return e.b
}

// checksum guards the cache file and each journal batch. CRC-32 (IEEE):
// Go computes it with carry-less multiplication, with next to no set-up;
// CRC-32C cost more set-up in every process and was slower over the
// cache.
func checksum(b []byte) uint32 { return crc32.ChecksumIEEE(b) }

func decodeCache(b []byte) (*Cache, error) {
	c, d, err := decodeCacheDirs(b)
	if err != nil {
		return nil, err
	}
	c.decodeDirEntries()
	if err := c.decodeRest(d); err != nil {
		return nil, err
	}
	for p, dt := range c.Dirs {
		c.loadedDirs[p] = dt
	}
	c.loadedTip = c.Tip
	return c, nil
}

// decodeCacheDirs decodes a cache file's header and reads its directories,
// whose entries decodeDirEntries (or a journal's change, flushOverlay)
// decodes, and returns the decoder at its summaries. The checksum is verified by
// decodeRest: until then the directories are only fit for the view scan,
// which stats the names they list (see Loading.Dirs).
func decodeCacheDirs(b []byte) (*Cache, *dec, error) {
	if len(b) < len(cacheMagic)+8+4 || string(b[:len(cacheMagic)]) != cacheMagic {
		return nil, nil, errCorrupt
	}
	body := b[:len(b)-4]
	d := &dec{buf: body, pos: len(cacheMagic) + 8}
	c := newCache(d.str())
	copy(c.gen[:], body[len(cacheMagic):])
	c.raw = b
	c.Tip = d.hash()
	c.Root = d.hash()
	nd := d.uv()
	if nd > uint64(len(body)) {
		return nil, nil, errCorrupt
	}
	c.rawDirs = map[string]rawDir{}
	for i := uint64(0); i < nd && d.err == nil; i++ {
		start := d.pos
		path, dt := skipDir(d)
		if dt == nil {
			return nil, nil, errCorrupt
		}
		c.rawDirs[path] = rawDir{dt, body[start:d.pos:d.pos], true}
		c.Dirs[path] = dt
	}
	if d.err != nil {
		return nil, nil, errCorrupt
	}
	return c, d, nil
}

// decodeRest decodes the summaries and the sync index, which d is at, and
// verifies the file's checksum. What was decoded from a file whose
// checksum does not match is dropped with it (the decoding itself is
// bounds-checked: fuzz_cache_test.go).
func (c *Cache) decodeRest(d *dec) error {
	b := c.raw
	if binary.LittleEndian.Uint32(b[len(b)-4:]) != checksum(b[:len(b)-4]) {
		return errCorrupt
	}
	ns := d.uv()
	if ns > uint64(len(d.buf)-d.pos)/minRecord || ns > math.MaxInt32 {
		return errCorrupt
	}
	ss := &c.Summaries
	ss.base = make([]Record, ns)
	for i := uint64(0); i < ns && d.err == nil; i++ {
		decodeSumRec(d, &ss.base[i])
	}
	if d.err != nil || uint64(len(d.buf)-d.pos) < 4*ns {
		return errCorrupt
	}
	// Their places in path order. A place outside the records is corrupt;
	// an order the encoder did not write would only mislead lookups.
	ss.byPath = make([]int32, ns)
	for i := range ss.byPath {
		at := binary.LittleEndian.Uint32(d.buf[d.pos:])
		d.pos += 4
		if uint64(at) >= ns {
			return errCorrupt
		}
		ss.byPath[i] = int32(at)
	}
	ss.n = int(ns)
	ni := d.uv()
	if ni > uint64(len(d.buf)-d.pos)/minRecord {
		return errCorrupt
	}
	// In path order too (see Index). Each entry is decoded here only to
	// check it; Index keeps where it is.
	if len(d.buf) > math.MaxUint32 {
		return errCorrupt
	}
	c.Index.base = make([]indexRec, ni)
	c.Index.buf = d.buf
	var check IndexEntry
	for i := uint64(0); i < ni && d.err == nil; i++ {
		r := &c.Index.base[i]
		r.path = d.str()
		r.off = uint32(d.pos)
		decodeIndexEntry(d, &check)
		if i > 0 && r.path <= c.Index.base[i-1].path {
			return errCorrupt
		}
	}
	c.Index.n = int(ni)
	if d.err != nil || d.pos != len(d.buf) {
		return errCorrupt
	}
	return nil
}

// minRecord is fewer bytes than any summary record or index entry takes
// (each holds a 20-byte blob id and a path): a count of records that the
// rest of the file cannot hold is corrupt, not an allocation to make.
const minRecord = 22

// Loading is a state cache loaded up to its directories: the file
// decoded as far as decodeCacheDirs goes and the journal's directory
// operations replayed. Finish decodes the rest.
type Loading struct {
	c       *Cache
	d       *dec
	j       *journalReplay
	path    string
	journal []byte // the journal file as read (nil: there was none)
}

// Start is Load in two steps: it reads the cache file and its journal and
// decodes the directories; nil when there is no usable file.
func Start(path, ref string, mapped bool) *Loading {
	b, mapping, err := readFile(path, mapped)
	if err != nil {
		return nil
	}
	trace.Phase("  read cache file")
	c, d, err := decodeCacheDirs(b)
	if err != nil || c.ref != ref {
		if mapping != nil {
			_ = unix.Munmap(mapping) // nothing decoded from it is kept
		}
		return nil
	}
	c.mapping = mapping
	l := &Loading{c: c, d: d, path: path}
	// The directories' entries are decoded after the journal's changes
	// to them are read, and with them: decoded first, a directory the
	// journal changes was decoded twice, and the first copy left as
	// garbage (4 MB at 100,000 tasks, enough to make list --json collect).
	l.journal, l.j = c.replayDirs(JournalPath(path))
	c.decodeDirEntries()
	trace.Phase("  decode dirs")
	return l
}

// Dirs are the directories of the tree the cache describes, by path. They
// are whole before the rest of the file is checked: they are only fit for
// a look at the files they list (the view scan stats them while the
// command waits for its lock) until Finish.
func (l *Loading) Dirs() map[string]*gitrepo.Tree { return l.c.Dirs }

// Current reports whether the files are still those Start read: the same
// base (its random generation) and the same journal bytes. A command reads
// them before taking the lock, so that the view scan can stat the branch's
// files while it waits, and checks this once it holds the lock.
func (l *Loading) Current() bool {
	f, err := privfile.Open(l.path, os.O_RDONLY, 0)
	if err != nil {
		return false
	}
	hdr := make([]byte, len(cacheMagic)+8)
	_, err = io.ReadFull(f, hdr)
	f.Close()
	if err != nil || !bytes.Equal(hdr, l.c.raw[:len(hdr)]) {
		return false
	}
	j, err := privfile.Read(JournalPath(l.path))
	if errors.Is(err, fs.ErrNotExist) {
		return l.journal == nil
	}
	return err == nil && l.journal != nil && bytes.Equal(j, l.journal)
}

// Finish verifies the checksum, decodes the summaries and the sync index
// and replays the rest of the journal. A file that turns out damaged gives
// an empty cache, which still holds the file until Close: Dirs may have
// been handed on.
func (l *Loading) Finish() *Cache {
	if l.c.decodeRest(l.d) != nil {
		c := newCache(l.c.ref)
		c.mapping = l.c.mapping
		return c
	}
	trace.Phase("  decode cache")
	l.c.replayRest(l.j)
	trace.Phase("  apply journal")
	return l.c
}

// Load loads the cache of state branch ref from the file at path and
// replays its journal: mapped, or read into the heap (see Close). A
// missing, damaged or stale file, or one of another branch, gives an empty
// cache, which the store fills from the branch.
func Load(path, ref string, mapped bool) *Cache {
	l := Start(path, ref, mapped)
	if l == nil {
		return Empty(ref)
	}
	return l.Finish()
}

// readFile maps the cache file into memory read-only instead of reading
// it: its pages come straight from the page cache (a few faults each
// mapping sixteen pages), where reading would zero and copy the whole
// file. orch replaces the file by rename and never writes it in place, so
// the mapped bytes cannot change. mapping is the mapping to release (nil
// when the file was read into the heap: mapped false, or mmap failed).
func readFile(path string, mapped bool) (b, mapping []byte, err error) {
	f, err := privfile.Open(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if n := fi.Size(); mapped && n > 0 && n < 1<<31 {
		if b, err := unix.Mmap(int(f.Fd()), 0, int(n), unix.PROT_READ, unix.MAP_PRIVATE); err == nil {
			return b, b, nil
		}
	}
	b, err = io.ReadAll(f)
	return b, nil, err
}

// Close releases the file: a mapped cache is unmapped. Everything decoded
// from a mapped cache points into the mapping (see the package doc), so
// nothing of it, nor the cache, may be used after Close; one read into the
// heap is left to the garbage collector.
func (c *Cache) Close() {
	if c.mapping != nil {
		_ = unix.Munmap(c.mapping)
		c.mapping = nil
	}
}

// JournalPath is the journal of the cache file at path.
func JournalPath(path string) string { return path + journalSuffix }

// TempPrefix starts the name of a cache file being written, in the cache's
// directory: one left behind was written by a process that died.
const TempPrefix = ".cache-"

// Save records what changed: a batch appended to the journal, or, when the
// journal has grown large (or there is no base yet), a new base file. It is
// not fsynced: losing it costs a rebuild, never data.
func (c *Cache) Save(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o777); err != nil {
		return err
	}
	if c.raw != nil && c.journalSize < journalLimit(len(c.raw)) {
		if done, err := c.appendJournal(JournalPath(path)); done || err != nil {
			return err
		}
	}
	return c.writeBase(path)
}

// writeBase writes the whole cache as a new base, under a new generation,
// and drops the journal.
func (c *Cache) writeBase(path string) error {
	if _, err := rand.Read(c.gen[:]); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), TempPrefix)
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
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	// A journal of the old generation is ignored on load; removing it only
	// saves reading it.
	_ = os.Remove(JournalPath(path))
	return nil
}
