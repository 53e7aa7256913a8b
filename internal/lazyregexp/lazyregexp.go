// Package lazyregexp compiles a regular expression the first time it is
// used: compiling every pattern at start-up cost a large share of the
// run time of a program that lives briefly (as Go's own
// internal/lazyregexp).
package lazyregexp

import (
	"regexp"
	"sync"
)

// New returns a function that compiles pattern once, on the first call,
// and returns it.
func New(pattern string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(pattern) })
}
