package raft_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kcd-project/kcd/raft"
	"github.com/kcd-project/kcd/raft/rafttest"
)

// A node whose WAL lost its tail while its state machine kept what it had
// applied must refuse to start, saying why and how to recover: run, it
// would lead with entries it skips (applied above its log), and replicas
// would diverge. The other members go on serving every acknowledged write.
func TestStartRefusesLogBehindState(t *testing.T) {
	c := rafttest.NewCluster(t, 3, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	acked := map[string]string{}
	for i := range 120 {
		k, v := fmt.Sprintf("k%03d", i), fmt.Sprintf("v%d", i)
		mustPutOnLeader(ctx, t, c, k, v)
		acked[k] = v
	}
	victim := c.Follower().ID()
	if err := readBarrier(ctx, c.Node(victim), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	applied := c.Node(victim).AppliedIndex()
	if err := c.Node(victim).Stop(); err != nil { // a clean stop: state.db holds everything applied
		t.Fatal(err)
	}
	c.Kill(victim)

	cfg := c.Config(victim, false)
	seg := lastSegment(t, filepath.Join(cfg.Dir, "wal"))
	used := walUsed(t, seg)
	if err := os.Truncate(seg, used/4); err != nil { // mid-record: a torn tail the log cuts off
		t.Fatal(err)
	}

	n, err := raft.Start(cfg)
	if err == nil {
		n.Halt()
		t.Fatalf("node %d started with its log cut well below its applied index %d", victim, applied)
	}
	for _, want := range []string{"log ends at", fmt.Sprintf("kcctl cluster remove %d", victim), "wipe", "--join"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("start error %q does not say %q", err, want)
		}
	}

	// The rest of the cluster serves on, with every acknowledged write.
	for i := range 20 {
		k, v := fmt.Sprintf("after%02d", i), fmt.Sprintf("a%d", i)
		mustPutOnLeader(ctx, t, c, k, v)
		acked[k] = v
	}
	for _, n := range c.Nodes() {
		if err := readBarrier(ctx, n, 5*time.Second); err != nil {
			t.Fatalf("node %d: %v", n.ID(), err)
		}
		for k, v := range acked {
			if got := mustGet(t, n, k); got != v {
				t.Fatalf("node %d: %s=%q, want %q", n.ID(), k, got, v)
			}
		}
	}
}

// lastSegment is the WAL segment written last in dir.
func lastSegment(t *testing.T, dir string) string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var segs []string
	for _, de := range des {
		if strings.HasSuffix(de.Name(), ".wal") {
			segs = append(segs, de.Name())
		}
	}
	if len(segs) == 0 {
		t.Fatalf("no wal segment in %s", dir)
	}
	slices.Sort(segs)
	return filepath.Join(dir, segs[len(segs)-1])
}

// walUsed is where a segment's records end (the rest is preallocated
// zeros): each record is a 4-byte length, a type byte, a CRC and the
// payload (see package logstore).
func walUsed(t *testing.T, path string) int64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var hdr [9]byte
	off := int64(0)
	for {
		if _, err := f.ReadAt(hdr[:], off); err != nil {
			return off
		}
		n := binary.LittleEndian.Uint32(hdr[:4])
		if n == 0 {
			return off
		}
		off += 9 + int64(n)
	}
}
