package javahost

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"
)

// A plugin that exhausts the heap each time it starts halts the node's
// shared host each time, and every Java task of the node fails with it.
// The host names the unit whose thread ran out (heapBlame); once the same
// connector has done so quarantineStrikes times within quarantineWindow,
// its units run in a Java host of their own (same options, own backoff),
// so it harms only itself. The quarantine holds until an operator restarts
// the connector (connect.RestartObserver). It is per node: each node
// counts the deaths of its own host.
const (
	quarantineStrikes = 2
	quarantineWindow  = 10 * time.Minute
	// maxOwnHosts bounds the extra host processes of a node; a connector
	// quarantined beyond it does not run until it is restarted.
	maxOwnHosts = 4
	// maxStrikeRecords bounds the connectors remembered, with strikes or
	// quarantined.
	maxStrikeRecords = 1024
	// ownHostLinger: a connector's own host outlives its last unit this
	// long, so the restart of a failed task finds it (and its backoff).
	ownHostLinger = time.Minute
)

// strikes counts, per connector, the heap exhaustions of the shared host
// charged to it.
type strikes struct {
	threshold int
	window    time.Duration
	at        map[string][]time.Time // within the window, oldest first
	// quarantined holds the connectors over the threshold: when, and
	// after how many strikes.
	quarantined map[string]quarantined
}

type quarantined struct {
	since   time.Time
	strikes int
}

func newStrikes(threshold int, window time.Duration) *strikes {
	return &strikes{threshold: threshold, window: window, at: map[string][]time.Time{}, quarantined: map[string]quarantined{}}
}

// charge notes that name exhausted the shared host's heap at now. It
// answers whether name is quarantined now, and whether by this strike.
func (s *strikes) charge(name string, now time.Time) (isQuarantined, newly bool) {
	if _, ok := s.quarantined[name]; ok {
		return true, false
	}
	ts := s.recent(name, now)
	ts = append(ts, now)
	if len(ts) < s.threshold {
		s.at[name] = ts
		s.bound(now)
		return false, false
	}
	delete(s.at, name)
	s.quarantined[name] = quarantined{since: now, strikes: len(ts)}
	s.bound(now)
	return true, true
}

// recent is name's strikes still within the window at now.
func (s *strikes) recent(name string, now time.Time) []time.Time {
	ts := s.at[name]
	i := 0
	for i < len(ts) && now.Sub(ts[i]) >= s.window {
		i++
	}
	return ts[i:]
}

// bound keeps at most maxStrikeRecords connectors of each kind: strikes
// out of the window go first, then the oldest.
func (s *strikes) bound(now time.Time) {
	if len(s.at) > maxStrikeRecords {
		for name := range s.at {
			if len(s.recent(name, now)) == 0 {
				delete(s.at, name)
			}
		}
	}
	for len(s.at) > maxStrikeRecords {
		oldest, at := "", time.Time{}
		for name, ts := range s.at {
			if last := ts[len(ts)-1]; oldest == "" || last.Before(at) {
				oldest, at = name, last
			}
		}
		delete(s.at, oldest)
	}
	for len(s.quarantined) > maxStrikeRecords {
		oldest, at := "", time.Time{}
		for name, q := range s.quarantined {
			if oldest == "" || q.since.Before(at) {
				oldest, at = name, q.since
			}
		}
		delete(s.quarantined, oldest)
	}
}

// isQuarantined tells whether name is quarantined, and after how many
// strikes.
func (s *strikes) isQuarantined(name string) (bool, int) {
	q, ok := s.quarantined[name]
	return ok, q.strikes
}

// reset forgets name's strikes and its quarantine: an operator restarted it.
func (s *strikes) reset(name string) (wasQuarantined bool) {
	_, wasQuarantined = s.quarantined[name]
	delete(s.quarantined, name)
	delete(s.at, name)
	return wasQuarantined
}

// quarantine is the shared host's record of strikes and the hosts of the
// connectors quarantined.
type quarantine struct {
	mu      sync.Mutex
	strikes *strikes
	own     map[string]*ownHost
	maxOwn  int
	linger  time.Duration
}

// ownHost is a quarantined connector's host and how many of its units run
// there.
type ownHost struct {
	h     *Host
	units int
	idle  *time.Timer // closes h, once units is 0 for the linger
}

func newQuarantine() *quarantine {
	return &quarantine{strikes: newStrikes(quarantineStrikes, quarantineWindow), own: map[string]*ownHost{},
		maxOwn: maxOwnHosts, linger: ownHostLinger}
}

// heapDeath charges the shared host's end by heap exhaustion to
// connector; it answers whether the connector no longer runs there.
func (h *Host) heapDeath(connector string) (removed bool) {
	q := h.quarantine
	q.mu.Lock()
	is, newly := q.strikes.charge(connector, time.Now())
	_, n := q.strikes.isQuarantined(connector)
	q.mu.Unlock()
	if newly {
		h.log.Warn("a java connector exhausted the shared host's heap again; its connectors and tasks run in a java host of their own until it is restarted",
			"connector", connector, "times", n, "within", fmtWindow(q.strikes.window), "restart", restartPath(connector))
	}
	return is
}

// hostFor is the host connector's units run in: h itself, or the
// connector's own host when it is quarantined. release is called once
// the unit has ended. A quarantined connector for which no host of its
// own is left fails with why.
func (h *Host) hostFor(connector string) (host *Host, release func(), err error) {
	q := h.quarantine
	if q == nil {
		return h, func() {}, nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	h.mu.Lock()
	closed := h.closed
	h.mu.Unlock()
	if closed {
		return nil, nil, errors.New("java host: closed")
	}
	is, n := q.strikes.isQuarantined(connector)
	if !is {
		return h, func() {}, nil
	}
	o := q.own[connector]
	if o == nil {
		if len(q.own) >= q.maxOwn {
			return nil, nil, fmt.Errorf("the java connector %s exhausted the Java host's heap %d times in %s and %d connectors already run in Java hosts of their own, the most there may be; it runs again after POST %s",
				connector, n, fmtWindow(q.strikes.window), len(q.own), restartPath(connector))
		}
		opts := h.opts
		opts.Logger = h.opts.Logger.With("java_host_for", connector)
		oh := New(opts)
		oh.quarantine, oh.forConnector = nil, connector
		oh.note = fmt.Sprintf("kcd runs the java connector %s in a Java host of its own: it exhausted the shared Java host's heap %d times in %s (POST %s returns it to the shared host)",
			connector, n, fmtWindow(q.strikes.window), restartPath(connector))
		o = &ownHost{h: oh}
		q.own[connector] = o
		h.log.Info("java host of its own made for a connector", "connector", connector, "hosts_of_their_own", len(q.own))
	}
	if o.idle != nil {
		o.idle.Stop()
		o.idle = nil
	}
	o.units++
	var once sync.Once
	return o.h, func() { once.Do(func() { q.release(connector, o) }) }, nil
}

// release notes the end of one of o's units; the last closes o after the
// linger.
func (q *quarantine) release(connector string, o *ownHost) {
	q.mu.Lock()
	defer q.mu.Unlock()
	o.units--
	if o.units > 0 {
		return
	}
	o.idle = time.AfterFunc(q.linger, func() {
		q.mu.Lock()
		if o.units > 0 || q.own[connector] != o {
			q.mu.Unlock()
			return
		}
		delete(q.own, connector)
		q.mu.Unlock()
		_ = o.h.Close()
	})
}

// forgive lifts connector's quarantine and forgets its strikes: an
// operator restarted it. Its units, restarted, run in the shared host;
// its own host closes after the last of them left it.
func (h *Host) forgive(connector string) {
	q := h.quarantine
	if q == nil {
		return
	}
	q.mu.Lock()
	was := q.strikes.reset(connector)
	q.mu.Unlock()
	if was {
		h.log.Info("a restarted java connector runs in the shared java host again", "connector", connector)
	}
}

// closeOwn closes every connector's own host (the shared one closes).
func (q *quarantine) closeOwn() {
	q.mu.Lock()
	own := q.own
	q.own = map[string]*ownHost{}
	for _, o := range own {
		if o.idle != nil {
			o.idle.Stop()
		}
	}
	q.mu.Unlock()
	for _, o := range own {
		_ = o.h.Close()
	}
}

// ownHostPids are the process ids of the hosts of quarantined connectors
// that run, by connector.
func (h *Host) ownHostPids() map[string]int {
	out := map[string]int{}
	if h.quarantine == nil {
		return out
	}
	h.quarantine.mu.Lock()
	defer h.quarantine.mu.Unlock()
	for name, o := range h.quarantine.own {
		if pid := o.h.Pid(); pid != 0 {
			out[name] = pid
		}
	}
	return out
}

// notedError is an error of a unit in a connector's own host, led by
// why the connector runs there.
type notedError struct {
	note string
	err  error
}

func (e *notedError) Error() string { return e.note + "\n" + e.err.Error() }
func (e *notedError) Unwrap() error { return e.err }

// noted is err led by h's note when h is a connector's own host.
func (h *Host) noted(err error) error {
	if err == nil || h.note == "" {
		return err
	}
	var ne *notedError
	if errors.As(err, &ne) {
		return err
	}
	return &notedError{note: h.note, err: err}
}

func restartPath(connector string) string {
	return "/connectors/" + url.PathEscape(connector) + "/restart?includeTasks=true"
}

// fmtWindow writes a window without trailing zero units: 10m, not 10m0s.
func fmtWindow(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}
