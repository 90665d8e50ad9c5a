// Package worker runs Kafka Connect connectors and tasks. It follows the
// connector configs, target states, task configs and restart requests in
// connectstore, runs what the Assignment gives this worker, and reports
// statuses and offsets back there. Kafka is the data plane only: source
// tasks produce to it, sink tasks fetch partitions assigned directly (no
// consumer group protocol).
//
// Each connector has a supervisor goroutine that owns everything of that
// connector on this worker: the connector instance, its tasks, their
// statuses and automatic restarts. Supervisors are level-triggered: any
// change of the connector's keys pokes them, and they read the connector's
// whole desired state from the store and converge to it. Which connectors
// and tasks run here is the Assignment's answer. A supervisor exists only
// for a connector with a unit here (when the Assignment tells which:
// holder): other connectors' changes cost this worker nothing but their
// watch events, and a supervisor whose last unit left stops and ends.
//
// Source tasks produce each through its own transactional franz-go client
// (exactly-once source support, the default: txn.go), or through one
// shared client when it is disabled (Kafka Connect's producer settings,
// but idempotent with up to five requests in flight unless in-flight or
// idempotence are set: sharedProducer). A task's
// records are tracked in order: a source offset is committed only once
// every earlier record of the task was acknowledged (and, with
// transactions, their transaction committed), every flush interval and at
// a clean stop. Records in flight are bounded
// per task and per worker, in records and bytes; Poll waits while a bound
// is reached.
//
// Sink tasks fetch the partitions their supervisor gives them (the
// partitions of the sink's topics, listed now and then and spread round
// robin over the tasks) from the offsets in the store; every flush interval
// they Flush, store the offsets, and commit them to the connector's
// consumer group too. Fetch buffers and Put batches are bounded.
package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcd-project/kcd/daemon/clientcfg"
	"github.com/kcd-project/kcd/daemon/connectstore"
	"github.com/kcd-project/kcd/store"
)

// Worker runs connectors and tasks.
type Worker struct {
	cfg    Config
	log    *slog.Logger
	store  *connectstore.Store
	budget *budget // in flight over all tasks
	halted atomic.Bool

	// Set by Run before any supervisor starts.
	client *kgo.Client // shared producer and admin client
	admin  *kadm.Client
	topics *topicCache
	// used records the topics tasks use; nil when topic tracking is off.
	used *topicTracker
	// produceCtx is the context of every produced record: cancelled only
	// when the worker halts, since cancelling one record can fail others
	// of the same partition in a shared producer.
	produceCtx context.Context

	txnMu     sync.Mutex
	txnPrefix string // of transactional ids, from the store (txn.go)

	mu     sync.Mutex
	cancel context.CancelFunc // set by Run
	sups   map[string]*supervisor
	tasks  map[TaskID]*taskStats
	conns  map[string]bool // connector instances running here
	starts map[TaskID]int  // starts per connector instance and task
	// startups counts starts and their outcomes (Startups).
	startups startupStats
	wg       sync.WaitGroup
	exited   chan *supervisor
	// assigned is closed and replaced at each change of the Assignment.
	assigned chan struct{}
	// readers holds a token per supervisor reading its connector from the
	// store (nil: no bound): after a resync every supervisor reads at
	// once, and unbounded those reads would queue ahead of the offset and
	// status writes on the same connections and database pool.
	readers chan struct{}
	// pre holds specs read in bulk by a resync for supervisors it is
	// about to start (under mu).
	pre map[string]*connectstore.Spec
	// connectors is how many connectors the last bulk read found.
	connectors atomic.Int64
}

// maxStoreReaders bounds the supervisors of a worker that read their
// connector from the store at once.
const maxStoreReaders = 4

// New returns a worker for cfg; it does nothing until Run.
func New(cfg Config) (*Worker, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Worker{
		cfg:    cfg,
		log:    cfg.Logger.With("subsys", "worker"),
		store:  cfg.Store,
		budget: newBudget(cfg.Limits.WorkerInFlightRecords, cfg.Limits.WorkerInFlightBytes, nil),
		sups:   map[string]*supervisor{},
		tasks:  map[TaskID]*taskStats{},
		conns:  map[string]bool{},
		starts: map[TaskID]int{},
		exited: make(chan *supervisor),

		assigned: make(chan struct{}),
		readers:  make(chan struct{}, maxStoreReaders),
	}, nil
}

// Run runs the worker until ctx ends, then stops every task cleanly (each
// drains its in-flight records and commits its offsets, within
// Config.ShutdownTimeout) and reports it UNASSIGNED. A worker runs once.
func (w *Worker) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w.mu.Lock()
	if w.cancel != nil {
		w.mu.Unlock()
		return errors.New("worker: Run called twice")
	}
	w.cancel = cancel
	w.mu.Unlock()
	if w.halted.Load() {
		return nil
	}

	var err error
	opts := w.producerOpts(w.sharedProducer(), false, w.cfg.Limits.WorkerInFlightRecords, "kcd-worker-"+w.cfg.WorkerID)
	// Sinks list partitions through this client, which answers from
	// metadata cached for up to MetadataMinAge (5 s by default).
	opts = append(opts, kgo.MetadataMinAge(min(5*time.Second, w.cfg.SinkRelistInterval)))
	if w.client, err = w.newClient(opts...); err != nil {
		return fmt.Errorf("worker: kafka client: %w", err)
	}
	produceCtx, stopProducing := context.WithCancel(context.Background())
	w.produceCtx = produceCtx
	w.admin = kadm.NewClient(w.client)
	w.topics = newTopicCache(w.admin, w.log)
	if !w.cfg.NoTopicTracking {
		w.used = newTopicTracker(w)
		trackCtx, stopTracking := context.WithCancel(ctx)
		defer stopTracking()
		go w.used.run(trackCtx)
	}
	w.log.Info("worker started", "worker_id", w.cfg.WorkerID, "seeds", w.cfg.Seeds)

	w.follow(ctx)

	// Supervisors see ctx end and stop their connectors; wait for them.
	w.wg.Wait()
	if w.halted.Load() {
		stopProducing() // fail what is still buffered, as a crash would lose it
	}
	w.client.Close()
	stopProducing() // released
	w.log.Info("worker stopped", "halted", w.halted.Load())
	return nil
}

// Halt stops the worker at once, as a crash would: tasks are stopped
// without draining their in-flight records, without committing offsets
// and without reporting statuses. Run returns once every task goroutine
// has ended. It exists for tests and for fencing a worker that lost its
// assignment.
func (w *Worker) Halt() {
	w.halted.Store(true)
	w.mu.Lock()
	cancel := w.cancel
	w.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// follow watches connectstore and pokes the supervisors until ctx ends.
func (w *Worker) follow(ctx context.Context) {
	raw := w.store.Raw()
	var rev int64
	resync := true
	retry := Backoff{Initial: 100 * time.Millisecond, Max: 5 * time.Second}
	failures := 0
	for ctx.Err() == nil {
		var err error
		if resync {
			if rev, err = w.resync(ctx); err == nil {
				resync = false
			}
		}
		var wt store.Watcher
		if err == nil {
			wt, err = raw.Watch(ctx, connectstore.Prefix, rev)
		}
		if err == nil {
			rev, err = w.drain(ctx, wt, rev)
			wt.Close()
		}
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, store.ErrWatcherLagging):
			w.log.Info("store watch fell behind; watching again", "after_revision", rev)
			failures = 0
			continue
		case errors.Is(err, store.ErrCompacted):
			w.log.Info("store history compacted; reading everything again", "after_revision", rev)
			resync = true
			failures = 0
			continue
		}
		failures++
		w.log.Warn("store watch failed; retrying", "err", err, "attempt", failures)
		if !w.sleep(ctx, retry.Delay(failures)) {
			return
		}
	}
}

// resync pokes every supervisor: those of the connectors this worker
// follows (starting the missing ones) and those that may have gone. It
// returns the revision to watch after.
func (w *Worker) resync(ctx context.Context) (int64, error) {
	rev, err := w.store.Raw().Revision(ctx)
	if err != nil {
		return 0, fmt.Errorf("read revision: %w", err)
	}
	names, err := w.followed(ctx)
	if err != nil {
		return 0, err
	}
	w.mu.Lock()
	n := len(names) + len(w.sups)
	w.mu.Unlock()
	if n >= prefetchMin && n*prefetchShare >= int(w.connectors.Load()) {
		// Four scans instead of four reads per supervisor: after a store
		// move every node reads its connectors at once, through the leader
		// or by a Raft read each, and writes would queue behind them.
		specs, err := w.store.Specs(ctx)
		if err != nil {
			w.log.Warn("cannot read the connectors in bulk; each reads its own", "err", err)
		}
		w.connectors.Store(int64(len(specs)))
		for name, sp := range specs {
			w.prefetched(name, sp)
		}
	}
	w.pokeAll(ctx, names, true)
	w.mu.Lock()
	w.pre = nil // what no new supervisor took
	w.mu.Unlock()
	return rev, nil
}

// dropPrefetched forgets what a resync read in bulk for name (w.pre is
// empty outside resync, which runs on the same goroutine as drain).
func (w *Worker) dropPrefetched(name string) {
	w.mu.Lock()
	if s := w.sups[name]; s != nil {
		s.pre.Store(nil)
	}
	w.mu.Unlock()
}

// A resync reads in bulk when the worker follows at least prefetchMin
// connectors and at least one in prefetchShare of all there were at the
// last bulk read: a scanned key costs about a hundredth of a read of its
// own, and the scans read every connector.
const (
	prefetchMin   = 8
	prefetchShare = 64
)

// prefetched hands sp to name's supervisor, when it exists or the
// worker follows name, for its next read.
func (w *Worker) prefetched(name string, sp connectstore.Spec) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if s := w.sups[name]; s != nil {
		s.pre.Store(&sp)
		return
	}
	if w.follows(name) {
		if w.pre == nil {
			w.pre = map[string]*connectstore.Spec{}
		}
		w.pre[name] = &sp
	}
}

// followed lists the connectors this worker follows: those with a unit
// here when the Assignment tells (no store read), else every connector.
func (w *Worker) followed(ctx context.Context) ([]string, error) {
	if h, ok := w.cfg.Assignment.(holder); ok {
		return h.Held(), nil
	}
	names, err := w.store.Connectors(ctx)
	if err != nil {
		return nil, fmt.Errorf("list connectors: %w", err)
	}
	return names, nil
}

// follows tells whether the worker follows connector name (holder).
func (w *Worker) follows(name string) bool {
	h, ok := w.cfg.Assignment.(holder)
	return !ok || h.Holds(name)
}

// pokeAll pokes the supervisors of names, starting the missing ones, and
// every other supervisor; stored tells them to read the store again.
func (w *Worker) pokeAll(ctx context.Context, names []string, stored bool) {
	// A resync (stored) does not tell the supervisors it just started to
	// read again: they would read one by one what it read in bulk.
	poked := make(map[string]bool, len(names))
	for _, n := range names {
		w.poke(ctx, n, true, stored)
		poked[n] = stored
	}
	w.mu.Lock()
	others := make([]string, 0, len(w.sups))
	for n := range w.sups {
		if !poked[n] {
			others = append(others, n)
		}
	}
	w.mu.Unlock()
	for _, n := range others {
		w.poke(ctx, n, false, stored)
	}
}

// drain handles the events of one watch until it ends; it returns the
// revision of the last event seen.
func (w *Worker) drain(ctx context.Context, wt store.Watcher, rev int64) (int64, error) {
	for {
		select {
		case ev, ok := <-wt.Events():
			if !ok {
				return rev, cmpErr(wt.Err(), ctx.Err())
			}
			rev = ev.KV.ModRevision
			if name, topic, ok := connectstore.ParseTopicKey(ev.KV.Key); ok && ev.Type == store.EventDelete {
				w.used.forget(name, topic)
			}
			kind, name := parseKey(ev.KV.Key)
			if kind != keyOther {
				w.dropPrefetched(name) // older than this change
				w.poke(ctx, name, ev.Type == store.EventPut, true)
			}
		case s := <-w.exited:
			w.reap(ctx, s)
		case <-w.cfg.Assignment.Changed():
			w.assignmentChanged()
			// Supervisors look at the assignment again; what they read
			// of the store is as the watch left it: after a session
			// lapse, thousands of units here would otherwise read their
			// connectors again at once, from nodes busy with an election.
			if names, ok := changedConnectors(w.cfg.Assignment); ok {
				// Only these connectors' units here changed: reading every
				// connector again would cost each worker a read per
				// connector of the cluster on every rebalance.
				for _, n := range names {
					w.poke(ctx, n, true, false)
				}
				continue
			}
			names, err := w.followed(ctx)
			if err != nil {
				return rev, fmt.Errorf("after an assignment change: %w", err)
			}
			w.pokeAll(ctx, names, false)
		case <-ctx.Done():
			return rev, ctx.Err()
		}
	}
}

func cmpErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return errors.New("watch ended")
}

// poke tells name's supervisor to look at its connector again, starting
// one when create is set, there is none and the worker follows name;
// stored says the connector's keys may have changed in the store since
// the supervisor read them (a new supervisor reads them anyway).
func (w *Worker) poke(ctx context.Context, name string, create, stored bool) {
	w.mu.Lock()
	s := w.sups[name]
	if s == nil && create && ctx.Err() == nil && w.follows(name) {
		stored = false // its first round reads (or takes what a resync read)
		s = newSupervisor(w, name)
		if sp := w.pre[name]; sp != nil {
			s.pre.Store(sp)
		}
		w.sups[name] = s
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			s.run(ctx)
			select {
			case w.exited <- s:
			case <-ctx.Done():
			}
		}()
	}
	w.mu.Unlock()
	if s != nil {
		if stored {
			s.stale.Store(true)
		}
		s.poke()
	}
}

// assignmentChanged wakes the task runs waiting for the assignment.
func (w *Worker) assignmentChanged() {
	w.mu.Lock()
	close(w.assigned)
	w.assigned = make(chan struct{})
	w.mu.Unlock()
}

// assignmentChange returns a channel closed at the next change of the
// Assignment the worker takes.
func (w *Worker) assignmentChange() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.assigned
}

// reap forgets a supervisor that ended because its connector is gone or
// its last unit left this worker; if it was poked after it last read the
// store, a new one takes over (if the worker follows the connector).
func (w *Worker) reap(ctx context.Context, s *supervisor) {
	w.mu.Lock()
	if w.sups[s.name] == s {
		delete(w.sups, s.name)
	}
	if s.deleted && w.sups[s.name] == nil {
		// The connector is gone: its start counts go with it, so that the
		// map stays as small as the connectors that exist.
		for id := range w.starts {
			if id.Connector == s.name {
				delete(w.starts, id)
			}
		}
	}
	w.mu.Unlock()
	if len(s.pokeCh) > 0 {
		w.poke(ctx, s.name, true, true)
	}
}

func (w *Worker) sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// sharedProducer is the settings of the producer the worker's source
// tasks share. Kafka Connect gives each task a producer of its own with one
// request in flight; one producer with one request in flight for all tasks
// would make them wait on each other. Unless the worker's settings name
// max.in.flight.requests.per.connection or enable.idempotence (or an acks
// other than all), the shared producer is idempotent instead: up to five
// requests in flight, each partition's records still in the order one
// request in flight keeps them.
func (w *Worker) sharedProducer() clientcfg.Producer {
	p := w.cfg.producer
	_, inflight := w.cfg.Producer["max.in.flight.requests.per.connection"]
	_, idem := w.cfg.Producer["enable.idempotence"]
	if !inflight && !idem && p.Acks == -1 {
		p.Idempotent = true
	}
	return p
}
