//go:build !(linux && amd64)

package gitstore

import "golang.org/x/sys/unix"

// fstatat is unix.Fstatat (no symlinks followed); name ends in a NUL byte.
func fstatat(dirfd int, name []byte, st *unix.Stat_t) error {
	return unix.Fstatat(dirfd, string(name[:len(name)-1]), st, unix.AT_SYMLINK_NOFOLLOW)
}
