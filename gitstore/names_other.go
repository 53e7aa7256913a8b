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
