package web

import (
	"os"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/orch-tool/orch/config"
	"github.com/orch-tool/orch/gitstore/gitrepo"
	"github.com/orch-tool/orch/workflow"
)

var osHostname = os.Hostname

// source hands pages the state branch as it is now.
//
// Reads never block writers (docs/design.md §10). A page could open the engine as
// the read-only verbs do, but their reconcile may commit (a hand edit, in
// the name of whoever started the server, at whatever moment a browser
// refreshes), and it holds the lock while it scans the view. So a page
// opens the engine without reconciling (workflow.Options.NoReconcile; the
// view's hand edits show once an orch command has committed them), and
// closes it at once: the lock is held only while the snapshot and the
// task summaries are loaded. The closed engine is a consistent, immutable
// view of one tip (the in-memory cache, git objects that never change), so
// pages read it without the lock, and the server keeps it until the ref
// moves: reading the ref is a stat and a small read, the same check board
// --watch makes.
//
// The engine's lookups build indexes lazily and are not safe for
// concurrent use, so pages take turns (mu); they are short.
type source struct {
	open func() (*workflow.Engine, error)

	mu   sync.Mutex
	e    *workflow.Engine
	tip  plumbing.Hash
	memo map[string]any // per tip: what costs a scan of the event log

	// repo and ref are read without mu by the live-update poller: repo is
	// a Repo of its own (never handed to an Open, which writes to it).
	repo *gitrepo.Repo
	ref  string
	// priv is the repository's private state directory, where a failed
	// action keeps what was typed (gitstore.KeepText).
	priv string
}

// check opens the engine once: the repository must be one, and orch set up
// in it. It returns the configuration as it stands.
func (s *source) check() (*config.Config, error) {
	e, err := s.open()
	if err != nil {
		return nil, err
	}
	defer e.Close()
	if err := e.RequireInit(); err != nil {
		return nil, err
	}
	repo := *e.Store.Repo
	s.repo, s.ref, s.priv = &repo, e.Store.Ref, e.Store.PrivDir()
	return e.Config, nil
}

// readTip reads the state branch's tip without any lock.
func (s *source) readTip() (plumbing.Hash, error) { return s.repo.ReadRef(s.ref) }

// with runs fn on the state branch as it is now.
func (s *source) with(fn func(e *workflow.Engine, memo map[string]any) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	tip, err := s.readTip()
	if err != nil {
		return err
	}
	if s.e == nil || tip != s.tip {
		e, err := s.open()
		if err != nil {
			return err
		}
		// Released at once (see source): what the page reads is in memory.
		cerr := e.Close()
		if err := e.RequireInit(); err != nil {
			return err
		}
		if cerr != nil {
			return cerr
		}
		s.e, s.tip, s.memo = e, e.Store.Snapshot().Tip, map[string]any{}
	}
	return fn(s.e, s.memo)
}

// memoized returns memo[key], computing it with fn the first time at a tip.
func memoized[T any](memo map[string]any, key string, fn func() (T, error)) (T, error) {
	if v, ok := memo[key].(T); ok {
		return v, nil
	}
	v, err := fn()
	if err == nil {
		memo[key] = v
	}
	return v, err
}
