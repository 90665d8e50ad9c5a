package activestore

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kcd-project/kcd/api"
	"github.com/kcd-project/kcd/store"
)

// pauseAfterRecordEnv names a test hook: the path of a file that holds a
// duration. While the file exists, a switch waits that long after its
// record is written and before the leader moves to the new backend (writes
// held), so that a system test can kill the leader exactly there. Unset,
// as in production, it changes nothing.
const pauseAfterRecordEnv = "KCD_TEST_SWITCH_PAUSE_AFTER_RECORD"

// pauseAfterRecord is the pause the test hook asks for (0: none).
func pauseAfterRecord() time.Duration {
	path := os.Getenv(pauseAfterRecordEnv)
	if path == "" {
		return 0
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	d, _ := time.ParseDuration(strings.TrimSpace(string(b)))
	return d
}

// maxSwitchEvents bounds the changes a switch collects while it copies; a
// source busier than that fails the switch (try again at a calmer time).
const maxSwitchEvents = 1 << 20

// Switch makes req's backend the active one, copying everything from the
// active backend. It checks the target at once (reachable, a valid switch
// target, empty or req.Force) and answers; the copy runs on, and Status
// follows it. A dry run checks and counts, changing nothing (opening a
// SQL target creates its missing tables, empty). It runs on
// the leader only.
func (s *Store) Switch(ctx context.Context, req api.StoreSwitchRequest) (_ api.StoreSwitch, err error) {
	defer func() {
		if err != nil {
			err = store.MaskError(err, s.resolvedSecrets(Record{Settings: req.Settings}))
		}
	}()
	s.mu.Lock()
	mark := s.mark
	s.mu.Unlock()
	if !s.cfg.Raft.IsLeader() || mark.term != s.cfg.Raft.Term() {
		return api.StoreSwitch{}, ErrNotLeader
	}
	from, err := s.Record()
	if err != nil {
		return api.StoreSwitch{}, err
	}
	to := Record{Backend: strings.TrimSpace(req.Backend), Settings: req.Settings}
	if err := s.checkRequest(from, to); err != nil {
		return api.StoreSwitch{}, err
	}
	if err := s.stopDrop(ctx); err != nil {
		return api.StoreSwitch{}, err
	}
	s.swmu.Lock()
	if s.busy || s.dropping != nil {
		s.swmu.Unlock()
		return api.StoreSwitch{}, ErrSwitchRunning
	}
	if s.tidying {
		s.swmu.Unlock()
		return api.StoreSwitch{}, ErrTidying
	}
	s.busy = true
	s.swmu.Unlock()
	started := false
	defer func() {
		if !started {
			s.swmu.Lock()
			s.busy = false
			s.swmu.Unlock()
		}
	}()

	sw := &api.StoreSwitch{ID: newID(), From: from.Backend, To: to.Backend, State: api.SwitchRunning, Phase: api.PhaseCheck, StartedAt: time.Now().UTC()}
	src, err := s.current()
	if err != nil {
		return api.StoreSwitch{}, err
	}
	if src.kind != kindRaft && src.kind != kindDirect {
		return api.StoreSwitch{}, fmt.Errorf("the active backend is not served by this node (%s); retry", src.via())
	}
	tgt, err := s.openTarget(ctx, to)
	if err != nil {
		return api.StoreSwitch{}, err
	}
	closeTgt := func() {
		if to.Backend != Raft {
			tgt.Close()
		}
	}
	// The Raft store holds no one else's metadata: what it may hold while
	// another backend is active (its state machine frozen) is this
	// cluster's own stale copy, left by a switch away from raft whose drop
	// has not run (dropRaftCopy) or by a switch to raft that failed. The
	// switch replaces it without --force.
	held := 0
	if to.Backend != Raft {
		if held, err = countKeys(ctx, tgt, 1); err != nil {
			closeTgt()
			return api.StoreSwitch{}, fmt.Errorf("read the target backend %s: %w", to.Backend, err)
		}
	}
	if held > 0 && !req.Force && !req.DryRun {
		closeTgt()
		return api.StoreSwitch{}, fmt.Errorf("%w (backend %s); pass --force to replace it", ErrTargetHeld, to.Backend)
	}
	if req.DryRun {
		defer closeTgt()
		n, err := countKeys(ctx, src.s, 0)
		if err != nil {
			return api.StoreSwitch{}, fmt.Errorf("read the active backend %s: %w", from.Backend, err)
		}
		sw.State, sw.Total, sw.EndedAt = api.SwitchDryRun, int64(n), time.Now().UTC()
		switch {
		case held > 0 && req.Force:
			sw.Warnings = append(sw.Warnings, fmt.Sprintf("the target backend %s holds metadata: it will be removed (--force)", to.Backend))
		case held > 0:
			sw.Warnings = append(sw.Warnings, fmt.Sprintf("the target backend %s holds metadata: the switch is refused unless --force removes it", to.Backend))
		}
		return *sw, nil
	}
	s.swmu.Lock()
	s.running = sw
	out := *sw
	s.swmu.Unlock()
	started = true
	go s.run(sw, src, tgt, from, to)
	return out, nil
}

func (s *Store) checkRequest(from, to Record) error {
	switch {
	case to.Backend == "":
		return fmt.Errorf("%w: the backend to switch to is required", store.ErrInvalid)
	case to.Backend == Raft && len(to.Settings) > 0:
		return fmt.Errorf("%w: the raft backend takes no settings", store.ErrInvalid)
	case to.Backend != Raft && !slices.Contains(store.Backends(), to.Backend):
		return fmt.Errorf("%w: unknown backend %q (known: %s)", store.ErrInvalid, to.Backend, strings.Join(append([]string{Raft}, store.Backends()...), ", "))
	case from.same(to):
		return fmt.Errorf("%w: %s with these settings is already the active backend", store.ErrInvalid, to.Backend)
	}
	return nil
}

// openTarget opens the target as a Loader.
func (s *Store) openTarget(ctx context.Context, to Record) (store.Loader, error) {
	if to.Backend == Raft {
		return s.cfg.RaftStore, nil
	}
	b, err := s.open(ctx, to)
	if err != nil {
		return nil, fmt.Errorf("open the target backend: %w", err)
	}
	l, ok := b.(store.Loader)
	if !ok {
		b.Close()
		return nil, fmt.Errorf("%w: backend %s cannot be switched to: it does not implement store.Loader", store.ErrInvalid, to.Backend)
	}
	return l, nil
}

// Adopt makes rec's backend the active one as it is, copying nothing: a
// new cluster bootstrapped on a database that holds a cluster's metadata.
// It fails when the cluster's backend is chosen already (Chosen).
func (s *Store) Adopt(ctx context.Context, rec Record) error {
	s.mu.Lock()
	mark := s.mark
	s.mu.Unlock()
	if !s.cfg.Raft.IsLeader() || mark.term != s.cfg.Raft.Term() {
		return ErrNotLeader
	}
	kv, _, err := s.cfg.Raft.FSM().Get(RecordKey)
	if err != nil {
		return fmt.Errorf("read the store record: %w", err)
	}
	if _, chosen, err := s.Chosen(); err != nil {
		return err
	} else if chosen {
		return errors.New("the cluster's backend is chosen already")
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	// On the record as read (absent: revision 0), so that nothing chose
	// a backend meanwhile.
	_, ok, err := s.cfg.RaftStore.Batch(ctx, []store.Cond{{Key: LeaderKey, ModRevision: mark.modRev}, {Key: RecordKey, ModRevision: kv.ModRevision}}, []store.Op{store.Put(RecordKey, b)})
	if err != nil {
		return fmt.Errorf("record the backend: %w", err)
	}
	if !ok {
		return errors.New("the store record changed, or leadership moved")
	}
	return nil
}

// Status returns the active backend, its health, and the running or last
// switch.
func (s *Store) Status(ctx context.Context) api.StoreStatus {
	// The running switch before the record: a switch seen done has its
	// record applied here already, so the record read next names its
	// backend (the other order could show the old backend with the
	// switch to the new one done).
	s.swmu.Lock()
	var running *api.StoreSwitch
	if s.running != nil {
		sw := *s.running
		running = &sw
	}
	busy := s.busy
	s.swmu.Unlock()
	rec, err := s.Record()
	st := api.StoreStatus{Backends: append([]string{Raft}, store.Backends()...)}
	if err != nil {
		st.Error = err.Error()
		return st
	}
	st.Backend, st.Since, st.LastSwitch = rec.Backend, rec.Since, rec.LastSwitch
	if len(rec.Settings) > 0 {
		st.Settings = s.cfg.Mask(rec.Settings)
	}
	start := time.Now()
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	st.Revision, err = s.Revision(rctx)
	cancel()
	st.LatencyMillis = millis(time.Since(start))
	if err != nil {
		st.Error = err.Error()
	} else {
		st.Healthy = true
	}
	// This node's own account of a switch it ran is the latest (the
	// record's may be from before its end).
	if running != nil && (st.LastSwitch == nil || busy || running.ID == st.LastSwitch.ID || running.StartedAt.After(st.LastSwitch.StartedAt)) {
		st.LastSwitch = running
	}
	return st
}

// progress updates the running switch under swmu.
func (s *Store) progress(fn func(*api.StoreSwitch)) {
	s.swmu.Lock()
	fn(s.running)
	s.swmu.Unlock()
}

func (s *Store) run(sw *api.StoreSwitch, src *delegate, tgt store.Loader, from, to Record) {
	log := s.log.With("switch", sw.ID, "from", from.Backend, "to", to.Backend)
	log.Info("store switch starts")
	// The record names the running switch, so that a leader that takes
	// over from one that died mid-switch can say so (tidy).
	s.swmu.Lock()
	started := *s.running
	s.swmu.Unlock()
	s.noteSwitch(started)
	err := s.copyAndSwitch(log, src, tgt, from, to)
	if err != nil {
		// A backend's error may quote its settings: mask both sides'.
		err = store.MaskError(err, s.resolvedSecrets(from, to))
	}
	now := time.Now().UTC()
	s.progress(func(sw *api.StoreSwitch) {
		sw.EndedAt = now
		if err != nil {
			sw.State, sw.Error = api.SwitchFailed, err.Error()
		} else {
			sw.State, sw.Phase = api.SwitchDone, api.PhaseDone
		}
	})
	s.swmu.Lock()
	final := *s.running
	s.swmu.Unlock()
	// The record keeps the final figures (the hold as it ended, after the
	// record and the move) or the failure, for every node's status.
	s.noteSwitch(final)
	if err != nil {
		log.Error("store switch failed; the active backend stays", "backend", from.Backend, "err", err)
		if to.Backend != Raft {
			tgt.Close()
		}
		s.mu.Lock()
		s.tidied = 0 // a failed switch to raft leaves a partial copy there
		s.mu.Unlock()
	} else {
		log.Info("store switch done", "keys", final.Copied, "revision", final.Revision, "hold_ms", final.HoldMillis)
		if from.Backend == Raft {
			go s.dropRaftCopy(log, final.ID)
		}
	}
	s.swmu.Lock()
	s.busy = false
	s.swmu.Unlock()
}

// drop is a running drop of a stale Raft copy; a switch stops it.
type drop struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// dropRaftCopy drops the stale Raft copy of the metadata
// Config.DropCopyAfter after switch id moved it elsewhere (the state machine
// is frozen, Clear still applies): its Clear (a scan of every key and a few
// large deletions that every member applies) waits until the members have
// moved to the new backend and their readers have read it, so that it does
// not compete with the first writes there. It does not run if a switch
// runs, the record no longer comes from switch id, or this
// node no longer leads: a copy left stays, unused, and a switch to raft
// replaces it. A switch that starts meanwhile stops the drop (stopDrop)
// and goes ahead; the part of the copy not dropped yet stays.
func (s *Store) dropRaftCopy(log interface{ Warn(string, ...any) }, id string) {
	t := time.NewTimer(s.cfg.DropCopyAfter)
	defer t.Stop()
	select {
	case <-s.life.Done():
		return
	case <-t.C:
	}
	ctx, cancel := context.WithTimeout(s.life, 30*time.Second)
	defer cancel()
	d := &drop{cancel: cancel, done: make(chan struct{})}
	s.swmu.Lock()
	if s.busy || s.dropping != nil {
		s.swmu.Unlock()
		return
	}
	s.dropping = d
	s.swmu.Unlock()
	defer func() {
		s.swmu.Lock()
		s.dropping = nil
		s.swmu.Unlock()
		close(d.done)
	}()
	s.mu.Lock()
	mark := s.mark
	s.mu.Unlock()
	rec, err := s.Record()
	if err != nil || rec.Backend == Raft || rec.LastSwitch == nil || rec.LastSwitch.ID != id ||
		!s.cfg.Raft.IsLeader() || mark.term != s.cfg.Raft.Term() {
		return
	}
	if err := s.cfg.RaftStore.Clear(ctx, RaftOnly...); err != nil && ctx.Err() == nil {
		log.Warn("cannot drop the Raft copy of the metadata; it stays, unused", "err", err)
		s.mu.Lock()
		s.tidied = 0 // the leader's tidy tries again
		s.mu.Unlock()
	}
}

// stopDrop stops a running drop of a stale Raft copy and waits until it
// returned (it ends after the chunk it is applying).
func (s *Store) stopDrop(ctx context.Context) error {
	s.swmu.Lock()
	d := s.dropping
	s.swmu.Unlock()
	if d == nil {
		return nil
	}
	d.cancel()
	select {
	case <-d.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// resolvedSecrets are the resolved settings of from and to, for masking.
func (s *Store) resolvedSecrets(recs ...Record) map[string]string {
	out := map[string]string{}
	for i, r := range recs {
		resolved, _ := s.cfg.Resolve(r.Settings)
		for k, v := range resolved {
			out[fmt.Sprintf("%d.%s", i, k)] = v
		}
	}
	return out
}

// noteSwitch keeps sw as the record's last switch, so that every node's
// status shows it (running, failed, or done with its final figures); the
// backend stays as the record names it. A record whose last switch is a
// later one is left as it is.
func (s *Store) noteSwitch(sw api.StoreSwitch) {
	ctx, cancel := context.WithTimeout(s.life, 5*time.Second)
	defer cancel()
	for range 3 {
		kv, found, err := s.cfg.RaftStore.Get(ctx, RecordKey)
		if err != nil {
			s.log.Warn("cannot note the store switch in the record", "switch", sw.ID, "err", err)
			return
		}
		rec := Record{Backend: Raft}
		if found && json.Unmarshal(kv.Value, &rec) != nil {
			return
		}
		if l := rec.LastSwitch; l != nil && l.ID != sw.ID && l.StartedAt.After(sw.StartedAt) {
			return
		}
		rec.LastSwitch = &sw
		b, _ := json.Marshal(rec)
		_, ok, err := s.cfg.RaftStore.CompareAndSet(ctx, RecordKey, kv.ModRevision, b)
		if err == nil && ok {
			return
		}
	}
}

// copyAndSwitch is the switch: copy, verify, hold, copy the rest, verify
// it, record the new backend, move, release.
func (s *Store) copyAndSwitch(log *slog.Logger, src *delegate, tgt store.Loader, from, to Record) error {
	ctx := s.life
	var keep []string
	if to.Backend == Raft {
		keep = RaftOnly
	}
	if err := tgt.Clear(ctx, keep...); err != nil {
		return fmt.Errorf("clear the target: %w", err)
	}
	s.progress(func(sw *api.StoreSwitch) { sw.Phase = api.PhaseCopy })
	all, r1, err := src.s.Scan(ctx, "", 0)
	if err != nil {
		return fmt.Errorf("read the active backend: %w", err)
	}
	kvs := all[:0]
	for _, kv := range all {
		if !raftOnly(kv.Key) {
			kvs = append(kvs, kv)
		}
	}
	s.progress(func(sw *api.StoreSwitch) { sw.Total = int64(len(kvs)) })

	// Follow what changes while the copy runs.
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	col, err := collect(wctx, src.s, r1)
	if err != nil {
		return fmt.Errorf("follow the active backend: %w", err)
	}
	// load never loads below the target's own revision.
	if err := load(ctx, tgt, r1, kvs, nil, func(n int) {
		s.progress(func(sw *api.StoreSwitch) { sw.Copied += int64(n) })
	}); err != nil {
		return fmt.Errorf("copy to the target: %w", err)
	}

	s.progress(func(sw *api.StoreSwitch) { sw.Phase = api.PhaseVerify })
	sum := newChecksum()
	for _, kv := range kvs {
		sum.add(kv)
	}
	if err := verifyAll(ctx, tgt, sum); err != nil {
		return err
	}
	// Catch up with what changed while copying, writes still going on,
	// so that the hold has only the last few changes to copy.
	cs := &copyState{base: kvs, over: map[string]*store.KV{}, sum: sum}
	for range maxCatchUps {
		evs, rc := col.sofar()
		if len(evs)-cs.done <= catchUpDone {
			break
		}
		if err := cs.apply(ctx, tgt, rc, evs); err != nil {
			return err
		}
	}

	// Hold writes, copy what changed, verify it, record, move. The record
	// notes the hold before it starts, so that a successor can tell where
	// the switch stopped; the status shows it once writes are held.
	s.swmu.Lock()
	holding := *s.running
	s.swmu.Unlock()
	holding.Phase = api.PhaseHold
	s.noteSwitch(holding)
	hctx, cancel := context.WithTimeout(ctx, s.cfg.HoldMax)
	defer cancel()
	holdStart := time.Now()
	var steps []any // how long each step of the hold took, for the log
	last := holdStart
	step := func(name string) {
		now := time.Now()
		steps = append(steps, name+"_ms", millis(now.Sub(last)))
		last = now
	}
	if err := s.gate.hold(hctx); err != nil {
		return fmt.Errorf("hold metadata writes: %w", err)
	}
	step("drain")
	released := false
	release := func() {
		if !released {
			released = true
			s.gate.release()
			s.progress(func(sw *api.StoreSwitch) { sw.HoldMillis = millis(time.Since(holdStart)) })
		}
	}
	defer release()
	if src.kind == kindRaft {
		// Writes proposed on other nodes do not pass this gate: the
		// state machine refuses them from here on (they are retried).
		if err := s.cfg.RaftStore.Freeze(hctx, RaftOnly...); err != nil {
			return fmt.Errorf("hold writes to the Raft store: %w", err)
		}
		step("freeze")
	}
	s.progress(func(sw *api.StoreSwitch) { sw.Phase = api.PhaseHold })
	var r2 int64
	if src.kind == kindRaft {
		// The freeze is applied here, after every write before it: the
		// local revision is the source's last (no read barrier needed).
		r2, err = s.cfg.Raft.FSM().Revision()
	} else {
		r2, err = src.s.Revision(hctx)
	}
	if err != nil {
		return fmt.Errorf("read the active backend's revision: %w", err)
	}
	evs, err := col.until(hctx, r2)
	if err != nil {
		return fmt.Errorf("follow the active backend: %w", err)
	}
	step("follow")
	changed := len(evs) - cs.done
	if err := cs.apply(hctx, tgt, r2, evs); err != nil {
		return err
	}
	step("copy")
	rev, err := tgt.Revision(hctx)
	if err != nil {
		return fmt.Errorf("read the target: %w", err)
	}
	if rev < r2 {
		// The source's last changes were to keys a switch does not copy
		// (RaftOnly): the target takes the source's revision all the
		// same, so that its next writes come after every revision a
		// reader may have seen on the source.
		if err := tgt.Load(hctx, r2, nil, nil); err != nil {
			return fmt.Errorf("set the target's revision to %d: %w", r2, err)
		}
		rev = r2
	}
	stopWatch()

	now := time.Now().UTC()
	s.progress(func(sw *api.StoreSwitch) {
		sw.Revision, sw.Checksum, sw.Copied, sw.Total = rev, sum.String(), int64(sum.n), int64(sum.n)
		sw.HoldMillis = millis(time.Since(holdStart))
	})
	s.swmu.Lock()
	figures := *s.running
	s.swmu.Unlock()
	figures.State, figures.Phase, figures.EndedAt = api.SwitchDone, api.PhaseDone, now
	rec := Record{Backend: to.Backend, Settings: to.Settings, Since: now, LastSwitch: &figures}
	if err := s.record(hctx, rec); err != nil {
		// A Raft store frozen for the hold is thawed by the leader's
		// reconcile once this switch has ended.
		return err
	}
	step("record")
	if d := pauseAfterRecord(); d > 0 {
		log.Warn("store switch: paused after the record (test hook "+pauseAfterRecordEnv+")", "pause", d)
		time.Sleep(d)
	}
	if to.Backend == Raft {
		if err := s.cfg.RaftStore.Thaw(hctx); err != nil {
			// The leader's reconcile thaws it; writes wait until then.
			s.log.Warn("cannot thaw the Raft store yet", "err", err)
		}
		s.swap(&delegate{s: s.cfg.RaftStore, kind: kindRaft, rec: rec, term: s.cfg.Raft.Term()})
	} else {
		s.swap(&delegate{s: tgt, kind: kindDirect, rec: rec, term: s.cfg.Raft.Term()})
	}
	release()
	step("move")
	log.Info("store switch: writes held", append([]any{"hold_ms", millis(time.Since(holdStart)), "changes", changed}, steps...)...)
	return nil
}

// record writes the new record while this node's leader mark still holds.
// When the outcome is unknown it settles it (settle): the switch moves
// only once the record is known applied, and releases writes to the old
// backend only once it is known never to apply.
func (s *Store) record(ctx context.Context, rec Record) error {
	s.mu.Lock()
	mark := s.mark
	s.mu.Unlock()
	if mark.term != s.cfg.Raft.Term() || !s.cfg.Raft.IsLeader() {
		return errors.New("leadership moved during the switch")
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	_, ok, err := s.cfg.RaftStore.Batch(ctx, []store.Cond{{Key: LeaderKey, ModRevision: mark.modRev}}, []store.Op{store.Put(RecordKey, b)})
	if err == nil && !ok {
		return errors.New("leadership moved during the switch")
	}
	if err == nil {
		return nil
	}
	s.log.Warn("store switch: the outcome of recording the new backend is unknown; settling it, writes stay held", "err", err)
	applied, serr := s.settle(mark, rec)
	switch {
	case serr != nil:
		return fmt.Errorf("record the new backend (outcome unknown; the active backend is what `kcctl store status` says): %w", errors.Join(err, serr))
	case applied:
		return nil
	}
	return fmt.Errorf("record the new backend: %w (it was not applied)", err)
}

// settle tells whether the record rec, proposed under mark with an unknown
// outcome, was applied. A proposal whose outcome is unknown may still be
// in the log and apply later; one more write of the leader key, on the
// condition of mark, seals it: once that write has applied (or a later
// leader's mark has), rec either applied before it or never will, and
// this node's state shows which. It tries until it knows or the store
// closes (each try bounded by Raft's proposal timeout).
func (s *Store) settle(mark leaderMark, rec Record) (bool, error) {
	for attempt := 0; ; attempt++ {
		rev, ok, err := s.cfg.RaftStore.Batch(s.life, []store.Cond{{Key: LeaderKey, ModRevision: mark.modRev}},
			[]store.Op{store.Put(LeaderKey, []byte(strconv.FormatUint(mark.term, 10)))})
		if err == nil {
			if ok {
				s.mu.Lock()
				if s.mark == mark {
					s.mark.modRev = rev
				}
				s.mu.Unlock()
			}
			cur, err := s.Record()
			if err != nil {
				return false, err
			}
			return cur.same(rec) && cur.LastSwitch != nil && rec.LastSwitch != nil && cur.LastSwitch.ID == rec.LastSwitch.ID, nil
		}
		if err := s.backoff(s.life, attempt); err != nil {
			return false, err
		}
	}
}

// load writes kvs and dels to the target at rev, in chunks within the
// Loader's limits.
func load(ctx context.Context, tgt store.Loader, rev int64, kvs []store.KV, dels []string, done func(int)) error {
	for len(kvs) > 0 || len(dels) > 0 {
		n, size := 0, 0
		for n < len(kvs) && n < store.MaxBatchOps {
			sz := len(kvs[n].Key) + len(kvs[n].Value)
			if n > 0 && size+sz > store.MaxLoadBytes {
				break
			}
			size += sz
			n++
		}
		d := 0
		for d < len(dels) && n+d < store.MaxBatchOps && size+len(dels[d]) <= store.MaxLoadBytes {
			size += len(dels[d])
			d++
		}
		// The Raft target's revision moves with writes to its own keys
		// (kcd/cluster/, kcd/members/) between chunks: never load below it.
		for attempt := 0; ; attempt++ {
			cur, err := tgt.Revision(ctx)
			if err != nil {
				return err
			}
			err = tgt.Load(ctx, max(rev, cur), kvs[:n], dels[:d])
			if err == nil {
				break
			}
			if attempt == 2 || !errors.Is(err, store.ErrInvalid) {
				return err
			}
		}
		if done != nil {
			done(n)
		}
		kvs, dels = kvs[n:], dels[d:]
	}
	return nil
}

// maxRaftOnlyKeys bounds the keys under RaftOnly a count may pass over:
// the members' records and a few of the cluster's own.
const maxRaftOnlyKeys = 1024

// countKeys counts the keys outside RaftOnly, up to limit (0: all).
func countKeys(ctx context.Context, s store.Store, limit int) (int, error) {
	scan := 0
	if limit > 0 {
		scan = limit + maxRaftOnlyKeys
	}
	kvs, _, err := s.Scan(ctx, "", scan)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, kv := range kvs {
		if !raftOnly(kv.Key) {
			n++
			if limit > 0 && n >= limit {
				break
			}
		}
	}
	return n, nil
}

// verifyAll compares the whole target with sum.
func verifyAll(ctx context.Context, tgt store.Store, sum *checksum) error {
	kvs, _, err := tgt.Scan(ctx, "", 0)
	if err != nil {
		return fmt.Errorf("verify the copy: %w", err)
	}
	got := newChecksum()
	for _, kv := range kvs {
		if !raftOnly(kv.Key) {
			got.add(kv)
		}
	}
	if got.n != sum.n || got.x != sum.x {
		return fmt.Errorf("verify the copy: the target holds %d keys (checksum %s), the source %d (checksum %s)", got.n, got, sum.n, sum)
	}
	return nil
}

// verifyKeys reads back what the hold copied, a few keys at a time (a Raft
// target answers each read after a read barrier).
func verifyKeys(ctx context.Context, tgt store.Store, puts []store.KV, dels []string) error {
	type check struct {
		want store.KV
		del  bool
	}
	checks := make(chan check)
	errs := make(chan error, verifyReaders)
	var wg sync.WaitGroup
	for range verifyReaders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range checks {
				kv, found, err := tgt.Get(ctx, c.want.Key)
				switch {
				case err != nil:
					err = fmt.Errorf("verify the last changes: %w", err)
				case c.del && found:
					err = fmt.Errorf("verify the last changes: key %q is still on the target", c.want.Key)
				case !c.del && (!found || !bytes.Equal(kv.Value, c.want.Value) || kv.ModRevision != c.want.ModRevision || kv.CreateRevision != c.want.CreateRevision):
					err = fmt.Errorf("verify the last changes: key %q differs on the target", c.want.Key)
				}
				if err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		}()
	}
	send := func(c check) bool {
		select {
		case checks <- c:
			return true
		case err := <-errs:
			errs <- err
			return false
		}
	}
	for _, kv := range puts {
		if !send(check{want: kv}) {
			break
		}
	}
	for _, key := range dels {
		if !send(check{want: store.KV{Key: key}, del: true}) {
			break
		}
	}
	close(checks)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// verifyReaders is how many reads verifyKeys has in flight.
const verifyReaders = 16

// Catching up before the hold: at most maxCatchUps rounds, ended early
// once no more than catchUpDone changes are left for the hold.
const (
	maxCatchUps = 4
	catchUpDone = 32
)

// copyState is what the target holds: the bulk copy, the changes copied
// since, and their checksum.
type copyState struct {
	base []store.KV           // the bulk copy, in key order
	over map[string]*store.KV // changes copied since; nil: deleted
	sum  *checksum
	done int // the collector's events already copied
}

// prev is the key's value on the target.
func (c *copyState) prev(key string) (store.KV, bool) {
	if kv, ok := c.over[key]; ok {
		if kv == nil {
			return store.KV{}, false
		}
		return *kv, true
	}
	if i, ok := slices.BinarySearchFunc(c.base, key, func(kv store.KV, k string) int { return strings.Compare(kv.Key, k) }); ok {
		return c.base[i], true
	}
	return store.KV{}, false
}

// apply copies the changes of evs[c.done:] to the target at rev (or its
// own revision, if above), the last change of each key winning, reads
// them back, and updates the checksum.
func (c *copyState) apply(ctx context.Context, tgt store.Loader, rev int64, evs []store.Event) error {
	if c.done > len(evs) {
		return fmt.Errorf("copy the changes made meanwhile: %d events copied, %d known", c.done, len(evs))
	}
	last := map[string]store.Event{}
	for _, ev := range evs[c.done:] {
		if !raftOnly(ev.KV.Key) {
			last[ev.KV.Key] = ev
		}
	}
	c.done = len(evs)
	if len(last) == 0 {
		return nil
	}
	keys := make([]string, 0, len(last))
	for k := range last {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var puts []store.KV
	var dels []string
	for _, k := range keys {
		if ev := last[k]; ev.Type == store.EventDelete {
			dels = append(dels, k)
		} else {
			puts = append(puts, ev.KV)
		}
	}
	if err := load(ctx, tgt, rev, puts, dels, nil); err != nil {
		return fmt.Errorf("copy the changes made meanwhile to the target: %w", err)
	}
	if err := verifyKeys(ctx, tgt, puts, dels); err != nil {
		return err
	}
	for _, kv := range puts {
		if p, ok := c.prev(kv.Key); ok {
			c.sum.remove(p)
		}
		c.sum.add(kv)
		c.over[kv.Key] = &kv
	}
	for _, k := range dels {
		if p, ok := c.prev(k); ok {
			c.sum.remove(p)
		}
		c.over[k] = nil
	}
	return nil
}

// collector gathers a watch's events.
type collector struct {
	mu   sync.Mutex
	evs  []store.Event
	last int64
	err  error
	wake chan struct{}
}

func collect(ctx context.Context, src store.Store, after int64) (*collector, error) {
	w, err := src.Watch(ctx, "", after)
	if err != nil {
		return nil, err
	}
	c := &collector{last: after, wake: make(chan struct{}, 1)}
	go func() {
		defer w.Close()
		for ev := range w.Events() {
			c.mu.Lock()
			if len(c.evs) >= maxSwitchEvents {
				c.err = fmt.Errorf("more than %d changes while copying", maxSwitchEvents)
				c.mu.Unlock()
				c.poke()
				return
			}
			c.evs = append(c.evs, ev)
			c.last = max(c.last, ev.KV.ModRevision)
			c.mu.Unlock()
			c.poke()
		}
		c.mu.Lock()
		c.err = w.Err()
		if c.err == nil {
			c.err = errors.New("the watch ended")
		}
		c.mu.Unlock()
		c.poke()
	}()
	return c, nil
}

func (c *collector) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// sofar returns the events so far and the highest revision among them.
func (c *collector) sofar() ([]store.Event, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.evs, c.last
}

// until returns the events up to rev once all of them arrived.
func (c *collector) until(ctx context.Context, rev int64) ([]store.Event, error) {
	for {
		c.mu.Lock()
		if c.last >= rev {
			evs := c.evs
			c.mu.Unlock()
			n := len(evs)
			for n > 0 && evs[n-1].KV.ModRevision > rev {
				n--
			}
			return evs[:n], nil
		}
		err := c.err
		c.mu.Unlock()
		if err != nil {
			return nil, err
		}
		select {
		case <-c.wake:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// checksum is order-free: the XOR of a hash of every key, value and
// revisions, so that a change updates it in O(1).
type checksum struct {
	x [16]byte
	n int
}

func newChecksum() *checksum { return &checksum{} }

func (c *checksum) mix(kv store.KV) {
	h := sha256.New()
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(len(kv.Key)))
	h.Write(b[:])
	h.Write([]byte(kv.Key))
	h.Write(kv.Value)
	binary.BigEndian.PutUint64(b[:], uint64(kv.CreateRevision))
	h.Write(b[:])
	binary.BigEndian.PutUint64(b[:], uint64(kv.ModRevision))
	h.Write(b[:])
	sum := h.Sum(nil)
	for i := range c.x {
		c.x[i] ^= sum[i]
	}
}

func (c *checksum) add(kv store.KV)    { c.mix(kv); c.n++ }
func (c *checksum) remove(kv store.KV) { c.mix(kv); c.n-- }
func (c *checksum) String() string     { return hex.EncodeToString(c.x[:]) }

func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func newID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
