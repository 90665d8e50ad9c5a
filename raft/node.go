package raft

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	etcdraft "go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/kcd-project/kcd/raft/fsm"
	"github.com/kcd-project/kcd/raft/logstore"
	"github.com/kcd-project/kcd/raft/transport"
)

// Errors callers branch on.
var (
	ErrStopped   = errors.New("raft: node stopped")
	ErrNoLeader  = errors.New("raft: no leader")
	ErrNotLeader = errors.New("raft: not the leader")
	// ErrProposalTimeout: a proposal was not applied in time; its outcome
	// is unknown.
	ErrProposalTimeout = errors.New("raft: proposal not applied in time")
	// ErrRemoved stops a node that was removed from its cluster.
	ErrRemoved = errors.New("raft: this node was removed from the cluster; its id cannot be used again (start a new node with a new id and an empty data dir)")
)

// Node is one member of a kcd Raft group.
type Node struct {
	cfg       Config
	log       *slog.Logger
	clusterID string

	rn    etcdraft.Node
	logs  *logstore.Store
	sm    *fsm.FSM
	tr    transport.Transport
	peers *membership

	// idBase makes request ids unique across nodes and restarts: results are
	// routed by id, and every node applies every entry.
	idBase uint64
	idSeq  atomic.Uint64

	waitMu  sync.Mutex
	waiters map[uint64]chan fsm.Result

	leader atomic.Uint64
	term   atomic.Uint64
	// leaderCh is closed and replaced whenever leader or term moves.
	leaderMu sync.Mutex
	leaderCh chan struct{}
	// proposals and proposalsFailed count Propose calls (Proposals).
	proposals, proposalsFailed atomic.Uint64
	applied                    atomic.Uint64
	commit                     atomic.Uint64
	appliedMu                  sync.Mutex
	appliedCh                  chan struct{} // closed and replaced whenever applied moves

	reads *readBatcher
	// propq feeds runProposer.
	propq chan []byte
	// readyTaken is signalled (without blocking) each time the Ready loop
	// takes a Ready: runProposer's clock.
	readyTaken chan struct{}
	// applyq feeds runApplier.
	applyq applyQueue

	confState *pb.ConfState // touched by the Ready loop only
	snapIndex uint64        // touched by the Ready loop only
	// snapBytes is the size of the last snapshot taken or installed
	// (Ready loop only), logBytes the entry data applied since then.
	snapBytes uint64
	logBytes  atomic.Uint64
	// The counters LogStats reports.
	entryBytes, snapshots, lastSnapBytes atomic.Uint64
	// snapc delivers the outcome of the snapshot being written off the
	// Ready loop; nil when none is (Ready loop only).
	snapc chan snapResult
	// snapNow asks for a snapshot at the next chance: after a member was
	// added, so that the snapshot a new member may need includes it (raft
	// refuses a snapshot whose configuration lacks the receiver).
	snapNow bool
	// campaignNow: campaignIfAlone has yet to decide whether this node
	// campaigns at once (set by the Ready loop only).
	campaignNow atomic.Bool
	// aloneCampaigns counts the elections campaignIfAlone started.
	aloneCampaigns atomic.Uint64
	// leading says this node was leader as of the last Ready's SoftState
	// (touched by the Ready loop only).
	leading bool
	early   []*pb.Message // sendEarly's scratch

	// The corruption check (corruption.go): reports and alarms, whether
	// this member is fenced, and the voters as of the applied log.
	check     checker
	corrupt   atomic.Bool
	votersNow atomic.Pointer[[]uint64]

	// bootPeers are the members this node was started with (initial
	// cluster, or those a joiner was told of): the senders it accepts until
	// it has applied a configuration of its own.
	bootPeers map[uint64]bool
	// refused counts incoming messages dropped by admit; refusedLog is
	// when the last one was logged (unix nanoseconds), for rate limiting.
	refused    atomic.Uint64
	refusedLog atomic.Int64

	halted   atomic.Bool // Halt: close the state machine as a crash would
	stopOnce sync.Once
	stopc    chan struct{}
	donec    chan struct{}
	failMu   sync.Mutex
	failErr  error
}

// Start opens (or creates) the node's state in cfg.Dir and starts it.
func Start(cfg Config) (*Node, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("raft: create dir: %w", err)
	}
	n := &Node{
		cfg:       cfg,
		log:       cfg.Logger.With("subsys", "raft", "node", cfg.ID),
		waiters:   map[uint64]chan fsm.Result{},
		appliedCh: make(chan struct{}),
		leaderCh:  make(chan struct{}),
		stopc:     make(chan struct{}),
		donec:     make(chan struct{}),
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	n.idBase = cfg.ID<<48 ^ binary.LittleEndian.Uint64(b[:])&(1<<48-1)
	n.bootPeers = map[uint64]bool{}
	for _, m := range slices.Concat(cfg.InitialCluster, cfg.JoinPeers) {
		n.bootPeers[m.ID] = true
	}

	ok := false
	defer func() {
		if !ok {
			n.closeResources()
		}
	}()
	fresh, err := n.checkIdentity()
	if err != nil {
		return nil, err
	}
	if n.logs, err = logstore.Open(filepath.Join(cfg.Dir, "wal"), logstore.Options{Logger: n.log}); err != nil {
		if errors.Is(err, logstore.ErrCorrupt) {
			return nil, fmt.Errorf("raft: open log: %w; %s", err, n.recovery())
		}
		return nil, fmt.Errorf("raft: open log: %w", err)
	}
	if n.sm, err = n.openStateMachine(); err != nil {
		if errors.Is(err, fsm.ErrDamaged) {
			return nil, fmt.Errorf("raft: open state machine: %w; %s", err, n.recovery())
		}
		return nil, fmt.Errorf("raft: open state machine: %w", err)
	}
	if err := n.checkLogCovers(); err != nil {
		return nil, err
	}
	if n.peers, err = loadMembership(cfg.Dir); err != nil {
		return nil, err
	}
	if n.peers.isRemoved(cfg.ID) {
		return nil, ErrRemoved
	}
	_, cs, err := n.logs.InitialState()
	if err != nil {
		return nil, fmt.Errorf("raft: initial state: %w", err)
	}
	n.confState = cs
	n.setVoters(cs)
	if err := n.loadAlarm(); err != nil {
		return nil, err
	}
	snap, err := n.logs.Snapshot()
	if err != nil {
		return nil, fmt.Errorf("raft: snapshot: %w", err)
	}
	n.snapIndex = snap.GetMetadata().GetIndex()
	n.applied.Store(n.sm.AppliedIndex())

	// raft's node comes first, so that the transport never delivers to a
	// node that is not there yet; nothing is sent before run starts.
	rc := &etcdraft.Config{
		ID:                        cfg.ID,
		ElectionTick:              cfg.ElectionTicks,
		HeartbeatTick:             cfg.HeartbeatTicks,
		Storage:                   n.logs,
		MaxSizePerMsg:             1 << 20,
		MaxInflightMsgs:           256,
		MaxInflightBytes:          32 << 20,
		MaxUncommittedEntriesSize: 64 << 20,
		MaxCommittedSizePerReady:  16 << 20,
		CheckQuorum:               true,
		PreVote:                   true,
		StepDownOnRemoval:         true,
		ReadOnlyOption:            etcdraft.ReadOnlySafe,
		Logger:                    raftLogger{n.log},
	}
	switch {
	case n.logs.IsEmpty() && fresh && len(cfg.InitialCluster) > 0:
		peers := make([]etcdraft.Peer, 0, len(cfg.InitialCluster))
		for _, m := range cfg.InitialCluster {
			if m.ID == cfg.ID {
				m = mergeMember(m, cfg.Self)
			}
			peers = append(peers, etcdraft.Peer{ID: m.ID, Context: confContext{Member: m}.encode()})
		}
		n.log.Info("bootstrapping a new cluster", "cluster_id", n.clusterID, "members", len(peers))
		n.rn = etcdraft.StartNode(rc, peers)
	default:
		// A restart, or a fresh node that joins: raft's configuration comes
		// from the log (or, for a joiner, from the leader).
		n.rn = etcdraft.RestartNode(rc)
	}
	n.campaignNow.Store(true)
	newTransport := cfg.NewTransport
	if newTransport == nil {
		newTransport = func(clusterID string, r transport.Receiver) (transport.Transport, error) {
			return transport.NewHTTP(transport.Config{
				ID: cfg.ID, ClusterID: clusterID, Receiver: r,
				ClientTLS: cfg.ClientTLS, ServerTLS: cfg.ServerTLS, Logger: n.log,
			})
		}
	}
	if n.tr, err = newTransport(n.clusterID, n); err != nil {
		return nil, fmt.Errorf("raft: transport: %w", err)
	}
	// Peers known so far: from the membership, the initial cluster or, for
	// a joiner, what it was told. The log corrects them as it is applied.
	known := n.peers.list()
	if len(known) == 0 {
		known = slices.Concat(cfg.InitialCluster, cfg.JoinPeers)
	}
	for _, m := range known {
		if m.ID != cfg.ID && m.PeerURL != "" && !n.peers.isRemoved(m.ID) {
			n.tr.AddPeer(m.ID, m.PeerURL)
		}
	}

	n.reads = newReadBatcher(n)
	n.propq = make(chan []byte, maxProposalBatch)
	n.readyTaken = make(chan struct{}, 1)
	n.applyq.init()
	ok = true
	go n.run()
	go n.reads.run()
	go n.reads.keepSynced()
	go n.runProposer()
	go n.runApplier()
	go n.runCorruptionCheck()
	if n.isCorrupt() {
		go n.leaveLeadership()
	}
	n.log.Info("raft node started", "cluster_id", n.clusterID, "applied", n.applied.Load(), "peer_url", cfg.Self.PeerURL)
	return n, nil
}

// openStateMachine opens the state machine. Unless Config.SyncApply is set
// it commits without fsync: the WAL holds every applied entry durably, and
// the log is compacted only behind snapshots, which are durable with their
// data. So when the machine crashed with unsynced commits (fsm.ErrUnsynced),
// the state is rebuilt from the newest snapshot, and raft hands the entries
// after it out again from the log. For the same reason its write
// transactions stay open across applies, committed every
// stateCommitInterval (fsm.Options.CommitInterval): after a crash of the
// process raft hands out again the entries after the applied index the
// file holds.
func (n *Node) openStateMachine() (*fsm.FSM, error) {
	path := filepath.Join(n.cfg.Dir, "state.db")
	opts := n.cfg.FSM
	opts.NoSync = !n.cfg.SyncApply
	if n.cfg.SyncApply {
		opts.CommitInterval = 0
	} else if opts.CommitInterval == 0 {
		opts.CommitInterval = stateCommitInterval
	}
	sm, err := fsm.Open(path, opts)
	if !errors.Is(err, fsm.ErrUnsynced) {
		return sm, err
	}
	n.log.Warn("the state machine took unsynced commits before the machine restarted: rebuilding it from the newest snapshot and the log", "reason", err)
	if err := fsm.Discard(path); err != nil {
		return nil, err
	}
	if sm, err = fsm.Open(path, opts); err != nil {
		return nil, err
	}
	snap, err := n.logs.Snapshot()
	if err == nil && snap.GetMetadata().GetIndex() > 0 {
		var state []byte
		if _, state, err = decodeSnapshot(snap.GetData()); err == nil {
			err = sm.Restore(bytes.NewReader(state))
		}
		if err != nil {
			err = fmt.Errorf("rebuild from snapshot %d: %w", snap.GetMetadata().GetIndex(), err)
		}
	}
	if err != nil {
		sm.Close()
		return nil, err
	}
	n.log.Info("state machine rebuilt from the snapshot; the log replays the rest", "snapshot_index", snap.GetMetadata().GetIndex())
	return sm, nil
}

// checkLogCovers refuses a data dir whose log ends before what the state
// machine has applied or the hard state says is committed: the log lost
// entries this node had acknowledged (a lost disk cache, a restored or
// copied file). Such a node must not run: it could vote twice in a term,
// and a leader elected with it would skip its own new entries up to the
// applied index, so that replicas diverge and acknowledged writes are lost.
func (n *Node) checkLogCovers() error {
	last, err := n.logs.LastIndex()
	if err != nil {
		return fmt.Errorf("raft: last index: %w", err)
	}
	hs, _, err := n.logs.InitialState()
	if err != nil {
		return fmt.Errorf("raft: initial state: %w", err)
	}
	applied := n.sm.AppliedIndex()
	switch {
	case applied > last && n.logs.IsEmpty():
		return fmt.Errorf("raft: %s holds applied state (index %d) but no log: the data dir is damaged or mixed up; %s", n.cfg.Dir, applied, n.recovery())
	case applied > last:
		return fmt.Errorf("raft: the state machine in %s has applied index %d but the log ends at %d: the log lost entries this node had acknowledged; %s", n.cfg.Dir, applied, last, n.recovery())
	case hs.GetCommit() > last:
		return fmt.Errorf("raft: the hard state in %s says index %d is committed but the log ends at %d: the log lost entries this node had acknowledged; %s", n.cfg.Dir, hs.GetCommit(), last, n.recovery())
	}
	return nil
}

// recovery says how to bring back a node whose data dir cannot be trusted.
func (n *Node) recovery() string {
	return fmt.Sprintf("this node must not rejoin with this data dir: remove it from the cluster (kcctl cluster remove %d, on a healthy member), "+
		"wipe its data dir, and start it again with a new --node-id and --join", n.cfg.ID)
}

// checkIdentity makes sure the data dir belongs to this node and cluster,
// recording them when the dir is new. fresh says it was new.
func (n *Node) checkIdentity() (fresh bool, err error) {
	cfg := n.cfg
	var want string
	switch {
	case len(cfg.InitialCluster) > 0:
		found := false
		for _, m := range cfg.InitialCluster {
			found = found || m.ID == cfg.ID
		}
		if !found {
			return false, fmt.Errorf("raft: node %d is not in the initial cluster", cfg.ID)
		}
		want = ClusterIDFor(cfg.InitialCluster)
	case cfg.ClusterID != "":
		want = cfg.ClusterID
	}
	id, exists, err := readIdentity(cfg.Dir)
	if err != nil {
		return false, err
	}
	if exists {
		if id.NodeID != cfg.ID {
			return false, fmt.Errorf("raft: data dir %s belongs to node %d, not %d", cfg.Dir, id.NodeID, cfg.ID)
		}
		if want != "" && id.ClusterID != want {
			return false, fmt.Errorf("raft: data dir %s belongs to cluster %s, but this node was started for cluster %s", cfg.Dir, id.ClusterID, want)
		}
		n.clusterID = id.ClusterID
		return false, nil
	}
	if want == "" {
		return false, fmt.Errorf("raft: %s holds no cluster: give an initial cluster to bootstrap one, or join an existing one", cfg.Dir)
	}
	n.clusterID = want
	return true, writeIdentity(cfg.Dir, identity{NodeID: cfg.ID, ClusterID: want})
}

// Self is this node as it tells the others of itself.
func (n *Node) Self() Member { return n.cfg.Self }

// ClusterID is the id of the cluster this node belongs to.
func (n *Node) ClusterID() string { return n.clusterID }

// ID is this node's raft id.
func (n *Node) ID() uint64 { return n.cfg.ID }

// Transport is the node's peer transport; mount its Handler on the peer
// listener.
func (n *Node) Transport() transport.Transport { return n.tr }

// FSM is the node's state machine, for reads that need not be linearizable
// (after WaitRead for those that must).
func (n *Node) FSM() *fsm.FSM { return n.sm }

// Leader is the id of the current leader as this node knows it (0: none).
func (n *Node) Leader() uint64 { return n.leader.Load() }

// IsLeader tells whether this node is the leader.
func (n *Node) IsLeader() bool { return n.leader.Load() == n.cfg.ID }

// Term is the current term as this node knows it.
func (n *Node) Term() uint64 { return n.term.Load() }

// AppliedIndex is the index of the last entry applied to the state machine.
func (n *Node) AppliedIndex() uint64 { return n.applied.Load() }

// Done is closed when the node has stopped, by Stop or by a fatal error.
func (n *Node) Done() <-chan struct{} { return n.donec }

// Err is the fatal error that stopped the node, if one did.
func (n *Node) Err() error {
	n.failMu.Lock()
	defer n.failMu.Unlock()
	return n.failErr
}

// Propose replicates cmd and returns its result once this node has applied
// it. cmd.ID is set by Propose.
func (n *Node) Propose(ctx context.Context, cmd fsm.Command) (fsm.Result, error) {
	n.proposals.Add(1)
	res, err := n.propose(ctx, cmd)
	if err != nil {
		n.proposalsFailed.Add(1)
	}
	return res, err
}

// Proposals counts the commands proposed through Propose since the node
// started, and those that failed (refused, timed out, or applied with an
// error).
func (n *Node) Proposals() (total, failed uint64) {
	return n.proposals.Load(), n.proposalsFailed.Load()
}

// CommitIndex is the highest log index this member knows committed.
func (n *Node) CommitIndex() uint64 { return n.commit.Load() }

// LogStats are counters of a member's log since it started.
type LogStats struct {
	// EntryBytes is the data of the normal entries it applied (commands,
	// without the log's framing).
	EntryBytes uint64
	// Snapshots is how many snapshots it took; SnapshotBytes the size of
	// the last one it took or installed (0: none yet).
	Snapshots, SnapshotBytes uint64
}

// LogStats returns the member's log counters.
func (n *Node) LogStats() LogStats {
	return LogStats{EntryBytes: n.entryBytes.Load(), Snapshots: n.snapshots.Load(), SnapshotBytes: n.lastSnapBytes.Load()}
}

func (n *Node) propose(ctx context.Context, cmd fsm.Command) (fsm.Result, error) {
	if n.isCorrupt() {
		// Its result would come from this member's own, corrupt, state.
		return fsm.Result{}, n.Corrupt()
	}
	cmd.ID = n.nextID()
	if err := cmd.Validate(); err != nil {
		return fsm.Result{}, err
	}
	data, err := fsm.EncodeCommand(cmd)
	if err != nil {
		return fsm.Result{}, err
	}
	ch := n.wait(cmd.ID)
	defer n.unwait(cmd.ID)

	// raft drops proposals silently: one forwarded to a leader that just
	// died, one lost on the network. So the same command (same request id)
	// is proposed again every retry interval; the state machine applies an
	// id once, so a copy that did get through changes nothing. Past
	// proposalTimeout the outcome is unknown and the caller decides.
	pctx, cancel := context.WithTimeout(ctx, proposalTimeout)
	defer cancel()
	retryEvery := n.cfg.electionTimeout()
	propose := func() error {
		select {
		case n.propq <- data:
			return nil
		case <-pctx.Done():
			return pctx.Err()
		case <-n.donec:
			return ErrStopped
		}
	}
	if err := propose(); err != nil && !errors.Is(err, etcdraft.ErrProposalDropped) {
		return fsm.Result{}, n.proposeErr(pctx, ctx, err)
	}
	retry := time.NewTicker(retryEvery)
	defer retry.Stop()
	for {
		select {
		case res := <-ch:
			return res, res.Err
		case <-retry.C:
			if err := propose(); err != nil && !errors.Is(err, etcdraft.ErrProposalDropped) {
				return fsm.Result{}, n.proposeErr(pctx, ctx, err)
			}
		case <-pctx.Done():
			if ctx.Err() != nil {
				return fsm.Result{}, ctx.Err()
			}
			return fsm.Result{}, fmt.Errorf("%w after %v (it may or may not have been applied)", ErrProposalTimeout, proposalTimeout)
		case <-n.donec:
			return fsm.Result{}, ErrStopped
		}
	}
}

// runProposer hands the proposals queued by Propose to raft, as many as are
// queued at once in one entry (an fsm command group): raft, the WALs and the
// transport then handle one entry for them all rather than one each, and
// every state machine applies them in order, each with its own result. A
// group raft drops (no leader, a leadership transfer) is lost, as a single
// proposal would be; each of its Proposes proposes again, the state machine
// applying an id once.
//
// It is clocked by the Ready loop (group commit): once raft has taken a
// group, the next one is cut only after the loop has taken a Ready, which
// holds that group (on a leader, its entry to write; on a follower, the
// message forwarding it). So the proposals that arrive while the loop
// writes and fsyncs wait for it in propq and go out together, one entry
// per Ready, instead of one small entry each as fast as the proposer
// wins the CPU. An idle node loses nothing: the first proposal goes at
// once. BenchmarkWrites (docs/benchmarks.md) measures the difference.
func (n *Node) runProposer() {
	var scratch [][]byte
	clock := time.NewTimer(time.Hour)
	clock.Stop()
	defer clock.Stop()
	for {
		var data []byte
		select {
		case data = <-n.propq:
		case <-n.stopc:
			return
		}
		cmds := append(scratch[:0], data)
		size := len(data)
	drain:
		for len(cmds) < maxProposalBatch && size < maxProposalBytes {
			select {
			case data = <-n.propq:
				cmds = append(cmds, data)
				size += len(data)
			default:
				break drain
			}
		}
		if len(cmds) > 1 {
			data = fsm.AppendGroup(make([]byte, 0, fsm.GroupSize(cmds)), cmds)
		}
		clear(cmds)
		scratch = cmds[:0]
		ents := []*pb.Entry{{Data: data}}
		// Without a leader raft takes no proposal: give up on this batch
		// after a while rather than hold up the next ones.
		ctx, cancel := context.WithTimeout(context.Background(), n.cfg.electionTimeout())
		select { // a Ready taken before this group does not count
		case <-n.readyTaken:
		default:
		}
		err := n.rn.Step(ctx, &pb.Message{Type: pb.MessageType_MsgProp.Enum(), Entries: ents})
		cancel()
		if errors.Is(err, etcdraft.ErrStopped) {
			return
		}
		if err != nil {
			continue // dropped: no Ready will carry it
		}
		// At most a tick: raft may produce no Ready for it (a follower that
		// lost its leader drops forwarded proposals).
		clock.Reset(n.cfg.TickInterval)
		select {
		case <-n.readyTaken:
		case <-clock.C:
		case <-n.stopc:
			return
		}
		clock.Stop()
	}
}

// Bounds of one batch of proposals (raft's MaxSizePerMsg is 1 MiB).
const (
	maxProposalBatch = 1024
	maxProposalBytes = 512 << 10
)

// stateCommitInterval is how long the state machine's write transaction
// stays open across applies (see openStateMachine).
const stateCommitInterval = 100 * time.Millisecond

// proposalTimeout bounds how long Propose waits for its entry to apply.
const proposalTimeout = 10 * time.Second

// proposeErr maps an error of raft's Propose: pctx is Propose's own
// deadline, ctx the caller's.
func (n *Node) proposeErr(pctx, ctx context.Context, err error) error {
	switch {
	case errors.Is(err, etcdraft.ErrProposalDropped):
		return fmt.Errorf("%w: proposal dropped", ErrNoLeader)
	case errors.Is(err, etcdraft.ErrStopped), errors.Is(err, ErrStopped):
		return ErrStopped
	case ctx.Err() != nil:
		return ctx.Err()
	case pctx.Err() != nil:
		return fmt.Errorf("%w after %v: no leader took it", ErrProposalTimeout, proposalTimeout)
	}
	return fmt.Errorf("raft: propose: %w", err)
}

func (n *Node) nextID() uint64 { return n.idBase + n.idSeq.Add(1) }

func (n *Node) wait(id uint64) chan fsm.Result {
	ch := make(chan fsm.Result, 1)
	n.waitMu.Lock()
	n.waiters[id] = ch
	n.waitMu.Unlock()
	return ch
}

func (n *Node) unwait(id uint64) {
	n.waitMu.Lock()
	delete(n.waiters, id)
	n.waitMu.Unlock()
}

func (n *Node) deliver(res fsm.Result) {
	n.waitMu.Lock()
	ch := n.waiters[res.ID]
	n.waitMu.Unlock()
	if ch != nil {
		select {
		case ch <- res:
		default:
		}
	}
}

// WaitApplied returns once the state machine has applied index.
func (n *Node) WaitApplied(ctx context.Context, index uint64) error {
	for {
		n.appliedMu.Lock()
		ch := n.appliedCh
		n.appliedMu.Unlock()
		if n.applied.Load() >= index {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-n.donec:
			return ErrStopped
		}
	}
}

// leaderMoves returns a channel closed when the leader or term next moves.
func (n *Node) leaderMoves() <-chan struct{} {
	n.leaderMu.Lock()
	defer n.leaderMu.Unlock()
	return n.leaderCh
}

func (n *Node) setApplied(index uint64) {
	n.applied.Store(index)
	n.appliedMu.Lock()
	close(n.appliedCh)
	n.appliedCh = make(chan struct{})
	n.appliedMu.Unlock()
}

// LinearizableRead returns once this node's state machine reflects every
// write acknowledged before the call: reads made after it are linearizable.
func (n *Node) LinearizableRead(ctx context.Context) error {
	if n.isCorrupt() {
		return n.Corrupt()
	}
	return n.reads.read(ctx)
}

// ErrTooStale: a BoundedRead could not confirm the state in time, could
// not serve it within the staleness allowed, and then failed to confirm it.
var ErrTooStale = errors.New("raft: the local state may be too stale to serve")

// BoundedRead is LinearizableRead for reads that may be stale. When the
// read barrier completes within wait it returns age 0: reads made after it
// are linearizable. Otherwise it returns how stale this node's state may
// be: it holds every write acknowledged more than age ago, and may miss
// later ones. It does so at once when no leader is known, or when an
// earlier BoundedRead gave up waiting and no barrier has completed since
// (one is started, so that the next read finds out). When age would exceed
// maxAge, or no barrier has completed since the node started, it waits for
// the barrier as LinearizableRead does, and its error then wraps
// ErrTooStale.
func (n *Node) BoundedRead(ctx context.Context, wait, maxAge time.Duration) (age time.Duration, err error) {
	switch {
	case n.Leader() == 0:
	case n.reads.isStuck():
		n.reads.kick()
	default:
		rctx, cancel := context.WithTimeout(ctx, wait)
		err := n.reads.read(rctx)
		cancel()
		switch {
		case err == nil:
			return 0, nil
		case ctx.Err() != nil:
			return 0, ctx.Err()
		case errors.Is(err, ErrStopped):
			return 0, err
		}
		n.reads.gaveUp()
	}
	synced, ok := n.reads.lastSync()
	if ok {
		// At least 1 ms, so that a stale answer never reads as a fresh one.
		age = max(time.Since(synced), time.Millisecond)
		if age <= maxAge {
			return age, nil
		}
	}
	if err := n.reads.read(ctx); err != nil {
		if !ok {
			return 0, fmt.Errorf("%w: not confirmed since the node started: %w", ErrTooStale, err)
		}
		return 0, fmt.Errorf("%w: not confirmed for %v (at most %v allowed): %w", ErrTooStale, age.Round(time.Millisecond), maxAge, err)
	}
	return 0, nil
}

// Stop stops the node. A leader first hands leadership to the most
// up-to-date voter, so the cluster does not wait for an election.
func (n *Node) Stop() error {
	if n.IsLeader() && len(n.voters()) > 1 {
		ctx, cancel := context.WithTimeout(context.Background(), n.cfg.electionTimeout())
		if err := n.TransferLeadership(ctx, 0); err != nil {
			n.log.Warn("leadership transfer before stop failed", "err", err)
		}
		cancel()
	}
	n.stop(nil)
	<-n.donec
	return n.Err()
}

// Halt stops the node at once, as a crash would: no leadership transfer,
// nothing more sent or written. For tests; Stop is the clean way.
func (n *Node) Halt() {
	n.halted.Store(true)
	n.stop(nil)
	<-n.donec
}

func (n *Node) stop(fatal error) {
	n.stopOnce.Do(func() {
		if fatal != nil {
			n.failMu.Lock()
			n.failErr = fatal
			n.failMu.Unlock()
			n.log.Error("raft node stopping on a fatal error", "err", fatal)
		}
		close(n.stopc)
	})
}

// run is the Ready loop.
func (n *Node) run() {
	defer close(n.donec)
	defer n.closeResources()
	defer func() {
		if err := n.collectSnapshot(true); err != nil {
			n.log.Warn("snapshot failed while the node stopped", "err", err)
		}
	}()
	defer func() { _ = n.waitApply() }()
	ticker := time.NewTicker(n.cfg.TickInterval)
	defer ticker.Stop()
	n.campaignIfAlone()
	for {
		select {
		case <-ticker.C:
			n.rn.Tick()
			// Without Readys (a quiet single member) a snapshot written
			// off the loop is taken in here.
			if err := n.collectSnapshot(false); err != nil {
				n.stop(err)
				return
			}
		case rd := <-n.rn.Ready():
			select {
			case n.readyTaken <- struct{}{}:
			default:
			}
			if err := n.handleReady(rd); err != nil {
				n.stop(err)
				return
			}
			n.rn.Advance()
			if n.campaignNow.Load() {
				n.campaignIfAlone()
			}
		case <-n.stopc:
			return
		}
	}
}

func (n *Node) handleReady(rd etcdraft.Ready) error {
	moved := false
	if rd.SoftState != nil {
		n.leading = rd.SoftState.RaftState == etcdraft.StateLeader
		if prev := n.leader.Swap(rd.SoftState.Lead); prev != rd.SoftState.Lead {
			moved = true
			n.log.Info("leader changed", "leader", rd.SoftState.Lead, "previous", prev, "state", rd.SoftState.RaftState.String())
		}
	}
	if !etcdraft.IsEmptyHardState(rd.HardState) {
		moved = n.term.Swap(rd.HardState.GetTerm()) != rd.HardState.GetTerm() || moved
		n.commit.Store(rd.HardState.GetCommit())
	}
	if moved {
		n.leaderMu.Lock()
		close(n.leaderCh)
		n.leaderCh = make(chan struct{})
		n.leaderMu.Unlock()
	}
	// A leader replicates to its followers while it writes its own log
	// (Raft thesis 10.2.1, as etcd's server does): its appends and
	// heartbeats promise nothing about its own disk, and raft counts the
	// leader's own copy of an entry only once Advance reports it durable,
	// after Save. Everything else, above all the responses that promise
	// durability (MsgAppResp, votes), goes out after Save.
	later, committed := rd.Messages, rd.CommittedEntries
	// Normal entries are applied by the applier goroutine, while this loop
	// goes on writing and sending. A snapshot or a configuration change
	// waits for it and is handled here, so that the membership, confState
	// and the applied index move together.
	inLoop := !etcdraft.IsEmptySnap(rd.Snapshot) || hasConfChange(committed)
	if inLoop {
		if err := n.waitApply(); err != nil {
			return err
		}
	}
	if n.leading {
		later = n.sendEarly(rd.Messages)
		// The leader also starts applying, before its write, the committed
		// entries its log already holds durably: their proposers are
		// answered, and propose again, while the disk works, so the next
		// Ready carries their next writes. (A follower saves first: its
		// answer to the leader is what commits entries.)
		if !inLoop {
			k := n.stableCommitted(committed, rd.Entries)
			if err := n.applyAsync(committed[:k]); err != nil {
				return err
			}
			committed = committed[k:]
		}
	}
	if !etcdraft.IsEmptySnap(rd.Snapshot) {
		// The leader's snapshot replaces the log: the one being written
		// here must be done first.
		if err := n.collectSnapshot(true); err != nil {
			return err
		}
	}
	if err := n.logs.Save(rd.HardState, rd.Entries, rd.Snapshot); err != nil {
		return fmt.Errorf("raft: save to log: %w", err)
	}
	if !etcdraft.IsEmptySnap(rd.Snapshot) {
		if err := n.restoreSnapshot(rd.Snapshot); err != nil {
			return err
		}
	}
	if n.isCorrupt() {
		later = n.dropOwnVoteRequests(later)
	}
	n.tr.Send(later)
	if inLoop {
		if err := n.applyEntries(committed); err != nil {
			return err
		}
	} else if err := n.applyAsync(committed); err != nil {
		return err
	}
	for _, rs := range rd.ReadStates {
		n.reads.answer(rs)
	}
	return n.maybeSnapshot()
}

// campaignIfAlone starts an election at once when this node is the only
// voter of its configuration and knows no leader, as after the start of a
// single-node cluster, fresh or restarted: no other member can win or be
// disrupted, so an election timeout (0.5-1 s by default) would only delay
// the first leader. Raft's safety does not depend on when a node
// campaigns; a configuration of several voters keeps its election timer.
// It decides once raft has handed out every entry it knows committed and
// the Ready loop has applied their configuration changes: only then is
// raft's configuration current, and raft refuses to campaign while a
// committed configuration change is unapplied. Called at the start of the
// Ready loop and after each Advance (raft takes the applied index from
// Advance) until it has decided; Ready loop only.
func (n *Node) campaignIfAlone() {
	st := n.rn.Status()
	if st.Applied < st.GetCommit() {
		return // the next Ready hands out the rest
	}
	n.campaignNow.Store(false)
	voters := st.Config.Voters.IDs()
	_, self := voters[n.cfg.ID]
	if st.Lead != 0 || len(voters) != 1 || !self || n.isCorrupt() {
		return
	}
	n.aloneCampaigns.Add(1)
	n.log.Info("the only voter of its configuration: campaigning at once", "term", st.GetTerm())
	if err := n.rn.Campaign(context.Background()); err != nil {
		n.log.Warn("campaign", "err", err) // the election timer still runs
	}
}

func hasConfChange(ents []*pb.Entry) bool {
	for _, e := range ents {
		if e.GetType() != pb.EntryType_EntryNormal {
			return true
		}
	}
	return false
}

// stableCommitted returns how many of the committed entries, from the
// first, are normal entries that the log held durably before this Ready:
// raft (without AsyncStorageWrites) may hand out committed entries that are
// still among the Ready's own, unsaved, Entries.
func (n *Node) stableCommitted(committed, unsaved []*pb.Entry) int {
	if len(committed) == 0 {
		return 0
	}
	stable, err := n.logs.LastIndex()
	if err != nil {
		return 0
	}
	if len(unsaved) > 0 {
		stable = min(stable, unsaved[0].GetIndex()-1)
	}
	k := 0
	for k < len(committed) && committed[k].GetIndex() <= stable && committed[k].GetType() == pb.EntryType_EntryNormal {
		k++
	}
	return k
}

// sendEarly sends a leader's appends and heartbeats and returns the other
// messages, to be sent once the Ready is saved. The returned slice reuses
// msgs' storage.
func (n *Node) sendEarly(msgs []*pb.Message) []*pb.Message {
	early := n.early[:0]
	later := msgs[:0]
	for _, m := range msgs {
		switch m.GetType() {
		case pb.MessageType_MsgApp, pb.MessageType_MsgHeartbeat:
			early = append(early, m)
		default:
			later = append(later, m)
		}
	}
	n.tr.Send(early)
	clear(early)
	n.early = early[:0]
	return later
}

// applyEntries applies committed entries in order: runs of normal entries
// in one state machine transaction, configuration changes one by one.
func (n *Node) applyEntries(ents []*pb.Entry) error {
	batch := make([]fsm.Entry, 0, len(ents))
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		results, err := n.sm.Apply(batch)
		if err != nil {
			return fmt.Errorf("raft: apply to state machine: %w", err)
		}
		last := batch[len(batch)-1].Index
		batch = batch[:0]
		n.setApplied(max(last, n.applied.Load()))
		for _, r := range results {
			n.deliver(r)
		}
		return nil
	}
	for _, e := range ents {
		switch e.GetType() {
		case pb.EntryType_EntryNormal:
			if isCheckEntry(e.GetData()) {
				// The state machine takes it as an empty entry; the
				// check sees the state as of its index.
				batch = append(batch, fsm.Entry{Index: e.GetIndex(), Term: e.GetTerm()})
				if err := flush(); err != nil {
					return err
				}
				n.applyCheckEntry(e)
				continue
			}
			batch = append(batch, fsm.Entry{Index: e.GetIndex(), Term: e.GetTerm(), Data: e.GetData()})
			n.logBytes.Add(uint64(len(e.GetData())))
			n.entryBytes.Add(uint64(len(e.GetData())))
		case pb.EntryType_EntryConfChange, pb.EntryType_EntryConfChangeV2:
			if err := flush(); err != nil {
				return err
			}
			if err := n.applyConfChange(e); err != nil {
				return err
			}
			// The state machine records the index so a restart does not
			// count this entry as unapplied state.
			batch = append(batch, fsm.Entry{Index: e.GetIndex(), Term: e.GetTerm()})
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

func (n *Node) closeResources() {
	if n.rn != nil {
		n.rn.Stop()
	}
	if n.tr != nil {
		if err := n.tr.Close(); err != nil {
			n.log.Warn("close transport", "err", err)
		}
	}
	if n.sm != nil && n.halted.Load() {
		n.sm.Abandon() // as a crash leaves it: unsynced
	} else if n.sm != nil {
		if err := n.sm.Close(); err != nil {
			n.log.Warn("close state machine", "err", err)
		}
	}
	if n.logs != nil {
		if err := n.logs.Close(); err != nil {
			n.log.Warn("close log", "err", err)
		}
	}
}

// ErrRefused is returned by Process for a message that must not reach
// raft: from an id outside the configuration, or meant for another node.
var ErrRefused = errors.New("raft: message refused")

// refusedLogEvery rate-limits the log of refused messages.
const refusedLogEvery = 10 * time.Second

// admit reports whether m may reach raft. The cluster id is no secret, so a
// stranger can open a peer stream: a message counts only when it is meant
// for this node and comes from a voter or learner of the configuration this
// node has applied. Until it has applied one (a founding member in its
// first moments, a joiner before the leader's snapshot), the members it was
// started with stand for it; a node that knows of no member at all yet
// accepts any sender of its cluster, having nothing a stranger could
// disturb. Dropping a message is always safe in Raft; a member added by a
// configuration change is accepted as soon as this node applies the change,
// which precedes any message raft makes that member send here.
func (n *Node) admit(m *pb.Message) bool {
	from := m.GetFrom()
	if m.GetTo() != n.cfg.ID || from == 0 || from == n.cfg.ID {
		return false
	}
	if n.peers.isRemoved(from) {
		return false
	}
	if known, member := n.peers.has(from); known {
		return member
	}
	return len(n.bootPeers) == 0 || n.bootPeers[from]
}

// refuse counts a refused message and logs it, at most every
// refusedLogEvery.
func (n *Node) refuse(m *pb.Message) {
	total := n.refused.Add(1)
	now := time.Now().UnixNano()
	last := n.refusedLog.Load()
	if now-last < int64(refusedLogEvery) || !n.refusedLog.CompareAndSwap(last, now) {
		return
	}
	n.log.Warn("dropped a raft message from outside the cluster configuration",
		"from", m.GetFrom(), "to", m.GetTo(), "type", m.GetType().String(), "term", m.GetTerm(), "refused_total", total)
}

// Refused is how many incoming messages were dropped before raft because
// they came from outside the configuration or were meant for another node.
func (n *Node) Refused() uint64 { return n.refused.Load() }

// Process implements transport.Receiver.
// A message from outside the configuration is dropped (see admit). A
// proposal forwarded by a follower is dropped when this node knows no
// leader (raft would block the whole peer stream on it until one is
// elected) and given a tick at most otherwise; its proposer proposes again.
func (n *Node) Process(ctx context.Context, m *pb.Message) error {
	if !n.admit(m) {
		n.refuse(m)
		return fmt.Errorf("%w: %s from %d to %d: the sender is not a member of this node's configuration or the message is not for this node",
			ErrRefused, m.GetType(), m.GetFrom(), m.GetTo())
	}
	if m.GetType() == pb.MessageType_MsgProp {
		if n.leader.Load() == 0 {
			return nil
		}
		pctx, cancel := context.WithTimeout(ctx, n.cfg.TickInterval)
		defer cancel()
		if err := n.rn.Step(pctx, m); err != nil && pctx.Err() == nil {
			return err
		}
		return nil
	}
	return n.rn.Step(ctx, m)
}

// ReportUnreachable implements transport.Receiver.
func (n *Node) ReportUnreachable(id uint64) { n.rn.ReportUnreachable(id) }

// ReportSnapshot implements transport.Receiver.
func (n *Node) ReportSnapshot(id uint64, status etcdraft.SnapshotStatus) {
	n.rn.ReportSnapshot(id, status)
}

// SelfRemoved implements transport.RemovalListener: a peer refused this
// node as removed, so it was removed while cut off from the log that says
// so. It records that and stops, as if it had applied its removal.
func (n *Node) SelfRemoved() {
	if n.peers.isRemoved(n.cfg.ID) {
		return
	}
	n.peers.remove(n.cfg.ID)
	if err := n.peers.save(); err != nil {
		n.log.Error("record own removal", "err", err)
	}
	n.stop(ErrRemoved)
}

// IsIDRemoved implements transport.Receiver.
func (n *Node) IsIDRemoved(id uint64) bool { return n.peers.isRemoved(id) }

// voters lists the current voters, sorted.
func (n *Node) voters() []uint64 {
	st := n.rn.Status()
	ids := st.Config.Voters.IDs()
	out := make([]uint64, 0, len(ids))
	for id := range ids {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}
