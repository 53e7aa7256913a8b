//go:build !linux

package gitrepo

import "os"

// startWriteback: without sync_file_range, fsync the file itself.
func startWriteback(f *os.File) { _ = f.Sync() }
