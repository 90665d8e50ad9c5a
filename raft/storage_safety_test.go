package raft_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/kcd-project/kcd/raft"
	"github.com/kcd-project/kcd/raft/fsm"
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

// Flipped bytes in a value of one member's state file (bbolt keeps no
// checksum of values, so the member would serve them as data): the
// periodic corruption check finds that its state's hash differs from the
// majority's, raises an alarm on every member, and the corrupt member stops
// serving — no reads, no writes, no leadership, no campaign — while the
// others serve on, electing a leader with its vote if they must.
func TestCorruptMemberIsFencedAndOthersServe(t *testing.T) {
	c := rafttest.NewCluster(t, 3, func(cfg *raft.Config) {
		cfg.CorruptionCheckInterval = 200 * time.Millisecond
	})
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	const marker = "value-to-flip-0123456789"
	victim := c.Follower().ID()
	flipValueOf(ctx, t, c, victim, marker)
	started := time.Now()
	bad := c.Start(victim, false)

	waitFor(t, 15*time.Second, "the corrupt member's alarm", func() bool { return bad.Corrupt() != nil })
	t.Logf("alarm raised %v after the restart (check interval 200ms)", time.Since(started).Round(time.Millisecond))
	if !errors.Is(bad.Corrupt(), raft.ErrCorrupt) {
		t.Fatalf("Corrupt: %v", bad.Corrupt())
	}
	var healthy []*raft.Node
	for _, n := range c.Nodes() {
		if n.ID() != victim {
			healthy = append(healthy, n)
		}
	}
	for _, n := range healthy {
		if err := n.Corrupt(); err != nil {
			t.Fatalf("healthy node %d has an alarm: %v", n.ID(), err)
		}
		waitFor(t, 10*time.Second, "the alarm on a healthy member", func() bool {
			return slices.ContainsFunc(n.Alarms(), func(a raft.Alarm) bool { return a.Member == victim })
		})
	}

	// The corrupt member serves nothing.
	if _, _, err := bad.FSM().Get("k100"); !errors.Is(err, raft.ErrCorrupt) {
		t.Errorf("corrupt member's Get: %v, want ErrCorrupt", err)
	}
	if err := bad.LinearizableRead(ctx); !errors.Is(err, raft.ErrCorrupt) {
		t.Errorf("corrupt member's LinearizableRead: %v, want ErrCorrupt", err)
	}
	if _, err := putKV(ctx, bad, "via-bad", "x"); !errors.Is(err, raft.ErrCorrupt) {
		t.Errorf("corrupt member's Propose: %v, want ErrCorrupt", err)
	}
	if err := c.Leader(5*time.Second).TransferLeadership(ctx, victim); err == nil {
		t.Error("leadership was transferred to the corrupt member")
	}

	// The alarm outlives a restart of the corrupt member.
	c.Kill(victim)
	bad = c.Start(victim, false)
	if !errors.Is(bad.Corrupt(), raft.ErrCorrupt) {
		t.Fatalf("after a restart the corrupt member has no alarm: %v", bad.Corrupt())
	}
	if _, _, err := bad.FSM().Get("k100"); !errors.Is(err, raft.ErrCorrupt) {
		t.Errorf("restarted corrupt member's Get: %v, want ErrCorrupt", err)
	}

	// The others serve on, and lose their leader: the survivor is elected
	// with the corrupt member's vote, which never campaigns.
	mustPutOnLeader(ctx, t, c, "after-alarm", "ok", victim)
	lead := c.Leader(5 * time.Second)
	if lead.ID() == victim {
		t.Fatal("the corrupt member leads")
	}
	c.Kill(lead.ID())
	var survivor *raft.Node
	for _, n := range healthy {
		if n.ID() != lead.ID() {
			survivor = n
		}
	}
	waitFor(t, 15*time.Second, "the survivor to lead", func() bool {
		if bad.IsLeader() {
			t.Fatal("the corrupt member became leader")
		}
		return survivor.IsLeader()
	})
	if _, err := putKV(ctx, survivor, "after-failover", "ok"); err != nil {
		t.Fatalf("write after failover: %v", err)
	}
	if got := mustGet(t, survivor, "k100"); got != marker+"-100" {
		t.Fatalf("survivor k100=%q", got)
	}
}

// flipValueOf writes keys k000… with values marker-000…, stops member id
// and flips a bit of one of its values in its state file (the copy in the
// key space: the watch history is compacted away first).
func flipValueOf(ctx context.Context, t *testing.T, c *rafttest.Cluster, id uint64, marker string) {
	t.Helper()
	for i := range 150 {
		mustPutOnLeader(ctx, t, c, fmt.Sprintf("k%03d", i), fmt.Sprintf("%s-%03d", marker, i))
	}
	if err := c.OnLeader(ctx, func(n *raft.Node) error {
		rev, err := n.FSM().Revision()
		if err == nil {
			_, err = n.Propose(ctx, fsm.Command{Kind: fsm.KindCompact, Rev: rev})
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := readBarrier(ctx, c.Node(id), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := c.Node(id).Stop(); err != nil {
		t.Fatal(err)
	}
	c.Kill(id)

	path := filepath.Join(c.Config(id, false).Dir, "state.db")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	target := []byte(marker + "-100")
	page, pageSize := liveLeafWith(t, path, target)
	at := bytes.Index(data[page*pageSize:(page+1)*pageSize], target)
	data[page*pageSize+at+len(target)-1] ^= 0x01 // "…-100" becomes "…-101"
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// A corrupt member that leads when the alarm is raised hands leadership
// to a healthy member.
func TestCorruptLeaderStepsDown(t *testing.T) {
	// Only the restarted member checks, so that no check runs before it
	// leads.
	var every atomic.Int64
	every.Store(int64(time.Hour))
	c := rafttest.NewCluster(t, 3, func(cfg *raft.Config) {
		cfg.CorruptionCheckInterval = time.Duration(every.Load())
	})
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	victim := c.Follower().ID()
	flipValueOf(ctx, t, c, victim, "leader-value-0123456789")
	every.Store(int64(200 * time.Millisecond))
	bad := c.Start(victim, false)
	for !bad.IsLeader() && bad.Corrupt() == nil {
		tctx, tcancel := context.WithTimeout(ctx, 2*time.Second)
		err := c.Leader(5*time.Second).TransferLeadership(tctx, victim)
		tcancel()
		if ctx.Err() != nil {
			t.Fatalf("transfer to %d: %v", victim, err)
		}
	}
	if !bad.IsLeader() {
		t.Fatal("the corrupt member was fenced before it led")
	}
	waitFor(t, 15*time.Second, "the corrupt member's alarm", func() bool { return bad.Corrupt() != nil })
	waitFor(t, 15*time.Second, "another member to lead", func() bool {
		l := currentLeader(c)
		return l != nil && l.ID() != victim && !bad.IsLeader()
	})
	mustPutOnLeader(ctx, t, c, "after-alarm", "ok", victim)
}
