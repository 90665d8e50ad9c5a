// Package activestore is the store every consumer on a Raft node uses: it
// delegates to the cluster's active metadata backend, as recorded in Raft,
// and lets the Raft leader switch that backend while the cluster runs.
//
// The record (RecordKey, under kcd/cluster/, kept in Raft whatever backend
// is active) names the backend and its settings, references unresolved.
// With the raft backend active every node uses its Raft store as before.
// With another backend active only the leader opens it; every other node
// reaches it through the leader's store API (a remote store), so that every
// metadata write passes the leader, which can hold them for a switch.
// While raft is not the active backend, its state machine is frozen: it
// refuses writes outside RaftOnly, so that no node writes metadata to the
// inactive copy.
//
// A watcher opened on one backend ends with store.ErrCompacted when the
// node moves to another (a switch, or leadership moving while a non-raft
// backend is active): its reader reads everything again and watches anew,
// as it does after any compaction. Revisions carry on across a switch: the
// target takes every key with its revisions and the source's revision.
package activestore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kcd-project/kcd/api"
	"github.com/kcd-project/kcd/raft"
	"github.com/kcd-project/kcd/raft/raftstore"
	"github.com/kcd-project/kcd/store"
)

// RecordKey holds the active backend's Record in Raft.
const RecordKey = "kcd/cluster/store"

// Raft is the name of the Raft backend.
const Raft = "raft"

// RaftOnly are the prefixes that stay in Raft whatever backend is active:
// the cluster's own settings and the members' records. A switch never
// copies them.
var RaftOnly = []string{"kcd/cluster/", "kcd/members/"}

func raftOnly(key string) bool {
	for _, p := range RaftOnly {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// Record is the active backend as Raft keeps it.
type Record struct {
	Backend string `json:"backend"`
	// Settings as the operator gave them: references such as ${env:NAME}
	// are resolved by the node that opens the backend, never stored.
	Settings   map[string]string `json:"settings,omitempty"`
	Since      time.Time         `json:"since,omitzero"`
	LastSwitch *api.StoreSwitch  `json:"last_switch,omitempty"`
}

func (r Record) same(o Record) bool {
	return r.Backend == o.Backend && maps.Equal(r.Settings, o.Settings)
}

// Errors of the switch.
var (
	// ErrSwitchRunning: a switch is already running.
	ErrSwitchRunning = errors.New("activestore: a store switch is already running")
	// ErrTidying: a new leader has not yet tidied up what an earlier
	// switch may have left; no switch runs, and one may start in a moment.
	ErrTidying = errors.New("activestore: the new leader is still tidying up what an earlier switch may have left; retry in a moment")
	// ErrTargetHeld: the target of a switch holds metadata, and the
	// switch was not forced.
	ErrTargetHeld = fmt.Errorf("%w: the target backend already holds metadata", store.ErrInvalid)
	// ErrNotLeader: switches run on the Raft leader only.
	ErrNotLeader = errors.New("activestore: not the Raft leader")
	// errNotServed is the store API's answer on a node that reaches the
	// active backend through the leader: the caller tries another node.
	errNotServed = fmt.Errorf("%w: this node reaches the active backend through the Raft leader; ask the leader", store.ErrClosed)
)

// Config wires a Store.
type Config struct {
	Raft      *raft.Node
	RaftStore *raftstore.Store
	// Remote returns the store that reaches the leader's store API; it
	// is called once, the first time a non-raft backend is active on a
	// node that is not the leader, and closed with the Store.
	Remote func() (store.Store, error)
	// Resolve resolves the references in a backend's settings
	// (store.ResolveSettings); Mask masks its secrets for display.
	Resolve func(map[string]string) (map[string]string, error)
	Mask    func(map[string]string) map[string]string
	// HoldMax bounds how long a switch holds metadata writes (default
	// 5 s); a switch that would hold them longer fails.
	HoldMax time.Duration
	// OpenTimeout bounds opening a backend (default 10 s).
	OpenTimeout time.Duration
	// DropCopyAfter is how long after a switch away from raft the stale
	// Raft copy is dropped (default 5 s: dropRaftCopy).
	DropCopyAfter time.Duration
	Logger        *slog.Logger
}

type kind int

const (
	kindRaft   kind = iota + 1 // the Raft store, on every node
	kindDirect                 // the opened backend, on the leader
	kindRemote                 // through the leader's store API
	kindDown                   // the leader could not open the backend
)

// delegate is what the Store passes calls to in one generation.
type delegate struct {
	s    store.Store
	kind kind
	want kind // what kindDown failed to become
	rec  Record
	term uint64
	gen  uint64
	err  error // kindDown: why
}

// Store is a store.Store over the active backend.
type Store struct {
	cfg Config
	log *slog.Logger

	mu       sync.Mutex
	cur      *delegate
	gen      uint64
	watchers map[*watcher]struct{}
	opened   store.Store // the backend this node opened as leader
	openedAs Record
	remote   store.Store
	openFail time.Time // last failed open, for backoff
	mark     leaderMark
	closed   bool

	gate gate
	rmu  sync.Mutex // serializes reconcile

	swmu     sync.Mutex
	running  *api.StoreSwitch // the switch in progress or the last one run here
	busy     bool
	tidying  bool   // tidy runs; no switch starts meanwhile
	tidied   uint64 // the leader term tidy last finished in (under mu)
	dropping *drop  // the drop of a stale Raft copy running, if any

	life   context.Context
	cancel context.CancelFunc
	done   chan struct{}
}

var _ store.Store = (*Store)(nil)

// New returns the active store of a Raft node. Run keeps it current.
func New(cfg Config) *Store {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.HoldMax <= 0 {
		cfg.HoldMax = 5 * time.Second
	}
	if cfg.OpenTimeout <= 0 {
		cfg.OpenTimeout = 10 * time.Second
	}
	if cfg.DropCopyAfter <= 0 {
		cfg.DropCopyAfter = 5 * time.Second
	}
	if cfg.Resolve == nil {
		cfg.Resolve = func(m map[string]string) (map[string]string, error) { return m, nil }
	}
	if cfg.Mask == nil {
		cfg.Mask = func(m map[string]string) map[string]string { return m }
	}
	life, cancel := context.WithCancel(context.Background())
	s := &Store{
		cfg: cfg, log: cfg.Logger.With("subsys", "activestore"),
		watchers: map[*watcher]struct{}{},
		life:     life, cancel: cancel, done: make(chan struct{}),
	}
	s.cur = &delegate{s: cfg.RaftStore, kind: kindRaft, rec: Record{Backend: Raft}}
	return s
}

// reconcileEvery is how often Run looks at the record and at leadership.
const reconcileEvery = 50 * time.Millisecond

// Run keeps the delegate in line with the record and Raft leadership until
// ctx ends or the Store is closed.
func (s *Store) Run(ctx context.Context) {
	defer close(s.done)
	t := time.NewTicker(reconcileEvery)
	defer t.Stop()
	for {
		s.reconcile(ctx)
		select {
		case <-ctx.Done():
			return
		case <-s.life.Done():
			return
		case <-t.C:
		}
	}
}

// Record returns the record as this node's Raft state holds it.
func (s *Store) Record() (Record, error) {
	kv, found, err := s.cfg.Raft.FSM().Get(RecordKey)
	if err != nil {
		return Record{}, fmt.Errorf("read the store record: %w", err)
	}
	if !found {
		return Record{Backend: Raft}, nil
	}
	var rec Record
	if err := json.Unmarshal(kv.Value, &rec); err != nil {
		return Record{}, fmt.Errorf("decode the store record: %w", err)
	}
	return rec, nil
}

// Chosen returns the record and whether it chose the cluster's backend:
// a switch recorded it, or Adopt did. A record that only notes switches,
// none of which took effect (they note themselves as they run), has not:
// the cluster is on raft as bootstrapped.
func (s *Store) Chosen() (Record, bool, error) {
	kv, found, err := s.cfg.Raft.FSM().Get(RecordKey)
	if err != nil || !found {
		return Record{Backend: Raft}, false, err
	}
	var rec Record
	if err := json.Unmarshal(kv.Value, &rec); err != nil {
		return Record{}, false, fmt.Errorf("decode the store record: %w", err)
	}
	return rec, rec.Backend != Raft || !rec.Since.IsZero(), nil
}

// reconcile makes the delegate the one the record and leadership call for.
// Run and reads (read) call it; one at a time.
func (s *Store) reconcile(ctx context.Context) {
	s.rmu.Lock()
	defer s.rmu.Unlock()
	rec, err := s.Record()
	if err != nil {
		s.log.Error("cannot read the active backend", "err", err)
		return
	}
	leader, term := s.cfg.Raft.IsLeader(), s.cfg.Raft.Term()
	if leader && !s.marked(ctx, term) {
		return // not serving as leader before the mark is in
	}
	if leader {
		// The mark may have been applied after rec was read.
		if rec, err = s.Record(); err != nil {
			return
		}
	}
	s.swmu.Lock()
	busy := s.busy
	s.swmu.Unlock()
	if leader && !busy {
		s.keepFreeze(ctx, rec)
		s.startTidy(rec, term)
	}
	want := kindRaft
	if rec.Backend != Raft {
		want = kindRemote
		if leader {
			want = kindDirect
		}
	}
	s.mu.Lock()
	cur := s.cur
	s.mu.Unlock()
	switch {
	case cur.kind == want && cur.rec.same(rec) && (want != kindDirect || cur.term == term):
		return
	case cur.kind == kindDown && cur.want == want && cur.rec.same(rec) && cur.term == term && time.Since(s.openFail) < time.Second:
		return // try again at most once a second
	}
	if busy && want != kindRemote {
		return // the switch sets the leader's delegate itself
	}
	d := &delegate{kind: want, want: want, rec: rec, term: term}
	switch want {
	case kindRaft:
		d.s = s.cfg.RaftStore
	case kindDirect:
		d.s, err = s.openBackend(ctx, rec)
		if err != nil {
			s.openFail = time.Now()
			d.kind, d.err = kindDown, err
			s.log.Error("cannot open the active metadata backend; metadata reads and writes fail until it can be", "backend", rec.Backend, "err", err)
		}
	case kindRemote:
		if d.s, err = s.remoteStore(); err != nil {
			s.openFail = time.Now()
			d.kind, d.err = kindDown, err
			s.log.Error("cannot reach the leader's store", "err", err)
		}
	}
	if d.kind != cur.kind || !cur.rec.same(rec) {
		s.log.Info("metadata store", "backend", rec.Backend, "via", d.via())
	}
	s.swap(d)
}

// LeaderKey holds the term of the leader that last took charge of the
// active backend. A leader writes it before it opens a non-raft backend or
// sets the Raft store's freeze, and a switch records its new backend only
// while the key is still its own: a switch of a deposed leader can never
// land after its successor started serving writes.
const LeaderKey = "kcd/cluster/store-leader"

// marked writes this leader's mark for term, once; it reports whether
// the mark is in.
func (s *Store) marked(ctx context.Context, term uint64) bool {
	s.mu.Lock()
	done := s.mark.term == term
	s.mu.Unlock()
	if done {
		return true
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	rev, err := s.cfg.RaftStore.Put(cctx, LeaderKey, []byte(strconv.FormatUint(term, 10)))
	if err != nil {
		s.log.Warn("cannot take charge of the metadata store as leader; retrying", "term", term, "err", err)
		return false
	}
	if s.cfg.Raft.Term() != term || !s.cfg.Raft.IsLeader() {
		return false
	}
	s.mu.Lock()
	s.mark = leaderMark{term: term, modRev: rev}
	s.mu.Unlock()
	return true
}

type leaderMark struct {
	term   uint64
	modRev int64
}

// keepFreeze freezes the Raft state machine whenever raft is not the
// active backend, and thaws it when it is (after a switch the leader did
// not live to finish). Only the leader does it, outside a switch.
func (s *Store) keepFreeze(ctx context.Context, rec Record) {
	frozen, _ := s.cfg.RaftStore.Frozen()
	if frozen == (rec.Backend != Raft) {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var err error
	if rec.Backend != Raft {
		err = s.cfg.RaftStore.Freeze(cctx, RaftOnly...)
	} else {
		err = s.cfg.RaftStore.Thaw(cctx)
	}
	if err != nil {
		s.log.Warn("cannot set the Raft store's freeze to match the active backend", "backend", rec.Backend, "err", err)
	}
}

// startTidy runs tidy for term in the background, unless it ran already
// or a switch or a tidy runs.
func (s *Store) startTidy(rec Record, term uint64) {
	s.mu.Lock()
	done := s.tidied == term
	s.mu.Unlock()
	if done {
		return
	}
	s.swmu.Lock()
	if s.busy || s.tidying {
		s.swmu.Unlock()
		return
	}
	s.tidying = true
	s.swmu.Unlock()
	go func() {
		defer func() {
			s.swmu.Lock()
			s.tidying = false
			s.swmu.Unlock()
		}()
		if s.tidy(s.life, rec) {
			s.mu.Lock()
			s.tidied = term
			s.mu.Unlock()
		}
	}()
}

// tidy clears up after a switch whose leader did not live to finish it: a
// record that still names a running switch says it was interrupted, and a
// Raft copy of the metadata left while another backend is active (the
// switch's record was written, its clear was not; or a switch to raft
// failed) is dropped, so that switching to raft needs no force. The leader
// runs it once a term, after its mark (a deposed leader can record nothing
// any more) and outside a switch. It reports whether it is done.
func (s *Store) tidy(ctx context.Context, rec Record) bool {
	if sw := rec.LastSwitch; sw != nil && sw.State == api.SwitchRunning {
		s.swmu.Lock()
		mine := s.running != nil && s.running.ID == sw.ID
		s.swmu.Unlock()
		if !mine {
			ended := *sw
			ended.State, ended.EndedAt = api.SwitchFailed, time.Now().UTC()
			ended.Error = fmt.Sprintf("interrupted in phase %s: the leader running it stopped or lost leadership before it recorded backend %s; backend %s stays active (the target may hold a partial copy: switch to it again with --force)", sw.Phase, sw.To, rec.Backend)
			s.log.Warn("store switch interrupted by a leader change", "switch", sw.ID, "phase", sw.Phase, "to", sw.To, "backend", rec.Backend)
			s.noteSwitch(ended)
		}
	}
	if rec.Backend == Raft {
		return true
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	n, err := countKeys(cctx, s.cfg.RaftStore, 1)
	if err != nil {
		s.log.Warn("cannot read the Raft store for a stale copy of the metadata; trying again", "err", err)
		return false
	}
	if n > 0 {
		if err := s.cfg.RaftStore.Clear(cctx, RaftOnly...); err != nil {
			s.log.Warn("cannot drop the stale Raft copy of the metadata; trying again", "err", err)
			return false
		}
		s.log.Info("dropped the stale Raft copy of the metadata", "backend", rec.Backend)
	}
	return true
}

func (d *delegate) via() string {
	switch d.kind {
	case kindRaft:
		return "raft"
	case kindDirect:
		return "direct"
	case kindRemote:
		return "leader"
	}
	return "unavailable"
}

// openBackend opens rec's backend, or returns the one already open as it.
func (s *Store) openBackend(ctx context.Context, rec Record) (store.Store, error) {
	s.mu.Lock()
	if s.opened != nil && s.openedAs.same(rec) {
		o := s.opened
		s.mu.Unlock()
		return o, nil
	}
	s.mu.Unlock()
	return s.open(ctx, rec)
}

// open opens a backend from its unresolved settings.
func (s *Store) open(ctx context.Context, rec Record) (store.Store, error) {
	settings, err := s.cfg.Resolve(rec.Settings)
	if err != nil {
		return nil, fmt.Errorf("settings of backend %s: %w", rec.Backend, err)
	}
	octx, cancel := context.WithTimeout(ctx, s.cfg.OpenTimeout)
	defer cancel()
	return store.Open(octx, rec.Backend, settings)
}

func (s *Store) remoteStore() (store.Store, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.remote != nil {
		return s.remote, nil
	}
	if s.cfg.Remote == nil {
		return nil, errors.New("no way to reach the leader's store")
	}
	r, err := s.cfg.Remote()
	if err != nil {
		return nil, err
	}
	s.remote = r
	return r, nil
}

// swap makes d the delegate and ends the watchers of the previous one. A
// backend this node opened and no longer uses is closed.
func (s *Store) swap(d *delegate) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	prev := s.cur
	s.gen++
	d.gen = s.gen
	s.cur = d
	ended := make([]*watcher, 0, len(s.watchers))
	for w := range s.watchers {
		if w.gen != d.gen {
			ended = append(ended, w)
			delete(s.watchers, w)
		}
	}
	var drop store.Store
	switch {
	case d.kind == kindDirect && s.opened != d.s:
		drop, s.opened, s.openedAs = s.opened, d.s, d.rec
	case d.kind != kindDirect:
		drop, s.opened, s.openedAs = s.opened, nil, Record{}
	}
	s.mu.Unlock()
	// The same backend reached another way (leadership moved) keeps its
	// revisions and history: a watcher watches again from where it was.
	// Another backend has another history: read everything again.
	why := fmt.Errorf("%w: the metadata store moved (backend %s, via %s); read again", store.ErrCompacted, d.rec.Backend, d.via())
	if prev.rec.same(d.rec) && d.rec.Backend != Raft && prev.kind != kindRaft && d.kind != kindRaft {
		why = fmt.Errorf("%w: this node now reaches backend %s %s; watch again from the last revision", store.ErrWatcherLagging, d.rec.Backend, d.via())
	}
	for _, w := range ended {
		w.end(why)
	}
	if drop != nil {
		// Calls already passed to it finish first (a read, a write that
		// lost the leadership race): close it after them.
		time.AfterFunc(closeGrace, func() { drop.Close() })
	}
}

// closeGrace is how long a backend this node stopped using stays open for
// the calls already passed to it.
const closeGrace = 10 * time.Second

func (s *Store) current() (*delegate, error) {
	s.mu.Lock()
	d, closed := s.cur, s.closed
	s.mu.Unlock()
	if closed {
		return nil, store.ErrClosed
	}
	if d.kind == kindDown {
		return nil, fmt.Errorf("metadata backend %s is not available: %w", d.rec.Backend, d.err)
	}
	return d, nil
}

// Backend returns the active backend's name and how this node reaches it.
func (s *Store) Backend() (name, via string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur.rec.Backend, s.cur.via()
}

// Close releases the store and any backend it opened; Run returns.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	ws := s.watchers
	s.watchers = map[*watcher]struct{}{}
	opened, remote := s.opened, s.remote
	s.mu.Unlock()
	s.cancel()
	for w := range ws {
		w.end(store.ErrClosed)
	}
	if opened != nil {
		opened.Close()
	}
	if remote != nil {
		remote.Close()
	}
	return nil
}

// ---- reads ----

// read runs fn on the delegate. A read of the Raft store that ran after
// this node applied a switch's record may have seen the frozen copy, or
// the cleared one (the record precedes the clear in the log): when the
// record no longer names raft, the node moves to the backend it names and
// the read runs again there. A read that ran before the record was applied
// saw the metadata as the switch copied it (writes were held).
func (s *Store) read(ctx context.Context, fn func(*delegate) error) error {
	for attempt := 0; ; attempt++ {
		d, err := s.current()
		if err != nil {
			return err
		}
		err = fn(d)
		if d.kind != kindRaft || !s.moved() {
			return err
		}
		s.reconcile(ctx)
		if d, cerr := s.current(); cerr == nil && d.kind == kindRaft {
			// Not moved yet (the switch moves the leader itself).
			if err := s.backoff(ctx, attempt); err != nil {
				return err
			}
		}
	}
}

// moved reports whether this node's Raft state records a backend other
// than raft.
func (s *Store) moved() bool {
	rec, err := s.Record()
	return err == nil && rec.Backend != Raft
}

func (s *Store) Get(ctx context.Context, key string) (kv store.KV, found bool, err error) {
	err = s.read(ctx, func(d *delegate) (e error) { kv, found, e = d.s.Get(ctx, key); return })
	return
}

func (s *Store) Scan(ctx context.Context, prefix string, limit int) (kvs []store.KV, rev int64, err error) {
	err = s.read(ctx, func(d *delegate) (e error) { kvs, rev, e = d.s.Scan(ctx, prefix, limit); return })
	return
}

func (s *Store) Revision(ctx context.Context) (rev int64, err error) {
	err = s.read(ctx, func(d *delegate) (e error) { rev, e = d.s.Revision(ctx); return })
	return
}

// ---- writes ----

// write runs fn on the delegate, past the gate of a switch. A write the
// Raft store refused because it is frozen changed nothing: it waits for
// the node to move to the new backend (or for the freeze to end, when the
// switch failed) and runs again there.
func (s *Store) write(ctx context.Context, fn func(store.Store) error) error {
	for {
		d, err := s.current()
		if err == nil && d.kind == kindRemote {
			// Forwarded to the leader's store API, whose gate holds it.
			// Not counted here: a write in flight to a leader that died,
			// retried on this node once it leads, would wait at this
			// node's gate while its count kept a switch from draining.
			err = fn(d.s)
		} else {
			if err := s.gate.enter(ctx); err != nil {
				return err
			}
			d, err = s.current()
			if err == nil {
				err = fn(d.s)
			}
			s.gate.exit()
		}
		if !errors.Is(err, raftstore.ErrFrozen) {
			return err
		}
		if err := s.awaitMove(ctx); err != nil {
			return fmt.Errorf("metadata write held by a store switch: %w", err)
		}
	}
}

// A write the frozen Raft store refused looks, in this node's Raft state,
// for the record of the new backend or the end of the freeze (both local
// reads) after frozenPoll, then after one frozenPoll more each time, up to
// frozenPollMax: it moves within milliseconds of the node applying either,
// not at the next reconcile, and a long hold costs few reads.
const (
	frozenPoll    = 2 * time.Millisecond
	frozenPollMax = 20 * time.Millisecond
)

// awaitMove waits until this node moved off the Raft store, or the Raft
// store is no longer frozen.
func (s *Store) awaitMove(ctx context.Context) error {
	t := time.NewTimer(frozenPoll)
	defer t.Stop()
	for attempt := 1; ; attempt++ {
		if s.moved() {
			s.reconcile(ctx)
			if d, err := s.current(); err != nil || d.kind != kindRaft {
				return nil // moved, or failed to: the write says which
			}
			// The leader's own delegate moves with its switch.
		} else if frozen, _ := s.cfg.RaftStore.Frozen(); !frozen {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.life.Done():
			return store.ErrClosed
		case <-t.C:
			t.Reset(min(time.Duration(attempt+1)*frozenPoll, frozenPollMax))
		}
	}
}

// backoff waits a little before a read of the Raft store that a switch
// left runs again.
func (s *Store) backoff(ctx context.Context, attempt int) error {
	delay := min(time.Duration(attempt+1)*10*time.Millisecond, 200*time.Millisecond)
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-s.life.Done():
		return store.ErrClosed
	case <-t.C:
		return nil
	}
}

func (s *Store) Put(ctx context.Context, key string, value []byte) (rev int64, err error) {
	err = s.write(ctx, func(b store.Store) (e error) { rev, e = b.Put(ctx, key, value); return })
	return
}

func (s *Store) Delete(ctx context.Context, key string) (rev int64, deleted bool, err error) {
	err = s.write(ctx, func(b store.Store) (e error) { rev, deleted, e = b.Delete(ctx, key); return })
	return
}

func (s *Store) CompareAndSet(ctx context.Context, key string, expectModRev int64, value []byte) (rev int64, ok bool, err error) {
	err = s.write(ctx, func(b store.Store) (e error) {
		rev, ok, e = b.CompareAndSet(ctx, key, expectModRev, value)
		return
	})
	return
}

func (s *Store) Batch(ctx context.Context, conds []store.Cond, ops []store.Op) (rev int64, ok bool, err error) {
	err = s.write(ctx, func(b store.Store) (e error) { rev, ok, e = b.Batch(ctx, conds, ops); return })
	return
}

// Compact passes compaction to a backend that has it.
func (s *Store) Compact(ctx context.Context, rev int64) error {
	return s.write(ctx, func(b store.Store) error {
		c, ok := b.(interface {
			Compact(context.Context, int64) error
		})
		if !ok {
			return fmt.Errorf("%w: the active backend does not compact on request", store.ErrInvalid)
		}
		return c.Compact(ctx, rev)
	})
}

// ---- the store API's view ----

// ForAPI is the store the node's store API serves: on a node that reaches
// the active backend through the leader it answers that it does not serve
// it (503, nothing applied), so that callers go to the leader, and
// requests never circle between followers.
func (s *Store) ForAPI() store.Store { return apiView{s} }

type apiView struct{ *Store }

func (v apiView) check() error {
	v.mu.Lock()
	k := v.cur.kind
	v.mu.Unlock()
	if k == kindRemote {
		return errNotServed
	}
	return nil
}

func (v apiView) Get(ctx context.Context, key string) (store.KV, bool, error) {
	if err := v.check(); err != nil {
		return store.KV{}, false, err
	}
	return v.Store.Get(ctx, key)
}

func (v apiView) Scan(ctx context.Context, prefix string, limit int) ([]store.KV, int64, error) {
	if err := v.check(); err != nil {
		return nil, 0, err
	}
	return v.Store.Scan(ctx, prefix, limit)
}

func (v apiView) Revision(ctx context.Context) (int64, error) {
	if err := v.check(); err != nil {
		return 0, err
	}
	return v.Store.Revision(ctx)
}

func (v apiView) Put(ctx context.Context, key string, value []byte) (int64, error) {
	if err := v.check(); err != nil {
		return 0, err
	}
	return v.Store.Put(ctx, key, value)
}

func (v apiView) Delete(ctx context.Context, key string) (int64, bool, error) {
	if err := v.check(); err != nil {
		return 0, false, err
	}
	return v.Store.Delete(ctx, key)
}

func (v apiView) CompareAndSet(ctx context.Context, key string, expectModRev int64, value []byte) (int64, bool, error) {
	if err := v.check(); err != nil {
		return 0, false, err
	}
	return v.Store.CompareAndSet(ctx, key, expectModRev, value)
}

func (v apiView) Batch(ctx context.Context, conds []store.Cond, ops []store.Op) (int64, bool, error) {
	if err := v.check(); err != nil {
		return 0, false, err
	}
	return v.Store.Batch(ctx, conds, ops)
}

func (v apiView) Watch(ctx context.Context, prefix string, afterRev int64) (store.Watcher, error) {
	if err := v.check(); err != nil {
		return nil, err
	}
	return v.Store.Watch(ctx, prefix, afterRev)
}

func (v apiView) Compact(ctx context.Context, rev int64) error {
	if err := v.check(); err != nil {
		return err
	}
	return v.Store.Compact(ctx, rev)
}

// Close of the view leaves the store open: the node closes it.
func (v apiView) Close() error { return nil }
