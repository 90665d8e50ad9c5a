package activestore

import (
	"context"
	"sync"

	"github.com/kcd-project/kcd/store"
)

// Watch watches the active backend. The watcher ends with
// store.ErrCompacted when the node moves to another backend or another
// way of reaching it.
func (s *Store) Watch(ctx context.Context, prefix string, afterRev int64) (store.Watcher, error) {
	var d *delegate
	var inner store.Watcher
	// As for reads: a watch of the Raft store once it is no longer the
	// active backend is opened again on the one that is.
	err := s.read(ctx, func(cur *delegate) error {
		if inner != nil {
			inner.Close()
		}
		var err error
		d = cur
		inner, err = d.s.Watch(ctx, prefix, afterRev)
		return err
	})
	if err != nil {
		if inner != nil {
			inner.Close()
		}
		return nil, err
	}
	w := &watcher{inner: inner, gen: d.gen, s: s}
	s.mu.Lock()
	switch {
	case s.closed:
		s.mu.Unlock()
		w.end(store.ErrClosed)
	case s.gen != d.gen:
		s.mu.Unlock()
		w.end(store.ErrCompacted)
	default:
		s.watchers[w] = struct{}{}
		s.mu.Unlock()
		w.stop = context.AfterFunc(ctx, w.forget)
	}
	return w, nil
}

// watcher is a watcher of one delegate. Ending it closes the inner one,
// whose Events then closes, and makes Err say why.
type watcher struct {
	inner store.Watcher
	gen   uint64
	s     *Store
	stop  func() bool

	mu  sync.Mutex
	err error
}

func (w *watcher) Events() <-chan store.Event { return w.inner.Events() }

func (w *watcher) Err() error {
	w.mu.Lock()
	err := w.err
	w.mu.Unlock()
	if err != nil {
		return err
	}
	return w.inner.Err()
}

func (w *watcher) Close() {
	if w.stop != nil {
		w.stop()
	}
	w.forget()
	w.inner.Close()
}

// forget unregisters w: it no longer needs ending on a move.
func (w *watcher) forget() {
	w.s.mu.Lock()
	delete(w.s.watchers, w)
	w.s.mu.Unlock()
}

func (w *watcher) end(err error) {
	w.mu.Lock()
	if w.err == nil {
		w.err = err
	}
	w.mu.Unlock()
	w.inner.Close()
}
