package restapi

// The store API: every operation of store.Store over HTTP, served by any
// Raft node from its local store (daemon/store/remotestore is its client).
// Reads are linearizable as the local store does them; writes go through
// it too, and it proposes them to the Raft leader itself, so nothing here
// is forwarded. Keys, prefixes and values are bytes: base64 in JSON.
//
//	POST /kcd/v1/store/get       {"key"}                             → {"found","kv"}
//	POST /kcd/v1/store/put       {"key","value"}                     → {"revision"}
//	POST /kcd/v1/store/delete    {"key"}                             → {"revision","deleted"}
//	POST /kcd/v1/store/cas       {"key","expect_mod_revision","value"} → {"revision","ok"}
//	POST /kcd/v1/store/scan      {"prefix","limit"}                  → {"revision","kvs"}
//	POST /kcd/v1/store/batch     {"conds":[{"key","mod_revision"}],"ops":[{"type":"put"|"delete","key","value"}]} → {"revision","ok"}
//	GET  /kcd/v1/store/revision                                      → {"revision"}
//	POST /kcd/v1/store/compact   {"revision"}                        → {"revision"}
//	POST /kcd/v1/store/watch     {"prefix","after_revision","heartbeat_ms"} → a stream of JSON lines
//
// Errors are Kafka Connect's {"error_code","message"} with a status that
// names the store error: 400 store.ErrInvalid (413: body too large, also
// invalid), 410 store.ErrCompacted, 429 store.ErrWatcherLagging, 503
// store.ErrClosed or no store. An error answer that carries the header
// X-Kcd-Store-Unapplied: true is one the server gave before it did
// anything, so a client may send the request to another node; any other
// failed write may or may not have been applied.
//
// The watch answers 200 with application/x-ndjson: a first line
// {"start_revision","heartbeat_ms"} (the revision the watch starts after:
// after_revision, or the current one for 0), then lines {"events":[...]} in
// revision order, {} as a heartbeat every heartbeat_ms (what the request
// asked for, within 100 ms to 5 s; 5 s when it asked for none), and a last
// line {"error":{"error_code","message"}} when the watch ends on the
// server (503 when the server shuts down: watch again elsewhere from the
// last revision seen).
//
// A read (get, scan, revision) sent with X-Kcd-Allow-Stale: true may be
// answered from the node's replica when the node cannot confirm it is
// current; the answer then carries X-Kcd-Stale-Ms (see stale.go).

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync"
	"time"

	kcdapi "github.com/kcd-project/kcd/api"
	"github.com/kcd-project/kcd/store"
)

// The store API's bodies and constants (see package api).
type (
	StoreKV       = kcdapi.StoreKV
	StoreRequest  = kcdapi.StoreRequest
	StoreCond     = kcdapi.StoreCond
	StoreOp       = kcdapi.StoreOp
	StoreResponse = kcdapi.StoreResponse
	StoreEvent    = kcdapi.StoreEvent
	WatchMessage  = kcdapi.WatchMessage
)

const (
	MaxStoreRequest = kcdapi.MaxStoreRequest
	UnappliedHeader = kcdapi.UnappliedHeader
	StatusCompacted = kcdapi.StatusCompacted
	StatusLagging   = kcdapi.StatusLagging
)

// watchHeartbeat is how often an idle watch stream carries a heartbeat
// when the client asks for none, and the longest it may ask for;
// minWatchHeartbeat the shortest. watchWriteTimeout is how long one write
// to a watch stream may block before the stream is dropped (the client
// then resumes, or lags).
var (
	watchHeartbeat    = 5 * time.Second
	minWatchHeartbeat = 100 * time.Millisecond
	watchWriteTimeout = 10 * time.Second
)

// watchLine bounds the events of one watch line (by count, and roughly by
// bytes: a line ends once it passes watchLineBytes).
const (
	watchLineEvents = 256
	watchLineBytes  = 1 << 20
)

func (a *api) storeRoutes() []route {
	return []route{
		{"POST", "/kcd/v1/store/get", a.storeOp(a.storeGet)},
		{"POST", "/kcd/v1/store/put", a.storeOp(a.storePut)},
		{"POST", "/kcd/v1/store/delete", a.storeOp(a.storeDelete)},
		{"POST", "/kcd/v1/store/cas", a.storeOp(a.storeCAS)},
		{"POST", "/kcd/v1/store/scan", a.storeOp(a.storeScan)},
		{"POST", "/kcd/v1/store/batch", a.storeOp(a.storeBatch)},
		{"GET", "/kcd/v1/store/revision", a.storeOp(a.storeRevision)},
		{"POST", "/kcd/v1/store/compact", a.storeOp(a.storeCompact)},
		{"POST", "/kcd/v1/store/watch", a.storeOp(a.storeWatch)},
	}
}

// unapplied marks e as given before anything was done.
func unapplied(e *Error) (int, any, *Error) {
	return 0, withHeader{header: http.Header{UnappliedHeader: {"true"}}}, e
}

// storeOp decodes the request body and runs fn with it; fn's store error
// becomes the API's error.
func (a *api) storeOp(fn func(*http.Request, StoreRequest) (any, error)) func(*http.Request) (int, any, *Error) {
	return func(r *http.Request) (int, any, *Error) {
		if e := a.needStore(); e != nil {
			return unapplied(e)
		}
		var req StoreRequest
		if r.Method == http.MethodPost {
			body, err := io.ReadAll(io.LimitReader(r.Body, MaxStoreRequest+1))
			if err != nil {
				return unapplied(Errorf(http.StatusBadRequest, "read request body: %v", err))
			}
			if len(body) > MaxStoreRequest {
				return unapplied(Errorf(http.StatusRequestEntityTooLarge, "%v: request body larger than %d bytes", store.ErrInvalid, MaxStoreRequest))
			}
			if err := json.Unmarshal(body, &req); err != nil {
				return unapplied(Errorf(http.StatusBadRequest, "%v: request body is not valid JSON for this request: %v", store.ErrInvalid, err))
			}
		}
		var st *store.Staleness
		if r.Header.Get(AllowStaleHeader) == "true" {
			var ctx context.Context
			ctx, st = store.AllowStale(r.Context())
			r = r.WithContext(ctx)
		}
		out, err := fn(r, req)
		if err != nil {
			e := storeAPIError(err)
			if e.Status == http.StatusBadRequest || errors.Is(err, store.ErrClosed) {
				// Refused before anything was proposed: the store checks
				// both first (raftstore never reports ErrClosed later).
				return unapplied(e)
			}
			return 0, nil, e
		}
		if st != nil {
			out = markStale(st, out)
		}
		return http.StatusOK, out, nil
	}
}

// storeAPIError maps a store error to its status.
func storeAPIError(err error) *Error {
	switch {
	case errors.Is(err, store.ErrInvalid):
		return Errorf(http.StatusBadRequest, "%v", err)
	case errors.Is(err, store.ErrCompacted):
		return Errorf(StatusCompacted, "%v", err)
	case errors.Is(err, store.ErrWatcherLagging):
		return Errorf(StatusLagging, "%v", err)
	case errors.Is(err, store.ErrClosed):
		return Errorf(http.StatusServiceUnavailable, "%v", err)
	}
	e := asError(err)
	if e.Status == http.StatusInternalServerError {
		// No leader, a proposal that timed out, a node stopping: the node
		// cannot answer now, another may.
		e.Status = http.StatusServiceUnavailable
	}
	return e
}

func storeKV(kv store.KV) StoreKV {
	return StoreKV{Key: []byte(kv.Key), Value: kv.Value, CreateRevision: kv.CreateRevision, ModRevision: kv.ModRevision}
}

func ptr[T any](v T) *T { return &v }

func (a *api) storeGet(r *http.Request, req StoreRequest) (any, error) {
	kv, found, err := a.peerStore.Get(r.Context(), string(req.Key))
	if err != nil {
		return nil, err
	}
	out := StoreResponse{Revision: kv.ModRevision, Found: &found}
	if found {
		out.KV = ptr(storeKV(kv))
	}
	return out, nil
}

func (a *api) storePut(r *http.Request, req StoreRequest) (any, error) {
	rev, err := a.peerStore.Put(r.Context(), string(req.Key), req.Value)
	return StoreResponse{Revision: rev}, err
}

func (a *api) storeDelete(r *http.Request, req StoreRequest) (any, error) {
	rev, deleted, err := a.peerStore.Delete(r.Context(), string(req.Key))
	return StoreResponse{Revision: rev, Deleted: &deleted}, err
}

func (a *api) storeCAS(r *http.Request, req StoreRequest) (any, error) {
	rev, ok, err := a.peerStore.CompareAndSet(r.Context(), string(req.Key), req.ExpectModRevision, req.Value)
	return StoreResponse{Revision: rev, OK: &ok}, err
}

func (a *api) storeScan(r *http.Request, req StoreRequest) (any, error) {
	kvs, rev, err := a.peerStore.Scan(r.Context(), string(req.Prefix), req.Limit)
	if err != nil {
		return nil, err
	}
	out := StoreResponse{Revision: rev, KVs: make([]StoreKV, 0, len(kvs))}
	for _, kv := range kvs {
		out.KVs = append(out.KVs, storeKV(kv))
	}
	return out, nil
}

func (a *api) storeBatch(r *http.Request, req StoreRequest) (any, error) {
	conds := make([]store.Cond, len(req.Conds))
	for i, c := range req.Conds {
		conds[i] = store.Cond{Key: string(c.Key), ModRevision: c.ModRevision}
	}
	ops := make([]store.Op, len(req.Ops))
	for i, op := range req.Ops {
		switch op.Type {
		case "put":
			ops[i] = store.Put(string(op.Key), op.Value)
		case "delete":
			ops[i] = store.Delete(string(op.Key))
		default:
			return nil, errors.Join(store.ErrInvalid, errors.New("unknown op type "+op.Type))
		}
	}
	rev, ok, err := a.peerStore.Batch(r.Context(), conds, ops)
	return StoreResponse{Revision: rev, OK: &ok}, err
}

func (a *api) storeRevision(r *http.Request, _ StoreRequest) (any, error) {
	rev, err := a.peerStore.Revision(r.Context())
	return StoreResponse{Revision: rev}, err
}

// compacter is what the local store offers to drop watch history.
type compacter interface {
	Compact(ctx context.Context, rev int64) error
}

func (a *api) storeCompact(r *http.Request, req StoreRequest) (any, error) {
	c, ok := a.peerStore.(compacter)
	if !ok {
		return nil, Errorf(http.StatusNotImplemented, "this node's store does not compact")
	}
	if err := c.Compact(r.Context(), req.Revision); err != nil {
		return nil, err
	}
	return StoreResponse{Revision: req.Revision}, nil
}

// streamBody is a route's answer that writes itself (a watch stream).
type streamBody func(http.ResponseWriter, *http.Request)

func (a *api) storeWatch(r *http.Request, req StoreRequest) (any, error) {
	ctx, cancel := context.WithCancel(r.Context())
	start := req.AfterRevision
	if start == 0 {
		// Watch from the current revision (after a read barrier) rather
		// than "from now", so the client learns where it starts and can
		// resume from there on another node. An empty store has no such
		// revision: the client then knows it cannot resume (start 0).
		rev, err := a.peerStore.Revision(ctx)
		if err != nil {
			cancel()
			return nil, err
		}
		start = rev
	}
	w, err := a.peerStore.Watch(ctx, string(req.Prefix), start)
	if err != nil {
		cancel()
		return nil, err
	}
	beat := watchHeartbeat
	if req.HeartbeatMS > 0 {
		beat = min(max(time.Duration(req.HeartbeatMS)*time.Millisecond, minWatchHeartbeat), watchHeartbeat)
	}
	return streamBody(func(rw http.ResponseWriter, r *http.Request) {
		defer cancel()
		defer w.Close()
		a.streamWatch(rw, r, w, start, beat)
	}), nil
}

// streamWatch writes the watch stream of w until it ends, the client goes
// away, a write blocks too long, or the server shuts down.
func (a *api) streamWatch(rw http.ResponseWriter, r *http.Request, w store.Watcher, start int64, heartbeat time.Duration) {
	rc := http.NewResponseController(rw)
	defer func() { _ = rc.SetWriteDeadline(time.Time{}) }() // the connection may serve more requests
	enc := json.NewEncoder(rw)
	send := func(m WatchMessage) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(watchWriteTimeout))
		if err := enc.Encode(m); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	rw.Header().Set("Content-Type", "application/x-ndjson")
	rw.Header().Set("Cache-Control", "no-store")
	rw.WriteHeader(http.StatusOK)
	if !send(WatchMessage{StartRevision: &start, HeartbeatMS: heartbeat.Milliseconds()}) {
		return
	}
	// The watcher is drained into a queue of the stream's own at once, so
	// that encoding and writing do not make it lag; that queue is bounded
	// too, and a client that does not keep up is dropped with 429.
	q := &watchQueue{wake: make(chan struct{}, 1)}
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		q.drain(w)
	}()
	defer func() {
		w.Close()
		<-drained
	}()
	shutdown := serverShutdown(r)
	beat := time.NewTicker(heartbeat)
	defer beat.Stop()
	line := make([]StoreEvent, 0, watchLineEvents)
	for {
		select {
		case <-q.wake:
			for {
				evs, ended, err := q.take(line[:0])
				if len(evs) > 0 {
					if !send(WatchMessage{Events: evs}) {
						return
					}
					beat.Reset(heartbeat)
					continue
				}
				if ended {
					if err != nil && r.Context().Err() == nil {
						e := storeAPIError(err)
						send(WatchMessage{Error: &ErrorMessage{ErrorCode: e.Status, Message: e.Message}})
					}
					return
				}
				break
			}
		case <-beat.C:
			if !send(WatchMessage{}) {
				return
			}
		case <-shutdown:
			send(WatchMessage{Error: &ErrorMessage{ErrorCode: http.StatusServiceUnavailable, Message: "the server is shutting down: watch again on another node"}})
			return
		case <-r.Context().Done():
			return
		}
	}
}

// Bounds of a watch stream's own queue.
const (
	watchQueueEvents = 8192
	watchQueueBytes  = 32 << 20
)

// watchQueue holds the events of a watch stream not written yet.
type watchQueue struct {
	mu    sync.Mutex
	evs   []store.Event
	bytes int
	ended bool
	err   error
	wake  chan struct{}
}

func (q *watchQueue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// drain moves w's events into the queue until w ends or the queue
// overflows.
func (q *watchQueue) drain(w store.Watcher) {
	for ev := range w.Events() {
		size := len(ev.KV.Key) + len(ev.KV.Value)
		q.mu.Lock()
		if len(q.evs) >= watchQueueEvents || q.bytes+size > watchQueueBytes {
			q.evs, q.bytes, q.ended, q.err = nil, 0, true, store.ErrWatcherLagging
			q.mu.Unlock()
			q.signal()
			return
		}
		q.evs = append(q.evs, ev)
		q.bytes += size
		q.mu.Unlock()
		q.signal()
	}
	q.mu.Lock()
	q.ended, q.err = true, w.Err()
	q.mu.Unlock()
	q.signal()
}

// take appends to line the next events for one line or, once the queue is
// empty, says whether the watch ended and why.
func (q *watchQueue) take(line []StoreEvent) ([]StoreEvent, bool, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	size, n := 0, 0
	for n < len(q.evs) && len(line) < watchLineEvents && size < watchLineBytes {
		ev := q.evs[n]
		line = append(line, storeEvent(ev))
		size += len(ev.KV.Key) + len(ev.KV.Value)
		q.evs[n] = store.Event{}
		n++
	}
	q.evs = q.evs[n:]
	q.bytes -= size
	if len(q.evs) == 0 {
		q.evs = nil // let the array go
	}
	if len(line) > 0 {
		return line, false, nil
	}
	return nil, q.ended, q.err
}

func storeEvent(ev store.Event) StoreEvent {
	typ := "put"
	if ev.Type == store.EventDelete {
		typ = "delete"
	}
	return StoreEvent{Type: typ, KV: storeKV(ev.KV)}
}

// shutdowns maps each http.Server that serves watch streams to a channel
// closed when it shuts down: http.Server.Shutdown waits for active
// requests, which a watch stream never stops being on its own.
var shutdowns sync.Map // *http.Server → chan struct{}

func serverShutdown(r *http.Request) <-chan struct{} {
	srv, _ := r.Context().Value(http.ServerContextKey).(*http.Server)
	if srv == nil {
		return nil
	}
	ch := make(chan struct{})
	if v, loaded := shutdowns.LoadOrStore(srv, ch); loaded {
		return v.(chan struct{})
	}
	var once sync.Once // Shutdown runs the function again when called again
	srv.RegisterOnShutdown(func() {
		once.Do(func() {
			shutdowns.Delete(srv)
			close(ch)
		})
	})
	return ch
}
