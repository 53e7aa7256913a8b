package gitstore

import (
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/orch-tool/orch/gitstore/gitrepo"
	"github.com/orch-tool/orch/gitstore/statecache"
	"github.com/orch-tool/orch/internal/trace"
)

// fileStat is the part of stat(2) the sync index compares.
type fileStat struct {
	size  int64
	mtime int64
	ctime int64
	ino   uint64
}

func statOf(st *unix.Stat_t) fileStat {
	return fileStat{
		size:  st.Size,
		mtime: st.Mtim.Sec*1e9 + st.Mtim.Nsec,
		ctime: st.Ctim.Sec*1e9 + st.Ctim.Nsec,
		ino:   st.Ino,
	}
}

// statMatches reports whether a view file with stat data s is, by that
// data, the one the sync index entry ie recorded (never when it was taken
// too close to a write: see isRacy).
func statMatches(ie *statecache.IndexEntry, s fileStat) bool {
	return !ie.Racy && ie.Size == s.size && ie.Mtime == s.mtime && ie.Ctime == s.ctime && ie.Ino == s.ino
}

// ViewStat reports whether the view holds branch path p as a regular file
// and whether, by its stat data, it is the file sync-index entry ie
// recorded (never for a nil ie): what lets the reconcile skip reading it.
func (st *Store) ViewStat(p string, ie *statecache.IndexEntry) (present, unchanged bool) {
	ws, ok := lstatPath(viewPath(st.View, p))
	return ok, ok && ie != nil && statMatches(ie, ws)
}

// ViewFiles lists the branch paths of the files orch mirrors that Open's
// view scan found (nil without a view), for orch doctor.
func (st *Store) ViewFiles() []string {
	if st.scan == nil {
		return nil
	}
	var out []string
	st.scan.wait().each(func(p string) { out = append(out, p) })
	return out
}

// viewScan is one pass over the view directory: the stat data of every file
// orch mirrors. It runs in the background from Open so that its system calls
// overlap with taking the lock and loading the caches; it is only ever used
// to skip reading files that are unchanged, and every other decision
// re-checks the file under the lock.
//
// It stats the files the state branch has (handed over by expect once the
// snapshot is loaded), in the branch's order, so the reconcile compares
// them with the sync index by position: no map of every name is built,
// and none is looked up. The listing of each directory only counts the
// files: when it finds more than the branch has (a file made by hand, or
// one the branch removed), the directory is listed again and the names the
// branch lacks are stat-ed too.
type viewScan struct {
	done   chan struct{}
	branch chan scanBranch
	give   sync.Once
	exists bool
	dirs   map[string]*scanFiles // dir ("" for the root) -> its files
	n      int
	// leftovers: a temp file of orch's (.orch-tmp-*) was listed in a
	// mirrored directory; the reconcile cleans up (see removeLeftoverTemps).
	leftovers bool
}

// scanBranch is what expect hands the scan: the branch's entries of each
// mirrored directory.
type scanBranch struct {
	dirs map[string][]gitrepo.TreeEntry
}

// mirroredDirs are the directories of the state branch that the view holds,
// the small ones first: the scan goes in this order, and a command waits for
// the scan to end, so it should end with the big one.
var mirroredDirs = []string{PromptsDir, MessagesDir, EventsDir, TasksDir}

// scanWorkers is how many goroutines stat the view's files.
var scanWorkers = func() int {
	if n, err := strconv.Atoi(os.Getenv("ORCH_SCAN_WORKERS")); err == nil && n > 0 && n <= 16 {
		return n
	}
	return 2
}()

func startScan(view string) *viewScan {
	s := &viewScan{done: make(chan struct{}), branch: make(chan scanBranch, 1), dirs: map[string]*scanFiles{}}
	go func() {
		defer close(s.done)
		s.run(view)
	}()
	return s
}

// expect hands the scan the branch's directories (a snapshot's), whose
// files it stats once it has listed the view. Only the first call counts;
// a scan that is waited for before it got any (dirs nil) stats what it
// listed.
func (s *viewScan) expect(dirs map[string]*gitrepo.Tree) {
	s.give.Do(func() {
		m := map[string][]gitrepo.TreeEntry{}
		for _, d := range mirroredDirs {
			if dt := dirs[d]; dt != nil {
				m[d] = dt.Entries // never changed in place: a commit makes new ones
			}
		}
		s.branch <- scanBranch{m}
	})
}

func (s *viewScan) wait() *viewScan {
	s.expect(nil)
	<-s.done
	return s
}

// each calls fn for every file found.
func (s *viewScan) each(fn func(path string)) {
	for dir, files := range s.dirs {
		files.each(func(name string) {
			if dir == "" {
				fn(name)
			} else {
				fn(dir + "/" + name)
			}
		})
	}
}

// scanFiles are the regular files of one view directory: those of the
// branch's entries, by position, and any others by name.
type scanFiles struct {
	dir     string
	entries []gitrepo.TreeEntry // the branch's entries the scan looked for
	stats   []entryStat         // stats[i] is of entries[i]
	extra   map[string]fileStat // files that are not among entries
	n       int                 // files found
}

type entryStat struct {
	fileStat
	tried bool // a mirrored file entry: the scan stat-ed its name
	ok    bool // and found a regular file
}

// at is the stat of entries[i], if it is a regular file in the view.
func (f *scanFiles) at(i int) (fileStat, bool) {
	return f.stats[i].fileStat, f.stats[i].ok
}

// sameEntries reports whether f was stat-ed by exactly these entries (the
// same snapshot directory), so that at answers for them by position.
func (f *scanFiles) sameEntries(entries []gitrepo.TreeEntry) bool {
	return f != nil && len(f.entries) == len(entries) && len(entries) > 0 && &f.entries[0] == &entries[0]
}

// findFileEntry returns the position of the non-tree entry named name.
func findFileEntry(entries []gitrepo.TreeEntry, name string) (int, bool) {
	key := gitrepo.TreeEntry{Name: name, Mode: gitrepo.ModeFile}
	i := sort.Search(len(entries), func(i int) bool { return gitrepo.CompareEntries(&entries[i], &key) >= 0 })
	if i < len(entries) && entries[i].Name == name && !entries[i].IsTree() {
		return i, true
	}
	return 0, false
}

// cursor returns a cursor over f for entries of another snapshot of the
// directory (sorted the same way), from entry from on.
func (f *scanFiles) cursor(from *gitrepo.TreeEntry) *scanCursor {
	c := &scanCursor{f: f}
	if f != nil {
		c.j = sort.Search(len(f.entries), func(k int) bool { return gitrepo.CompareEntries(&f.entries[k], from) >= 0 })
	}
	return c
}

// scanCursor looks up the stat data of a directory's file entries in
// increasing order, walking the entries the scan stat-ed beside them:
// when the branch moved between the two (another command committed while
// this one waited for the lock), most names are still the same.
type scanCursor struct {
	f *scanFiles
	j int
}

func (c *scanCursor) get(e *gitrepo.TreeEntry) (fileStat, bool) {
	f := c.f
	if f == nil {
		return fileStat{}, false
	}
	for c.j < len(f.entries) && gitrepo.CompareEntries(&f.entries[c.j], e) < 0 {
		c.j++
	}
	if c.j < len(f.entries) && f.entries[c.j].Name == e.Name && f.stats[c.j].tried {
		return f.at(c.j)
	}
	st, ok := f.extra[e.Name]
	return st, ok
}

func (f *scanFiles) each(fn func(name string)) {
	if f == nil {
		return
	}
	for i := range f.entries {
		if f.stats[i].ok && mirroredName(f.dir, f.entries[i].Name) {
			fn(f.entries[i].Name)
		}
	}
	for name := range f.extra {
		fn(name)
	}
}

// eachExtra calls fn for every file found that is not among the entries.
func (f *scanFiles) eachExtra(fn func(name string)) {
	if f == nil {
		return
	}
	for name := range f.extra {
		fn(name)
	}
}

func (s *viewScan) run(view string) {
	root, err := unix.Open(view, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(root)
	s.exists = true
	var st unix.Stat_t
	if unix.Fstatat(root, ConfigFile, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG {
		s.dirs[""] = &scanFiles{extra: map[string]fileStat{ConfigFile: statOf(&st)}, n: 1}
		s.n++
	}
	type listed struct{ fd, count int }
	lists := map[string]listed{}
	buf := make([]byte, 32<<10)
	for _, dir := range mirroredDirs {
		fd, err := unix.Openat(root, dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
		if err != nil {
			continue
		}
		defer unix.Close(fd)
		n, left := countFiles(fd, dir, buf)
		lists[dir] = listed{fd, n}
		s.leftovers = s.leftovers || left
		if trace.On() {
			trace.Phase("  scan: listed " + dir)
		}
	}
	branch := <-s.branch
	for _, dir := range mirroredDirs {
		l, ok := lists[dir]
		if !ok {
			continue
		}
		files := statEntries(l.fd, dir, branch.dirs[dir])
		if files.n != l.count {
			files.addUnlisted(l.fd, dir)
		}
		if trace.On() {
			trace.Phase("  scan: stat " + dir)
		}
		s.dirs[dir] = files
		s.n += files.n
	}
}

// statEntries stats the mirrored file entries of a directory by name, a
// large one on several goroutines.
func statEntries(fd int, dir string, entries []gitrepo.TreeEntry) *scanFiles {
	files := &scanFiles{dir: dir, entries: entries, stats: make([]entryStat, len(entries))}
	workers := scanWorkers
	if len(entries) < 256 {
		workers = 1
	}
	found := make([]int, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		lo, hi := w*len(entries)/workers, (w+1)*len(entries)/workers
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			var st unix.Stat_t
			var name [256]byte
			for i := lo; i < hi; i++ {
				e := &entries[i]
				if e.Mode != gitrepo.ModeFile && e.Mode != gitrepo.ModeExec || len(e.Name) >= len(name) || !maybeMirrored(dir, e.Name) {
					continue
				}
				r := &files.stats[i]
				r.tried = true
				copy(name[:], e.Name)
				name[len(e.Name)] = 0
				if fstatat(fd, name[:len(e.Name)+1], &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
					continue
				}
				r.fileStat, r.ok = statOf(&st), true
				found[w]++
			}
		}(w)
	}
	wg.Wait()
	for _, n := range found {
		files.n += n
	}
	return files
}

// addUnlisted lists the directory again, by name this time, and stats the
// mirrored files that are not among the entries stat-ed already. (A file
// made by hand and left broken makes every command come here until it is
// fixed, so the entries are matched by inode and then name, not by a
// search through every name for each.)
func (f *scanFiles) addUnlisted(fd int, dir string) {
	if _, err := unix.Seek(fd, 0, 0); err != nil {
		return
	}
	byIno := make(map[uint64]int32, f.n)
	for i := range f.stats {
		if f.stats[i].ok {
			byIno[f.stats[i].ino] = int32(i)
		}
	}
	var st unix.Stat_t
	var buf []byte
	eachName(fd, func(name string, ino uint64) {
		if !mirroredName(dir, name) {
			return
		}
		if i, ok := byIno[ino]; ok && f.entries[i].Name == name {
			return
		}
		if i, ok := findFileEntry(f.entries, name); ok && f.stats[i].tried {
			return // not a regular file, or replaced since it was stat-ed
		}
		c := cName(name, buf)
		buf = c[:0]
		if fstatat(fd, c, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
			return
		}
		if f.extra == nil {
			f.extra = map[string]fileStat{}
		}
		f.extra[strings.Clone(name)] = statOf(&st)
		f.n++
	})
}

// ignoredName is a file an editor or orch itself leaves beside real files.
func ignoredName(name string) bool {
	return strings.HasPrefix(name, ".") || strings.HasSuffix(name, "~") || strings.HasSuffix(name, ".swp") ||
		strings.HasSuffix(name, ".swx") || strings.HasSuffix(name, ".tmp") || strings.HasPrefix(name, "#")
}

// maybeMirrored is mirroredName without the look at every byte: true for
// every name mirroredName accepts, and for the rare name it then refuses
// (control characters, separators, invalid UTF-8). The scan counts and
// stats by it, on both sides of its comparison (the listing's names and the
// branch's), so the counts still agree; what it reports is filtered by
// mirroredName (each), and what the reconcile looks at is the branch's
// mirrored files. The byte loop was a visible part of the scan.
func maybeMirrored(dir, name string) bool {
	return len(name) <= 200 && !ignoredName(name) && (dir != TasksDir || strings.HasSuffix(name, ".md")) &&
		strings.IndexByte(name, '/') < 0 // never a path: the scan stats in its directory only
}

// mirroredName reports whether a file name in a mirrored directory is one
// the view holds. Names that could not be a safe file name everywhere (control
// characters, path separators, dot files) are kept on the branch but never
// written to disk.
func mirroredName(dir, name string) bool {
	if ignoredName(name) || len(name) > 200 {
		return false
	}
	// One pass over the bytes for the usual all-ASCII name (the scan asks
	// this of every file in the view, and the long way costs).
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c >= 0x80 {
			return mirroredNameSlow(name, dir)
		}
		if c < 0x20 || c == 0x7f || c == '/' || c == '\\' {
			return false
		}
	}
	return dir != TasksDir || strings.HasSuffix(name, ".md")
}

// mirroredNameSlow is mirroredName's check for names with non-ASCII bytes.
func mirroredNameSlow(name, dir string) bool {
	if !utf8.ValidString(name) || strings.ContainsAny(name, "/\\") {
		return false
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return dir != TasksDir || strings.HasSuffix(name, ".md")
}

// Mirrored reports whether a path of the state branch appears in the view.
func Mirrored(path string) bool {
	if path == ConfigFile {
		return true
	}
	dir, name := splitPath(path)
	for _, d := range mirroredDirs {
		if d == dir {
			return mirroredName(dir, name)
		}
	}
	return false
}

func viewPath(view, path string) string {
	return filepath.Join(view, filepath.FromSlash(path))
}

func lstatPath(p string) (fileStat, bool) {
	var st unix.Stat_t
	if unix.Lstat(p, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fileStat{}, false
	}
	return statOf(&st), true
}

// A file whose mtime is this close to now may still be written to within
// the same timestamp tick, so its stat data is not trusted next time (git's
// "racily clean" problem). The tick is the file system's: Linux stamps files
// from a clock that advances every jiffy, so a mtime with
// nanoseconds gets racyWindowFine; a mtime in whole seconds may come from a
// file system that keeps seconds (or two), and gets racyWindowCoarse.
//
// The window matters for speed as well as safety: every racy entry costs
// the next command a read, and its index entry a rewrite in the journal.
// With racyWindowCoarse for every file, a burst of transitions (a bench, or
// agents working at once) re-read every task file written within that
// window on every command.
const (
	racyWindowFine   = 50 * time.Millisecond
	racyWindowCoarse = 2 * time.Second
)

func isRacy(s fileStat) bool {
	window := racyWindowFine
	if s.mtime%1e9 == 0 {
		window = racyWindowCoarse
	}
	return time.Since(time.Unix(0, s.mtime)) < window
}
