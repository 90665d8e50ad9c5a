package raft_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

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

// A damaged page in a member's state file stops its start with an error
// that names the file and the recovery, not a panic of bbolt's.
func TestStartRefusesDamagedStateFile(t *testing.T) {
	c := rafttest.NewCluster(t, 3, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	const marker = "value-to-damage-0123456789"
	for i := range 200 {
		mustPutOnLeader(ctx, t, c, fmt.Sprintf("k%03d", i), fmt.Sprintf("%s-%03d", marker, i))
	}
	victim := c.Follower().ID()
	if err := readBarrier(ctx, c.Node(victim), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := c.Node(victim).Stop(); err != nil {
		t.Fatal(err)
	}
	c.Kill(victim)

	// Zero the page that holds one of the values: a leaf of the key space.
	cfg := c.Config(victim, false)
	path := filepath.Join(cfg.Dir, "state.db")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	page, pageSize := liveLeafWith(t, path, []byte(marker+"-100"))
	clear(data[page*pageSize : (page+1)*pageSize])
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}

	n, err := raft.Start(cfg)
	if err == nil {
		n.Halt()
		t.Fatal("node started on a damaged state file")
	}
	for _, want := range []string{"state.db", "damaged", fmt.Sprintf("kcctl cluster remove %d", victim), "--join"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("start error %q does not say %q", err, want)
		}
	}
	mustPutOnLeader(ctx, t, c, "after", "still served")
}

// liveLeafWith returns a leaf page in use of the bbolt file at path that
// holds b (copies of it may linger in free pages), and the page size.
func liveLeafWith(t *testing.T, path string, b []byte) (page, pageSize int) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cp := filepath.Join(t.TempDir(), "copy.db") // bbolt writes its free list at Open
	if err := os.WriteFile(cp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(cp, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	pageSize = db.Info().PageSize
	err = db.View(func(tx *bolt.Tx) error {
		for off := 0; ; {
			i := bytes.Index(data[off:], b)
			if i < 0 {
				return fmt.Errorf("no leaf in use holds %q", b)
			}
			off += i
			id := off / pageSize
			// The start of the page (or of the run of pages it overflows).
			for ; id >= 2; id-- {
				if p, err := tx.Page(id); err != nil {
					return err
				} else if p != nil && p.Type != "free" && p.Type != "" {
					if p.Type == "leaf" && (id+p.OverflowCount+1)*pageSize > off {
						page = id
						return nil
					}
					break
				}
			}
			off += len(b)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return page, pageSize
}
