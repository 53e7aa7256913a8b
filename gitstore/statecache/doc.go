// Package statecache is orch's state cache: one file per state branch in
// <git common dir>/orch/, holding what every command would otherwise
// rebuild. It keeps the state branch's trees (for tree surgery without
// reading a 10,000-entry tree), the summary of every task (for list and
// claim without parsing 10,000 files) and the view's sync index (for
// reconciling the view with stat calls instead of reads). It is a pure
// cache: a missing, stale or damaged file is detected (version, branch,
// checksum) and the store rebuilds it from the branch and the view.
//
// The interface is Load (or Start and Finish: the store hands the trees to
// the view scan before it waits for its lock), Save and Close. Save appends
// what changed to a journal, and writes a new base file once the journal has
// grown (journal.go). The store changes a loaded Cache in place: Tip, Root
// and Dirs directly, the summaries and the sync index through PutSummary,
// DropSummary, PutIndex, DropIndex and IndexEntry.MarkChanged, so that Save
// knows what changed. Inspect and Rebuild are orch doctor's.
//
// It owns the file format and the sets that answer lookups by path and by
// id without building maps of 10,000 entries. It does not know what a task
// file says (the store parses them into Summaries), what the view holds or
// when a stat can be trusted (the store's reconcile decides), nor git
// (gitrepo has the tree type).
//
// # What decoded values point into
//
// Decoding copies nothing: the strings of a loaded cache (tree entry names,
// task paths and ids, the fields of a summary decoded on demand, index
// paths) point into the file's bytes, mapped (Load with mapped) or read
// into the heap. Close unmaps a mapped file, so nothing decoded from it may
// be used after Close. A heap copy needs no Close: the garbage collector
// keeps it while any of its strings is in use.
//
// Unmapping while decoded strings are still in use would need every one
// of them copied out of the mapping as it is decoded. Measured (figures in
// bench/README.md), copying them into the heap slowed orch show and orch
// list --json, which decodes every summary, and reading the whole file
// into the heap instead of mapping it slowed orch show more. The benefit
// would go to long-running processes only, which read into the heap
// anyway. So nothing is copied: the store does not close its
// mapped cache, which lasts as long as the process (its callers use what it
// decoded after closing the store: the reconcile's report is printed after
// it), and a process that opens the store again and again reads the cache
// into the heap (gitstore.Options.InMemoryCache). Close is for a caller
// done with everything decoded, as orch doctor's repair of the sync index
// is; and a file Load cannot use is unmapped at once.
package statecache
