// Package privfile reads and writes the files of orch's private state, in
// <git common dir>/orch/: the lock, the state cache, the notes beside ref
// locks. Every one must be a regular file (docs/design.md §1.6): a FIFO there used to
// hang every command, a directory at lock hung doctor. Such a path is found
// without blocking (lstat, and opens with O_NONBLOCK and O_NOFOLLOW) and
// refused, naming it.
package privfile
