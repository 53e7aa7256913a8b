package gitstore

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// exchangeFiles swaps the files at a and b in one step (renamex_np
// RENAME_SWAP); see swap_linux.go.
func exchangeFiles(a, b string) error {
	err := unix.RenamexNp(a, b, unix.RENAME_SWAP)
	if errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.EINVAL) {
		return emulatedExchange(a, b)
	}
	return pathErr("exchange", a, b, err)
}

// renameNoReplace renames a to b unless b exists (os.ErrExist then).
func renameNoReplace(a, b string) error {
	err := unix.RenamexNp(a, b, unix.RENAME_EXCL)
	if errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.EINVAL) {
		return linkNoReplace(a, b)
	}
	return pathErr("rename", a, b, err)
}

// No leases here: files are compared by content instead (see heldFile).
func setLease(*os.File, int) error                   { return errors.ErrUnsupported }
func getLease(*os.File) (int, error)                 { return 0, errors.ErrUnsupported }
func writerAttached(*os.File) (attached, known bool) { return false, false }
