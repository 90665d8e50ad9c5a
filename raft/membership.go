package raft

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	etcdraft "go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// confContext is the context of a configuration change entry: the member it
// concerns and the id of the request that proposed it.
type confContext struct {
	Member    Member `json:"member"`
	RequestID uint64 `json:"request_id,omitempty"`
}

func (c confContext) encode() []byte {
	b, _ := json.Marshal(c) // strings and integers only
	return b
}

func decodeConfContext(b []byte) (confContext, error) {
	var c confContext
	if len(b) == 0 {
		return c, nil
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("decode conf change context: %w", err)
	}
	return c, nil
}

func mergeMember(base, over Member) Member {
	if over.PeerURL != "" {
		base.PeerURL = over.PeerURL
	}
	if over.RESTURL != "" {
		base.RESTURL = over.RESTURL
	}
	if len(over.Roles) > 0 {
		base.Roles = over.Roles
	}
	return base
}

// membership is what the node knows of the cluster's members: how to reach
// them, and which ids were removed for good. It changes only by applying
// configuration changes (or a snapshot), and is saved beside the state
// machine, and inside snapshots, so it survives log compaction.
type membership struct {
	path string
	// saveMu makes saves take turns: they share the temporary file, and
	// SelfRemoved saves from a transport goroutine while the Ready loop
	// may be applying a configuration change.
	saveMu sync.Mutex

	mu      sync.Mutex
	Members map[uint64]Member `json:"members"`
	Removed map[uint64]bool   `json:"removed"`
}

const membershipFile = "members.json"

func loadMembership(dir string) (*membership, error) {
	m := &membership{path: filepath.Join(dir, membershipFile), Members: map[uint64]Member{}, Removed: map[uint64]bool{}}
	b, err := os.ReadFile(m.path)
	if os.IsNotExist(err) {
		return m, nil
	}
	if err != nil {
		return nil, fmt.Errorf("raft: read membership: %w", err)
	}
	if err := m.unmarshal(b); err != nil {
		return nil, fmt.Errorf("raft: membership file %s is corrupt: %w", m.path, err)
	}
	return m, nil
}

func (m *membership) unmarshal(b []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.Members, m.Removed = map[uint64]Member{}, map[uint64]bool{}
	if err := json.Unmarshal(b, m); err != nil {
		return err
	}
	if m.Members == nil {
		m.Members = map[uint64]Member{}
	}
	if m.Removed == nil {
		m.Removed = map[uint64]bool{}
	}
	return nil
}

func (m *membership) marshal() []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, _ := json.Marshal(m)
	return b
}

// save writes the membership durably (temp file, fsync, rename, dir fsync).
func (m *membership) save() error {
	m.saveMu.Lock()
	defer m.saveMu.Unlock()
	tmp := m.path + ".tmp"
	if err := writeFileSync(tmp, m.marshal()); err != nil {
		return fmt.Errorf("raft: save membership: %w", err)
	}
	if err := os.Rename(tmp, m.path); err != nil {
		return fmt.Errorf("raft: save membership: %w", err)
	}
	return syncDir(filepath.Dir(m.path))
}

func (m *membership) set(mem Member) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.Members[mem.ID]; ok {
		mem = mergeMember(old, mem)
	}
	m.Members[mem.ID] = mem
}

func (m *membership) remove(id uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.Members, id)
	m.Removed[id] = true
}

func (m *membership) get(id uint64) (Member, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	mem, ok := m.Members[id]
	return mem, ok
}

// has reports whether the membership knows any member (known) and whether
// id is one of them.
func (m *membership) has(id uint64) (known, member bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, member = m.Members[id]
	return len(m.Members) > 0, member
}

func (m *membership) isRemoved(id uint64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.Removed[id]
}

func (m *membership) list() []Member {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Member, 0, len(m.Members))
	for _, mem := range m.Members {
		out = append(out, mem)
	}
	slices.SortFunc(out, func(a, b Member) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

func writeFileSync(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// applyConfChange applies a committed configuration change to raft and to
// the membership, and answers its proposer.
func (n *Node) applyConfChange(e *pb.Entry) error {
	var cc pb.ConfChangeI
	var ctxBytes []byte
	if e.GetType() == pb.EntryType_EntryConfChange {
		var v1 pb.ConfChange
		if err := proto.Unmarshal(e.GetData(), &v1); err != nil {
			return fmt.Errorf("raft: decode conf change at %d: %w", e.GetIndex(), err)
		}
		cc, ctxBytes = &v1, v1.GetContext()
	} else {
		var v2 pb.ConfChangeV2
		if err := proto.Unmarshal(e.GetData(), &v2); err != nil {
			return fmt.Errorf("raft: decode conf change at %d: %w", e.GetIndex(), err)
		}
		cc, ctxBytes = &v2, v2.GetContext()
	}
	cctx, err := decodeConfContext(ctxBytes)
	if err != nil {
		n.log.Warn("conf change without a readable member", "index", e.GetIndex(), "err", err)
	}
	n.confState = n.rn.ApplyConfChange(cc)
	n.setVoters(n.confState)
	for _, ch := range cc.AsV2().GetChanges() {
		id := ch.GetNodeId()
		switch ch.GetType() {
		case pb.ConfChangeType_ConfChangeAddNode, pb.ConfChangeType_ConfChangeAddLearnerNode:
			if n.peers.isRemoved(id) {
				continue // an id is never reused
			}
			mem := Member{ID: id}
			if cctx.Member.ID == id {
				mem = cctx.Member
			}
			n.peers.set(mem)
			n.snapNow = true
			if got, _ := n.peers.get(id); id != n.cfg.ID && got.PeerURL != "" {
				n.tr.AddPeer(id, got.PeerURL)
			}
		case pb.ConfChangeType_ConfChangeRemoveNode:
			n.peers.remove(id)
			if id != n.cfg.ID {
				n.tr.RemovePeer(id)
			}
		}
	}
	if err := n.peers.save(); err != nil {
		return err
	}
	n.log.Info("configuration changed", "index", e.GetIndex(), "voters", n.confState.GetVoters(), "learners", n.confState.GetLearners())
	if cctx.RequestID != 0 {
		n.deliver(fsmResult(cctx.RequestID, e.GetIndex()))
	}
	if n.peers.isRemoved(n.cfg.ID) {
		return ErrRemoved
	}
	return nil
}

// snapshotMagic starts the data of kcd's raft snapshots: the membership,
// then the state machine's image.
var snapshotMagic = []byte("KCDSNAP1")

// snapshotHeader is what comes before the state machine's image.
func snapshotHeader(members []byte) []byte {
	b := make([]byte, 0, len(snapshotMagic)+8+len(members))
	b = append(b, snapshotMagic...)
	b = binary.LittleEndian.AppendUint64(b, uint64(len(members)))
	return append(b, members...)
}

func decodeSnapshot(data []byte) (members, state []byte, err error) {
	if len(data) < len(snapshotMagic)+8 || !bytes.Equal(data[:len(snapshotMagic)], snapshotMagic) {
		return nil, nil, fmt.Errorf("raft: snapshot data is not a kcd snapshot")
	}
	data = data[len(snapshotMagic):]
	l := binary.LittleEndian.Uint64(data)
	data = data[8:]
	if l > uint64(len(data)) {
		return nil, nil, fmt.Errorf("raft: snapshot data is truncated")
	}
	return data[:l], data[l:], nil
}

// restoreSnapshot installs a snapshot received from the leader.
func (n *Node) restoreSnapshot(snap *pb.Snapshot) error {
	members, state, err := decodeSnapshot(snap.GetData())
	if err != nil {
		return err
	}
	if err := n.sm.Restore(bytes.NewReader(state)); err != nil {
		return fmt.Errorf("raft: restore state machine from snapshot %d: %w", snap.GetMetadata().GetIndex(), err)
	}
	if err := n.peers.unmarshal(members); err != nil {
		return fmt.Errorf("raft: snapshot membership: %w", err)
	}
	if err := n.peers.save(); err != nil {
		return err
	}
	for _, m := range n.peers.list() {
		if m.ID != n.cfg.ID && m.PeerURL != "" {
			n.tr.AddPeer(m.ID, m.PeerURL)
		}
	}
	n.confState = snap.GetMetadata().GetConfState()
	n.setVoters(n.confState)
	n.snapIndex = snap.GetMetadata().GetIndex()
	n.snapBytes, _ = uint64(len(snap.GetData())), n.logBytes.Swap(0)
	n.lastSnapBytes.Store(n.snapBytes)
	n.setApplied(n.snapIndex)
	n.log.Info("installed snapshot from the leader", "index", n.snapIndex)
	return nil
}

// snapshotStretch bounds how long a large state defers its next snapshot,
// in multiples of SnapshotEntries (and so the entries kept in memory); a
// state whose last snapshot was smaller than snapshotStretchFrom does not
// defer at all.
const (
	snapshotStretch     = 4
	snapshotStretchFrom = 1 << 20
)

// snapshotDue says whether a snapshot is due since entries after the last
// one, which held snapBytes, whose entry data adds up to logBytes.
func snapshotDue(since, every, logBytes, snapBytes uint64) bool {
	if since < every {
		return false
	}
	return snapBytes < snapshotStretchFrom || 2*logBytes >= snapBytes || since >= snapshotStretch*every
}

// maybeSnapshot takes a snapshot every SnapshotEntries applied entries and
// compacts the log behind it, keeping SnapshotCatchUp entries. A snapshot
// writes the whole state, while the log it lets go of was written once: so
// while the entries since the last snapshot hold less than half its size,
// it waits, for at most snapshotStretch times SnapshotEntries, once the
// state is larger than snapshotStretchFrom. (With a state of 16 MB and
// 100-byte writes, one snapshot every 10,000 entries cost 8 % of the CPU
// of a node under load.)
//
// Once the last snapshot held asyncSnapshotFrom bytes or more, the image is
// copied and written off the Ready loop (writeSnapshot): a state of 100k
// keys (50 MB) took the loop, and so every write of the cluster, 0.8-1.2 s
// on a busy machine. One snapshot is in flight at a time.
func (n *Node) maybeSnapshot() error {
	if err := n.collectSnapshot(false); err != nil || n.snapc != nil {
		return err
	}
	applied := n.applied.Load()
	since := applied - min(applied, n.snapIndex)
	large := n.largeState(since)
	if large {
		since = staggered(since, n.cfg.ID, n.cfg.SnapshotEntries)
	}
	due := snapshotDue(since, n.cfg.SnapshotEntries, n.logBytes.Load(), n.snapBytes)
	if !due && !(n.snapNow && applied > n.snapIndex) {
		return nil
	}
	n.snapNow = false
	// The snapshot's index and confState must agree: conf changes are
	// applied in the Ready loop, only with the applier idle.
	if err := n.waitApply(); err != nil {
		return err
	}
	// The image goes straight after the header: no second copy of it.
	header := snapshotHeader(n.peers.marshal())
	cs := n.confState
	if cs != nil {
		cs = proto.Clone(cs).(*pb.ConfState)
	}
	if !large {
		return n.snapshotTaken(n.writeSnapshot(header, cs, nil))
	}
	// The loop waits only until the image's read transaction is open:
	// with the applier idle, the image then ends where confState holds.
	opened := make(chan uint64, 1)
	done := make(chan snapResult, 1)
	n.snapc = done
	go func() { done <- n.writeSnapshot(header, cs, func(index uint64) { opened <- index }) }()
	select {
	case <-opened:
		return nil
	case r := <-done: // failed before it read anything
		n.snapc = nil
		return n.snapshotTaken(r)
	}
}

// largeState tells whether the state is large enough (asyncSnapshotFrom)
// for its snapshots to be written off the Ready loop and staggered.
func (n *Node) largeState(since uint64) bool {
	return isLarge(n.snapBytes, since, n.cfg.SnapshotEntries, asyncSnapshotFrom.Load(), n.sm.DataSize)
}

// isLarge is largeState: the last snapshot held from bytes or more, or,
// once a snapshot may be due, the state does (size). The state counts even
// after a small snapshot: a state that was small (a store switch had just
// cleared it) and then took 100k keys at once had its next snapshot taken
// in the Ready loop on every member at the same index, stopping every
// write of the cluster for as long. Freed pages count, so a state that was
// large once stays large: its snapshots go off the loop, which a small
// state's can too.
func isLarge(snapBytes, since, every, from uint64, size func() int64) bool {
	if snapBytes >= from {
		return true
	}
	if since < every {
		return false
	}
	return uint64(max(size(), 0)) >= from
}

// staggered is since as member id counts it for a large state: up to 3/8
// of every fewer, by id, so that the members, which apply the same entries,
// do not all take a large snapshot at the same moment (each costs its node
// a burst of CPU and disk; with one member at a time the others still make
// a quorum at full speed).
func staggered(since, id, every uint64) uint64 {
	return since - min(since, id%4*every/8)
}

// asyncSnapshotFrom is the size of a state (1 MiB) from which its snapshots
// are written off the Ready loop and staggered; a small state's are written
// in it at once.
var asyncSnapshotFrom = func() *atomic.Uint64 {
	var v atomic.Uint64
	v.Store(1 << 20)
	return &v
}()

// snapResult is what writeSnapshot did.
type snapResult struct {
	index uint64
	bytes int
	took  time.Duration
	err   error
}

// writeSnapshot writes the state machine's image after header straight
// into the log store's snapshot file (no copy of it in memory: a node's
// heap is bounded by its memory limit, 80 MiB by default, and an image of
// 50 MB in the heap had the collector run without pause), records it as the
// snapshot at its index with cs, and compacts the log behind it; opened, if
// set, is called once the image's read transaction is open.
func (n *Node) writeSnapshot(header []byte, cs *pb.ConfState, opened func(uint64)) snapResult {
	start := time.Now()
	var r snapResult
	err := n.sm.WriteSnapshotThen(func(index uint64, size int64, image func(io.Writer) error) error {
		r.index, r.bytes = index, len(header)+int(size)
		if opened != nil {
			opened(index)
		}
		if _, err := n.logs.CreateSnapshotFrom(index, cs, header, size, image); err != nil {
			return fmt.Errorf("raft: save snapshot at %d: %w", index, err)
		}
		return nil
	})
	if err != nil {
		r.err = err
		return r
	}
	if r.index > n.cfg.SnapshotCatchUp {
		// ErrCompacted: the log already starts later (after a snapshot
		// from the leader); nothing to drop.
		if err := n.logs.Compact(r.index - n.cfg.SnapshotCatchUp); err != nil && !errors.Is(err, etcdraft.ErrCompacted) {
			r.err = fmt.Errorf("raft: compact log: %w", err)
			return r
		}
	}
	r.took = time.Since(start)
	return r
}

// collectSnapshot takes in the snapshot written off the loop, if any: once
// it is done, or, with wait, after waiting for it (before a snapshot from
// the leader is installed, and when the loop ends). Ready loop only.
func (n *Node) collectSnapshot(wait bool) error {
	if n.snapc == nil {
		return nil
	}
	var r snapResult
	if wait {
		r = <-n.snapc
	} else {
		select {
		case r = <-n.snapc:
		default:
			return nil
		}
	}
	n.snapc = nil
	return n.snapshotTaken(r)
}

// snapshotTaken records a snapshot taken here. Ready loop only.
func (n *Node) snapshotTaken(r snapResult) error {
	if r.err != nil {
		return r.err
	}
	if r.index > n.snapIndex {
		n.snapIndex = r.index
		n.snapBytes = uint64(r.bytes)
	}
	n.logBytes.Store(0)
	n.snapshots.Add(1)
	n.lastSnapBytes.Store(uint64(r.bytes))
	// A snapshot written in the loop holds every write while it runs.
	if r.took >= slowSnapshot {
		n.log.Info("snapshot taken; slow", "index", r.index, "bytes", r.bytes, "took_ms", r.took.Milliseconds())
	} else {
		n.log.Debug("snapshot taken", "index", r.index, "bytes", r.bytes, "took_ms", r.took.Milliseconds())
	}
	return nil
}

// slowSnapshot is how long a snapshot takes before it is logged at info.
const slowSnapshot = 50 * time.Millisecond
