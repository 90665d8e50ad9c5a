// Package metrics serves a kcd node's metrics in Prometheus's text format:
// kcd's counterparts of Kafka Connect's connector, task, source-task,
// sink-task, task-error, worker and worker-rebalance metrics (each HELP
// names the Kafka Connect metric), plus Raft, store, coordinator, Go
// runtime and process metrics.
//
// Nothing is counted here: the worker, Raft node, coordinator and store
// keep their own counters (atomics, no locks per record), and a scrape
// reads them. A task's series exist while it runs on this worker.
package metrics

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/common/expfmt"

	"github.com/kcd-project/kcd/daemon/coordinator"
	"github.com/kcd-project/kcd/daemon/worker"
)

// Worker is what the metrics read of the node's worker (*worker.Worker).
type Worker interface {
	StatsInto(*worker.Stats)
	States([]worker.UnitState) []worker.UnitState
	Startups() worker.Startups
}

// Member is the worker's membership (*coordinator.Member).
type Member interface {
	Rebalances() (epoch coordinator.Epoch, leader uint64, completed int64, last time.Time)
}

// Raft is the node's Raft member (*raft.Node).
type Raft interface {
	ID() uint64
	Term() uint64
	Leader() uint64
	CommitIndex() uint64
	AppliedIndex() uint64
	Proposals() (total, failed uint64)
}

// Coordinator is the node's coordinator (*coordinator.Coordinator).
type Coordinator interface {
	Stats() coordinator.Stats
}

// Backend names the active store backend (*activestore.Store).
type Backend interface {
	Backend() (name, via string)
}

// Sources are the parts of the node the metrics read; any may be nil (a
// node without a worker, or not a Raft member).
type Sources struct {
	Worker      Worker
	Member      Member
	Raft        Raft
	Coordinator Coordinator
	Backend     Backend
	// Store is the store's operation timer (TimeStore); nil: none.
	Store *StoreTimer
}

// Handler serves the metrics of src.
type Handler struct {
	src  Sources
	reg  *prometheus.Registry // the Go runtime's metrics
	proc *process
	// scrapes holds the buffers of scrapes: each scrape takes its own, so
	// that a client that reads slowly holds up no other.
	scrapes sync.Pool // *scrape
}

// scrape is what one scrape writes into, reused by later ones.
type scrape struct {
	w   taskWriter
	buf bytes.Buffer
	gz  *gzip.Writer
}

// maxKeptBuffer bounds the buffers a handler keeps between scrapes.
const maxKeptBuffer = 16 << 20

// New returns the handler for src.
func New(src Sources) *Handler {
	h := &Handler{src: src, reg: prometheus.NewRegistry(), proc: newProcess()}
	h.scrapes.New = func() any { return new(scrape) }
	h.reg.MustRegister(collectors.NewGoCollector())
	return h
}

// ServeHTTP writes the metrics in the text format (version 0.0.4, which
// every Prometheus reads), gzipped when the client takes it.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sc := h.scrapes.Get().(*scrape)
	defer h.scrapes.Put(sc)
	defer sc.trim()
	body, err := h.render(sc, time.Now())
	if err != nil {
		http.Error(w, "gather metrics: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
	if !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
		_, _ = w.Write(body)
		return
	}
	w.Header().Set("Content-Encoding", "gzip")
	if sc.gz == nil {
		sc.gz, _ = gzip.NewWriterLevel(w, gzip.BestSpeed)
	} else {
		sc.gz.Reset(w)
	}
	_, _ = sc.gz.Write(body)
	_ = sc.gz.Close()
	sc.gz.Reset(io.Discard) // let go of w
}

// render gathers every metric into sc's buffers.
func (h *Handler) render(sc *scrape, now time.Time) ([]byte, error) {
	sc.buf.Reset()
	mfs, err := h.reg.Gather()
	if err != nil {
		return nil, err
	}
	enc := expfmt.NewEncoder(&sc.buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return nil, err
		}
	}
	sc.w.begin()
	sc.w.b = append(sc.w.b, sc.buf.Bytes()...)
	h.proc.write(&sc.w)
	sc.w.writeNode(h.src)
	if h.src.Store != nil {
		sc.w.writeStore(h.src.Store)
	}
	if h.src.Member != nil {
		sc.w.writeRebalance(h.src.Member, now)
	}
	if h.src.Worker != nil {
		sc.w.write(h.src.Worker, now)
	}
	return sc.w.b, nil
}

// trim drops buffers grown past maxKeptBuffer, so that one scrape of a
// huge worker does not pin its memory for good.
func (sc *scrape) trim() {
	if cap(sc.w.b) > maxKeptBuffer || cap(sc.w.prev) > maxKeptBuffer {
		sc.w.b = nil
		sc.w.forget()
	}
	if sc.buf.Cap() > maxKeptBuffer {
		sc.buf = bytes.Buffer{}
	}
	if cap(sc.w.labels) > maxKeptBuffer {
		sc.w.labels = nil
	}
}

// writeRebalance writes connect-worker-rebalance-metrics.
func (w *taskWriter) writeRebalance(m Member, now time.Time) {
	epoch, _, completed, last := m.Rebalances()
	for _, x := range []struct {
		f family
		v float64
	}{
		{family{"kcd_worker_rebalance_completed_total", "counter", "Assignment epochs this worker saw the coordinator move to since it started. Kafka Connect: connect-worker-rebalance-metrics completed-rebalances-total."}, float64(completed)},
		{family{"kcd_worker_rebalance_epoch", "gauge", "Generation of the assignment epoch this worker last heard of. Kafka Connect: connect-worker-rebalance-metrics epoch."}, float64(epoch.Generation)},
	} {
		w.header(x.f)
		w.line(x.f.name, "", nil, x.v)
	}
	if !last.IsZero() {
		f := family{"kcd_worker_rebalance_time_since_last_seconds", "gauge", "Time since this worker saw the last rebalance; absent before the first. Kafka Connect: connect-worker-rebalance-metrics time-since-last-rebalance-ms."}
		w.header(f)
		w.line(f.name, "", nil, now.Sub(last).Seconds())
	}
}

var (
	raftTerm        = family{"kcd_raft_term", "gauge", "The Raft term this member is in."}
	raftLeader      = family{"kcd_raft_leader_id", "gauge", "The Raft id of the leader this member knows; 0: none."}
	raftIsLeader    = family{"kcd_raft_is_leader", "gauge", "1 when this member is the Raft leader (and runs the coordinator)."}
	raftCommit      = family{"kcd_raft_commit_index", "gauge", "The highest log index this member knows committed."}
	raftApplied     = family{"kcd_raft_applied_index", "gauge", "The highest log index this member applied."}
	raftProposals   = family{"kcd_raft_proposals_total", "counter", "Commands this member proposed (metadata writes, membership)."}
	raftProposeFail = family{"kcd_raft_proposals_failed_total", "counter", "Proposals of this member that failed: refused, timed out, or applied with an error."}

	coordLeading    = family{"kcd_coordinator_leading", "gauge", "1 while this node runs the coordinator (it is the Raft leader)."}
	coordSessions   = family{"kcd_coordinator_sessions", "gauge", "Workers with a session with this coordinator."}
	coordUnits      = family{"kcd_coordinator_units", "gauge", "Connectors and tasks assigned, as of the last rebalance this node's coordinator wrote."}
	coordGeneration = family{"kcd_coordinator_epoch_generation", "gauge", "Generation of the last assignment epoch this node's coordinator wrote."}
	coordRebalances = family{"kcd_coordinator_rebalances_total", "counter", "Rebalances this node's coordinator wrote (with moves or triggers). Kafka Connect: connect-worker-rebalance-metrics completed-rebalances-total, as the leader sees it."}
	coordMoves      = family{"kcd_coordinator_moves_total", "counter", "Connectors and tasks those rebalances moved."}
	coordFailures   = family{"kcd_coordinator_rebalance_failures_total", "counter", "Rebalances that failed (and were tried again)."}
	coordTime       = family{"kcd_coordinator_rebalance_seconds", "summary", "Time the coordinator's rebalances took. Kafka Connect: connect-worker-rebalance-metrics rebalance-avg-time-ms."}
	coordMaxTime    = family{"kcd_coordinator_rebalance_max_seconds", "gauge", "The longest rebalance. Kafka Connect: connect-worker-rebalance-metrics rebalance-max-time-ms."}

	storeBackend = family{"kcd_store_backend_info", "gauge", "1 for the active metadata store backend (raft, mysql, postgres, ...) and how this node reaches it (via)."}
)

// writeNode writes the Raft, coordinator and store backend metrics: a few
// series, read at scrape time.
func (w *taskWriter) writeNode(src Sources) {
	one := func(f family, v float64) {
		w.header(f)
		w.line(f.name, "", nil, v)
	}
	b := func(v bool) float64 {
		if v {
			return 1
		}
		return 0
	}
	if r := src.Raft; r != nil {
		total, failed := r.Proposals()
		leader := r.Leader()
		one(raftTerm, float64(r.Term()))
		one(raftLeader, float64(leader))
		one(raftIsLeader, b(leader != 0 && leader == r.ID()))
		one(raftCommit, float64(r.CommitIndex()))
		one(raftApplied, float64(r.AppliedIndex()))
		one(raftProposals, float64(total))
		one(raftProposeFail, float64(failed))
	}
	if co := src.Coordinator; co != nil {
		s := co.Stats()
		one(coordLeading, b(s.Leading))
		one(coordSessions, float64(s.Sessions))
		one(coordUnits, float64(s.Units))
		one(coordGeneration, float64(s.Epoch.Generation))
		one(coordRebalances, float64(s.Rebalances))
		one(coordMoves, float64(s.Moves))
		one(coordFailures, float64(s.RebalanceFailures))
		w.header(coordTime)
		w.line(coordTime.name, "_sum", nil, s.RebalanceTime.Seconds())
		w.line(coordTime.name, "_count", nil, float64(s.Rebalances))
		one(coordMaxTime, s.MaxRebalanceTime.Seconds())
	}
	if be := src.Backend; be != nil {
		name, via := be.Backend()
		if name != "" {
			w.header(storeBackend)
			lb := appendLabel(nil, "backend", name)
			lb = append(lb, ',')
			lb = appendLabel(lb, "via", via)
			w.line(storeBackend.name, "", lb, 1)
		}
	}
}
