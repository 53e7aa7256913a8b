package statecache

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// Inspect reads the cache file at path for orch doctor, changing nothing
// and trusting nothing: the cache of state branch ref with its journal
// replayed (nil when there is no file, or it does not decode, or it is
// another branch's), whether the file exists, and what makes the cache
// untrustworthy. It is read into the heap: the doctor keeps what it finds.
func Inspect(path, ref string) (c *Cache, exists bool, problems []string) {
	b, _, err := readFile(path, false)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			return nil, true, []string{err.Error()}
		}
		if _, jerr := os.Stat(JournalPath(path)); jerr == nil {
			return nil, false, []string{"a journal without its cache file (ignored)"}
		}
		return nil, false, nil
	}
	c, err = decodeCache(b)
	if err != nil {
		why := "it does not decode (damaged: wrong format, size or checksum)"
		if magic, _, _ := strings.Cut(cacheMagic, " v"); strings.HasPrefix(string(b), magic+" v") && !strings.HasPrefix(string(b), cacheMagic) {
			why = "it was written by another version of orch"
		}
		return nil, true, []string{why}
	}
	if c.ref != ref {
		return nil, true, []string{fmt.Sprintf("it is the cache of %s, not of %s", c.ref, ref)}
	}
	jpath := JournalPath(path)
	if fi, err := os.Stat(jpath); err == nil {
		c.applyJournal(jpath)
		switch {
		case c.journalSize == 0:
			problems = append(problems, "its journal belongs to another generation of the cache or is damaged at the start (ignored)")
		case c.journalSize < fi.Size():
			problems = append(problems, fmt.Sprintf("its journal is damaged at byte %d of %d (the rest is ignored)", c.journalSize, fi.Size()))
		}
	}
	return c, true, problems
}

// Rebuild replaces the cache of state branch ref at path with one that
// holds only the view's sync index (when the old cache still decodes: it
// records which view files orch wrote, and which are in conflict), so that
// the next load rebuilds the trees and task summaries from the branch. It
// reports whether the index was kept; when it was not, the cache's files
// are removed.
func Rebuild(path, ref string) (keptIndex bool, err error) {
	fresh := newCache(ref)
	if b, err := os.ReadFile(path); err == nil {
		if c, err := decodeCache(b); err == nil && c.ref == ref {
			c.applyJournal(JournalPath(path))
			c.Index.Each(func(p string, ie *IndexEntry) {
				cp := *ie
				cp.raw = nil
				cp.Prev = append([]plumbing.Hash(nil), ie.Prev...)
				fresh.Index.put(p, &cp)
			})
			keptIndex = true
		}
	}
	if !keptIndex {
		for _, p := range []string{path, JournalPath(path)} {
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				return false, err
			}
		}
		return false, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o777); err != nil {
		return false, err
	}
	return true, fresh.writeBase(path)
}
