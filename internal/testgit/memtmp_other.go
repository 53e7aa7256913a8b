//go:build !linux

package testgit

// MemoryTempDir keeps TMPDIR as it is: only Linux has /dev/shm (see
// memtmp_linux.go).
func MemoryTempDir() (cleanup func()) { return func() {} }
