package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kcd-project/kcd/store"
)

// unique returns a backend name not registered yet: the registry is global
// and tests may run more than once in a process (-count).
func unique(base string) string {
	return fmt.Sprintf("%s-%d", base, seq.Add(1))
}

var seq atomic.Int64

// nopStore is a Store that only records that it was closed.
type nopStore struct {
	store.Store
	closed bool
}

func (s *nopStore) Close() error { s.closed = true; return nil }

func TestRegisterAndOpen(t *testing.T) {
	var gotSettings map[string]string
	var gotCtx context.Context
	want := &nopStore{}
	name := unique("test-open")
	store.Register(name, func(ctx context.Context, settings map[string]string) (store.Store, error) {
		gotCtx, gotSettings = ctx, settings
		return want, nil
	})
	type key struct{}
	ctx := context.WithValue(t.Context(), key{}, "v")
	settings := map[string]string{"path": "/var/lib/kcd"}
	s, err := store.Open(ctx, name, settings)
	if err != nil {
		t.Fatal(err)
	}
	if s != want {
		t.Fatalf("Open returned %v, not the factory's store", s)
	}
	if gotCtx.Value(key{}) != "v" || gotSettings["path"] != "/var/lib/kcd" {
		t.Fatalf("factory got ctx %v and settings %v", gotCtx, gotSettings)
	}
}

func TestBackendsSorted(t *testing.T) {
	f := func(context.Context, map[string]string) (store.Store, error) { return &nopStore{}, nil }
	registered := []string{unique("test-zz"), unique("test-aa"), unique("test-mm")}
	for _, n := range registered {
		store.Register(n, f)
	}
	names := store.Backends()
	if !slices.IsSorted(names) {
		t.Fatalf("Backends() = %q, not sorted", names)
	}
	for _, n := range registered {
		if !slices.Contains(names, n) {
			t.Fatalf("Backends() = %q, lacks %q", names, n)
		}
	}
	// The result is the caller's.
	names[0] = "changed"
	if store.Backends()[0] == "changed" {
		t.Fatal("Backends returns the registry's own memory")
	}
}

func TestRegisterPanics(t *testing.T) {
	f := func(context.Context, map[string]string) (store.Store, error) { return &nopStore{}, nil }
	dup, nilName := unique("test-dup"), unique("test-nil")
	store.Register(dup, f)
	for name, call := range map[string]func(){
		"duplicate":   func() { store.Register(dup, f) },
		"empty name":  func() { store.Register("", f) },
		"nil factory": func() { store.Register(nilName, nil) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: Register did not panic", name)
				}
			}()
			call()
		}()
	}
	if slices.Contains(store.Backends(), nilName) {
		t.Fatal("a panicking Register registered its backend")
	}
}

func TestOpenUnknown(t *testing.T) {
	_, err := store.Open(t.Context(), "no-such-backend", nil)
	if err == nil || !strings.Contains(err.Error(), `"no-such-backend"`) {
		t.Fatalf("Open of an unknown backend: %v", err)
	}
}

var errRefused = errors.New("connection refused")

func TestOpenRedactsSettings(t *testing.T) {
	settings := map[string]string{
		"dsn":      "kcd:s3cr3t-pw@tcp(db.internal:3306)/kcd",
		"password": "s3cr3t-pw",
		"token":    "tok-123456",
		"pool":     "8", // too short to redact
	}
	leaky := unique("test-leaky")
	store.Register(leaky, func(_ context.Context, s map[string]string) (store.Store, error) {
		return nil, fmt.Errorf("dial %s (password %s, token %s, pool %s): %w", s["dsn"], s["password"], s["token"], s["pool"], errRefused)
	})
	_, err := store.Open(t.Context(), leaky, settings)
	if err == nil {
		t.Fatal("Open succeeded")
	}
	msg := err.Error()
	for _, secret := range []string{"s3cr3t", "tok-123456", "db.internal"} {
		if strings.Contains(msg, secret) {
			t.Fatalf("error %q shows %q", msg, secret)
		}
	}
	if !strings.Contains(msg, "[redacted]") || !strings.Contains(msg, "pool 8") || !strings.Contains(msg, `"`+leaky+`"`) {
		t.Fatalf("error %q lost its context", msg)
	}
	if !errors.Is(err, errRefused) {
		t.Fatalf("error %q does not wrap the factory's error", msg)
	}
	if fmt.Sprintf("%+v", err) != msg {
		t.Fatalf("%%+v shows more than Error: %+v", err)
	}
}

func TestOpenFactoryFailures(t *testing.T) {
	half := &nopStore{}
	name := unique("test-half")
	store.Register(name, func(context.Context, map[string]string) (store.Store, error) {
		return half, errRefused
	})
	if _, err := store.Open(t.Context(), name, nil); !errors.Is(err, errRefused) {
		t.Fatalf("Open: %v", err)
	}
	if !half.closed {
		t.Fatal("a store returned with an error was not closed")
	}

	name = unique("test-nothing")
	store.Register(name, func(context.Context, map[string]string) (store.Store, error) { return nil, nil })
	if s, err := store.Open(t.Context(), name, nil); err == nil || s != nil {
		t.Fatalf("Open of a factory returning nothing = %v, %v", s, err)
	}

	called := false
	name = unique("test-ctx")
	store.Register(name, func(context.Context, map[string]string) (store.Store, error) {
		called = true
		return &nopStore{}, nil
	})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := store.Open(ctx, name, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("Open with a canceled context: %v", err)
	}
	if called {
		t.Fatal("the factory ran with a canceled context")
	}
}
