package raft

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/kcd-project/kcd/raft/fsm"
)

// The corruption check. The members' state machines are a function of the
// log, so at the same index they must hold the same key space; a member
// whose file was damaged (a flipped bit that bbolt, which keeps no
// checksum of values, serves as data) holds another. Every
// Config.CorruptionCheckInterval the leader appends a check entry to the
// log. Each member, when it applies that entry, takes a read view of its
// state at exactly that index and hashes it in the background
// (fsm.HashView, Apply goes on meanwhile), then appends a report entry
// with its hash. Every member applies every report, so every member comes
// to the same verdict from the log alone: once a majority of the voters
// reported the same hash for a check, a member that reported another one
// is corrupt. (etcd compares hashes at a revision over its peer API
// instead; the log makes the point of comparison exact and needs no
// request between members.)
//
// A member found corrupt raises an alarm (logged, in Alarms and Corrupt,
// and remembered in its data dir across restarts) and stops serving: its
// state machine refuses reads and watches, Propose and LinearizableRead
// fail with ErrCorrupt, it hands leadership to another voter if it leads,
// and it never campaigns (its vote requests are dropped). It still stores
// and acknowledges the log and votes for others, so the cluster keeps its
// quorum until the operator replaces it (remove, wipe, rejoin).
//
// Without a majority (two members of two disagree, or three different
// hashes) nobody can tell which state is right: the mismatch is logged and
// listed in Alarms with Member 0, and nobody is fenced.

// ErrCorrupt is returned by a member whose state was found to differ from
// the majority's.
var ErrCorrupt = errors.New("raft: this member's state differs from the majority's (corruption alarm)")

// Alarm is a corruption alarm.
type Alarm struct {
	// Member is the corrupt member; 0 when the members disagree and no
	// majority says which state is right.
	Member uint64 `json:"member"`
	// Index and Revision are where the states were compared.
	Index    uint64 `json:"index"`
	Revision int64  `json:"revision"`
	// Hash is the member's hash, Majority the one a majority reported.
	Hash     uint32    `json:"hash"`
	Majority uint32    `json:"majority_hash"`
	Raised   time.Time `json:"raised"`
}

func (a Alarm) String() string {
	if a.Member == 0 {
		return fmt.Sprintf("members' states differ at index %d (revision %d) and no majority agrees on one", a.Index, a.Revision)
	}
	return fmt.Sprintf("member %d's state at index %d (revision %d) hashes to %08x, a majority of the voters has %08x", a.Member, a.Index, a.Revision, a.Hash, a.Majority)
}

// Entries of the corruption check: a first byte that neither an fsm
// command (1) nor a group (0x80) starts with, then the kind. The state
// machine is handed them as empty entries. (A member of an older kcd
// applies them as invalid commands, which change nothing either.)
const (
	checkEntryMagic  = 0xC5
	checkEntryCheck  = 1
	checkEntryReport = 2
	checkReportSize  = 2 + 8 + 8 + 8 + 4
)

func isCheckEntry(data []byte) bool { return len(data) >= 2 && data[0] == checkEntryMagic }

var checkRequestData = []byte{checkEntryMagic, checkEntryCheck}

// hashReport is one member's hash of its state at a check's index.
type hashReport struct {
	member, index uint64
	rev           int64
	hash          uint32
}

func (r hashReport) encode() []byte {
	b := make([]byte, 0, checkReportSize)
	b = append(b, checkEntryMagic, checkEntryReport)
	b = binary.BigEndian.AppendUint64(b, r.member)
	b = binary.BigEndian.AppendUint64(b, r.index)
	b = binary.BigEndian.AppendUint64(b, uint64(r.rev))
	return binary.BigEndian.AppendUint32(b, r.hash)
}

func decodeHashReport(b []byte) (hashReport, bool) {
	if len(b) != checkReportSize || b[1] != checkEntryReport {
		return hashReport{}, false
	}
	return hashReport{
		member: binary.BigEndian.Uint64(b[2:]),
		index:  binary.BigEndian.Uint64(b[10:]),
		rev:    int64(binary.BigEndian.Uint64(b[18:])),
		hash:   binary.BigEndian.Uint32(b[26:]),
	}, true
}

// maxCheckRounds bounds the checks whose reports are kept.
const maxCheckRounds = 8

// checker holds the reports of the latest checks and the alarms.
type checker struct {
	mu     sync.Mutex
	rounds map[uint64]map[uint64]hashReport // check index → member → report
	alarms map[uint64]Alarm                 // member → alarm (0: no majority)
	self   *Alarm                           // this member's own alarm
	// hashing is set while this member hashes its state.
	hashing atomic.Bool
}

// alarmFile remembers this member's own alarm in its data dir.
const alarmFile = "corrupt.json"

// loadAlarm reads the alarm a previous run raised against this member.
func (n *Node) loadAlarm() error {
	n.check.rounds = map[uint64]map[uint64]hashReport{}
	n.check.alarms = map[uint64]Alarm{}
	b, err := os.ReadFile(filepath.Join(n.cfg.Dir, alarmFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("raft: read corruption alarm: %w", err)
	}
	var a Alarm
	if err := json.Unmarshal(b, &a); err != nil {
		return fmt.Errorf("raft: corruption alarm %s is unreadable: %w", filepath.Join(n.cfg.Dir, alarmFile), err)
	}
	n.log.Error("this member's state was found corrupt in an earlier run: it serves no reads and does not lead; "+n.recovery(), "alarm", a.String())
	n.fence(a)
	return nil
}

// Corrupt returns an error wrapping ErrCorrupt when this member's state was
// found to differ from the majority's, and nil otherwise.
func (n *Node) Corrupt() error {
	n.check.mu.Lock()
	defer n.check.mu.Unlock()
	if n.check.self == nil {
		return nil
	}
	return fmt.Errorf("%w: %s; %s", ErrCorrupt, n.check.self, n.recovery())
}

// Alarms lists the corruption alarms this member knows of: its own, and
// those its applied log raised against current members since it started.
func (n *Node) Alarms() []Alarm {
	n.check.mu.Lock()
	defer n.check.mu.Unlock()
	out := make([]Alarm, 0, len(n.check.alarms)+1)
	if n.check.self != nil {
		out = append(out, *n.check.self)
	}
	for id, a := range n.check.alarms {
		if id != n.cfg.ID && (id == 0 || !n.peers.isRemoved(id)) {
			out = append(out, a)
		}
	}
	slices.SortFunc(out, func(a, b Alarm) int { return int(a.Member) - int(b.Member) })
	return out
}

// isCorrupt tells whether this member is fenced, cheaply.
func (n *Node) isCorrupt() bool { return n.corrupt.Load() }

// fence makes this member stop serving (see the comment at the top).
func (n *Node) fence(a Alarm) {
	n.check.mu.Lock()
	first := n.check.self == nil
	if first {
		n.check.self = &a
	}
	n.check.mu.Unlock()
	if !first {
		return
	}
	n.corrupt.Store(true)
	n.sm.Fence(fmt.Errorf("%w: %s", ErrCorrupt, a))
}

// runCorruptionCheck appends a check entry every interval while this
// member leads.
func (n *Node) runCorruptionCheck() {
	every := n.cfg.CorruptionCheckInterval
	if every <= 0 {
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-n.stopc:
			return
		}
		if !n.IsLeader() || n.isCorrupt() {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), n.cfg.electionTimeout())
		if err := n.rn.Propose(ctx, checkRequestData); err != nil {
			n.log.Debug("corruption check not proposed", "err", err)
		}
		cancel()
	}
}

// applyCheckEntry handles a check entry at index e, once everything before
// it is applied (applier or Ready loop).
func (n *Node) applyCheckEntry(e *pb.Entry) {
	data := e.GetData()
	switch data[1] {
	case checkEntryCheck:
		// Only an entry applied now is hashed: after a restart raft hands
		// out again entries the state machine has applied, whose state is
		// gone.
		if n.sm.AppliedIndex() != e.GetIndex() {
			return
		}
		// One hash at a time: a state so large that hashing it outlasts
		// the interval skips checks rather than pile them up.
		if !n.check.hashing.CompareAndSwap(false, true) {
			n.log.Warn("corruption check skipped: the previous hash is still running", "index", e.GetIndex())
			return
		}
		v, err := n.sm.ViewForHash()
		if err != nil {
			n.check.hashing.Store(false)
			n.log.Warn("corruption check: cannot read the state", "index", e.GetIndex(), "err", err)
			return
		}
		go n.hashAndReport(v)
	case checkEntryReport:
		if r, ok := decodeHashReport(data); ok {
			n.addReport(r)
		}
	}
}

// hashAndReport hashes the view and appends this member's report, again
// until it is applied (raft drops proposals while there is no leader).
func (n *Node) hashAndReport(v *fsm.HashView) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-n.stopc:
			cancel()
		case <-ctx.Done():
		}
	}()
	start := time.Now()
	h, err := v.Sum(ctx)
	v.Close()
	n.check.hashing.Store(false)
	if err != nil {
		n.log.Debug("corruption check: hash aborted", "index", v.Index(), "err", err)
		return
	}
	n.log.Debug("state hashed", "index", h.Index, "revision", h.Revision, "keys", h.Keys, "took", time.Since(start))
	data := hashReport{member: n.cfg.ID, index: h.Index, rev: h.Revision, hash: h.Hash}.encode()
	retry := time.NewTicker(n.cfg.electionTimeout())
	defer retry.Stop()
	deadline := time.After(proposalTimeout)
	for !n.reported(h.Index) {
		pctx, pcancel := context.WithTimeout(ctx, n.cfg.electionTimeout())
		_ = n.rn.Propose(pctx, data)
		pcancel()
		select {
		case <-retry.C:
		case <-deadline:
			n.log.Warn("corruption check: this member's report was not applied in time", "index", h.Index)
			return
		case <-ctx.Done():
			return
		}
	}
}

func (n *Node) reported(index uint64) bool {
	n.check.mu.Lock()
	defer n.check.mu.Unlock()
	_, ok := n.check.rounds[index][n.cfg.ID]
	return ok
}

// addReport records a report and judges its check.
func (n *Node) addReport(r hashReport) {
	voters := n.votersNow.Load()
	n.check.mu.Lock()
	round, ok := n.check.rounds[r.index]
	if !ok {
		round = map[uint64]hashReport{}
		n.check.rounds[r.index] = round
		if len(n.check.rounds) > maxCheckRounds {
			delete(n.check.rounds, slices.Min(mapKeys(n.check.rounds)))
		}
	}
	if _, dup := round[r.member]; dup {
		n.check.mu.Unlock()
		return
	}
	round[r.member] = r
	verdict := judge(round, voters)
	var raised []Alarm
	for _, a := range verdict {
		if _, known := n.check.alarms[a.Member]; known && a.Member != n.cfg.ID {
			continue
		}
		a.Raised = time.Now()
		if a.Member != n.cfg.ID {
			n.check.alarms[a.Member] = a
		}
		raised = append(raised, a)
	}
	n.check.mu.Unlock()

	for _, a := range raised {
		switch a.Member {
		case n.cfg.ID:
			if n.isCorrupt() {
				continue
			}
			n.log.Error("corruption alarm: this member's state differs from the majority's; it stops serving reads and leading. "+n.recovery(), "alarm", a.String())
			n.fence(a)
			n.saveAlarm(a)
			go n.leaveLeadership()
		case 0:
			n.log.Error("corruption alarm: the members' states differ and no majority agrees on one; compare the members' data and replace the wrong one", "alarm", a.String())
		default:
			n.log.Error("corruption alarm: a member's state differs from the majority's; it stops serving. Replace it: remove it, wipe its data dir, rejoin it with a new id", "member", a.Member, "alarm", a.String())
		}
	}
}

// judge returns the alarms a check's reports raise: against every member
// whose hash differs from one a majority of voters reported, or, once every
// voter reported and they disagree without such a majority, one with
// Member 0.
func judge(round map[uint64]hashReport, voters *[]uint64) []Alarm {
	counts := map[uint32]int{}
	nvoters, reported := 0, 0
	var any hashReport
	if voters != nil {
		nvoters = len(*voters)
		for _, id := range *voters {
			if r, ok := round[id]; ok {
				counts[r.hash]++
				reported++
				any = r
			}
		}
	}
	for h, c := range counts {
		if c > nvoters/2 {
			var out []Alarm
			for _, r := range round {
				if r.hash != h {
					out = append(out, Alarm{Member: r.member, Index: r.index, Revision: r.rev, Hash: r.hash, Majority: h})
				}
			}
			return out
		}
	}
	if len(counts) > 1 && reported == nvoters {
		return []Alarm{{Index: any.index, Revision: any.rev}}
	}
	return nil
}

func mapKeys[K comparable, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// saveAlarm remembers this member's alarm in its data dir, so that a
// restart does not serve the corrupt state again.
func (n *Node) saveAlarm(a Alarm) {
	b, _ := json.Marshal(a)
	path := filepath.Join(n.cfg.Dir, alarmFile)
	if err := writeFileSync(path+".tmp", b); err == nil {
		err = os.Rename(path+".tmp", path)
		if err == nil {
			err = syncDir(n.cfg.Dir)
		}
		if err != nil {
			n.log.Error("cannot save the corruption alarm", "err", err)
		}
	} else {
		n.log.Error("cannot save the corruption alarm", "err", err)
	}
}

// leaveLeadership hands leadership to another voter while this corrupt
// member holds it.
func (n *Node) leaveLeadership() {
	for {
		if n.IsLeader() {
			ctx, cancel := context.WithTimeout(context.Background(), n.cfg.electionTimeout())
			if err := n.TransferLeadership(ctx, 0); err != nil {
				n.log.Warn("corrupt member: leadership transfer failed; trying again", "err", err)
			}
			cancel()
		}
		select {
		case <-n.stopc:
			return
		case <-time.After(n.cfg.electionTimeout()):
		}
	}
}

// dropOwnVoteRequests removes this member's vote requests from msgs, so a
// corrupt member never becomes leader. It still answers others' requests.
func (n *Node) dropOwnVoteRequests(msgs []*pb.Message) []*pb.Message {
	return slices.DeleteFunc(msgs, func(m *pb.Message) bool {
		t := m.GetType()
		return m.GetFrom() == n.cfg.ID && (t == pb.MessageType_MsgVote || t == pb.MessageType_MsgPreVote)
	})
}

// setVoters records the voters of confState cs for the checker.
func (n *Node) setVoters(cs *pb.ConfState) {
	v := slices.Clone(cs.GetVoters())
	n.votersNow.Store(&v)
}
