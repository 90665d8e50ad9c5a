package systemtest

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"
)

// kcdBin is the kcd binary TestMain built for this run ("" under -short).
var kcdBin string

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run()) // every test here skips under -short: nothing to build
	}
	dir, err := os.MkdirTemp("", "kcd-systemtest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "systemtest:", err)
		os.Exit(1)
	}
	start := time.Now()
	kcdBin, err = Build(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "systemtest:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	if testing.Verbose() {
		fmt.Fprintf(os.Stderr, "systemtest: built %s in %v\n", kcdBin, time.Since(start).Round(time.Millisecond))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// binary skips the test under -short and returns the kcd binary.
func binary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("starts kcd processes: skipped with -short")
	}
	if kcdBin == "" {
		t.Fatal("no kcd binary: TestMain did not build one")
	}
	return kcdBin
}

// acks records which writes were acknowledged, and with what value.
type acks struct {
	mu sync.Mutex
	kv map[string]string
	// unknown counts writes that failed or timed out: they may or may not
	// have been applied, so nothing is asserted about them.
	unknown int
}

func newAcks() *acks { return &acks{kv: map[string]string{}} }

func (a *acks) add(key, value string) {
	a.mu.Lock()
	a.kv[key] = value
	a.mu.Unlock()
}

func (a *acks) fail() {
	a.mu.Lock()
	a.unknown++
	a.mu.Unlock()
}

func (a *acks) snapshot() (map[string]string, int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[string]string, len(a.kv))
	for k, v := range a.kv {
		out[k] = v
	}
	return out, a.unknown
}

// putOnce makes one write attempt through n and records its outcome.
func putOnce(ctx context.Context, a *acks, n *Node, key, value string, timeout time.Duration) error {
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if _, err := n.Put(rctx, key, []byte(value)); err != nil {
		a.fail()
		return err
	}
	a.add(key, value)
	return nil
}

// putRetry writes key until a write is acknowledged, trying the running
// nodes in turn. Each key is written with one value only, so a retry after
// an attempt of unknown outcome is harmless.
func putRetry(ctx context.Context, a *acks, nodes []*Node, key, value string) error {
	var errs []error
	for i := 0; ; i++ {
		if ctx.Err() != nil {
			errs = append(errs, ctx.Err())
			return fmt.Errorf("write %s never acknowledged: %w", key, errors.Join(errs...))
		}
		n := nodes[i%len(nodes)]
		if !n.Running() {
			time.Sleep(time.Millisecond)
			continue
		}
		err := putOnce(ctx, a, n, key, value, 3*time.Second)
		if err == nil {
			return nil
		}
		errs = append(errs, fmt.Errorf("node %d: %w", n.ID, err))
		time.Sleep(20 * time.Millisecond)
	}
}

// parallel runs fn(i) for i in [0, n) on workers goroutines and returns
// the first error.
func parallel(n, workers int, fn func(i int) error) error {
	var (
		mu    sync.Mutex
		next  int
		first error
		wg    sync.WaitGroup
	)
	for range workers {
		wg.Go(func() {
			for {
				mu.Lock()
				i := next
				next++
				stop := first != nil
				mu.Unlock()
				if i >= n || stop {
					return
				}
				if err := fn(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return first
}
