package activestore

import (
	"context"
	"sync"
)

// gate lets writes through until a switch holds it: then new writes wait
// (each up to its context) and the switch waits for those in flight.
type gate struct {
	mu       sync.Mutex
	held     chan struct{} // non-nil while held; closed on release
	inflight int
	drained  chan struct{} // closed when inflight reaches 0 during a hold
}

func (g *gate) enter(ctx context.Context) error {
	for {
		g.mu.Lock()
		h := g.held
		if h == nil {
			g.inflight++
			g.mu.Unlock()
			return nil
		}
		g.mu.Unlock()
		select {
		case <-h:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (g *gate) exit() {
	g.mu.Lock()
	g.inflight--
	if g.inflight == 0 && g.drained != nil {
		close(g.drained)
		g.drained = nil
	}
	g.mu.Unlock()
}

// hold stops new writes and waits for those in flight; on error the gate
// is released again.
func (g *gate) hold(ctx context.Context) error {
	g.mu.Lock()
	g.held = make(chan struct{})
	var wait chan struct{}
	if g.inflight > 0 {
		g.drained = make(chan struct{})
		wait = g.drained
	}
	g.mu.Unlock()
	if wait == nil {
		return nil
	}
	select {
	case <-wait:
		return nil
	case <-ctx.Done():
		g.release()
		return ctx.Err()
	}
}

func (g *gate) release() {
	g.mu.Lock()
	if g.held != nil {
		close(g.held)
		g.held = nil
	}
	g.drained = nil
	g.mu.Unlock()
}
