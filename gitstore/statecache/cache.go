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

	"github.com/go-git/go-git/v5/plumbing"
	"golang.org/x/sys/unix"

	"github.com/orch-tool/orch/gitstore/gitrepo"
	"github.com/orch-tool/orch/gitstore/privfile"
	"github.com/orch-tool/orch/internal/trace"
)

// cacheMagic starts every cache file; the version changes with the format,
// and a file of another version is rebuilt.
const cacheMagic = "orch-state-cache v21\n"

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

	raw     []byte  // the file as loaded: records' encodings point into it
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
	journalRaw   [][]byte // journal batches as read: records' encodings point into them

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
	// Summaries and index entries in path order: loaded, slabs searched
	// by path (see Summaries and Index), in the order of the branch's
	// trees, which the view comparison walks.
	e.uv(uint64(c.Summaries.n))
	for _, r := range c.Summaries.Sorted() {
		if raw := r.raw(); raw != nil {
			e.b = append(e.b, raw...)
			continue
		}
		encodeSummary(e, r.s)
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
		if i > 0 && ss.base[i].Path <= ss.base[i-1].Path {
			return errCorrupt // lookups search the records by path
		}
	}
	if d.err != nil {
		return errCorrupt
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
	// garbage.
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

// Close releases the file: a mapped cache is unmapped. The records of a
// mapped cache keep their encodings in the mapping (see the package doc),
// so neither they nor the cache may be used after Close; one read into the
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
	if err := replaceFile(path, c.encode()); err != nil {
		return err
	}
	// A journal of the old generation is ignored on load; removing it only
	// saves reading it.
	_ = os.Remove(JournalPath(path))
	return nil
}

// replaceFile writes the file at path whole, under a temporary name first
// (TempPrefix) so that a reader sees the old file or the new one.
func replaceFile(path string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), TempPrefix)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		_ = os.Remove(f.Name())
	}
	return err
}
