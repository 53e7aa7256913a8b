// Package statecache is orch's state cache: one file per state branch in
// <git common dir>/orch/, holding what every command would otherwise
// rebuild. It keeps the state branch's trees (for tree surgery without
// reading the whole tasks tree), the summary of every task (for list and
// claim without parsing every file) and the view's sync index (for
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
// id without building maps of every entry. It does not know what a task
// file says (the store parses them into Summaries), what the view holds or
// when a stat can be trusted (the store's reconcile decides), nor git
// (gitrepo has the tree type).
//
// # What points into the file
//
// Decoded strings are copies, but a record keeps its undecoded rest (a
// summary past its header, a sync-index entry) as a slice of the file's
// bytes, mapped (Load with mapped) or read into the heap, until it is
// asked for. Close unmaps a mapped file, so nothing loaded from it may be
// used after Close. The store does not close its mapped cache, which
// lasts as long as the process (its callers use summaries after closing
// the store); a process that opens the store again and again reads the
// cache into the heap (gitstore.Options.InMemoryCache), which the garbage
// collector keeps while a record is in use. Close is for a caller done
// with everything loaded, as orch doctor's repair of the sync index is;
// and a file Load cannot use is unmapped at once.
package statecache
