package gitstore

import (
	"errors"
	"os"
)

// pathErr wraps a two-path system call error as os.LinkError (so that
// errors.Is(err, os.ErrExist) and os.ErrNotExist work).
func pathErr(op, a, b string, err error) error {
	if err == nil {
		return nil
	}
	return &os.LinkError{Op: op, Old: a, New: b, Err: err}
}

// linkNoReplace renames a to b unless b exists, for systems and file
// systems without a no-replace rename: link(2) never replaces its target.
// A file system without hard links gets a plain rename after a look.
func linkNoReplace(a, b string) error {
	err := os.Link(a, b)
	if err != nil && !errors.Is(err, os.ErrExist) {
		if _, lerr := os.Lstat(b); lerr == nil {
			return &os.LinkError{Op: "rename", Old: a, New: b, Err: os.ErrExist}
		}
		return os.Rename(a, b)
	}
	if err != nil {
		return err
	}
	return os.Remove(a)
}

// emulatedExchange swaps a and b where the system cannot do it in one step.
// It takes b away first (a rename, so that a save that has just landed on b
// is what moves), then puts a in only if nothing new appeared at b
// meanwhile. For that moment b does not exist (a reader may find it
// missing). If a file is made at b in that moment it stays; a then holds
// what was displaced (a's own content is dropped) and the error is
// os.ErrExist. With os.ErrNotExist nothing moved.
func emulatedExchange(a, b string) error {
	aside := a + ".x"
	if err := os.Rename(b, aside); err != nil {
		return err
	}
	if err := linkNoReplace(a, b); err != nil {
		if rerr := os.Rename(aside, a); rerr != nil {
			return rerr
		}
		return &os.LinkError{Op: "exchange", Old: a, New: b, Err: os.ErrExist}
	}
	return os.Rename(aside, a)
}
