package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/kcd-project/kcd/api"
	"github.com/kcd-project/kcd/daemon/connectstore"
	"github.com/kcd-project/kcd/daemon/coordinator/assignor"
	"github.com/kcd-project/kcd/store"
)

// ErrNotLeader: the coordinator does not run on this node now.
var ErrNotLeader = errors.New("coordinator: this node is not the leader")

// Raft is what the coordinator needs of the Raft node it runs on.
type Raft interface {
	ID() uint64
	IsLeader() bool
	Term() uint64
	// LinearizableRead returns once this node has confirmed it still leads.
	LinearizableRead(ctx context.Context) error
}

// Config configures a Coordinator.
type Config struct {
	Store store.Store
	Raft  Raft
	// SessionTimeout is the members' session timeout (default 3 s).
	SessionTimeout time.Duration
	// FenceMargin is how much longer than SessionTimeout the coordinator
	// waits before it hands a silent worker's units to others: the time
	// the worker has to stop them (default 500 ms).
	FenceMargin time.Duration
	// RebalanceDelay keeps a departed worker's units unassigned for this
	// long, so that a rolling restart does not move them (default 0).
	RebalanceDelay time.Duration
	// LeaderWeightFactor scales the weight of the worker on the leader's
	// node (default 0.5).
	LeaderWeightFactor float64
	// LocalWorker is the ID of the worker in this node's process ("" for
	// none): while this node leads, it is the leader's worker. A worker's
	// NodeID does not say so: a worker-only node may carry a Raft member's
	// id, and taking it for the leader's worker would shrink its share
	// while that member leads and grow it back (moving units off live
	// workers) when another takes over.
	LocalWorker string
	// JournalSize is how many rebalances the journal keeps (default 100).
	JournalSize int
	Logger      *slog.Logger
}

// Coordinator assigns units to workers while its node leads.
type Coordinator struct {
	cfg  Config
	log  *slog.Logger
	cs   *connectstore.Store
	kick chan struct{}
	// recheck wakes Run: Heartbeat saw the term move on.
	recheck chan struct{}

	mu   sync.Mutex
	lead *leadState // nil while not leading

	// hold, set by tests only, is called by a rebalance that changes
	// something, after it read what it plans from and before it writes.
	hold func()
	// isolated: units (and keys) already reported as left out because the
	// store cannot hold their keys (bounded).
	isolated map[string]bool

	stats Stats // under mu
}

// Stats are the coordinator's counters since the process started, over
// every term it led.
type Stats struct {
	Leading bool
	Epoch   Epoch // the last one it wrote
	// Workers with a session, and units assigned, as of the last rebalance.
	Sessions, Units int
	// Rebalances it wrote, the moves in them, and the time they took.
	Rebalances, Moves               int64
	RebalanceTime, MaxRebalanceTime time.Duration
	LastRebalance                   time.Time
	RebalanceFailures               int64
}

// Stats returns the coordinator's counters.
func (c *Coordinator) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stats
	s.Leading = c.lead != nil
	if c.lead != nil {
		s.Sessions = len(c.lead.sessions)
	}
	return s
}

// session is a worker's session with this coordinator.
type session struct {
	info   WorkerInfo
	stored bool // its record is in the store
	// confirmed: it has heartbeated this coordinator. A session carried
	// over from the previous leader is not, until it does: its units stay
	// where they are, and it gets no new ones (it may be dead).
	confirmed bool
	// assigned: a rebalance that counted this session has been written
	// (or needed no write). Until then the worker runs nothing: a
	// rebalance that started before the session did (it expired, and the
	// worker came back) may still hand its units to others.
	assigned bool
	lastSeen time.Time
	// The last two heartbeats' seen revisions and running units: a
	// revoked unit has stopped once absent from both, with both having
	// seen the revoke.
	beats   [2]beat
	recheck int // beats after a change of the running units that trigger a rebalance
}

type beat struct {
	seenRev int64
	running map[string]bool
}

func (s *session) stopped(unit string, revokeRev int64) bool {
	for _, b := range s.beats {
		if b.running == nil || b.seenRev < revokeRev || b.running[unit] {
			return false
		}
	}
	return true
}

// leadState is the coordinator's state while it leads.
type leadState struct {
	term     uint64
	epoch    Epoch
	epochRev int64 // ModRevision of EpochKey as this coordinator wrote it
	sessions map[string]*session
	departed map[string]time.Time // worker → when its session ended
	gone     map[string]string    // worker → WorkerExpired or WorkerLeft, until its record says so
	triggers []string
	dirty    bool
	journal  []string // keys of the journal, oldest first
}

// New returns a coordinator; it does nothing until Run.
func New(cfg Config) (*Coordinator, error) {
	if cfg.Store == nil || cfg.Raft == nil {
		return nil, errors.New("coordinator: needs a store and a raft node")
	}
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = DefaultSessionTimeout
	}
	if cfg.FenceMargin <= 0 {
		cfg.FenceMargin = 500 * time.Millisecond
	}
	if cfg.LeaderWeightFactor <= 0 {
		cfg.LeaderWeightFactor = assignor.DefaultLeaderWeightFactor
	}
	if cfg.JournalSize <= 0 {
		cfg.JournalSize = 100
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Coordinator{
		cfg:  cfg,
		log:  cfg.Logger.With("subsys", "coordinator"),
		cs:   connectstore.New(cfg.Store),
		kick: make(chan struct{}, 1),

		recheck:  make(chan struct{}, 1),
		isolated: map[string]bool{},
	}, nil
}

func (c *Coordinator) poke() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// Run coordinates whenever this node leads, until ctx ends. It follows
// the Raft term, not only leadership: a node that lost leadership and won
// it back between two looks (A→B→A) leads a new term, and the lead loop of
// the old one must not go on (its heartbeat answers and epochs carry the
// old term, and Heartbeat refuses every worker under it).
func (c *Coordinator) Run(ctx context.Context) {
	t := time.NewTicker(leaderPoll)
	defer t.Stop()
	for ctx.Err() == nil {
		// The term before leadership: if it moves in between, leads
		// below sees it at once and the loop starts again.
		term := c.cfg.Raft.Term()
		if !c.cfg.Raft.IsLeader() {
			select {
			case <-ctx.Done():
			case <-t.C:
			case <-c.recheck:
			}
			continue
		}
		lctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			c.leadLoop(lctx, term)
		}()
		for c.leads(term) && ctx.Err() == nil {
			select {
			case <-ctx.Done():
			case <-t.C:
			case <-c.recheck:
			}
		}
		cancel()
		<-done
		c.mu.Lock()
		c.lead = nil
		c.mu.Unlock()
		if ctx.Err() == nil && c.cfg.Raft.IsLeader() {
			c.log.Info("coordinator restarts: the Raft term changed", "term", term, "now", c.cfg.Raft.Term())
		} else {
			c.log.Info("coordinator stopped: no longer the leader")
		}
	}
}

// leaderPoll is how often Run looks at leadership and the term.
const leaderPoll = 20 * time.Millisecond

// leads tells whether this node still leads in term.
func (c *Coordinator) leads(term uint64) bool {
	return c.cfg.Raft.IsLeader() && c.cfg.Raft.Term() == term
}

// wakeRun makes Run look at leadership and the term now.
func (c *Coordinator) wakeRun() {
	select {
	case c.recheck <- struct{}{}:
	default:
	}
}

// leadLoop takes over from the stored assignment and keeps it up to date
// until ctx ends.
func (c *Coordinator) leadLoop(ctx context.Context, term uint64) {
	var st *leadState
	for st == nil {
		var err error
		if st, err = c.takeOver(ctx, term); err != nil {
			if ctx.Err() != nil {
				return
			}
			c.log.Warn("take over as coordinator; retrying", "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	c.mu.Lock()
	c.lead = st
	c.mu.Unlock()
	c.log.Info("coordinator started", "epoch", st.epoch, "workers", len(st.sessions))
	go c.watchInputs(ctx)

	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	lastRun := time.Time{}
	lastLoop := time.Now()
	failures := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.kick:
		case <-tick.C:
		}
		if stalled := time.Since(lastLoop) > c.cfg.SessionTimeout/2; stalled {
			// The process was paused (SIGSTOP, a starved machine): the
			// sessions look silent, and this node may have been deposed
			// meanwhile. Judge them only once it is sure it still leads.
			if !c.confirmLead(ctx, term) {
				lastLoop = time.Now()
				continue
			}
		}
		lastLoop = time.Now()
		c.mu.Lock()
		c.expire(st, time.Now())
		due := st.dirty || time.Since(lastRun) > 2*time.Second
		c.mu.Unlock()
		if !due {
			continue
		}
		if err := c.rebalance(ctx, st); err != nil {
			if ctx.Err() != nil {
				return
			}
			failures++
			if failures == 1 || failures%20 == 0 {
				c.log.Warn("rebalance failed; retrying", "err", err, "failures", failures)
			}
			continue
		}
		failures = 0
		lastRun = time.Now()
	}
}

// confirmLead tells whether this node still leads in term, after a read
// barrier: a deposed leader learns of the newer term in the barrier's
// round of messages.
func (c *Coordinator) confirmLead(ctx context.Context, term uint64) bool {
	rctx, cancel := context.WithTimeout(ctx, c.cfg.SessionTimeout/2)
	defer cancel()
	err := c.cfg.Raft.LinearizableRead(rctx)
	if err != nil || !c.leads(term) {
		c.log.Info("not sure it still leads after a pause; sessions wait", "err", err, "term", term)
		c.wakeRun()
		return false
	}
	return true
}

// takeOver writes a new epoch for term and starts a session for every
// worker the store knows of, as if it had just heartbeated: a worker cut
// off from the old leader has stopped its units by the time that session
// expires.
func (c *Coordinator) takeOver(ctx context.Context, term uint64) (*leadState, error) {
	kv, found, err := c.cfg.Store.Get(ctx, EpochKey)
	if err != nil {
		return nil, fmt.Errorf("read the epoch: %w", err)
	}
	var prev Epoch
	if found {
		if err := json.Unmarshal(kv.Value, &prev); err != nil {
			return nil, fmt.Errorf("read the epoch: %w", err)
		}
	}
	epoch := Epoch{Term: term, Generation: prev.Generation}
	b, _ := json.Marshal(epoch)
	rev, ok, err := c.cfg.Store.CompareAndSet(ctx, EpochKey, kv.ModRevision, b)
	if err != nil {
		return nil, fmt.Errorf("write the epoch: %w", err)
	}
	if !ok {
		return nil, errors.New("the epoch changed while taking over")
	}
	st := &leadState{term: term, epoch: epoch, epochRev: rev, sessions: map[string]*session{}, departed: map[string]time.Time{}, gone: map[string]string{},
		triggers: []string{"leader changed"}, dirty: true}
	kvs, _, err := c.cfg.Store.Scan(ctx, WorkerPrefix, 0)
	if err != nil {
		return nil, fmt.Errorf("read the workers: %w", err)
	}
	now := time.Now()
	for _, kv := range kvs {
		var w WorkerInfo
		if json.Unmarshal(kv.Value, &w) == nil && w.ID != "" {
			// Assigned: the stored assignment counted it; what its units
			// are is settled at epochRev.
			st.sessions[w.ID] = &session{info: w, stored: true, assigned: true, lastSeen: now}
		}
	}
	jkvs, _, err := c.cfg.Store.Scan(ctx, RebalancePrefix, 0)
	if err != nil {
		return nil, fmt.Errorf("read the journal: %w", err)
	}
	for _, kv := range jkvs {
		st.journal = append(st.journal, kv.Key)
	}
	return st, nil
}

// watchInputs pokes the coordinator when connectors, their tasks or the
// workers' settings change.
func (c *Coordinator) watchInputs(ctx context.Context) {
	prefixes := []string{connectstore.Prefix + "config/", connectstore.Prefix + "tasks/", SettingsPrefix}
	var wg sync.WaitGroup
	for _, p := range prefixes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				w, err := c.cfg.Store.Watch(ctx, p, 0)
				if err != nil {
					select {
					case <-ctx.Done():
					case <-time.After(time.Second):
					}
					continue
				}
				for ev := range w.Events() {
					c.mu.Lock()
					if st := c.lead; st != nil {
						st.dirty = true
						st.triggers = appendTrigger(st.triggers, triggerOf(ev))
					}
					c.mu.Unlock()
					c.poke()
				}
				w.Close()
			}
		}()
	}
	wg.Wait()
}

func triggerOf(ev store.Event) string {
	key := ev.KV.Key
	switch {
	case strings.HasPrefix(key, SettingsPrefix):
		return "worker settings changed: " + strings.TrimPrefix(key, SettingsPrefix)
	case strings.HasPrefix(key, connectstore.Prefix+"config/"):
		name := strings.TrimPrefix(key, connectstore.Prefix+"config/")
		if ev.Type == store.EventDelete {
			return "connector deleted: " + name
		}
		if ev.KV.CreateRevision == ev.KV.ModRevision {
			return "connector created: " + name
		}
		return "connector updated: " + name
	default:
		return "tasks changed: " + strings.TrimPrefix(key, connectstore.Prefix+"tasks/")
	}
}

func appendTrigger(ts []string, t string) []string {
	if slices.Contains(ts, t) || len(ts) >= 50 {
		return ts
	}
	return append(ts, t)
}

// expire ends the sessions silent for longer than the session timeout
// plus the fence margin. c.mu is held.
func (c *Coordinator) expire(st *leadState, now time.Time) {
	limit := c.cfg.SessionTimeout + c.cfg.FenceMargin
	for id, s := range st.sessions {
		if now.Sub(s.lastSeen) > limit {
			delete(st.sessions, id)
			st.departed[id] = now
			st.gone[id] = WorkerExpired
			st.dirty = true
			st.triggers = appendTrigger(st.triggers, "worker left (session expired): "+id)
			c.log.Info("worker session expired", "worker", id, "silent_for", now.Sub(s.lastSeen).Round(time.Millisecond))
		}
	}
	for id, at := range st.departed {
		if now.Sub(at) > c.cfg.RebalanceDelay+time.Minute {
			delete(st.departed, id)
		}
	}
}

// Heartbeat records a worker's heartbeat, after confirming that this node
// still leads (so a deposed leader never keeps a worker's session alive).
func (c *Coordinator) Heartbeat(ctx context.Context, hb Heartbeat) (HeartbeatReply, error) {
	if hb.Worker.ID == "" {
		return HeartbeatReply{}, fmt.Errorf("%w: heartbeat without a worker id", store.ErrInvalid)
	}
	if hb.Worker.Weight < 0 || hb.Worker.Capacity < 0 {
		return HeartbeatReply{}, fmt.Errorf("%w: worker weight %v or capacity %d is negative", store.ErrInvalid, hb.Worker.Weight, hb.Worker.Capacity)
	}
	received := time.Now()
	c.mu.Lock()
	leading := c.lead != nil
	c.mu.Unlock()
	if !leading {
		return HeartbeatReply{}, ErrNotLeader
	}
	if err := c.cfg.Raft.LinearizableRead(ctx); err != nil {
		return HeartbeatReply{}, fmt.Errorf("confirm leadership: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.lead
	if st == nil || st.term != c.cfg.Raft.Term() || !c.cfg.Raft.IsLeader() {
		if st != nil {
			c.wakeRun() // a lead loop of an older term: Run restarts it
		}
		return HeartbeatReply{}, ErrNotLeader
	}
	s := st.sessions[hb.Worker.ID]
	if s == nil {
		s = &session{info: hb.Worker}
		s.info.Since = received
		st.sessions[hb.Worker.ID] = s
		delete(st.departed, hb.Worker.ID)
		delete(st.gone, hb.Worker.ID)
		st.dirty = true
		st.triggers = appendTrigger(st.triggers, "worker joined: "+hb.Worker.ID)
		c.log.Info("worker joined", "worker", hb.Worker.ID, "rest_url", hb.Worker.RESTURL, "weight", hb.Worker.Weight)
		c.poke()
	} else if s.info.Weight != hb.Worker.Weight || s.info.Capacity != hb.Worker.Capacity || s.info.RESTURL != hb.Worker.RESTURL || s.info.NodeID != hb.Worker.NodeID {
		since := s.info.Since
		s.info, s.stored = hb.Worker, false
		s.info.Since = since
		st.dirty = true
		st.triggers = appendTrigger(st.triggers, "worker changed: "+hb.Worker.ID)
		c.poke()
	}
	if received.After(s.lastSeen) {
		s.lastSeen = received
	}
	if !s.confirmed {
		s.confirmed = true
		st.dirty = true
		c.poke()
	}
	running := make(map[string]bool, len(hb.Running))
	for _, u := range hb.Running {
		running[u] = true
	}
	if !maps.Equal(running, s.beats[1].running) {
		s.recheck = 2 // a revoked unit may have stopped: look now and after the next beat
	}
	s.beats[0], s.beats[1] = s.beats[1], beat{seenRev: hb.SeenRevision, running: running}
	if s.recheck > 0 {
		s.recheck--
		st.dirty = true
		c.poke()
	}
	// Every owner and revoke key is written by a coordinator under the
	// epoch key, so epochRev bounds them all: once the worker has
	// followed the assignment up to it, it knows what it owns.
	return HeartbeatReply{Epoch: st.epoch, Leader: c.cfg.Raft.ID(), SessionTimeoutMS: c.cfg.SessionTimeout.Milliseconds(),
		Assigned: s.assigned, Revision: st.epochRev}, nil
}

// Leave ends a worker's session at once.
func (c *Coordinator) Leave(_ context.Context, id string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.lead
	if st == nil {
		return ErrNotLeader
	}
	if _, ok := st.sessions[id]; ok {
		delete(st.sessions, id)
		st.departed[id] = time.Now() // its units move after RebalanceDelay (at once by default)
		st.gone[id] = WorkerLeft
		st.dirty = true
		st.triggers = appendTrigger(st.triggers, "worker left: "+id)
		c.log.Info("worker left", "worker", id)
		c.poke()
	}
	return nil
}

// snapshot is what one rebalance works from.
type snapshot struct {
	workers  []assignor.Worker
	infos    map[string]*session
	orig     map[string]*session // the sessions infos copies, to tell a session that started since
	gone     map[string]string   // departed workers whose record is still to say so
	leader   string
	units    []Unit
	owners   map[Unit]store.KV
	owner    map[Unit]Owner
	revokes  map[Unit]store.KV
	revoke   map[Unit]Revoke
	settings map[string]Settings
	held     map[string]bool // departed workers whose units wait for RebalanceDelay
}

func (c *Coordinator) read(ctx context.Context, st *leadState) (*snapshot, error) {
	counts, err := c.cs.TaskCounts(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the connectors: %w", err)
	}
	kvs, _, err := c.cfg.Store.Scan(ctx, AssignPrefix, 0)
	if err != nil {
		return nil, fmt.Errorf("read the assignment: %w", err)
	}
	skvs, _, err := c.cfg.Store.Scan(ctx, SettingsPrefix, 0)
	if err != nil {
		return nil, fmt.Errorf("read the worker settings: %w", err)
	}
	sn := &snapshot{infos: map[string]*session{}, orig: map[string]*session{}, owners: map[Unit]store.KV{}, owner: map[Unit]Owner{},
		revokes: map[Unit]store.KV{}, revoke: map[Unit]Revoke{}, settings: map[string]Settings{}, held: map[string]bool{}}
	for name, n := range counts {
		sn.units = append(sn.units, Unit{Connector: name, Task: -1})
		for i := range n {
			sn.units = append(sn.units, Unit{Connector: name, Task: i})
		}
	}
	for _, kv := range kvs {
		u, isRevoke, ok := ParseUnitKey(kv.Key)
		if !ok {
			continue
		}
		if isRevoke {
			var r Revoke
			if json.Unmarshal(kv.Value, &r) == nil {
				sn.revokes[u], sn.revoke[u] = kv, r
			}
			continue
		}
		var o Owner
		if json.Unmarshal(kv.Value, &o) == nil {
			sn.owners[u], sn.owner[u] = kv, o
		}
	}
	for _, kv := range skvs {
		var s Settings
		if json.Unmarshal(kv.Value, &s) == nil {
			sn.settings[strings.TrimPrefix(kv.Key, SettingsPrefix)] = s
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	for id, s := range st.sessions {
		cp := *s
		sn.infos[id], sn.orig[id] = &cp, s
		if !s.confirmed {
			sn.held[id] = true
			continue
		}
		w := assignor.Worker{ID: id, Weight: s.info.Weight, Capacity: s.info.Capacity}
		if set, ok := sn.settings[id]; ok {
			if set.Weight != nil {
				w.Weight = *set.Weight
			}
			w.Draining = set.Draining
		}
		sn.workers = append(sn.workers, w)
		if id == c.cfg.LocalWorker {
			sn.leader = id
		}
	}
	for id, at := range st.departed {
		if now.Sub(at) < c.cfg.RebalanceDelay {
			sn.held[id] = true
		}
	}
	sn.gone = maps.Clone(st.gone)
	sort.Slice(sn.workers, func(i, j int) bool { return sn.workers[i].ID < sn.workers[j].ID })
	return sn, nil
}

// plan computes the assignment from a snapshot: what the assignor wants,
// with units of held workers left where they are.
func (c *Coordinator) plan(sn *snapshot, draining string) assignor.Result {
	workers := slices.Clone(sn.workers)
	for i := range workers {
		if workers[i].ID == draining {
			workers[i].Draining = true
		}
	}
	in := assignor.Input{Workers: workers, Leader: sn.leader, LeaderWeightFactor: c.cfg.LeaderWeightFactor, Current: map[Unit]string{}}
	for _, u := range sn.units {
		o, owned := sn.owner[u]
		if owned && sn.held[o.Worker] {
			continue // waits for RebalanceDelay
		}
		in.Units = append(in.Units, u)
		if !owned {
			continue
		}
		if r, ok := sn.revoke[u]; ok && r.From == o.Worker {
			if s := sn.infos[o.Worker]; s == nil || s.stopped(u.String(), sn.revokes[u].ModRevision) {
				// Released: it belongs where the revoke sends it, unless
				// that worker went away meanwhile. (Placed afresh, rounding
				// could send it back to the worker that just stopped it.)
				if sn.infos[r.To] != nil {
					in.Current[u] = r.To
				}
				continue
			}
		}
		in.Current[u] = o.Worker
	}
	return assignor.Assign(in)
}

// rebalance brings the stored assignment to what the assignor wants.
func (c *Coordinator) rebalance(ctx context.Context, st *leadState) error {
	start := time.Now()
	c.mu.Lock()
	triggers := st.triggers
	st.triggers, st.dirty = nil, false
	c.mu.Unlock()
	fail := func(err error) error {
		c.mu.Lock()
		c.stats.RebalanceFailures++
		st.dirty = true
		for _, t := range triggers {
			st.triggers = appendTrigger(st.triggers, t)
		}
		c.mu.Unlock()
		return err
	}

	sn, err := c.read(ctx, st)
	if err != nil {
		return fail(err)
	}
	res := c.plan(sn, "")
	next := Epoch{Term: st.term, Generation: st.epoch.Generation + 1}

	settling := false
	for _, s := range sn.infos {
		settling = settling || !s.confirmed
	}
	var ops []store.Op
	moves := []Move{}
	live := func(w string) bool { return sn.infos[w] != nil }
	for _, u := range sn.units {
		to, planned := res.Assignment[u]
		if !planned {
			continue // held
		}
		o, owned := sn.owner[u]
		r, revoking := sn.revoke[u]
		switch {
		case owned && o.Worker == to:
			if revoking {
				ops = append(ops, store.Delete(revokeKey(u))) // stays after all
			}
		case to == "":
			// No eligible worker: leave it where it is; an owner that is
			// gone runs nothing anyway.
		case !owned || !live(o.Worker) || (revoking && r.From == o.Worker && sn.infos[o.Worker].stopped(u.String(), sn.revokes[u].ModRevision)):
			b, _ := json.Marshal(Owner{Worker: to, Epoch: next})
			ops = append(ops, store.Put(OwnerKey(u), b))
			if revoking {
				ops = append(ops, store.Delete(revokeKey(u)))
			}
			from := ""
			if owned {
				from = o.Worker
			}
			moves = append(moves, Move{Unit: u.String(), From: from, To: to})
		case revoking && r.To == to:
			// Waiting for the owner to stop it.
		case settling:
			// Some sessions carried over from the previous leader have not
			// heartbeated yet: place what has no owner, but move nothing
			// that runs until the picture is whole, or the moves made now
			// would be undone when the rest report.
		default:
			b, _ := json.Marshal(Revoke{From: o.Worker, To: to, Epoch: next})
			ops = append(ops, store.Put(revokeKey(u), b))
			moves = append(moves, Move{Unit: u.String(), From: o.Worker, To: to, Revoke: true})
		}
	}
	// Units that no longer exist.
	want := make(map[Unit]bool, len(sn.units))
	for _, u := range sn.units {
		want[u] = true
	}
	for u := range sn.owners {
		if !want[u] {
			ops = append(ops, store.Delete(OwnerKey(u)))
		}
	}
	for u := range sn.revokes {
		if !want[u] {
			ops = append(ops, store.Delete(revokeKey(u)))
		}
	}
	// Worker records follow the sessions.
	stored := map[string]bool{}
	for id, s := range sn.infos {
		if !s.stored {
			b, _ := json.Marshal(s.info)
			ops = append(ops, store.Put(WorkerPrefix+id, b))
			stored[id] = true
		}
	}
	wkvs, _, err := c.cfg.Store.Scan(ctx, WorkerPrefix, 0)
	if err != nil {
		return fail(fmt.Errorf("read the workers: %w", err))
	}
	for _, kv := range wkvs {
		if id := strings.TrimPrefix(kv.Key, WorkerPrefix); sn.infos[id] == nil {
			ops = append(ops, store.Delete(kv.Key))
		}
	}
	gops, err := c.goneOps(ctx, sn, wkvs, start)
	if err != nil {
		return fail(err)
	}
	ops = append(ops, gops...)

	ops, moves, triggers = c.isolate(ops, moves, triggers)

	if len(ops) == 0 && len(triggers) == 0 {
		c.mu.Lock()
		c.admit(st, sn)
		c.mu.Unlock()
		return nil
	}
	sort.Slice(moves, func(i, j int) bool { return moves[i].Unit < moves[j].Unit })
	entry := Rebalance{Epoch: next, Leader: c.cfg.Raft.ID(), At: start, Triggers: triggers, Moves: moves,
		Units: len(sn.units), Workers: len(sn.workers)}
	if len(moves) > 0 || len(triggers) > 0 {
		entry.DurationMS = float64(time.Since(start).Microseconds()) / 1000
		b, _ := json.Marshal(entry)
		ops = append(ops, store.Put(rebalanceKey(next.Generation), b))
	}
	eb, _ := json.Marshal(next)
	ops = append(ops, store.Put(EpochKey, eb))
	journalKey := rebalanceKey(next.Generation)
	c.mu.Lock()
	journal := st.journal
	c.mu.Unlock()
	var trimmed []string
	if len(moves) > 0 || len(triggers) > 0 {
		journal = append(slices.Clone(journal), journalKey)
		for len(journal) > c.cfg.JournalSize {
			trimmed = append(trimmed, journal[0])
			ops = append(ops, store.Delete(journal[0]))
			journal = journal[1:]
		}
	}

	if c.hold != nil {
		c.hold()
	}
	// Everything under the epoch this coordinator wrote: a coordinator
	// that was replaced cannot change the assignment any more.
	rev := st.epochRev
	for len(ops) > 0 {
		n := min(len(ops), store.MaxBatchOps-1)
		chunk := ops[:n]
		if n < len(ops) {
			// Every chunk moves the epoch key, which the next one is
			// conditioned on.
			chunk = append(slices.Clone(chunk), store.Put(EpochKey, eb))
		}
		newRev, ok, err := c.cfg.Store.Batch(ctx, []store.Cond{{Key: EpochKey, ModRevision: rev}}, chunk)
		if err != nil {
			return fail(fmt.Errorf("write the assignment: %w", err))
		}
		if !ok {
			return fail(errors.New("write the assignment: the epoch moved on: another coordinator took over"))
		}
		rev = newRev
		ops = ops[n:]
	}
	c.mu.Lock()
	st.epoch, st.epochRev, st.journal = next, rev, journal
	c.stats.Epoch, c.stats.Units = next, len(sn.units)
	if len(moves) > 0 || len(triggers) > 0 {
		took := time.Since(start)
		c.stats.Rebalances++
		c.stats.Moves += int64(len(moves))
		c.stats.RebalanceTime += took
		c.stats.MaxRebalanceTime = max(c.stats.MaxRebalanceTime, took)
		c.stats.LastRebalance = time.Now()
	}
	c.admit(st, sn)
	for id := range stored {
		if s := st.sessions[id]; s != nil && s.info == sn.infos[id].info {
			s.stored = true
		}
	}
	for id, state := range sn.gone {
		if st.gone[id] == state {
			delete(st.gone, id) // its record says so now
		}
	}
	c.mu.Unlock()
	if len(moves) > 0 {
		c.log.Info("rebalanced", "epoch", next, "moves", len(moves), "units", len(sn.units), "workers", len(sn.workers),
			"triggers", triggers, "took", time.Since(start).Round(time.Microsecond))
		if len(moves) <= 20 || c.log.Enabled(ctx, slog.LevelDebug) {
			for _, m := range moves {
				c.log.Info("move", "epoch", next, "unit", m.Unit, "from", m.From, "to", m.To, "revoke", m.Revoke)
			}
		}
	}
	return nil
}

// admit marks the sessions a rebalance counted as assigned, once what it
// planned is in the store: a session that started after its snapshot
// waits for the next one. c.mu is held.
func (c *Coordinator) admit(st *leadState, sn *snapshot) {
	for id, s := range sn.orig {
		if st.sessions[id] == s {
			s.assigned = true
		}
	}
}

// isolate leaves out the ops the store would refuse (a key or value over
// its limits, as a connector name too long for its keys makes), with the
// moves of their units, so that one bad unit never fails the rebalance of
// all the others. Such a unit stays unassigned; the first time it is left
// out, that is logged and journaled as a trigger.
func (c *Coordinator) isolate(ops []store.Op, moves []Move, triggers []string) ([]store.Op, []Move, []string) {
	var bad map[string]bool
	kept := ops[:0]
	for _, op := range ops {
		why := ""
		switch {
		case len(op.Key) > store.MaxKeySize:
			why = fmt.Sprintf("key of %d bytes exceeds %d", len(op.Key), store.MaxKeySize)
		case len(op.Value) > store.MaxValueSize:
			why = fmt.Sprintf("value of %d bytes exceeds %d", len(op.Value), store.MaxValueSize)
		}
		if why == "" {
			kept = append(kept, op)
			continue
		}
		what := "key " + op.Key
		if u, _, ok := ParseUnitKey(op.Key); ok {
			what = "unit " + u.String()
			if bad == nil {
				bad = map[string]bool{}
			}
			bad[u.String()] = true
		}
		c.mu.Lock()
		seen := c.isolated[what]
		if !seen && len(c.isolated) < 1000 {
			c.isolated[what] = true
		}
		c.mu.Unlock()
		if !seen {
			c.log.Error("left out of the assignment: the store cannot hold its write", "what", what, "err", why)
			triggers = appendTrigger(triggers, "left unassigned, the store cannot hold its write ("+why+"): "+what)
		}
	}
	if bad != nil {
		moves = slices.DeleteFunc(moves, func(m Move) bool { return bad[m.Unit] })
	}
	return kept, moves, triggers
}

// Plan returns the moves the assignor would make now, or with worker
// drain drained, without making them.
func (c *Coordinator) Plan(ctx context.Context, drain string) (PlanResult, error) {
	c.mu.Lock()
	st := c.lead
	c.mu.Unlock()
	if st == nil {
		return PlanResult{}, ErrNotLeader
	}
	sn, err := c.read(ctx, st)
	if err != nil {
		return PlanResult{}, err
	}
	if drain != "" && sn.infos[drain] == nil {
		return PlanResult{}, fmt.Errorf("%w: no worker %q has a session", ErrUnknownWorker, drain)
	}
	res := c.plan(sn, drain)
	c.mu.Lock() // rebalance moves the epoch under c.mu
	epoch := st.epoch
	c.mu.Unlock()
	out := PlanResult{Epoch: epoch, Drain: drain, Moves: []Move{}}
	// A move To "" means no worker can take the unit: rebalance leaves it
	// where it is, and the plan shows it so that an operator sees why.
	for _, m := range res.Moves {
		out.Moves = append(out.Moves, Move{Unit: m.Unit.String(), From: m.From, To: m.To})
	}
	for _, s := range res.Shares {
		out.Shares = append(out.Shares, PlanShare{Worker: s.Worker, Weight: s.Weight, Quota: s.Quota, Before: s.Before, After: s.After})
	}
	return out, nil
}

// ErrUnknownWorker: no worker of that id has a session.
var ErrUnknownWorker = errors.New("coordinator: unknown worker")

// PlanResult is what Plan returns, and PlanShare one worker's share in
// it (see package api).
type (
	PlanResult = api.PlanResult
	PlanShare  = api.PlanShare
)
