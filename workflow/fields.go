package workflow

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/taskfile"
)

// A task's custom frontmatter keys (those orch does not know) are part of
// the task as --json shows it, as one JSON object. A summary does not carry
// them: the state cache holds the known fields only. For one task they are
// read from its file; for many (orch list, board) from a cache of their
// own, <private dir>/fields, keyed by blob: a blob's keys never change, so
// the cache is never stale, only incomplete (a blob it lacks is read and
// added). Reading every file instead would make orch list --json many
// times slower than its budget.

// NoFields is the JSON of a task without custom keys.
var NoFields = json.RawMessage(`{}`)

// fieldsCacheName is the cache's file in the private state directory, and
// fieldsMagic its first line; the version changes with what is cached
// (the keys orch knows, the JSON of a value).
const (
	fieldsCacheName = "fields"
	fieldsMagic     = "orch fields cache 2\n" // 2: heartbeat_at is a key orch knows
)

// The blobs read since the cache was written go to a file of additions
// beside it (fields.new), which names the cache it adds to by its
// checksum, until there are more than fieldsAdditionsLimit of them: every
// transition makes a blob the cache lacks, and writing the whole cache
// again for each made the next orch list --json slower and larger.
const (
	fieldsAdditionsName  = fieldsCacheName + ".new"
	fieldsAdditionsMagic = "orch fields cache additions 2\n"
)

// fieldsAdditionsPath is the additions to the cache at path.
func fieldsAdditionsPath(path string) string {
	return filepath.Join(filepath.Dir(path), fieldsAdditionsName)
}

// fieldsAdditionsLimit is how many additions a cache of n blobs takes
// before it is written again whole.
func fieldsAdditionsLimit(n int) int { return max(512, n/16) }

// manyFields is the number of tasks from which TaskFieldsOf goes through
// the cache instead of reading each file.
const manyFields = 16

// fieldsJSON returns the custom keys of a parsed file as a JSON object.
func fieldsJSON(f *taskfile.File) json.RawMessage {
	m := f.CustomFields()
	if len(m) == 0 {
		return NoFields
	}
	b, err := json.Marshal(m)
	if err != nil {
		return NoFields
	}
	return b
}

// FileFields returns the custom keys of a loaded task as a JSON object.
func FileFields(t *Task) json.RawMessage {
	if t == nil || t.File == nil {
		return NoFields
	}
	return fieldsJSON(t.File)
}

// TaskFields reads a task's committed file and returns its custom keys as
// a JSON object ({} when it has none, or cannot be read or parsed).
func (e *Engine) TaskFields(s *gitstore.Summary) json.RawMessage {
	if s == nil || s.Blob.IsZero() {
		return NoFields
	}
	data, err := e.Store.Snapshot().ReadAt(s.Path, s.Blob)
	if err != nil {
		return NoFields
	}
	f, err := taskfile.Parse(s.Path, data)
	if err != nil {
		return NoFields
	}
	return fieldsJSON(f)
}

// TaskFieldsOf returns the custom keys of each task, in order. Past a few
// tasks it reads them from the fields cache, and adds to the cache what
// it had to read.
func (e *Engine) TaskFieldsOf(sums []*gitstore.Summary) []json.RawMessage {
	r := e.TaskFieldsReader(len(sums))
	out := make([]json.RawMessage, len(sums))
	for i, s := range sums {
		out[i] = r.Of(s)
	}
	r.Done()
	return out
}

// FieldsReader reads the custom keys of tasks one at a time, as
// TaskFieldsOf does for a list of them (orch list --json asks for each as
// it writes it).
type FieldsReader struct {
	e         *Engine
	many      bool // through the cache
	path      string
	cache     *fieldsCache
	additions *fieldsCache // fields.new, when it adds to cache
	added     map[plumbing.Hash]json.RawMessage
	hits      int // blobs found in the cache or its additions
}

// TaskFieldsReader is a reader for n tasks; Done saves what it added to
// the cache.
func (e *Engine) TaskFieldsReader(n int) *FieldsReader {
	r := &FieldsReader{e: e, many: n >= manyFields}
	if r.many {
		r.path = filepath.Join(e.Store.PrivDir(), fieldsCacheName)
		r.cache = readFieldsCache(r.path)
		r.additions = readFieldsAdditions(r.path, r.cache)
	}
	return r
}

// noteParsedFields keeps the custom keys of a task file the store parsed
// from the branch: when it builds the state cache it parses every one, and
// the orch list --json that follows would read and parse each again for
// the fields cache.
func (e *Engine) noteParsedFields(blob plumbing.Hash, f *taskfile.File) {
	if e.parsedFields == nil {
		e.parsedFields = map[plumbing.Hash]json.RawMessage{}
	}
	e.parsedFields[blob] = fieldsJSON(f)
}

// Of returns the custom keys of s as a JSON object.
func (r *FieldsReader) Of(s *gitstore.Summary) json.RawMessage {
	if !r.many {
		return r.e.TaskFields(s)
	}
	if s == nil || s.Blob.IsZero() {
		return NoFields
	}
	if v, ok := r.cache.get(s.Blob); ok {
		r.hits++
		return v
	}
	if v, ok := r.additions.get(s.Blob); ok {
		r.hits++
		return v
	}
	if v, ok := r.added[s.Blob]; ok {
		return v
	}
	v, ok := r.e.parsedFields[s.Blob]
	if !ok {
		v = r.e.TaskFields(s)
	}
	if r.added == nil {
		r.added = map[plumbing.Hash]json.RawMessage{}
	}
	r.added[s.Blob] = v
	return v
}

// Done saves the blobs read that the cache lacked: in its additions while
// they are few, else by writing the cache again whole. It writes the cache
// again too when most of it is blobs no longer asked for: the tasks orch
// archive moved out stay in it otherwise, and every list reads them.
func (r *FieldsReader) Done() {
	n := r.cache.len() + r.additions.len()
	if len(r.added) == 0 && n <= 2*r.hits+manyFields {
		return
	}
	// Keep the blobs of the tasks on the state branch only, so that the
	// cache does not grow with history. The tasks asked for are on it (and
	// those just read are kept whatever happens).
	var files []gitstore.FileEntry
	fresh := n <= 2*r.hits+manyFields
	if !fresh {
		files = r.e.Store.Snapshot().Files(gitstore.TasksDir)
		fresh = n <= 2*len(files)+manyFields // a list of some of the tasks: the cache holds the others'
	}
	if fresh {
		if len(r.added) == 0 {
			return
		}
		if r.cache != nil && r.additions.len()+len(r.added) <= fieldsAdditionsLimit(r.cache.len()) {
			r.additions.addTo(r.added)
			writeFieldsAdditions(r.path, r.cache.sum, r.added)
			return
		}
	}
	if files == nil {
		files = r.e.Store.Snapshot().Files(gitstore.TasksDir)
	}
	if r.added == nil {
		r.added = map[plumbing.Hash]json.RawMessage{}
	}
	live := map[plumbing.Hash]bool{}
	for _, fe := range files {
		live[fe.Blob] = true
	}
	for h := range r.added {
		live[h] = true
	}
	r.cache.addTo(r.added)
	r.additions.addTo(r.added)
	writeFieldsCache(r.path, r.added, live)
	_ = os.Remove(fieldsAdditionsPath(r.path)) // they name the old cache
}

// fieldsCache is the loaded cache: the file's bytes, and where each
// blob's entry starts, in blob order (an offset a blob, rather than a
// decoded entry of each in orch list's heap).
type fieldsCache struct {
	body []byte
	offs []uint32
	sum  uint32 // the file's checksum, by which its additions name it
}

// addTo adds the cache's blobs to m, where m lacks them.
func (c *fieldsCache) addTo(m map[plumbing.Hash]json.RawMessage) {
	for i := range c.len() {
		h, v := c.at(i)
		if _, ok := m[h]; !ok {
			m[h] = v
		}
	}
}

// len is the number of blobs in the cache.
func (c *fieldsCache) len() int {
	if c == nil {
		return 0
	}
	return len(c.offs)
}

// at is the i-th blob of the cache and its custom keys.
func (c *fieldsCache) at(i int) (plumbing.Hash, json.RawMessage) {
	p := int(c.offs[i])
	var h plumbing.Hash
	copy(h[:], c.body[p:])
	n, k := binary.Uvarint(c.body[p+len(h):]) // checked by readFieldsCache
	v := c.body[p+len(h)+k : p+len(h)+k+int(n) : p+len(h)+k+int(n)]
	if n == 0 {
		return h, NoFields
	}
	return h, json.RawMessage(v)
}

func (c *fieldsCache) get(h plumbing.Hash) (json.RawMessage, bool) {
	if c == nil {
		return nil, false
	}
	i, ok := slices.BinarySearchFunc(c.offs, h, func(off uint32, h plumbing.Hash) int {
		return bytes.Compare(c.body[off:int(off)+len(h)], h[:])
	})
	if !ok {
		return nil, false
	}
	_, v := c.at(i)
	return v, true
}

// readFieldsCache loads the cache (nil when it is missing or damaged: it
// is rebuilt). The values point into the file's bytes.
//
// Layout (a cache file, cachefile.go): fieldsMagic, then per blob in blob
// order its 20-byte id, a uvarint length and the JSON object (length 0:
// no custom keys).
func readFieldsCache(path string) *fieldsCache {
	body, sum, ok := readCacheFileSum(path, fieldsMagic)
	if !ok {
		return nil
	}
	c := parseFieldsEntries(body)
	if c != nil {
		c.sum = sum
	}
	return c
}

// readFieldsAdditions loads the additions to cache (nil when there are
// none, or they add to another cache, or are damaged).
//
// Layout (a cache file): fieldsAdditionsMagic, the checksum of the cache
// they add to (4 bytes), then entries as in the cache.
func readFieldsAdditions(path string, cache *fieldsCache) *fieldsCache {
	if cache == nil {
		return nil
	}
	body, ok := readCacheFile(fieldsAdditionsPath(path), fieldsAdditionsMagic)
	if !ok || len(body) < 4 || binary.BigEndian.Uint32(body) != cache.sum {
		return nil
	}
	return parseFieldsEntries(body[4:])
}

// parseFieldsEntries indexes the entries of a cache's body; nil when they
// do not parse or are out of order.
func parseFieldsEntries(body []byte) *fieldsCache {
	if len(body) > math.MaxUint32 {
		return nil
	}
	c := &fieldsCache{body: body, offs: make([]uint32, 0, len(body)/21)} // a blob without custom keys takes 21 bytes
	var last []byte
	for p := 0; p < len(body); {
		if len(body)-p < len(plumbing.Hash{}) {
			return nil
		}
		h := body[p : p+len(plumbing.Hash{})]
		if last != nil && bytes.Compare(last, h) >= 0 {
			return nil // not in order: not a cache this code wrote
		}
		c.offs = append(c.offs, uint32(p))
		p += len(h)
		n, k := binary.Uvarint(body[p:])
		if k <= 0 || n > uint64(len(body)-p-k) {
			return nil
		}
		p += k + int(n)
		last = h
	}
	return c
}

// writeFieldsCache replaces the cache with the entries of live blobs.
// Failing to write it costs only time: it is a cache.
func writeFieldsCache(path string, cache map[plumbing.Hash]json.RawMessage, live map[plumbing.Hash]bool) {
	writeCacheFile(path, appendFieldsEntries([]byte(fieldsMagic), cache, live))
}

// writeFieldsAdditions replaces the additions to the cache of checksum sum
// with entries.
func writeFieldsAdditions(path string, sum uint32, entries map[plumbing.Hash]json.RawMessage) {
	b := binary.BigEndian.AppendUint32([]byte(fieldsAdditionsMagic), sum)
	writeCacheFile(fieldsAdditionsPath(path), appendFieldsEntries(b, entries, nil))
}

// appendFieldsEntries appends the entries of m (of live blobs only, unless
// live is nil) in blob order.
func appendFieldsEntries(b []byte, m map[plumbing.Hash]json.RawMessage, live map[plumbing.Hash]bool) []byte {
	hs := make([]plumbing.Hash, 0, len(m))
	for h := range m {
		if live == nil || live[h] {
			hs = append(hs, h)
		}
	}
	slices.SortFunc(hs, func(a, b plumbing.Hash) int { return bytes.Compare(a[:], b[:]) })
	b = slices.Grow(b, len(hs)*22+4)
	for _, h := range hs {
		v := m[h]
		if bytes.Equal(v, NoFields) {
			v = nil
		}
		b = append(b, h[:]...)
		b = binary.AppendUvarint(b, uint64(len(v)))
		b = append(b, v...)
	}
	return b
}
