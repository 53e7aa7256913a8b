//go:build !linux

package gitstore

import "golang.org/x/sys/unix"

// readNames lists a directory.
func readNames(fd int) []string {
	buf := make([]byte, 128<<10)
	var names []string
	for {
		n, err := unix.ReadDirent(fd, buf)
		if err != nil || n <= 0 {
			break
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
	}
	return names
}

// cName returns name as a C string for fstatat, in buf.
func cName(name string, buf []byte) []byte {
	return append(append(buf[:0], name...), 0)
}

// countFiles counts the names of a directory that maybeMirrored accepts
// (all of them may be regular files: the type is not looked at here).
func countFiles(fd int, dir string, _ []byte) (count int, leftovers bool) {
	for _, name := range readNames(fd) {
		if maybeMirrored(dir, name) {
			count++
		} else if isViewTemp(name) {
			leftovers = true
		}
	}
	return count, leftovers
}

// eachName calls fn with every name of a directory; the inode number is 0
// (unknown here).
func eachName(fd int, fn func(name string, ino uint64)) {
	for _, name := range readNames(fd) {
		fn(name, 0)
	}
}
