package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Factory opens a store of one backend. settings are the backend's
// connection settings (a DSN, a path, credentials...), already resolved
// (ResolveSettings): they may hold secrets, so a factory must never log
// them (MaskString masks them in a text), and Open takes care that its
// errors do not echo them either.
type Factory func(ctx context.Context, settings map[string]string) (Store, error)

var (
	registryMu sync.RWMutex
	registry   = map[string]Factory{}
)

// Register makes a backend available under name, usually from the init
// function of the package that implements it. Like database/sql.Register, it
// panics when name is empty, factory is nil, or name is already taken:
// those are programming errors, found at start-up.
func Register(name string, factory Factory) {
	if name == "" {
		panic("store: Register with an empty backend name")
	}
	if factory == nil {
		panic("store: Register of backend " + name + " with a nil factory")
	}
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[name]; dup {
		panic("store: Register called twice for backend " + name)
	}
	registry[name] = factory
}

// Backends returns the names of the registered backends, sorted.
func Backends() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	names := make([]string, 0, len(registry))
	for name := range registry {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Open opens a store of the backend registered as name. An error from the
// backend's factory is returned with every settings value and every secret
// inside one (MaskString) replaced by "[redacted]" (errors.Is and errors.As
// still see the original).
func Open(ctx context.Context, name string, settings map[string]string) (Store, error) {
	registryMu.RLock()
	factory := registry[name]
	registryMu.RUnlock()
	if factory == nil {
		known := strings.Join(Backends(), ", ")
		if known == "" {
			known = "none"
		}
		return nil, fmt.Errorf("store: unknown backend %q (registered: %s)", name, known)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("store: open backend %q: %w", name, err)
	}
	s, err := factory(ctx, settings)
	if err != nil {
		if s != nil {
			s.Close()
		}
		return nil, fmt.Errorf("store: open backend %q: %w", name, MaskError(err, settings))
	}
	if s == nil {
		return nil, fmt.Errorf("store: open backend %q: the factory returned no store", name)
	}
	return s, nil
}

// minRedactLen is the shortest settings value that is redacted from error
// messages. Shorter values ("1", "on", a port) are rarely secrets, and
// replacing every occurrence of them would make messages unreadable.
const minRedactLen = 4

// MaskError returns err with the resolved settings' values and the secrets
// inside them replaced in its message (MaskString); errors.Is and errors.As
// still see the original. For the errors of an open backend, which Open
// cannot mask: what a switch or a log line reports of them. nil stays nil.
func MaskError(err error, settings map[string]string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	redacted := MaskString(msg, settings)
	if redacted == msg {
		return err
	}
	return &redactedError{msg: redacted, err: err}
}

// redactedError shows a cleaned message and keeps the original error for
// errors.Is and errors.As. Whoever unwraps it and prints the result on its
// own sees the original text: that is the backend's responsibility.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
