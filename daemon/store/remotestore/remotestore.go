// Package remotestore is a store.Store that talks to a kcd cluster over
// its REST API (the store API of daemon/restapi, served by every Raft
// node). Worker-only nodes use it: they hold no replica of the store.
//
// # Nodes and failover
//
// The store knows the URLs it was given and the REST URLs of the Raft
// members it learns from GET /kcd/v1/cluster (on New, every
// RefreshInterval, and whenever a node fails). Nodes are ranked: the one
// that answered last comes first, and a node that failed or did not
// answer a read within the hedge delay goes last for a while (a frozen
// process accepts connections and answers nothing). When a node is
// unreachable or cannot serve (503), the store tries the next one, and
// keeps going round, with a backoff, until the request's context ends or
// RetryTimeout has passed.
//
// The best-ranked node is probed every ProbeInterval unless it answered a
// request within that interval, and demoted when it does not answer within
// the hedge delay, so that writes and the worker's heartbeats (which use
// the same ranking) leave a frozen node too.
//
// A read is hedged: when the node it went to has not answered within the
// hedge delay, it goes to the next node too, and so on, one node more per
// hedge delay; the first answer wins and the other requests are cancelled.
// The hedge delay is HedgeDelay, or longer when reads are slower than that
// as a rule (the smoothed latency of recent answers plus four times its
// mean deviation, as TCP times retransmissions; at most maxHedgeFactor
// HedgeDelays): a hedge is for a node slower than usual, and under a load
// that slows every node a fixed delay would send each read twice. So a
// read moves off a frozen node within the hedge delay, with at most one
// request per known node in flight.
//
// # Connections
//
// With the default clients, the store holds at most maxConnsPerNode (8)
// connections to each node for reads, and keeps as many idle (for 30 s,
// below the REST server's idle timeout of 60 s): reads beyond wait for
// one to free up rather than dial. Writes have a pool of their own, of the
// same size, so that a write never queues behind a burst of reads (the
// transport serves a host's waiting requests in order): a worker that
// reads every connector again must not hold up its offset commits. Watch
// streams have a pool of their own too, of at most maxWatchConnsPerNode
// (16) per node, so that they never take the connections requests need: a
// worker-only node has three (the worker's, its member's and the log
// levels'), and each client of its GET /kcd/v1/events adds three. A node's
// REST port so sees, from each worker-only node, at most 8 read and 8 write
// connections, one per watch, and those of its heartbeats (up to 8 while
// they hang, one otherwise); rest-max-connections bounds their sum.
//
// What is retried on another node:
//
//   - reads (Get, Scan, Revision) and opening a watch: always, since
//     they change nothing;
//   - writes (Put, Delete, CompareAndSet, Batch, Compact): only when the
//     request surely did not take effect: the connection could not be made
//     (nothing was sent), or the server answered with the
//     X-Kcd-Store-Unapplied header (it refused before proposing anything:
//     no store, store closed, invalid request). A write whose connection
//     broke after it was sent, that timed out, or that failed on the server
//     after it was proposed is NOT retried: the store cannot tell whether it
//     was applied (Raft may have committed it), and a retried Put would
//     make a second revision, a retried CompareAndSet or conditional Batch
//     would report failure for a write that succeeded. Such a write fails
//     with an error wrapping ErrUnknownOutcome; the caller reads the state
//     again and decides, as it does after any failed write.
//
// Writes are not made idempotent by a request id: the Raft log
// deduplicates proposals by an id the proposing node picks, and a client
// id would have to reach the state machine, which the store API does not
// carry today.
//
// # Watch
//
// A watch is one streaming request to one node. It asks the node for a
// heartbeat line every WatchHeartbeat and counts the stream as broken
// after three missed. When its connection drops, it goes quiet, or that
// node stops, the watcher opens the watch again on another node
// from the last revision it delivered (revisions are the same on every
// node: the state machine is replicated), and skips the events of that
// revision it already delivered, so the reader sees no gap and no repeat.
// It ends only by Close, its context, the store's Close (store.ErrClosed),
// store.ErrWatcherLagging (its reader fell more than WatchBuffer events or
// WatchBufferBytes bytes behind, or the server dropped it for lagging) or
// store.ErrCompacted (the history it needs is gone on every node it tried;
// also when it must resume but has no revision to resume from: a watch
// that started on an empty store and has seen nothing, or one that has
// seen part of revision 1).
package remotestore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kcd-project/kcd/api"
	"github.com/kcd-project/kcd/raft/fsm"
	"github.com/kcd-project/kcd/store"
)

// ErrUnknownOutcome is wrapped by the error of a write that was sent but
// whose answer was lost: it may or may not have been applied.
var ErrUnknownOutcome = errors.New("remotestore: the write may or may not have been applied")

// Options tune a Store; zero values take the defaults.
type Options struct {
	// HTTPClient sends the requests. Nil: three clients with DialTimeout
	// and response-header timeouts, one for reads, one for writes and one
	// for watch streams (package comment); a given client's Timeout must
	// be zero, since watch streams last (unary requests are bounded by
	// RequestTimeout).
	HTTPClient *http.Client
	// Transport adapts the default client's transport (TLS settings, the
	// caller's credentials); nil: used as is. Ignored with HTTPClient.
	Transport func(*http.Transport) http.RoundTripper
	// DialTimeout bounds connecting to a node (default 3 s).
	DialTimeout time.Duration
	// RequestTimeout bounds one attempt of a unary request on one node
	// (default 12 s: a write waits up to 10 s on the server for a Raft
	// leader).
	RequestTimeout time.Duration
	// RetryTimeout bounds how long a request keeps trying nodes (default
	// 30 s); the caller's context may end it sooner.
	RetryTimeout time.Duration
	// RefreshInterval is how often the members are learned again (default
	// 30 s).
	RefreshInterval time.Duration
	// HedgeDelay is how long a read waits at least for a node's answer
	// before it goes to the next node too (default 100 ms; longer while
	// reads are slower as a rule: the package comment).
	HedgeDelay time.Duration
	// ProbeInterval is how often the best-ranked node is asked a trivial
	// question (GET /kcd/v1/version, the hedge delay to answer) when it
	// answered nothing else within the interval, so that a node that froze
	// is demoted even while nothing is read (default 100 ms; negative: no
	// probes).
	ProbeInterval time.Duration
	// WatchHeartbeat is the heartbeat a watch asks its node for (default
	// 250 ms; nodes send one at least every 100 ms and at most every 5 s).
	WatchHeartbeat time.Duration
	// WatchBuffer and WatchBufferBytes bound the events a watcher holds
	// that its reader has not taken yet (defaults 1024 and 16 MiB); a
	// watcher that would hold more ends with store.ErrWatcherLagging.
	WatchBuffer      int
	WatchBufferBytes int
	// Prefer, when set, returns the node URL to try first (one of those
	// the store knows, else it is ignored): a Raft node passes the
	// leader's, so that its writes go straight to the node that serves
	// them. The ranking by answers applies to the others.
	Prefer func() string
	Logger *slog.Logger
}

func (o *Options) defaults() {
	if o.DialTimeout <= 0 {
		o.DialTimeout = 3 * time.Second
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = 12 * time.Second
	}
	if o.RetryTimeout <= 0 {
		o.RetryTimeout = 30 * time.Second
	}
	if o.RefreshInterval <= 0 {
		o.RefreshInterval = 30 * time.Second
	}
	if o.HedgeDelay <= 0 {
		o.HedgeDelay = 100 * time.Millisecond
	}
	if o.ProbeInterval == 0 {
		o.ProbeInterval = 100 * time.Millisecond
	}
	if o.WatchHeartbeat <= 0 {
		o.WatchHeartbeat = 250 * time.Millisecond
	}
	if o.WatchBuffer <= 0 {
		o.WatchBuffer = 1024
	}
	if o.WatchBufferBytes <= 0 {
		o.WatchBufferBytes = 16 << 20
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.HTTPClient == nil {
		o.HTTPClient = o.client(maxConnsPerNode)
	}
}

// client is a client with DialTimeout and response-header timeouts that
// holds at most conns connections to each node, as many idle as open: a
// burst over the idle limit would close connections after use and dial new
// ones for the next.
func (o *Options) client(conns int) *http.Client {
	d := &net.Dialer{Timeout: o.DialTimeout, KeepAlive: 15 * time.Second}
	tr := &http.Transport{
		DialContext:           d.DialContext,
		MaxIdleConnsPerHost:   conns,
		MaxConnsPerHost:       conns,
		IdleConnTimeout:       30 * time.Second,
		ResponseHeaderTimeout: o.RequestTimeout,
	}
	var rt http.RoundTripper = tr
	if o.Transport != nil {
		rt = o.Transport(tr)
	}
	return &http.Client{Transport: rt}
}

// Bounds of what the store reads from a node.
const (
	maxResponse = 256 << 20 // one unary answer (a large Scan)
	maxLine     = 8 << 20   // one line of a watch stream
)

// maxConnsPerNode bounds the connections of reads to one node, and those
// of writes (the default clients'); requests over it wait for one to free
// up.
const maxConnsPerNode = 8

// maxWatchConnsPerNode bounds the connections of watch streams to one
// node, a pool of their own so that streams never take the connections
// requests need; a watch over it waits for one to free up.
const maxWatchConnsPerNode = 16

// maxHedgeFactor bounds the hedge delay to this many HedgeDelays, however
// slow reads are: a frozen node is left within a second at the default.
const maxHedgeFactor = 10

// demoteFor is how long a node that failed or did not answer in time
// stays at the end of the ranking, unless it answers first.
const demoteFor = 5 * time.Second

// Store is a store.Store over the REST API of a kcd cluster.
type Store struct {
	opts  Options
	hc    *http.Client // of reads
	wrc   *http.Client // of writes: hc when given in Options
	whc   *http.Client // of watch streams: hc when given in Options
	log   *slog.Logger
	seeds []string

	mu        sync.Mutex
	endpoints []string // seeds and learned members, deduplicated
	current   int      // index of the endpoint that answered last
	// demoted holds, for endpoints that failed or did not answer in time,
	// until when they rank last; at most one entry per endpoint.
	demoted map[string]time.Time
	// lastOK is when the endpoint ranked first last answered.
	lastOK time.Time
	// srtt and rttvar smooth the latency of answered reads and its mean
	// deviation (RFC 6298's estimators), for the hedge delay.
	srtt, rttvar time.Duration

	refresh chan struct{} // a token: learn the members now

	life  context.Context // ends with Close
	close context.CancelFunc
	wg    sync.WaitGroup
}

var _ store.Store = (*Store)(nil)

// New returns a store that talks to the nodes at urls (REST base URLs,
// e.g. http://10.0.0.1:8083) and to the members it learns from them. It
// does not wait for a node to answer: requests do.
func New(urls []string, opts Options) (*Store, error) {
	ownClient := opts.HTTPClient == nil
	opts.defaults()
	whc, wrc := opts.HTTPClient, opts.HTTPClient
	if ownClient {
		whc = opts.client(maxWatchConnsPerNode)
		wrc = opts.client(maxConnsPerNode)
	}
	var seeds []string
	for _, u := range urls {
		u = strings.TrimRight(strings.TrimSpace(u), "/")
		if u == "" {
			continue
		}
		pu, err := url.Parse(u)
		if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
			return nil, fmt.Errorf("remotestore: node URL %q: want http(s)://host:port", u)
		}
		if pu.User != nil {
			// Node URLs appear in logs and errors; kcd's REST API takes no
			// credentials anyway.
			return nil, fmt.Errorf("remotestore: node URL %s: credentials in node URLs are not supported", pu.Redacted())
		}
		if !slices.Contains(seeds, u) {
			seeds = append(seeds, u)
		}
	}
	if len(seeds) == 0 {
		return nil, errors.New("remotestore: no node URL")
	}
	life, cancel := context.WithCancel(context.Background())
	s := &Store{
		opts: opts, hc: opts.HTTPClient, wrc: wrc, whc: whc, log: opts.Logger, seeds: seeds,
		endpoints: slices.Clone(seeds),
		demoted:   map[string]time.Time{},
		refresh:   make(chan struct{}, 1),
		life:      life, close: cancel,
	}
	s.wg.Add(1)
	go s.refreshLoop()
	if opts.ProbeInterval > 0 {
		s.wg.Add(1)
		go s.probeLoop()
	}
	s.refreshNow()
	return s, nil
}

// probeLoop demotes the best-ranked node when it does not answer a
// trivial request within the hedge delay: writes and heartbeats, which are not
// hedged, then go to the next node.
func (s *Store) probeLoop() {
	defer s.wg.Done()
	tick := time.NewTicker(s.opts.ProbeInterval)
	defer tick.Stop()
	for {
		select {
		case <-s.life.Done():
			return
		case <-tick.C:
		}
		if s.answeredWithin(s.opts.ProbeInterval) {
			continue // it answers: no need to ask it more
		}
		ep := s.Endpoints()[0]
		ctx, cancel := context.WithTimeout(s.life, s.hedgeDelay())
		var v api.VersionInfo
		_, err := s.attempt(ctx, s.hc, ep, http.MethodGet, "/kcd/v1/version", nil, false, &v)
		cancel()
		if err != nil && s.life.Err() == nil {
			s.log.Debug("node did not answer a probe in time; demoted", "node", ep, "err", err)
			s.demote(ep)
		}
	}
}

// Endpoints returns the node URLs the store knows now, in the order it
// tries them: the preferred one (Options.Prefer), then from the one that
// answered last; the demoted ones last.
func (s *Store) Endpoints() []string {
	var prefer string
	if s.opts.Prefer != nil {
		prefer = strings.TrimRight(s.opts.Prefer(), "/")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	out := make([]string, 0, len(s.endpoints))
	var last []string
	for i := range s.endpoints {
		ep := s.endpoints[(s.current+i)%len(s.endpoints)]
		if until, ok := s.demoted[ep]; ok && now.Before(until) {
			last = append(last, ep)
			continue
		}
		if ep == prefer {
			out = slices.Insert(out, 0, ep)
			continue
		}
		out = append(out, ep)
	}
	return append(out, last...)
}

// demote ranks ep last for demoteFor.
func (s *Store) demote(ep string) {
	s.mu.Lock()
	if slices.Contains(s.endpoints, ep) {
		s.demoted[ep] = time.Now().Add(demoteFor)
	}
	s.mu.Unlock()
}

func (s *Store) refreshNow() {
	select {
	case s.refresh <- struct{}{}:
	default:
	}
}

func (s *Store) refreshLoop() {
	defer s.wg.Done()
	tick := time.NewTicker(s.opts.RefreshInterval)
	defer tick.Stop()
	for {
		select {
		case <-s.life.Done():
			return
		case <-tick.C:
		case <-s.refresh:
		}
		s.learnMembers()
	}
}

// ClusterInfo is GET /kcd/v1/cluster of a Raft node, hedged as a read is.
func (s *Store) ClusterInfo(ctx context.Context) (api.ClusterInfo, error) {
	if err := s.check(ctx); err != nil {
		return api.ClusterInfo{}, err
	}
	rctx, cancel := context.WithTimeout(ctx, s.opts.RetryTimeout)
	defer cancel()
	stop := context.AfterFunc(s.life, cancel)
	defer stop()
	info, _, err := hedged[api.ClusterInfo](s, ctx, rctx, http.MethodGet, "/kcd/v1/cluster", nil, false)
	return info, err
}

// learnMembers asks the known nodes for the cluster's members and adds
// their REST URLs. Seeds are always kept; members that left are dropped.
func (s *Store) learnMembers() {
	ctx, cancel := context.WithTimeout(s.life, s.opts.DialTimeout+2*time.Second)
	defer cancel()
	info, _, err := hedged[api.ClusterInfo](s, ctx, ctx, http.MethodGet, "/kcd/v1/cluster", nil, false)
	if err != nil {
		return
	}
	urls := slices.Clone(s.seeds)
	for _, m := range info.Members {
		u := strings.TrimRight(m.RESTURL, "/")
		if u == "" || (len(m.Roles) > 0 && !slices.Contains(m.Roles, "raft")) || slices.Contains(urls, u) {
			continue
		}
		if pu, err := url.Parse(u); err != nil || pu.User != nil || pu.Host == "" {
			continue
		}
		urls = append(urls, u)
	}
	s.mu.Lock()
	cur := s.endpoints[s.current]
	s.endpoints = urls
	s.current = max(slices.Index(urls, cur), 0)
	for ep := range s.demoted {
		if !slices.Contains(urls, ep) {
			delete(s.demoted, ep)
		}
	}
	s.mu.Unlock()
}

// succeeded makes ep the endpoint tried first.
func (s *Store) succeeded(ep string) {
	s.mu.Lock()
	if i := slices.Index(s.endpoints, ep); i >= 0 {
		s.current = i
	}
	delete(s.demoted, ep)
	s.lastOK = time.Now()
	s.mu.Unlock()
}

// answeredWithin tells whether the endpoint ranked first answered within d
// and is not demoted.
func (s *Store) answeredWithin(d time.Duration) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	ep := s.endpoints[s.current]
	_, demoted := s.demoted[ep]
	return !demoted && time.Since(s.lastOK) < d
}

// sampleRead takes the latency of an answered read into the estimators of
// the hedge delay.
func (s *Store) sampleRead(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srtt == 0 {
		s.srtt, s.rttvar = d, d/2
		return
	}
	s.rttvar += (max(s.srtt-d, d-s.srtt) - s.rttvar) / 4
	s.srtt += (d - s.srtt) / 8
}

// hedgeDelay is how long a read waits for a node before it asks the next
// too: HedgeDelay, or the usual latency of reads when that is longer, up
// to maxHedgeFactor HedgeDelays.
func (s *Store) hedgeDelay() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return min(max(s.opts.HedgeDelay, s.srtt+4*s.rttvar), maxHedgeFactor*s.opts.HedgeDelay)
}

// check refuses calls after Close or with an ended context.
func (s *Store) check(ctx context.Context) error {
	if s.life.Err() != nil {
		return store.ErrClosed
	}
	return ctx.Err()
}

// remoteError is an error answer of a node.
type remoteError struct {
	url       string
	status    int
	message   string
	unapplied bool
}

func (e *remoteError) Error() string {
	return fmt.Sprintf("%s: HTTP %d: %s", e.url, e.status, e.message)
}

// storeErr maps an error answer to the store error it stands for.
func (e *remoteError) storeErr() error {
	var sentinel error
	switch e.status {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge:
		sentinel = store.ErrInvalid
	case api.StatusCompacted:
		sentinel = store.ErrCompacted
	case api.StatusLagging:
		sentinel = store.ErrWatcherLagging
	default:
		return nil
	}
	if msg := strings.TrimPrefix(strings.TrimPrefix(e.message, sentinel.Error()), ": "); msg != "" && msg != e.message {
		return fmt.Errorf("remotestore: %s: %w: %s", e.url, sentinel, msg)
	} else if msg == "" {
		return fmt.Errorf("remotestore: %s: %w", e.url, sentinel)
	}
	return fmt.Errorf("remotestore: %s: %w (%s)", e.url, sentinel, e.message)
}

// failover tells whether an error answer is one another node may not give.
func (e *remoteError) failover() bool {
	return e.status >= 500 || e.status == http.StatusNotFound || e.status == http.StatusMethodNotAllowed
}

func readRemoteError(url string, res *http.Response) *remoteError {
	body, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	var em api.ErrorMessage
	if json.Unmarshal(body, &em) != nil || em.Message == "" {
		em.Message = strings.TrimSpace(string(body))
	}
	return &remoteError{url: url, status: res.StatusCode, message: em.Message, unapplied: res.Header.Get(api.UnappliedHeader) == "true"}
}

// notSent tells whether a transport error surely happened before the
// request left this process: dialling failed.
func notSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// call sends one unary request, trying nodes in turn as the rules of the
// package comment allow; write says whether it changes the store. A read
// under store.AllowStale asks the node for a read that may be stale and
// records on the context's Staleness how stale the answer was.
func (s *Store) call(ctx context.Context, method, path string, in *api.StoreRequest, write bool) (api.StoreResponse, error) {
	var out api.StoreResponse
	if err := s.check(ctx); err != nil {
		return out, err
	}
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return out, fmt.Errorf("remotestore: encode %s: %w", path, err)
		}
		if len(body) > api.MaxStoreRequest {
			return out, fmt.Errorf("remotestore: %w: request of %d bytes exceeds %d", store.ErrInvalid, len(body), api.MaxStoreRequest)
		}
	}
	rctx, cancel := context.WithTimeout(ctx, s.opts.RetryTimeout)
	defer cancel()
	stop := context.AfterFunc(s.life, cancel)
	defer stop()
	if !write {
		st := store.StaleOK(ctx)
		out, stale, err := hedged[api.StoreResponse](s, ctx, rctx, method, path, body, st != nil)
		if err == nil && st != nil && stale != "" {
			if ms, perr := strconv.ParseInt(stale, 10, 64); perr == nil && ms > 0 {
				st.Record(time.Duration(ms) * time.Millisecond)
			}
		}
		return out, err
	}
	var lastErr error
	for round, backoff := 0, 50*time.Millisecond; ; round++ {
		for _, ep := range s.Endpoints() {
			out = api.StoreResponse{}
			_, err := s.attempt(rctx, s.wrc, ep, method, path, body, false, &out)
			if err == nil {
				s.succeeded(ep)
				return out, nil
			}
			if e := s.ended(ctx); e != nil {
				return out, e
			}
			var re *remoteError
			switch {
			case errors.As(err, &re):
				if se := re.storeErr(); se != nil {
					return out, se
				}
				if !re.failover() || !re.unapplied {
					if re.status >= 500 {
						return out, fmt.Errorf("%w: %v", ErrUnknownOutcome, err)
					}
					return out, fmt.Errorf("remotestore: %w", err)
				}
			case !notSent(err):
				s.demote(ep)
				return out, fmt.Errorf("%w: %s%s: %v", ErrUnknownOutcome, ep, path, err)
			}
			lastErr = err
			s.log.Debug("store request failed on a node; trying another", "node", ep, "path", path, "err", err)
			s.demote(ep)
			s.refreshNow()
			if rctx.Err() != nil {
				break
			}
		}
		select {
		case <-rctx.Done():
			if e := s.ended(ctx); e != nil {
				return out, e
			}
			return out, fmt.Errorf("remotestore: %s: no node answered within %v: %w", path, s.opts.RetryTimeout, lastErr)
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, time.Second)
	}
}

// ended is the error of a call whose context or store ended, nil while
// neither has.
func (s *Store) ended(ctx context.Context) error {
	e := s.check(ctx)
	if e == nil || errors.Is(e, store.ErrClosed) {
		return e
	}
	return fmt.Errorf("remotestore: %w", e)
}

// result is the outcome of one attempt of a hedged read.
type result[T any] struct {
	ep    string
	out   T
	stale string
	err   error
}

// hedged sends a read to the nodes in rank order, one more each hedge delay
// that passes without an answer or as soon as one fails, and returns the
// first answer with its StaleHeader; when every node failed it goes round
// again after a backoff until rctx ends. ctx is the caller's.
func hedged[T any](s *Store, ctx, rctx context.Context, method, path string, body []byte, staleOK bool) (T, string, error) {
	var zero T
	var lastErr error
	for backoff := 50 * time.Millisecond; ; backoff = min(backoff*2, time.Second) {
		out, stale, err, done := hedgeRound[T](s, rctx, method, path, body, staleOK)
		if err == nil {
			return out, stale, nil
		}
		if e := s.ended(ctx); e != nil {
			return zero, "", e
		}
		if done {
			return zero, "", err
		}
		lastErr = err
		select {
		case <-rctx.Done():
			if e := s.ended(ctx); e != nil {
				return zero, "", e
			}
			return zero, "", fmt.Errorf("remotestore: %s: no node answered within %v: %w", path, s.opts.RetryTimeout, lastErr)
		case <-time.After(backoff):
		}
	}
}

// hedgeRound is one round of hedged over the nodes ranked now; done says
// that its error is the answer (a store error, or one another node would
// give too).
func hedgeRound[T any](s *Store, rctx context.Context, method, path string, body []byte, staleOK bool) (out T, stale string, err error, done bool) {
	eps := s.Endpoints()
	actx, cancel := context.WithCancel(rctx)
	defer cancel() // ends the attempts still in flight
	results := make(chan result[T], len(eps))
	next, inflight := 0, 0
	launch := func() {
		ep := eps[next]
		next++
		inflight++
		go func() {
			r := result[T]{ep: ep}
			start := time.Now()
			r.stale, r.err = s.attempt(actx, s.hc, ep, method, path, body, staleOK, &r.out)
			if r.err == nil {
				s.sampleRead(time.Since(start))
			}
			results <- r
		}()
	}
	delay := s.hedgeDelay()
	launch()
	hedge := time.NewTimer(delay)
	defer hedge.Stop()
	err = errors.New("no node answered")
	for inflight > 0 {
		select {
		case r := <-results:
			inflight--
			if r.err == nil {
				s.succeeded(r.ep)
				return r.out, r.stale, nil, false
			}
			if rctx.Err() != nil {
				return out, "", r.err, false
			}
			var re *remoteError
			if errors.As(r.err, &re) {
				if se := re.storeErr(); se != nil {
					return out, "", se, true
				}
				if !re.failover() {
					return out, "", fmt.Errorf("remotestore: %w", r.err), true
				}
			}
			err = r.err
			s.log.Debug("store read failed on a node; trying another", "node", r.ep, "path", path, "err", r.err)
			s.demote(r.ep)
			s.refreshNow()
			if next < len(eps) {
				launch()
				hedge.Reset(delay)
			}
		case <-hedge.C:
			if next < len(eps) {
				s.demote(eps[next-1]) // it did not answer in time
				launch()
				hedge.Reset(delay)
			}
		case <-rctx.Done():
			return out, "", err, false
		}
	}
	return out, "", err, false
}

// attempt sends the request to one node and decodes its answer into out;
// it returns the answer's StaleHeader. staleOK asks for a read that may be
// stale.
func (s *Store) attempt(ctx context.Context, hc *http.Client, ep, method, path string, body []byte, staleOK bool, out any) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.RequestTimeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, ep+path, rd)
	if err != nil {
		return "", err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if staleOK {
		req.Header.Set(api.AllowStaleHeader, "true")
	}
	res, err := hc.Do(req)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return "", readRemoteError(ep, res)
	}
	if err := json.NewDecoder(io.LimitReader(res.Body, maxResponse)).Decode(out); err != nil {
		return "", fmt.Errorf("decode the answer of %s%s: %w", ep, path, err)
	}
	return res.Header.Get(api.StaleHeader), nil
}

func validate(c fsm.Command) error {
	if err := c.Validate(); err != nil {
		return fmt.Errorf("remotestore: %w", err)
	}
	return nil
}

func kvOf(kv api.StoreKV) store.KV {
	return store.KV{Key: string(kv.Key), Value: kv.Value, CreateRevision: kv.CreateRevision, ModRevision: kv.ModRevision}
}

func deref(b *bool) bool { return b != nil && *b }

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, key string) (store.KV, bool, error) {
	if err := s.check(ctx); err != nil {
		return store.KV{}, false, err
	}
	if err := validate(fsm.Command{Kind: fsm.KindDelete, Key: key}); err != nil {
		return store.KV{}, false, err
	}
	out, err := s.call(ctx, http.MethodPost, "/kcd/v1/store/get", &api.StoreRequest{Key: []byte(key)}, false)
	if err != nil || !deref(out.Found) || out.KV == nil {
		return store.KV{}, false, err
	}
	return kvOf(*out.KV), true, nil
}

// Put implements store.Store.
func (s *Store) Put(ctx context.Context, key string, value []byte) (int64, error) {
	if err := s.check(ctx); err != nil {
		return 0, err
	}
	if err := validate(fsm.Command{Kind: fsm.KindPut, Key: key, Value: value}); err != nil {
		return 0, err
	}
	out, err := s.call(ctx, http.MethodPost, "/kcd/v1/store/put", &api.StoreRequest{Key: []byte(key), Value: value}, true)
	return out.Revision, err
}

// Delete implements store.Store.
func (s *Store) Delete(ctx context.Context, key string) (int64, bool, error) {
	if err := s.check(ctx); err != nil {
		return 0, false, err
	}
	if err := validate(fsm.Command{Kind: fsm.KindDelete, Key: key}); err != nil {
		return 0, false, err
	}
	out, err := s.call(ctx, http.MethodPost, "/kcd/v1/store/delete", &api.StoreRequest{Key: []byte(key)}, true)
	return out.Revision, deref(out.Deleted), err
}

// CompareAndSet implements store.Store.
func (s *Store) CompareAndSet(ctx context.Context, key string, expectModRev int64, value []byte) (int64, bool, error) {
	if err := s.check(ctx); err != nil {
		return 0, false, err
	}
	if err := validate(fsm.Command{Kind: fsm.KindCompareAndSet, Key: key, ExpectModRev: expectModRev, Value: value}); err != nil {
		return 0, false, err
	}
	out, err := s.call(ctx, http.MethodPost, "/kcd/v1/store/cas",
		&api.StoreRequest{Key: []byte(key), ExpectModRevision: expectModRev, Value: value}, true)
	return out.Revision, deref(out.OK), err
}

// Scan implements store.Store.
func (s *Store) Scan(ctx context.Context, prefix string, limit int) ([]store.KV, int64, error) {
	if err := s.check(ctx); err != nil {
		return nil, 0, err
	}
	if limit < 0 {
		return nil, 0, fmt.Errorf("remotestore: %w: negative limit %d", store.ErrInvalid, limit)
	}
	out, err := s.call(ctx, http.MethodPost, "/kcd/v1/store/scan", &api.StoreRequest{Prefix: []byte(prefix), Limit: limit}, false)
	if err != nil {
		return nil, 0, err
	}
	kvs := make([]store.KV, len(out.KVs))
	for i, kv := range out.KVs {
		kvs[i] = kvOf(kv)
	}
	return kvs, out.Revision, nil
}

// Batch implements store.Store.
func (s *Store) Batch(ctx context.Context, conds []store.Cond, ops []store.Op) (int64, bool, error) {
	if err := s.check(ctx); err != nil {
		return 0, false, err
	}
	if err := validate(fsm.Command{Kind: fsm.KindBatch, Conds: conds, Ops: ops}); err != nil {
		return 0, false, err
	}
	req := &api.StoreRequest{Conds: make([]api.StoreCond, len(conds)), Ops: make([]api.StoreOp, len(ops))}
	for i, c := range conds {
		req.Conds[i] = api.StoreCond{Key: []byte(c.Key), ModRevision: c.ModRevision}
	}
	for i, op := range ops {
		typ := "put"
		if op.Type == store.OpDelete {
			typ = "delete"
		}
		req.Ops[i] = api.StoreOp{Type: typ, Key: []byte(op.Key), Value: op.Value}
	}
	out, err := s.call(ctx, http.MethodPost, "/kcd/v1/store/batch", req, true)
	return out.Revision, deref(out.OK), err
}

// Revision implements store.Store.
func (s *Store) Revision(ctx context.Context) (int64, error) {
	out, err := s.call(ctx, http.MethodGet, "/kcd/v1/store/revision", nil, false)
	return out.Revision, err
}

// Compact drops the cluster's watch history up to revision rev (see
// raftstore.Store.Compact).
func (s *Store) Compact(ctx context.Context, rev int64) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	if err := validate(fsm.Command{Kind: fsm.KindCompact, Rev: rev}); err != nil {
		return err
	}
	_, err := s.call(ctx, http.MethodPost, "/kcd/v1/store/compact", &api.StoreRequest{Revision: rev}, true)
	return err
}

// Close implements store.Store: later calls fail with store.ErrClosed and
// watchers end with it.
func (s *Store) Close() error {
	s.close()
	s.wg.Wait()
	return nil
}
