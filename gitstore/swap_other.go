//go:build !linux && !darwin

package gitstore

import (
	"errors"
	"os"
)

// exchangeFiles: no atomic exchange on this system; see emulatedExchange.
func exchangeFiles(a, b string) error { return emulatedExchange(a, b) }

// renameNoReplace renames a to b unless b exists (os.ErrExist then).
func renameNoReplace(a, b string) error { return linkNoReplace(a, b) }

// No leases here: files are compared by content instead (see heldFile).
func setLease(*os.File, int) error                   { return errors.ErrUnsupported }
func getLease(*os.File) (int, error)                 { return 0, errors.ErrUnsupported }
func writerAttached(*os.File) (attached, known bool) { return false, false }
