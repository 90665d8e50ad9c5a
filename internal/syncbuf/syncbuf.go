// Package syncbuf is a bytes.Buffer that goroutines may write and read at
// once: a log sink for tests that look for what was logged.
package syncbuf

import (
	"bytes"
	"sync"
)

// Buffer is safe for concurrent use; its zero value is empty.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
