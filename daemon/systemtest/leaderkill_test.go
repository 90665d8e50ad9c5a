package systemtest

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// installedSnapshot is the raft node's info line when a follower replaces
// its log with a snapshot sent by the leader (raft/membership.go).
var installedSnapshot = regexp.MustCompile(`msg="installed snapshot from the leader".* index=(\d+)`)

// TestIntegrationProcessLeaderKill: three nodes take writes through every
// node, some concurrently and some while the leader is killed with
// SIGKILL; the survivors elect a new leader that takes writes and still
// holds every acknowledged write; the old leader, restarted from its data
// dir with the same flags after the log moved past it by several snapshots,
// catches up from a snapshot and then agrees with the others key by key.
func TestIntegrationProcessLeaderKill(t *testing.T) {
	bin := binary(t)
	const snapEvery = 50 // --raft-snapshot-entries: compaction keeps snapEvery/2 entries behind a snapshot
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Second)
	defer cancel()

	c := StartCluster(t, bin, Options{SnapshotEntries: snapEvery})
	nodes := c.Nodes()
	lead, err := WaitLeader(ctx, nodes...)
	if err != nil {
		t.Fatal(err)
	}
	a := newAcks()
	value := func(key string) string { return "value of " + key }

	// 1. Writes one after another, through every node in turn.
	for i := range 30 {
		key := fmt.Sprintf("lk/seq/%03d", i)
		if err := putRetry(ctx, a, []*Node{nodes[i%3]}, key, value(key)); err != nil {
			t.Fatal(err)
		}
	}
	// 2. Concurrent writes through every node.
	if err := parallel(90, 6, func(i int) error {
		key := fmt.Sprintf("lk/conc/%03d", i)
		return putRetry(ctx, a, []*Node{nodes[i%3], nodes[(i+1)%3]}, key, value(key))
	}); err != nil {
		t.Fatal(err)
	}

	// 3. Writers keep going while the leader is killed. Writes that fail
	// or time out have an unknown outcome; acknowledged ones must survive.
	stop := make(chan struct{})
	var writers sync.WaitGroup
	for w := range 4 {
		writers.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Sprintf("lk/kill/w%d/%04d", w, i)
				n := nodes[(w+i)%3]
				if !n.Running() {
					continue
				}
				if putOnce(ctx, a, n, key, value(key), 2*time.Second) != nil {
					time.Sleep(10 * time.Millisecond)
				}
			}
		})
	}
	time.Sleep(300 * time.Millisecond)
	old := c.Node(lead)
	killedAt := time.Now()
	old.Kill()
	survivors := c.Except(lead)
	newLead, err := WaitLeader(ctx, survivors...)
	if err != nil {
		t.Fatalf("after killing leader %d: %v", lead, err)
	}
	elected := time.Since(killedAt)
	// The new leader accepts writes (through a follower too: the first
	// survivor in the list may be either).
	key := "lk/after-kill"
	if err := putRetry(ctx, a, survivors, key, value(key)); err != nil {
		t.Fatal(err)
	}
	t.Logf("killed leader %d: survivors agreed on leader %d after %v, first write after the kill acknowledged after %v",
		lead, newLead, elected.Round(time.Millisecond), time.Since(killedAt).Round(time.Millisecond))
	time.Sleep(300 * time.Millisecond)
	close(stop)
	writers.Wait()

	// 4. While the old leader is down the log moves on by several
	// snapshots, so that what it lacks has been compacted away.
	before, err := survivors[0].Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := parallel(4*snapEvery, 4, func(i int) error {
		key := fmt.Sprintf("lk/down/%03d", i)
		return putRetry(ctx, a, survivors, key, value(key))
	}); err != nil {
		t.Fatal(err)
	}

	// 5. Every acknowledged write is there, through each survivor.
	want, unknown := a.snapshot()
	t.Logf("%d writes acknowledged, %d of unknown outcome (failed or timed out around the kill)", len(want), unknown)
	for _, n := range survivors {
		got, _, err := n.Scan(ctx, "lk/")
		if err != nil {
			t.Fatalf("scan through node %d: %v", n.ID, err)
		}
		checkAcked(t, fmt.Sprintf("node %d (survivor)", n.ID), want, got)
	}

	// 6. The old leader restarts from its data dir with the same flags and
	// catches up from a snapshot. Not sooner than 2 s after the kill:
	// restarting at once is TestIntegrationProcessLeaderKillQuickRestart's
	// subject, this test's is the snapshot.
	time.Sleep(time.Until(killedAt.Add(2 * time.Second)))
	if err := old.Start(); err != nil {
		t.Fatal(err)
	}
	target, err := survivors[0].Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var caught ClusterInfo
	if err := WaitFor(ctx, 20*time.Millisecond, func() (bool, error) {
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		info, err := old.Info(rctx)
		caught = info
		return err == nil && info.Leader != 0 && info.CommitIndex >= target.CommitIndex, err
	}); err != nil {
		t.Fatalf("restarted node %d did not reach commit index %d (it has %d): %v", lead, target.CommitIndex, caught.CommitIndex, err)
	}
	// raft reports the snapshot's index as committed as soon as it takes
	// the snapshot, a moment before the node has written and installed it.
	var m []string
	sctx, scancel := context.WithTimeout(ctx, 5*time.Second)
	_ = WaitFor(sctx, 20*time.Millisecond, func() (bool, error) {
		m = installedSnapshot.FindStringSubmatch(old.RunLog())
		return m != nil, nil
	})
	scancel()
	if m == nil {
		t.Errorf("restarted node %d caught up without installing a snapshot from the leader: its log has no %q line", lead, "installed snapshot from the leader")
	} else if idx, _ := strconv.ParseUint(m[1], 10, 64); idx <= before.CommitIndex {
		t.Errorf("restarted node %d installed snapshot %d, which predates the %d entries committed before the writes made while it was down", lead, idx, before.CommitIndex)
	} else {
		t.Logf("restarted node %d installed the leader's snapshot at index %d (commit index was %d when it went down, %d now)", lead, idx, before.CommitIndex, target.CommitIndex)
	}

	// 7. It agrees with the others: the whole key space, and every
	// acknowledged key read on its own (linearizable reads on that node).
	ref, _, err := survivors[0].Scan(ctx, "lk/")
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := old.Scan(ctx, "lk/")
	if err != nil {
		t.Fatalf("scan through restarted node %d: %v", lead, err)
	}
	if !maps.Equal(ref, got) {
		t.Errorf("restarted node %d holds %d keys under lk/, node %d holds %d; they differ", lead, len(got), survivors[0].ID, len(ref))
	}
	keys := slices.Sorted(maps.Keys(want))
	var mu sync.Mutex
	var bad []string
	if err := parallel(len(keys), 8, func(i int) error {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		v, found, err := old.Get(rctx, keys[i])
		if err != nil {
			return fmt.Errorf("get %s through restarted node %d: %w", keys[i], lead, err)
		}
		if !found || v != want[keys[i]] {
			mu.Lock()
			bad = append(bad, fmt.Sprintf("%s: found=%v value=%q", keys[i], found, v))
			mu.Unlock()
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(bad) > 0 {
		t.Errorf("restarted node %d: %d acknowledged keys wrong, e.g. %v", lead, len(bad), bad[:min(5, len(bad))])
	}
	final, err := old.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if final.CommitIndex < target.CommitIndex {
		t.Errorf("restarted node %d: commit index %d < %d", lead, final.CommitIndex, target.CommitIndex)
	}
}

// checkAcked reports every acknowledged key that got lacks or holds with
// another value.
func checkAcked(t *testing.T, where string, want, got map[string]string) {
	t.Helper()
	var missing, wrong []string
	for k, v := range want {
		g, ok := got[k]
		switch {
		case !ok:
			missing = append(missing, k)
		case g != v:
			wrong = append(wrong, fmt.Sprintf("%s=%q (want %q)", k, g, v))
		}
	}
	slices.Sort(missing)
	slices.Sort(wrong)
	if len(missing) > 0 {
		t.Errorf("%s lost %d acknowledged writes: %v", where, len(missing), missing[:min(10, len(missing))])
	}
	if len(wrong) > 0 {
		t.Errorf("%s holds %d acknowledged keys with other values: %v", where, len(wrong), wrong[:min(10, len(wrong))])
	}
}

// TestIntegrationProcessLeaderKillQuickRestart: the old leader is killed
// while clients write through the followers, and restarted at once, as a
// supervisor does (systemd's RestartSec defaults to 100 ms). It must hear
// from the new leader and catch up like any restarted follower.
func TestIntegrationProcessLeaderKillQuickRestart(t *testing.T) {
	bin := binary(t)
	ctx, cancel := context.WithTimeout(t.Context(), 40*time.Second)
	defer cancel()

	c := StartCluster(t, bin, Options{})
	lead, err := WaitLeader(ctx, c.Nodes()...)
	if err != nil {
		t.Fatal(err)
	}
	old := c.Node(lead)
	followers := c.Except(lead)
	// A write through a follower every 10 ms, each on its own: like many
	// clients, they do not wait for each other, so writes keep reaching the
	// followers (and being forwarded to the dead leader) until the
	// election.
	a := newAcks()
	stop := make(chan struct{})
	var writers sync.WaitGroup
	writers.Go(func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			writers.Go(func() {
				key := fmt.Sprintf("qr/%05d", i)
				_ = putOnce(ctx, a, followers[i%2], key, "v", 3*time.Second)
			})
		}
	})
	defer func() {
		close(stop)
		writers.Wait()
	}()
	time.Sleep(300 * time.Millisecond)
	old.Kill()
	newLead, err := WaitLeader(ctx, followers...)
	if err != nil {
		t.Fatalf("after killing leader %d: %v", lead, err)
	}
	if err := old.Start(); err != nil {
		t.Fatal(err)
	}
	rctx, rcancel := context.WithTimeout(ctx, 8*time.Second)
	defer rcancel()
	var info, ref ClusterInfo
	err = WaitFor(rctx, 50*time.Millisecond, func() (bool, error) {
		var err error
		if ref, err = c.Node(newLead).Info(rctx); err != nil {
			return false, err
		}
		info, err = old.Info(rctx)
		return err == nil && info.Leader == newLead && info.Term == ref.Term, err
	})
	if err != nil {
		ref, _ = c.Node(newLead).Info(ctx)
		info, _ = old.Info(ctx)
		t.Errorf("node %d, killed as leader and restarted at once, does not follow the new leader %d after 8 s: it says leader %d, term %d, commit %d; the leader is at term %d, commit %d",
			lead, newLead, info.Leader, info.Term, info.CommitIndex, ref.Term, ref.CommitIndex)
		t.Fatalf("what node %d's raft stream handlers are doing:\n%s", lead, streamHandlers(old))
	}
	t.Logf("node %d, restarted right after the election, follows leader %d at term %d", lead, newLead, info.Term)
}

// streamHandlers makes n print its goroutines (SIGQUIT: a Go program dumps
// them and exits) and returns those that serve inbound raft streams.
func streamHandlers(n *Node) string {
	if n.Signal(syscall.SIGQUIT) != nil || !n.WaitExit(5*time.Second) {
		return "(no goroutine dump)"
	}
	var out []string
	for g := range strings.SplitSeq(n.RunLog(), "\n\n") {
		if !strings.Contains(g, "serveStream") {
			continue
		}
		// The goroutine's header and its raft frames, each with its file
		// and line.
		lines := strings.Split(g, "\n")
		var keep []string
		for i, l := range lines {
			switch {
			case strings.HasPrefix(l, "goroutine "):
				keep = append(keep, l)
			case strings.Contains(l, "raft") && !strings.HasPrefix(l, "\t") && i+1 < len(lines):
				file, _, _ := strings.Cut(strings.TrimSpace(lines[i+1]), " ")
				keep = append(keep, "  "+l, "      "+file)
			}
		}
		out = append(out, strings.Join(keep, "\n"))
	}
	if len(out) == 0 {
		return "(no goroutine serves a raft stream)"
	}
	return strings.Join(out, "\n\n")
}

// TestIntegrationProcessWriteDuringFailoverIsAnswered: a PUT sent through a
// follower right after the leader died, before the follower noticed, is
// forwarded to the dead leader and lost. It must still get an answer in a
// bounded time (acknowledged once a new leader has it, or an error the
// client can retry on), not hang. The time it took is logged: it is what a
// client in that position sees of the failover.
func TestIntegrationProcessWriteDuringFailoverIsAnswered(t *testing.T) {
	bin := binary(t)
	ctx, cancel := context.WithTimeout(t.Context(), 40*time.Second)
	defer cancel()

	c := StartCluster(t, bin, Options{})
	lead, err := WaitLeader(ctx, c.Nodes()...)
	if err != nil {
		t.Fatal(err)
	}
	follower := c.Except(lead)[0]
	if _, err := follower.Put(ctx, "fa/before", []byte("1")); err != nil {
		t.Fatal(err)
	}
	c.Node(lead).Kill()
	const bound = 15 * time.Second // the election takes 0.5-1 s
	start := time.Now()
	pctx, pcancel := context.WithTimeout(ctx, bound)
	defer pcancel()
	_, err = follower.Put(pctx, "fa/during", []byte("2"))
	took := time.Since(start)
	switch {
	case pctx.Err() != nil:
		lctx, lcancel := context.WithTimeout(ctx, 2*time.Second)
		newLead, lerr := WaitLeader(lctx, c.Except(lead)...)
		lcancel()
		t.Errorf("a PUT through follower %d, sent right after leader %d was killed, got no answer in %v; the survivors' leader: %d (%v)", follower.ID, lead, bound, newLead, lerr)
	case err != nil:
		t.Logf("the PUT through follower %d was answered with an error after %v: %v", follower.ID, took.Round(time.Millisecond), err)
	default:
		t.Logf("the PUT through follower %d was acknowledged after %v", follower.ID, took.Round(time.Millisecond))
	}
}
