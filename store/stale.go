package store

import (
	"context"
	"sync"
	"time"
)

// Staleness records whether the reads made under a context from AllowStale
// were answered from a replica that could not confirm it was current, and
// how stale the stalest of them may have been.
type Staleness struct {
	mu    sync.Mutex
	stale bool
	age   time.Duration
}

// Record notes a read answered from a replica that holds every write
// acknowledged more than age ago, and may miss later ones.
func (s *Staleness) Record(age time.Duration) {
	s.mu.Lock()
	s.stale = true
	s.age = max(s.age, age)
	s.mu.Unlock()
}

// Stale reports whether any read was stale and the largest age recorded.
func (s *Staleness) Stale() (time.Duration, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.age, s.stale
}

type staleKey struct{}

// AllowStale returns a context under which reads (Get, Scan, Revision) may
// be answered from a local replica that cannot confirm it holds every
// acknowledged write (a Raft node without a leader or a quorum), within a
// bound the backend sets, instead of waiting or failing. The Staleness
// says afterwards whether any was. Writes, and backends without replicas,
// ignore it: a read under it is never less fresh than the bound, and is
// linearizable whenever the backend can make it so in time.
func AllowStale(ctx context.Context) (context.Context, *Staleness) {
	s := &Staleness{}
	return context.WithValue(ctx, staleKey{}, s), s
}

// StaleOK returns the Staleness of a context from AllowStale, or nil when
// reads under ctx must be linearizable.
func StaleOK(ctx context.Context) *Staleness {
	s, _ := ctx.Value(staleKey{}).(*Staleness)
	return s
}
