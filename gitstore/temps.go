package gitstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/orch-tool/orch/gitstore/gitrepo"
	"github.com/orch-tool/orch/gitstore/privfile"
	"github.com/orch-tool/orch/gitstore/statecache"
)

// The temp files orch writes and renames, and what becomes of those a
// killed orch left: every Lock removes the view's (removeLeftoverTemps),
// orch doctor lists and removes them all. They stay with the store, which
// names them and alone knows which leftover holds a save to keep.

// Temp file prefixes of the view: a view file being written (.orch-new-,
// removed whenever found), a view file written whole or a view file
// displaced (.orch-tmp-, see placeView: kept in recovered/ when its content
// is not a version orch knows). The cache's are statecache.TempPrefix.
const (
	viewTempPrefix = ".orch-tmp-"
	viewNewPrefix  = ".orch-new-"
)

func isViewTemp(name string) bool {
	return strings.HasPrefix(name, viewTempPrefix) || strings.HasPrefix(name, viewNewPrefix)
}

// TempFiles lists the temp files orch writes and renames (view files, the
// state cache) that were left behind. orch writes them only while holding
// the orch lock, so a caller holding it passes minAge 0; one that does not
// passes the age after which a writer must be gone.
func (st *Store) TempFiles(minAge time.Duration) []string {
	var out []string
	look := func(dir string, temp func(string) bool) {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return
		}
		for _, e := range ents {
			if !temp(e.Name()) || !e.Type().IsRegular() {
				continue
			}
			fi, err := e.Info()
			if err != nil || time.Since(fi.ModTime()) < minAge {
				continue
			}
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	if st.View != "" {
		look(st.View, isViewTemp)
		for _, d := range mirroredDirs {
			if fi, err := os.Lstat(filepath.Join(st.View, d)); err == nil && fi.IsDir() {
				look(filepath.Join(st.View, d), isViewTemp)
			}
		}
	}
	look(st.priv, func(name string) bool { return strings.HasPrefix(name, statecache.TempPrefix) })
	sort.Strings(out)
	return out
}

// RemoveTempFile removes a file TempFiles listed (and nothing else).
func (st *Store) RemoveTempFile(path string) error {
	dir, name := filepath.Split(path)
	dir = filepath.Clean(dir)
	ok := dir == filepath.Clean(st.priv) && strings.HasPrefix(name, statecache.TempPrefix)
	if st.View != "" && isViewTemp(name) {
		if dir == filepath.Clean(st.View) {
			ok = true
		}
		for _, d := range mirroredDirs {
			if dir == filepath.Join(st.View, d) {
				ok = true
			}
		}
	}
	if !ok {
		return fmt.Errorf("%s is not a temp file of orch", path)
	}
	if strings.HasPrefix(name, viewTempPrefix) && st.leftoverHoldsASave(path) {
		// A file orch displaced, holding what orch does not know: a save
		// that raced a killed orch. Kept, not removed.
		st.keepRecovered(filepath.Base(dir)+"/"+strings.TrimPrefix(name, viewTempPrefix), path)
		return nil
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// removeLeftoverTemps cleans up the temp files a killed orch left in the
// view (only the holder of the lock writes them, so none is in use). A
// .orch-new-* was never finished: removed. A .orch-tmp-* holding a version
// orch knows (a blob in the repository: its own new file, or a view version
// it displaced) is removed; one holding anything else can only be a save
// that raced a killed orch, and goes to recovered/.
func (st *Store) removeLeftoverTemps() {
	for _, p := range st.TempFiles(0) {
		if filepath.Dir(p) == filepath.Clean(st.priv) {
			continue // the cache's: the cache save replaces them
		}
		_ = st.RemoveTempFile(p)
	}
}

// leftoverHoldsASave reports whether a leftover .orch-tmp-* file holds
// text orch does not know (see removeLeftoverTemps).
func (st *Store) leftoverHoldsASave(p string) bool {
	data, err := privfile.Read(p)
	if err != nil {
		return false
	}
	return len(data) > 0 && !st.objs.Has(gitrepo.HashBlob(data))
}
