package transport

import (
	"crypto/tls"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// sendSeq sends n MsgApp from a to b with Index 1..n, in batches of
// varying size, like a Ready loop would.
func sendSeq(a, b *testNode, first, n uint64) {
	var batch []*raftpb.Message
	for i := first; i < first+n; i++ {
		batch = append(batch, appMsg(a.id, b.id, i, []byte("offset commit")))
		if len(batch) == int(i%7)+1 {
			a.tr.Send(batch)
			batch = nil
		}
	}
	a.tr.Send(batch)
}

func wantSeq(t *testing.T, got []uint64, first, n uint64) {
	t.Helper()
	if uint64(len(got)) != n {
		t.Fatalf("got %d messages, want %d", len(got), n)
	}
	for i, s := range got {
		if s != first+uint64(i) {
			t.Fatalf("message %d has sequence %d, want %d (out of order or lost)", i, s, first+uint64(i))
		}
	}
}

func TestHTTPDeliversInOrder(t *testing.T) {
	checkGoroutines(t)
	const n = 3000
	nodes := []*testNode{newNode(t, 1, "c1"), newNode(t, 2, "c1"), newNode(t, 3, "c1")}
	connect(nodes...)
	for _, a := range nodes {
		for _, b := range nodes {
			if a != b {
				go sendSeq(a, b, 1, n)
			}
		}
	}
	for _, b := range nodes {
		for _, a := range nodes {
			if a == b {
				continue
			}
			waitFor(t, fmt.Sprintf("%d→%d", a.id, b.id), func() bool { return b.rec.count(a.id) >= n })
			wantSeq(t, b.rec.seqs(a.id), 1, n)
		}
	}
	for _, a := range nodes {
		for id, st := range a.tr.Stats() {
			if st.Dropped != 0 || st.Sent != n || !st.Reachable || st.LastContact.IsZero() {
				t.Errorf("%d→%d stats %+v, want %d sent, none dropped, reachable", a.id, id, st, n)
			}
			if a.rec.unreachableCount(id) != 0 {
				t.Errorf("%d reported %d unreachable", a.id, id)
			}
		}
	}
}

func TestHTTPPeerDownThenBack(t *testing.T) {
	checkGoroutines(t)
	small := func(c *Config) { c.MaxQueueMsgs = 64 }
	a, b := newNode(t, 1, "c1", small), newNode(t, 2, "c1")
	connect(a, b)
	b.stop()

	// Send must not block however much piles up for a dead peer.
	start := time.Now()
	for i := range uint64(20000) {
		a.tr.Send([]*raftpb.Message{appMsg(1, 2, i, []byte("x"))})
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("20000 sends to a dead peer took %v", d)
	}
	waitFor(t, "unreachable report", func() bool { return a.rec.unreachableCount(2) > 0 })
	waitFor(t, "peer marked unreachable", func() bool {
		st := a.tr.Stats()[2]
		return !st.Reachable && st.LastError != ""
	})
	st := a.tr.Stats()[2]
	if st.QueueLen > 64 || st.Dropped == 0 {
		t.Errorf("stats %+v: want at most 64 queued and drops counted", st)
	}
	if !strings.Contains(st.LastError, "connect") {
		t.Errorf("LastError %q does not say why", st.LastError)
	}

	// The peer comes back on the same address: delivery resumes.
	b.start(t, b.addr)
	sendUntil(t, a, b, func() bool { return a.tr.Stats()[2].Reachable && b.rec.count(1) > 0 })
	if st := a.tr.Stats()[2]; time.Since(st.LastContact) > 5*time.Second || st.LastError != "" {
		t.Errorf("after recovery: %+v", st)
	}
}

// sendUntil keeps sending from a to b, as raft's heartbeats would, until
// cond holds.
func sendUntil(t *testing.T, a, b *testNode, cond func() bool) {
	t.Helper()
	i := uint64(1 << 20)
	waitFor(t, "delivery", func() bool {
		i++
		a.tr.Send([]*raftpb.Message{appMsg(a.id, b.id, i, nil)})
		return cond()
	})
}

func TestHTTPUpdatePeer(t *testing.T) {
	checkGoroutines(t)
	a, b := newNode(t, 1, "c1"), newNode(t, 2, "c1")
	connect(a, b)
	sendUntil(t, a, b, func() bool { return b.rec.count(1) > 0 })
	b.stop()
	b.start(t, "127.0.0.1:0") // moved to another port
	a.tr.UpdatePeer(2, b.url())
	before := b.rec.count(1)
	sendUntil(t, a, b, func() bool { return b.rec.count(1) > before })
}

func TestHTTPClusterMismatch(t *testing.T) {
	checkGoroutines(t)
	a, b := newNode(t, 1, "blue"), newNode(t, 2, "green")
	connect(a, b)
	for i := range uint64(10) {
		a.tr.Send([]*raftpb.Message{appMsg(1, 2, i, nil)})
		time.Sleep(10 * time.Millisecond)
	}
	waitFor(t, "refusal", func() bool { return strings.Contains(a.tr.Stats()[2].LastError, "412") })
	if msg := a.tr.Stats()[2].LastError; !strings.Contains(msg, `cluster id mismatch`) || !strings.Contains(msg, `"blue"`) {
		t.Errorf("LastError %q does not explain the mismatch", msg)
	}
	if b.rec.count(1) != 0 {
		t.Errorf("a member of another cluster delivered %d messages", b.rec.count(1))
	}
	if a.rec.unreachableCount(2) == 0 {
		t.Error("no unreachable report")
	}
}

func TestHTTPWrongMember(t *testing.T) {
	checkGoroutines(t)
	a, b := newNode(t, 1, "c1"), newNode(t, 2, "c1")
	a.tr.AddPeer(3, b.url()) // the address book is wrong: 3 is not there
	a.tr.Send([]*raftpb.Message{appMsg(1, 3, 1, nil)})
	waitFor(t, "refusal", func() bool {
		return strings.Contains(a.tr.Stats()[3].LastError, "request for member 3 reached member 2")
	})
	if b.rec.count(1) != 0 {
		t.Error("message delivered to the wrong member")
	}
}

func TestHTTPRemovedPeer(t *testing.T) {
	checkGoroutines(t)
	a, b := newNode(t, 1, "c1"), newNode(t, 2, "c1")
	connect(a, b)
	sendUntil(t, a, b, func() bool { return b.rec.count(1) > 0 })

	// Removed while its stream is open: the stream is ended with the reason,
	// and reconnecting is refused with 410.
	b.rec.remove(1)
	delivered := b.rec.count(1)
	for i := range uint64(20) {
		a.tr.Send([]*raftpb.Message{appMsg(1, 2, i, nil)})
		time.Sleep(5 * time.Millisecond)
	}
	waitFor(t, "410", func() bool { return strings.Contains(a.tr.Stats()[2].LastError, "410") })
	if got := b.rec.count(1); got != delivered {
		t.Errorf("%d messages from a removed member were processed", got-delivered)
	}
	if msg := a.tr.Stats()[2].LastError; !strings.Contains(msg, "member 1 was removed") {
		t.Errorf("LastError %q does not say why", msg)
	}
}

func TestHTTPFrameLimitOnReceipt(t *testing.T) {
	checkGoroutines(t)
	a := newNode(t, 1, "c1")
	b := newNode(t, 2, "c1", func(c *Config) { c.MaxFrameBytes = 1 << 10 })
	connect(a, b)
	a.tr.Send([]*raftpb.Message{appMsg(1, 2, 1, make([]byte, 4<<10))})
	waitFor(t, "refusal", func() bool { return strings.Contains(a.tr.Stats()[2].LastError, "frame size limit") })
	if b.rec.count(1) != 0 {
		t.Error("oversized frame delivered")
	}
	// The sender refuses what exceeds its own limit without sending it.
	c := newNode(t, 3, "c1", func(c *Config) { c.MaxFrameBytes = 1 << 10 })
	c.tr.AddPeer(2, b.url())
	c.tr.Send([]*raftpb.Message{appMsg(3, 2, 1, make([]byte, 4<<10))})
	if st := c.tr.Stats()[2]; st.Dropped != 1 || c.rec.unreachableCount(2) != 1 {
		t.Errorf("oversized send: stats %+v, %d unreachable reports", st, c.rec.unreachableCount(2))
	}
}

func snapMsg(from, to uint64, data []byte) *raftpb.Message {
	return &raftpb.Message{
		Type: raftpb.MsgSnap.Enum(), From: new(from), To: new(to), Term: new(uint64(2)),
		Snapshot: &raftpb.Snapshot{Data: data, Metadata: &raftpb.SnapshotMetadata{
			Index: new(uint64(100)), Term: new(uint64(2)), ConfState: &raftpb.ConfState{Voters: []uint64{1, 2}},
		}},
	}
}

func TestHTTPSnapshot(t *testing.T) {
	checkGoroutines(t)
	a, b := newNode(t, 1, "c1", func(c *Config) { c.MaxFrameBytes = 8 << 20 }), newNode(t, 2, "c1")
	connect(a, b)
	data := make([]byte, 4<<20)
	for i := range data {
		data[i] = byte(i)
	}
	a.tr.Send([]*raftpb.Message{snapMsg(1, 2, data)})
	waitFor(t, "snapshot report", func() bool { return len(a.rec.snapshots()) == 1 })
	if got := a.rec.snapshots(); got[0] != raft.SnapshotFinish {
		t.Fatalf("reported %v, want SnapshotFinish", got)
	}
	b.rec.mu.Lock()
	got := b.rec.msgs[0]
	b.rec.mu.Unlock()
	if got.GetType() != raftpb.MsgSnap || !slices.Equal(got.GetSnapshot().GetData(), data) {
		t.Fatal("snapshot arrived damaged")
	}

	// Too big for the frame limit: refused at once.
	a.tr.Send([]*raftpb.Message{snapMsg(1, 2, make([]byte, 9<<20))})
	if got := a.rec.snapshots(); len(got) != 2 || got[1] != raft.SnapshotFailure {
		t.Fatalf("oversized snapshot reported %v, want a SnapshotFailure", got)
	}

	// The peer is down: the failure is reported.
	b.stop()
	a.tr.Send([]*raftpb.Message{snapMsg(1, 2, []byte("small"))})
	waitFor(t, "failure report", func() bool { return len(a.rec.snapshots()) == 3 })
	if got := a.rec.snapshots(); got[2] != raft.SnapshotFailure {
		t.Fatalf("reported %v, want SnapshotFailure", got)
	}
}

func TestHTTPTLS(t *testing.T) {
	checkGoroutines(t)
	cert, pool := selfSigned(t)
	mtls := func(c *Config) {
		c.ServerTLS = &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert}
		c.ClientTLS = &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool}
	}
	a, b := newNode(t, 1, "c1", mtls), newNode(t, 2, "c1", mtls)
	connect(a, b)
	sendSeq(a, b, 1, 500)
	sendSeq(b, a, 1, 500)
	waitFor(t, "delivery over TLS", func() bool { return b.rec.count(1) == 500 && a.rec.count(2) == 500 })
	wantSeq(t, b.rec.seqs(1), 1, 500)

	// A client without a certificate is refused in the handshake.
	c := newNode(t, 3, "c1", func(c *Config) { c.ClientTLS = &tls.Config{RootCAs: pool} })
	c.tr.AddPeer(2, b.url())
	c.tr.Send([]*raftpb.Message{appMsg(3, 2, 1, nil)})
	waitFor(t, "refusal", func() bool { return c.tr.Stats()[2].LastError != "" })
	if b.rec.count(3) != 0 {
		t.Error("a client without a certificate was heard")
	}
}

func TestHTTPCloseIsIdempotentAndStopsSending(t *testing.T) {
	checkGoroutines(t)
	a, b := newNode(t, 1, "c1"), newNode(t, 2, "c1")
	connect(a, b)
	sendUntil(t, a, b, func() bool { return b.rec.count(1) > 0 })
	if err := a.tr.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.tr.Close(); err != nil {
		t.Fatal(err)
	}
	a.tr.Send([]*raftpb.Message{appMsg(1, 2, 99, nil)}) // must not panic or block
	a.tr.AddPeer(3, "http://127.0.0.1:1")
	if len(a.tr.Stats()) != 0 {
		t.Error("a closed transport still has peers")
	}
}

func TestHTTPSilentPeer(t *testing.T) {
	checkGoroutines(t)
	// A peer that accepts connections and never answers (a frozen process).
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	a := newNode(t, 1, "c1", func(c *Config) { c.OpenTimeout = 100 * time.Millisecond })
	a.tr.AddPeer(2, "http://"+ln.Addr().String())
	a.tr.Send([]*raftpb.Message{appMsg(1, 2, 1, nil)})
	waitFor(t, "timeout", func() bool { return strings.Contains(a.tr.Stats()[2].LastError, "no answer within 100ms") })
	if a.rec.unreachableCount(2) == 0 {
		t.Error("no unreachable report")
	}
}
