package workflow

import (
	"regexp"
	"sync"
)

// lazyRegexp compiles a pattern the first time it is used: compiling every
// pattern at start-up cost a few milliseconds in a program that runs for a
// few dozen.
func lazyRegexp(pattern string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(pattern) })
}
