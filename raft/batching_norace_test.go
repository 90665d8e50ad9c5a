//go:build !race

// Built without the race detector only: its slowdown of every goroutine
// batches proposals by itself, so under -race this test could not fail.
// scripts/test.sh runs it in a pass of its own.

package raft_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/kcd-project/kcd/raft/fsm"
	"github.com/kcd-project/kcd/raft/rafttest"
)

// Proposals that arrive while the leader's Ready loop writes its log are
// cut into one entry per Ready (runProposer's group commit), not one small
// entry each: 64 concurrent writers take far fewer log entries than writes,
// and every write is still applied with its own result.
func TestBatchingConcurrentProposalsShareEntries(t *testing.T) {
	c := rafttest.NewCluster(t, 3, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	lead := c.Leader(5 * time.Second)
	if _, err := put(ctx, lead, "warm-up", "x"); err != nil {
		t.Fatal(err)
	}

	const writers, each = 64, 10
	results := make(chan fsm.Result, writers*each)
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				res, err := put(ctx, lead, fmt.Sprintf("w%02d/%d", w, i), "v")
				if err != nil {
					errs <- fmt.Errorf("writer %d put %d: %w", w, i, err)
					return
				}
				results <- res
			}
		})
	}
	wg.Wait()
	close(errs)
	close(results)
	for err := range errs {
		t.Fatal(err)
	}
	// Each write got its own revision: grouped commands still apply one by one.
	seen := map[int64]bool{}
	distinct := map[uint64]bool{} // the log entries that carried them
	for r := range results {
		if seen[r.Rev] {
			t.Fatalf("two writes acknowledged at revision %d", r.Rev)
		}
		seen[r.Rev] = true
		distinct[r.Index] = true
	}
	if len(seen) != writers*each {
		t.Fatalf("%d writes acknowledged, want %d", len(seen), writers*each)
	}
	entries := len(distinct)
	t.Logf("%d writes in %d log entries (%.1f per entry)", writers*each, entries, float64(writers*each)/float64(entries))
	if entries > writers*each/4 {
		t.Errorf("%d writes took %d log entries: concurrent proposals are not sharing entries", writers*each, entries)
	}
}
