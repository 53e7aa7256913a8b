package gitstore

import (
	"hash/maphash"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"
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

func (e *indexEntry) matches(s fileStat) bool {
	return !e.racy && e.size == s.size && e.mtime == s.mtime && e.ctime == s.ctime && e.ino == s.ino
}

// viewScan is one pass over the view directory: the stat data of every file
// orch mirrors. It runs in the background from Open so that its system calls
// overlap with taking the lock and loading the caches; it is only ever used
// to skip reading files that are unchanged, and every other decision
// re-checks the file under the lock.
type viewScan struct {
	done    chan struct{}
	exists  bool
	dirs    map[string]*scanFiles // dir ("" for the root) -> its files
	n       int
	skipped []string // names in mirrored dirs that orch does not mirror
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
	s := &viewScan{done: make(chan struct{}), dirs: map[string]*scanFiles{}}
	go func() {
		defer close(s.done)
		s.run(view)
	}()
	return s
}

func (s *viewScan) wait() *viewScan {
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

// scanFiles are the files of one directory, by name, in one map per scan
// worker: each worker fills its own as it goes (names are dealt to workers
// by a hash), so that no single-threaded pass builds a 10,000-entry map
// after the last stat, on every command's critical path.
type scanFiles struct {
	seed   maphash.Seed
	shards []map[string]fileStat
}

func (f *scanFiles) shard(name string) int {
	if len(f.shards) == 1 {
		return 0
	}
	return int(maphash.String(f.seed, name) % uint64(len(f.shards)))
}

func (f *scanFiles) get(name string) (fileStat, bool) {
	if f == nil {
		return fileStat{}, false
	}
	st, ok := f.shards[f.shard(name)][name]
	return st, ok
}

func (f *scanFiles) each(fn func(name string)) {
	if f == nil {
		return
	}
	for _, m := range f.shards {
		for name := range m {
			fn(name)
		}
	}
}

func (f *scanFiles) len() int {
	n := 0
	if f != nil {
		for _, m := range f.shards {
			n += len(m)
		}
	}
	return n
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
		s.dirs[""] = &scanFiles{shards: []map[string]fileStat{{ConfigFile: statOf(&st)}}}
		s.n++
	}
	for _, dir := range mirroredDirs {
		fd, err := unix.Openat(root, dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
		if err != nil {
			continue
		}
		names := readNames(fd)
		if traceOn {
			Trace("  scan: listed " + dir)
		}
		workers := scanWorkers
		if len(names) < 256 {
			workers = 1
		}
		files := &scanFiles{seed: maphash.MakeSeed(), shards: make([]map[string]fileStat, workers)}
		deal := make([][]string, workers)
		for _, name := range names {
			if !MirroredName(dir, name) {
				if !ignoredName(name) {
					s.skipped = append(s.skipped, dir+"/"+name)
				}
				continue
			}
			w := files.shard(name)
			deal[w] = append(deal[w], name)
		}
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				m := make(map[string]fileStat, len(deal[w]))
				var st unix.Stat_t
				var buf []byte
				for _, n := range deal[w] {
					name := cName(n, buf)
					buf = name[:0]
					if fstatat(fd, name, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
						continue
					}
					m[n] = statOf(&st)
				}
				files.shards[w] = m
			}(w)
		}
		wg.Wait()
		if traceOn {
			Trace("  scan: stat " + dir)
		}
		unix.Close(fd)
		s.dirs[dir] = files
		s.n += files.len()
	}
}

// ignoredName is a file an editor or orch itself leaves beside real files.
func ignoredName(name string) bool {
	return strings.HasPrefix(name, ".") || strings.HasSuffix(name, "~") || strings.HasSuffix(name, ".swp") ||
		strings.HasSuffix(name, ".swx") || strings.HasSuffix(name, ".tmp") || strings.HasPrefix(name, "#")
}

// MirroredName reports whether a file name in a mirrored directory is one
// the view holds. Names that could not be a safe file name everywhere (control
// characters, path separators, dot files) are kept on the branch but never
// written to disk.
func MirroredName(dir, name string) bool {
	if ignoredName(name) || len(name) > 200 {
		return false
	}
	// One pass over the bytes for the usual all-ASCII name (the scan asks
	// this of every file in the view: 10,000 names cost 1 ms the long way).
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

// mirroredNameSlow is MirroredName's check for names with non-ASCII bytes.
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
			return MirroredName(dir, name)
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
// from a clock that advances every jiffy (at most 10 ms), so a mtime with
// nanoseconds gets racyWindowFine; a mtime in whole seconds may come from a
// file system that keeps seconds (or two), and gets racyWindowCoarse.
//
// The window matters for speed as well as safety: every racy entry costs
// the next command a read, and its index entry a rewrite in the journal.
// With a 2 s window for every file, a burst of transitions (a bench, or
// agents working at once) re-read the 20-40 task files written in the last
// 2 s on every command.
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
