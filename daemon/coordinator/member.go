package coordinator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/kcd-project/kcd/daemon/connectstore"
	"github.com/kcd-project/kcd/store"
)

// Defaults of the session settings.
const (
	DefaultSessionTimeout    = 3 * time.Second
	DefaultHeartbeatInterval = 500 * time.Millisecond
)

// MemberConfig configures a Member.
type MemberConfig struct {
	// Worker describes this worker; ID must be unique in the cluster.
	Worker WorkerInfo
	// Store is the cluster's metadata store, where the assignment is.
	Store store.Store
	// Endpoints returns the REST base URLs to send heartbeats to, best
	// first; any node forwards them to the leader.
	Endpoints func() []string
	// SessionTimeout: with no heartbeat answered for this long, the worker
	// stops everything it runs (default 3 s). It must be the same on every
	// node.
	SessionTimeout time.Duration
	// HeartbeatInterval is how often the member heartbeats (default 500 ms).
	HeartbeatInterval time.Duration
	Client            *http.Client
	Logger            *slog.Logger
}

type ownerEntry struct {
	worker string
	rev    int64 // ModRevision of the owner key
}

// Member is a worker's side of the coordination: it keeps the worker's
// session with the coordinator and follows the stored assignment. It
// implements worker.Assignment.
type Member struct {
	cfg     MemberConfig
	log     *slog.Logger
	changed chan struct{}
	resync  chan struct{} // asks follow to read the whole assignment again

	mu     sync.Mutex
	owners map[Unit]ownerEntry
	// held counts, per connector, the units owners gives this worker.
	held    map[string]int
	revokes map[Unit]string // unit → the worker it is revoked from
	seenRev int64
	synced  bool      // the assignment was read at least once
	lastAck time.Time // when the last answered heartbeat was sent (monotonic)
	fenced  bool      // no heartbeat answered for SessionTimeout
	// confirmed: since the session last lapsed (or the member started),
	// the coordinator answered that it counts this worker in the stored
	// assignment, which is settled at confirmRev. Until then, and until
	// the assignment was read again at confirmRev or later (reload),
	// nothing runs: the units of a lapsed session may have moved while
	// this process did not look. (A read, not the watch: the watch may
	// stop halfway through the batch of a revision.)
	confirmed  bool
	confirmRev int64
	reload     bool
	epoch      Epoch
	leader     uint64
	running    func() []Unit
	// changedConns are the connectors whose units of this worker the
	// assignment changed since the worker last asked (TakeChanged);
	// changedAll: any may have (the session changed, or a full read).
	changedConns map[string]bool
	changedAll   bool
	// rebalances counts the epochs this member saw the assignment move to
	// after its first; lastRebalance is when it saw the last one.
	rebalances    int64
	lastRebalance time.Time

	// hold, set by tests only, is called by the member's loops
	// ("heartbeat", "watchdog", "watch") before each step; it blocks to
	// freeze them, as a SIGSTOP would.
	hold func(loop string)
}

// NewMember returns a member; it does nothing until Run.
func NewMember(cfg MemberConfig) (*Member, error) {
	if cfg.Worker.ID == "" {
		return nil, errors.New("coordinator: member needs a worker id")
	}
	if cfg.Store == nil || cfg.Endpoints == nil {
		return nil, errors.New("coordinator: member needs a store and endpoints")
	}
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = DefaultSessionTimeout
	}
	if cfg.HeartbeatInterval <= 0 {
		cfg.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if cfg.Worker.Weight < 0 {
		return nil, fmt.Errorf("coordinator: worker weight %v must not be negative", cfg.Worker.Weight)
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Member{
		cfg:     cfg,
		log:     cfg.Logger.With("subsys", "member", "worker_id", cfg.Worker.ID),
		changed: make(chan struct{}, 1),
		resync:  make(chan struct{}, 1),
		owners:  map[Unit]ownerEntry{},
		held:    map[string]int{},
		revokes: map[Unit]string{},
		fenced:  true, // nothing runs before the coordinator answered
		running: func() []Unit { return nil },

		changedConns: map[string]bool{},
		changedAll:   true,
	}, nil
}

// SetRunning tells the member how to list what the worker runs now; it is
// reported in heartbeats so the coordinator knows when a revoked unit has
// stopped. Call it before Run.
func (m *Member) SetRunning(f func() []Unit) {
	m.mu.Lock()
	m.running = f
	m.mu.Unlock()
}

// Connector implements worker.Assignment.
func (m *Member) Connector(name string) bool { return m.owns(Unit{Connector: name, Task: -1}) }

// Task implements worker.Assignment.
func (m *Member) Task(name string, id int) bool { return m.owns(Unit{Connector: name, Task: id}) }

func (m *Member) owns(u Unit) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.holdsLocked() {
		return false
	}
	_, revoked := m.revokes[u]
	return !revoked && m.owners[u].worker == m.cfg.Worker.ID
}

// Holds implements worker's holder: some unit of connector name is this
// worker's in the assignment (whether or not the session lets it run).
func (m *Member) Holds(name string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.held[name] > 0
}

// Held implements worker's holder: the connectors with a unit here.
func (m *Member) Held() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]string, 0, len(m.held))
	for c := range m.held {
		out = append(out, c)
	}
	return out
}

// countHeld counts the units of owners that are this worker's.
func (m *Member) countHeld(owners map[Unit]ownerEntry) map[string]int {
	held := map[string]int{}
	for u, e := range owners {
		if e.worker == m.cfg.Worker.ID {
			held[u.Connector]++
		}
	}
	return held
}

// setOwner records u's owner (none when !ok), keeping held. m.mu is held.
func (m *Member) setOwner(u Unit, e ownerEntry, ok bool) {
	self := m.cfg.Worker.ID
	if m.owners[u].worker == self {
		if m.held[u.Connector]--; m.held[u.Connector] <= 0 {
			delete(m.held, u.Connector)
		}
	}
	delete(m.owners, u)
	if ok {
		m.owners[u] = e
		if e.worker == self {
			m.held[u.Connector]++
		}
	}
}

// Releasing implements worker's releaser: task id of connector name is
// revoked from this worker, which still owns it under a held session until
// it has stopped it, so the stopping run may still finish its work
// (commit what it sent); a new run must not start.
func (m *Member) Releasing(name string, id int) bool {
	u := Unit{Connector: name, Task: id}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.holdsLocked() {
		return false
	}
	_, revoked := m.revokes[u]
	return revoked && m.owners[u].worker == m.cfg.Worker.ID
}

// releasing tells whether a unit is being revoked from this worker.
func (m *Member) releasing() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for u, from := range m.revokes {
		if from == m.cfg.Worker.ID && m.owners[u].worker == m.cfg.Worker.ID {
			return true
		}
	}
	return false
}

// holdsLocked tells whether the worker may run what it owns: the session
// is held by the clock, and confirmed by the coordinator since it last
// lapsed, with the assignment followed up to the confirmation. m.mu is
// held.
func (m *Member) holdsLocked() bool {
	// The clock, not only the watchdog: a process frozen (SIGSTOP, a long
	// pause) and resumed must see its session lapsed before anything runs.
	// lastAck keeps its monotonic reading: it is never serialized.
	return !m.fenced && m.confirmed && !m.reload && m.synced &&
		time.Since(m.lastAck) < m.cfg.SessionTimeout
}

// Changed implements worker.Assignment.
func (m *Member) Changed() <-chan struct{} { return m.changed }

// Fence implements worker.Assignment: the owner key at the revision that
// gave this worker the unit; a fence that never holds when it is not ours.
func (m *Member) Fence(name string, task int) connectstore.Fence {
	u := Unit{Connector: name, Task: task}
	m.mu.Lock()
	defer m.mu.Unlock()
	rev := int64(math.MaxInt64)
	if e := m.owners[u]; e.worker == m.cfg.Worker.ID {
		rev = e.rev
	}
	return connectstore.Fence{{Key: OwnerKey(u), ModRevision: rev}}
}

// Alive tells whether the worker's session is held: a heartbeat was
// answered within the session timeout, and since the session last lapsed
// the coordinator confirmed it and the assignment was followed up to that
// confirmation.
func (m *Member) Alive() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.holdsLocked()
}

// Session tells whether the worker's session is held and when the last
// answered heartbeat was sent (zero: none ever was).
func (m *Member) Session() (held bool, lastAck time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return !m.fenced, m.lastAck
}

// Owned lists the units this worker owns now (whether or not it runs them).
func (m *Member) Owned() []Unit {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Unit
	for u, e := range m.owners {
		if e.worker == m.cfg.Worker.ID {
			out = append(out, u)
		}
	}
	return out
}

func (m *Member) signal() {
	select {
	case m.changed <- struct{}{}:
	default:
	}
}

// Run heartbeats and follows the assignment until ctx ends.
func (m *Member) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); m.follow(ctx) }()
	go func() { defer wg.Done(); m.heartbeats(ctx) }()
	go func() { defer wg.Done(); m.watchdog(ctx) }()
	wg.Wait()
}

// watchdog fences the worker once no heartbeat was answered for the
// session timeout, whatever the heartbeat loop is waiting for.
func (m *Member) watchdog(ctx context.Context) {
	t := time.NewTicker(m.cfg.SessionTimeout / 30)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		m.step("watchdog")
		m.mu.Lock()
		expired := !m.fenced && time.Since(m.lastAck) >= m.cfg.SessionTimeout
		if expired {
			m.fenced, m.confirmed, m.changedAll = true, false, true
		}
		m.mu.Unlock()
		if expired {
			m.log.Warn("no heartbeat answered within the session timeout; stopping every connector and task here until the coordinator answers again", "session_timeout", m.cfg.SessionTimeout)
			m.signal()
		}
	}
}

// step lets a test freeze loop; nothing otherwise.
func (m *Member) step(loop string) {
	if m.hold != nil {
		m.hold(loop)
	}
}

// heartbeats sends a heartbeat every interval. A heartbeat still
// unanswered does not hold back the next one: one forwarded to a leader
// that froze hangs until it times out, and the next, sent after an
// election, reaches the new leader while the session still holds. The
// session runs from the send time of the newest heartbeat answered.
func (m *Member) heartbeats(ctx context.Context) {
	type result struct {
		sent  time.Time
		reply HeartbeatReply
		err   error
	}
	// Each heartbeat gives up after SessionTimeout/2, so this many are in
	// flight at most when every one hangs.
	limit := min(max(int(m.cfg.SessionTimeout/2/m.cfg.HeartbeatInterval)+1, 1), 8)
	results := make(chan result, limit)
	inFlight := 0
	t := time.NewTimer(0)
	defer t.Stop()
	next := time.Now()
	soon := func(d time.Duration) {
		if at := time.Now().Add(d); at.Before(next) {
			next = at
			t.Reset(d)
		}
	}
	failures, again := 0, 0
	for {
		select {
		case <-ctx.Done():
			return
		case r := <-results:
			inFlight--
			if r.err != nil {
				if ctx.Err() != nil {
					return
				}
				failures++
				// One or two in a row are usual at a start (the leader's
				// coordinator a moment behind its election) and after a
				// leader change: warn from the third in a row.
				lvl := slog.LevelDebug
				if failures == 3 || failures%20 == 0 {
					lvl = slog.LevelWarn
				}
				m.log.Log(ctx, lvl, "heartbeat failed", "err", r.err, "failures", failures)
				// The coordinator may be a moment away (a leader just
				// elected, as at start): try again sooner than the
				// interval, backing off.
				if inFlight == 0 {
					soon(retrySoon(failures))
				}
				continue
			}
			failures = 0
			if (!m.answered(r.sent, r.reply) || m.releasing()) && inFlight == 0 {
				// Waiting to be counted in the assignment (a rebalance
				// follows a new session at once, in milliseconds), or
				// handing units over (a revoked unit moves once two
				// heartbeats said it stopped): ask again soon.
				again++
				soon(retrySoon(again))
			} else {
				again = 0
			}
		case <-t.C:
			m.step("heartbeat")
			next = time.Now().Add(m.cfg.HeartbeatInterval)
			t.Reset(m.cfg.HeartbeatInterval)
			if inFlight >= limit {
				continue
			}
			inFlight++
			go func() {
				sent := time.Now() // with its monotonic reading: the lease runs from here
				reply, err := m.beat(ctx)
				results <- result{sent, reply, err}
			}()
		}
	}
}

// retrySoon is the wait before the next heartbeat after the n-th (from 1)
// in a row that failed or asked to be sent again soon: 25 ms, 50 ms, then
// 100 ms (soon never makes it later than the interval).
func retrySoon(n int) time.Duration {
	return 25 * time.Millisecond << min(n-1, 2)
}

// answered takes the reply to a heartbeat sent at sent, and tells whether
// the coordinator counts this worker in the assignment.
func (m *Member) answered(sent time.Time, reply HeartbeatReply) bool {
	m.mu.Lock()
	if sent.Before(m.lastAck) {
		// Overtaken by a newer heartbeat's answer: nothing new.
		assigned := m.confirmed
		m.mu.Unlock()
		return assigned
	}
	was := m.holdsLocked()
	// The session lapsed if, by the clock, it ran out before this reply:
	// whatever the member knew of its units may be stale.
	lapsed := m.fenced || time.Since(m.lastAck) >= m.cfg.SessionTimeout
	m.lastAck = sent
	// A reply sent later than the session timeout is no good.
	m.fenced = time.Since(sent) >= m.cfg.SessionTimeout
	if lapsed || m.fenced || !reply.Assigned {
		m.confirmed = false
	}
	resync := false
	if !m.confirmed && !m.fenced && reply.Assigned {
		// Confirmed now, but only what the assignment says at
		// reply.Revision counts: read it again.
		m.confirmed, m.confirmRev, m.reload = true, reply.Revision, true
		resync = true
	}
	now := m.holdsLocked()
	changed := was != now || m.epoch.Term != reply.Epoch.Term
	if reply.Epoch != m.epoch && m.epoch != (Epoch{}) {
		m.rebalances++
		m.lastRebalance = time.Now()
	}
	m.epoch, m.leader = reply.Epoch, reply.Leader
	if changed {
		m.changedAll = true
	}
	m.mu.Unlock()
	if resync {
		select {
		case m.resync <- struct{}{}:
		default:
		}
	}
	if changed {
		if !was && now {
			m.log.Info("session with the coordinator held", "leader", reply.Leader, "epoch", reply.Epoch)
		}
		m.signal()
	}
	return reply.Assigned
}

// beat sends one heartbeat to the first endpoint that answers.
func (m *Member) beat(ctx context.Context) (HeartbeatReply, error) {
	m.mu.Lock()
	hb := Heartbeat{Worker: m.cfg.Worker, SeenRevision: m.seenRev}
	running := m.running
	m.mu.Unlock()
	// Running is read after SeenRevision: a unit revoked at or before
	// SeenRevision and absent here has stopped (or never started).
	for _, u := range running() {
		hb.Running = append(hb.Running, u.String())
	}
	body, err := json.Marshal(hb)
	if err != nil {
		return HeartbeatReply{}, err
	}
	var errs []error
	for _, base := range m.cfg.Endpoints() {
		reply, err := m.post(ctx, base, body)
		if err == nil {
			return reply, nil
		}
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		return HeartbeatReply{}, errors.New("no node to send heartbeats to")
	}
	return HeartbeatReply{}, errors.Join(errs...)
}

func (m *Member) post(ctx context.Context, base string, body []byte) (HeartbeatReply, error) {
	rctx, cancel := context.WithTimeout(ctx, m.cfg.SessionTimeout/2)
	defer cancel()
	u := strings.TrimRight(base, "/") + "/kcd/v1/workers/" + url.PathEscape(m.cfg.Worker.ID) + "/heartbeat"
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return HeartbeatReply{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := m.cfg.Client.Do(req)
	if err != nil {
		return HeartbeatReply{}, err
	}
	defer res.Body.Close()
	out, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return HeartbeatReply{}, err
	}
	if res.StatusCode != http.StatusOK {
		return HeartbeatReply{}, fmt.Errorf("heartbeat to %s: %s: %s", base, res.Status, bytes.TrimSpace(out))
	}
	var reply HeartbeatReply
	if err := json.Unmarshal(out, &reply); err != nil {
		return HeartbeatReply{}, fmt.Errorf("heartbeat to %s: %w", base, err)
	}
	return reply, nil
}

// Leave ends the session at once (a clean shutdown, after the worker
// stopped), so the coordinator moves the units without waiting.
func (m *Member) Leave(ctx context.Context) {
	for _, base := range m.cfg.Endpoints() {
		u := strings.TrimRight(base, "/") + "/kcd/v1/workers/" + url.PathEscape(m.cfg.Worker.ID) + "/session"
		req, err := http.NewRequestWithContext(ctx, http.MethodDelete, u, nil)
		if err != nil {
			continue
		}
		res, err := m.cfg.Client.Do(req)
		if err != nil {
			continue
		}
		res.Body.Close()
		if res.StatusCode < 300 || res.StatusCode == http.StatusNotFound {
			m.log.Info("left the cluster's worker group")
			return
		}
	}
	m.log.Warn("could not end the worker session; the coordinator will expire it")
}

// errResync: the member asked for the whole assignment to be read again.
var errResync = errors.New("read the assignment again")

// follow reads the assignment and then watches it.
func (m *Member) follow(ctx context.Context) {
	var rev int64
	resync := true
	failures := 0
	for ctx.Err() == nil {
		m.step("watch")
		var err error
		if resync {
			if rev, err = m.load(ctx); err == nil {
				resync = false
				if m.behind() {
					// The store answered from before the confirmation
					// (a replica behind): read again.
					resync, err = true, fmt.Errorf("the assignment read at revision %d is older than the coordinator's confirmation", rev)
				}
			}
		}
		var w store.Watcher
		if err == nil {
			w, err = m.cfg.Store.Watch(ctx, AssignPrefix, rev)
		}
		if err == nil {
			rev, err = m.apply(ctx, w, rev)
			w.Close()
		}
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, store.ErrWatcherLagging):
			failures = 0
			continue
		case errors.Is(err, store.ErrCompacted), errors.Is(err, errResync):
			resync, failures = true, 0
			continue
		}
		failures++
		if failures == 1 || failures%20 == 0 {
			m.log.Warn("follow the assignment; retrying", "err", err, "failures", failures)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(min(time.Duration(failures)*100*time.Millisecond, 2*time.Second)):
		}
	}
}

// behind tells whether the assignment still has to be read at the
// coordinator's last confirmation or later.
func (m *Member) behind() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.reload
}

// load reads the whole assignment.
func (m *Member) load(ctx context.Context) (int64, error) {
	kvs, rev, err := m.cfg.Store.Scan(ctx, AssignPrefix, 0)
	if err != nil {
		return 0, fmt.Errorf("read the assignment: %w", err)
	}
	owners := map[Unit]ownerEntry{}
	revokes := map[Unit]string{}
	for _, kv := range kvs {
		m.decode(kv, owners, revokes)
	}
	m.mu.Lock()
	if m.synced && rev < m.seenRev {
		// A read from before what the watch delivered (a lagging
		// replica) would take the member back in time.
		seen := m.seenRev
		m.mu.Unlock()
		return 0, fmt.Errorf("read the assignment: read at revision %d, older than revision %d already seen", rev, seen)
	}
	m.owners, m.revokes, m.seenRev, m.synced = owners, revokes, rev, true
	m.held = m.countHeld(owners)
	m.changedAll = true
	if rev >= m.confirmRev {
		m.reload = false
	}
	m.mu.Unlock()
	m.signal()
	return rev, nil
}

func (m *Member) decode(kv store.KV, owners map[Unit]ownerEntry, revokes map[Unit]string) {
	u, isRevoke, ok := ParseUnitKey(kv.Key)
	if !ok {
		return
	}
	if isRevoke {
		var r Revoke
		if json.Unmarshal(kv.Value, &r) == nil {
			revokes[u] = r.From
		}
		return
	}
	var o Owner
	if json.Unmarshal(kv.Value, &o) == nil {
		owners[u] = ownerEntry{worker: o.Worker, rev: kv.ModRevision}
	}
}

// apply follows one watch until it ends.
func (m *Member) apply(ctx context.Context, w store.Watcher, rev int64) (int64, error) {
	self := m.cfg.Worker.ID
	for {
		m.step("watch")
		select {
		case <-ctx.Done():
			return rev, ctx.Err()
		case <-m.resync:
			return rev, errResync
		case ev, ok := <-w.Events():
			if !ok {
				if err := w.Err(); err != nil {
					return rev, err
				}
				return rev, errors.New("assignment watch ended")
			}
			rev = ev.KV.ModRevision
			u, isRevoke, ok := ParseUnitKey(ev.KV.Key)
			m.mu.Lock()
			mine := false
			if ok {
				if isRevoke {
					mine = m.revokes[u] == self
					delete(m.revokes, u)
					if ev.Type == store.EventPut {
						var r Revoke
						if json.Unmarshal(ev.KV.Value, &r) == nil {
							m.revokes[u] = r.From
							mine = mine || r.From == self
						}
					}
				} else {
					mine = m.owners[u].worker == self
					var o Owner
					put := ev.Type == store.EventPut && json.Unmarshal(ev.KV.Value, &o) == nil
					m.setOwner(u, ownerEntry{worker: o.Worker, rev: ev.KV.ModRevision}, put)
					mine = mine || (put && o.Worker == self)
				}
			}
			m.seenRev = rev
			if mine {
				m.changedConns[u.Connector] = true
			}
			m.mu.Unlock()
			if mine {
				m.signal()
			}
		}
	}
}

// TakeChanged tells which connectors' units of this worker changed (were
// given, taken, revoked) since the last call, or all when any may have
// (the session was held or lost, the assignment read whole): a worker
// that reacts to Changed then looks again at those connectors only, not
// at every connector of the cluster.
func (m *Member) TakeChanged() (connectors []string, all bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	all = m.changedAll
	if !all {
		for c := range m.changedConns {
			connectors = append(connectors, c)
		}
	}
	clear(m.changedConns)
	m.changedAll = false
	return connectors, all
}

// Rebalances tells the assignment epoch the member last heard of, the
// coordinator it heard it from, how many times it saw the epoch move on
// since it started, and when it last did (zero: never).
func (m *Member) Rebalances() (epoch Epoch, leader uint64, completed int64, last time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.epoch, m.leader, m.rebalances, m.lastRebalance
}
