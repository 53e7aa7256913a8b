package web

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// hub tells open pages that the state branch moved. One poller reads the
// ref for every page (a stat and a small read, no lock: the check board
// --watch makes), so a hundred open tabs cost what one does.
type hub struct {
	read func() (plumbing.Hash, error)

	mu   sync.Mutex
	tip  plumbing.Hash
	subs map[chan plumbing.Hash]struct{}
}

func newHub(read func() (plumbing.Hash, error)) *hub {
	h := &hub{read: read, subs: map[chan plumbing.Hash]struct{}{}}
	h.tip, _ = read()
	return h
}

// run polls the ref every interval until ctx ends.
func (h *hub) run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			h.poll()
		}
	}
}

// poll reads the ref once and tells every page when it moved.
func (h *hub) poll() {
	tip, err := h.read()
	if err != nil {
		return // a ref being rewritten; the next poll sees it
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if tip == h.tip {
		return
	}
	h.tip = tip
	for c := range h.subs {
		// The newest tip replaces one not yet sent: a page needs only
		// the last.
		select {
		case <-c:
		default:
		}
		c <- tip
	}
}

func (h *hub) subscribe() (chan plumbing.Hash, plumbing.Hash) {
	c := make(chan plumbing.Hash, 1)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.subs[c] = struct{}{}
	return c, h.tip
}

func (h *hub) unsubscribe(c chan plumbing.Hash) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.subs, c)
}

// keepAlive is how often an idle stream sends a comment, so that proxies
// and the browser keep it open.
var keepAlive = 20 * time.Second

// events is the Server-Sent Events stream of the state branch's tip: the
// tip at once, then each new one. A page compares it with the tip it shows
// and fetches itself again when they differ, so a change made between the
// page's render and the stream's start is not missed.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	c, tip := s.hub.subscribe()
	defer s.hub.unsubscribe(c)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	send := func(tip plumbing.Hash) bool {
		_, err := fmt.Fprintf(w, "event: tip\ndata: %s\n\n", tip)
		fl.Flush()
		return err == nil
	}
	// The browser reconnects after a second when the stream drops.
	fmt.Fprint(w, "retry: 1000\n\n")
	if !send(tip) {
		return
	}
	ka := time.NewTicker(keepAlive)
	defer ka.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-s.quit:
			return
		case tip := <-c:
			if !send(tip) {
				return
			}
		case <-ka.C:
			if _, err := fmt.Fprint(w, ": alive\n\n"); err != nil {
				return
			}
			fl.Flush()
		}
	}
}
