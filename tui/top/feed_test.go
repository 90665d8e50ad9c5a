package top

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kcd-project/kcd/daemon"
	"github.com/kcd-project/kcd/daemon/client"
	"github.com/kcd-project/kcd/daemon/config"
)

// startNode starts an in-process kcd (Raft, coordinator and worker on an
// embedded dev Kafka) and returns its REST URL once it is healthy.
func startNode(t *testing.T) string {
	t.Helper()
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.RESTAddr = "127.0.0.1:0"
	cfg.DevKafka = true
	cfg.DevKafkaPort = 0
	cfg.PeerAddr = "127.0.0.1:0"
	n := daemon.New(cfg, slog.New(slog.DiscardHandler))
	if err := n.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	waitUntil(t, 20*time.Second, func() (bool, string) {
		res, err := http.Get(n.RESTURL() + "/health")
		if err != nil {
			return false, fmt.Sprintf("the node did not become healthy: %v", err)
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK, "the node did not become healthy: " + res.Status
	})
	return n.RESTURL()
}

// waitUntil polls cond until it holds, failing the test after d with what
// cond last said.
func waitUntil(t *testing.T, d time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		ok, last := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(last)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// recorder keeps what a feed sends, and checks as it goes that snapshots
// arrive with growing sequence numbers.
type recorder struct {
	mu   sync.Mutex
	msgs []any
	bad  string // the first out-of-order Seq
	seq  uint64
}

func (r *recorder) send(m any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := m.(SnapshotMsg); ok {
		if s.Seq <= r.seq && r.bad == "" {
			r.bad = fmt.Sprintf("snapshot Seq %d after Seq %d", s.Seq, r.seq)
		}
		r.seq = s.Seq
	}
	r.msgs = append(r.msgs, m)
}

func (r *recorder) all() []any {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]any(nil), r.msgs...)
}

func (r *recorder) check(t *testing.T) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.bad != "" {
		t.Error(r.bad)
	}
}

// last returns the newest snapshot (ok false: none yet).
func (r *recorder) last() (SnapshotMsg, bool) {
	msgs := r.all()
	for i := len(msgs) - 1; i >= 0; i-- {
		if s, ok := msgs[i].(SnapshotMsg); ok {
			return s, true
		}
	}
	return SnapshotMsg{}, false
}

// view is the newest snapshot with the status messages after it applied,
// as the model applies them: to connectors the snapshot has, adding a task
// it lacks.
func (r *recorder) view() Snapshot {
	msgs := r.all()
	var snap Snapshot
	for _, m := range msgs {
		switch m := m.(type) {
		case SnapshotMsg:
			snap = m.Snapshot
			snap.Connectors = append([]Connector(nil), snap.Connectors...)
		case StatusMsg:
			for i := range snap.Connectors {
				c := &snap.Connectors[i]
				if c.Name != m.Connector {
					continue
				}
				if m.Task < 0 {
					c.State = m.State
					continue
				}
				found := false
				c.Tasks = append([]Task(nil), c.Tasks...)
				for j := range c.Tasks {
					if c.Tasks[j].ID == m.Task {
						c.Tasks[j].State, found = m.State, true
					}
				}
				if !found {
					c.Tasks = append(c.Tasks, Task{ID: m.Task, State: m.State, WorkerID: m.WorkerID})
				}
			}
		}
	}
	return snap
}

func (r *recorder) count(match func(any) bool) int {
	n := 0
	for _, m := range r.all() {
		if match(m) {
			n++
		}
	}
	return n
}

func isSnapshot(m any) bool { _, ok := m.(SnapshotMsg); return ok }

// runFeed runs a feed over servers until the test ends.
func runFeed(t *testing.T, interval time.Duration, servers ...string) (*recorder, *Feed) {
	t.Helper()
	f := NewFeed(FeedConfig{
		Servers:  servers,
		Client:   func(u string) *client.Client { return client.New(u) },
		Interval: interval,
		Timeout:  3 * time.Second,
	})
	r := &recorder{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.Run(ctx, r.send)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		r.check(t)
	})
	return r, f
}

func connectorOf(s Snapshot, name string) (Connector, bool) {
	for _, c := range s.Connectors {
		if c.Name == name {
			return c, true
		}
	}
	return Connector{}, false
}

func createDatagen(t *testing.T, url, name string, tasks int) {
	t.Helper()
	cfg := map[string]string{"connector.class": "Datagen", "topic": name, "tasks.max": fmt.Sprint(tasks), "rate.per.task": "50"}
	if _, err := client.New(url).PutConnectorConfig(t.Context(), name, cfg); err != nil {
		t.Fatal(err)
	}
}

// A snapshot shows the cluster as it is: the leader, its worker, a
// connector created after the feed started with its tasks and states, the
// rebalance that placed them, and the records its tasks move.
func TestFeedSnapshotReflectsTheCluster(t *testing.T) {
	url := startNode(t)
	r, _ := runFeed(t, 200*time.Millisecond, url)
	waitUntil(t, 10*time.Second, func() (bool, string) {
		_, ok := r.last()
		return ok, "no snapshot"
	})
	createDatagen(t, url, "gen", 3)

	waitUntil(t, 20*time.Second, func() (bool, string) {
		s, _ := r.last()
		snap := s.Snapshot
		c, ok := connectorOf(snap, "gen")
		if !ok || c.State != "RUNNING" || len(c.Tasks) != 3 || c.Type != "source" {
			return false, fmt.Sprintf("connector gen not RUNNING with 3 tasks: %+v", snap.Connectors)
		}
		for i, tk := range c.Tasks {
			if tk.ID != i || tk.State != "RUNNING" || tk.WorkerID == "" {
				return false, fmt.Sprintf("task %d: %+v", i, tk)
			}
		}
		if c.RecordsPerSec <= 0 {
			return false, fmt.Sprintf("gen moves no records: %v/s", c.RecordsPerSec)
		}
		if c.SinkLag != -1 {
			return false, fmt.Sprintf("sink lag %d, want -1 (unknown)", c.SinkLag)
		}
		if len(snap.Workers) != 1 || !snap.Workers[0].Alive || snap.Workers[0].Tasks["RUNNING"] != 3 || snap.Workers[0].Connectors != 1 || !snap.Workers[0].Leader {
			return false, fmt.Sprintf("workers: %+v", snap.Workers)
		}
		if snap.Workers[0].ID != c.Tasks[0].WorkerID {
			return false, fmt.Sprintf("worker %s, tasks on %s", snap.Workers[0].ID, c.Tasks[0].WorkerID)
		}
		if snap.Cluster.Leader == 0 || snap.Cluster.Term == 0 || snap.Cluster.Store == "" || !snap.Cluster.QuorumOK {
			return false, fmt.Sprintf("cluster: %+v", snap.Cluster)
		}
		if len(snap.Members) != 1 || !snap.Members[0].Leader || snap.Members[0].WorkerID != snap.Workers[0].ID {
			return false, fmt.Sprintf("members: %+v", snap.Members)
		}
		moved := false
		for _, rb := range snap.Rebalances {
			moved = moved || (rb.Moves > 0 && rb.Units >= 4 && rb.Epoch != "")
		}
		if !moved {
			return false, fmt.Sprintf("no rebalance placed gen's units: %+v", snap.Rebalances)
		}
		return true, ""
	})
}

// A status change arrives from the event stream at once, not with the
// next poll.
func TestFeedStatusBeforeNextPoll(t *testing.T) {
	url := startNode(t)
	createDatagen(t, url, "gen", 2)
	r, _ := runFeed(t, time.Hour, url) // no poll but the ones events ask for
	waitUntil(t, 10*time.Second, func() (bool, string) {
		live := r.count(func(m any) bool { s, ok := m.(FeedStateMsg); return ok && s.Live }) > 0
		s, ok := r.last()
		c, _ := connectorOf(s.Snapshot, "gen")
		return live && ok && c.State == "RUNNING", "the feed is not live with gen RUNNING"
	})
	// The polls the stream's opening asked for are done when no snapshot
	// came for a second.
	n, quiet := r.count(isSnapshot), time.Now()
	waitUntil(t, 10*time.Second, func() (bool, string) {
		if m := r.count(isSnapshot); m != n {
			n, quiet = m, time.Now()
		}
		return time.Since(quiet) >= time.Second, "snapshots still come a second apart or less"
	})
	if err := client.New(url).PauseConnector(t.Context(), "gen"); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 10*time.Second, func() (bool, string) {
		for _, m := range r.all() {
			if s, ok := m.(StatusMsg); ok && s.Connector == "gen" && s.Task == -1 && s.State == "PAUSED" {
				return true, ""
			}
		}
		return false, "no StatusMsg says gen is PAUSED"
	})
	if m := r.count(isSnapshot); m != n {
		t.Errorf("%d polls ran before the status arrived: it came with a poll, not from the event stream", m-n)
	}

	// Rebalance events ask for a poll (there is no other in the next
	// hour), at most one per 500 ms however many events come.
	n = r.count(isSnapshot)
	start := time.Now()
	for i := range 4 {
		createDatagen(t, url, fmt.Sprintf("more%d", i), 2)
	}
	waitUntil(t, 10*time.Second, func() (bool, string) {
		v := r.view()
		for i := range 4 {
			c, ok := connectorOf(v, fmt.Sprintf("more%d", i))
			if !ok {
				return false, fmt.Sprintf("no poll shows more%d: %+v", i, v.Connectors)
			}
			if c.State != "RUNNING" || len(c.Tasks) != 2 || c.Tasks[0].State != "RUNNING" || c.Tasks[1].State != "RUNNING" {
				return false, fmt.Sprintf("more%d not RUNNING with 2 tasks RUNNING: %+v", i, c)
			}
		}
		return true, ""
	})
	polls, took := r.count(isSnapshot)-n, time.Since(start)
	if limit := int(took/minPollGap) + 1; polls > limit {
		t.Errorf("%d polls in %v: more than one per %v", polls, took, minPollGap)
	}
	t.Logf("4 connectors created: %d polls in %v", polls, took.Round(time.Millisecond))
}

// With the first server dead, the feed takes its snapshots from the next.
func TestFeedFailsOverToTheNextServer(t *testing.T) {
	url := startNode(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + l.Addr().String()
	l.Close()
	r, f := runFeed(t, 200*time.Millisecond, dead, url)
	waitUntil(t, 10*time.Second, func() (bool, string) {
		s, ok := r.last()
		return ok && s.Snapshot.Server == url && s.Snapshot.Cluster.Leader != 0, fmt.Sprintf("no snapshot from %s: %+v", url, s)
	})
	// The event stream follows to the server that answers.
	waitUntil(t, 10*time.Second, func() (bool, string) {
		for _, m := range r.all() {
			if s, ok := m.(FeedStateMsg); ok && s.Live && s.Server == url {
				return true, ""
			}
		}
		return false, "the feed never went live on the second server"
	})
	// Actions go where the polls go.
	if got := f.Backend().Client().BaseURL(); got != url {
		t.Errorf("backend talks to %s, want %s", got, url)
	}
}

// When every server fails, the feed says so (with the server it tried
// last), backs off, and recovers once one answers.
func TestFeedReportsErrorsAndBacksOff(t *testing.T) {
	var up sync.Mutex
	down := true
	var hits int
	var target string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		up.Lock()
		isDown := down
		if req.URL.Path == "/kcd/v1/cluster" {
			hits++
		}
		up.Unlock()
		if isDown {
			http.Error(w, `{"error_code":503,"message":"not yet"}`, http.StatusServiceUnavailable)
			return
		}
		u, _ := url.Parse(target)
		httputil.NewSingleHostReverseProxy(u).ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close) // after the feed stops (cleanups run last first)
	target = startNode(t)
	r, _ := runFeed(t, 50*time.Millisecond, srv.URL)
	start := time.Now()
	waitUntil(t, 10*time.Second, func() (bool, string) {
		for _, m := range r.all() {
			if s, ok := m.(FeedStateMsg); ok && s.Err != nil && s.Server == srv.URL && strings.Contains(s.Err.Error(), "not yet") {
				return true, ""
			}
		}
		return false, "no FeedStateMsg with the error"
	})
	waitUntil(t, 10*time.Second, func() (bool, string) { return time.Since(start) > 2*time.Second, "" })
	up.Lock()
	failed := hits
	down = false
	up.Unlock()
	// 2 s of failures: with backoffs of 250, 500 and 1000 ms that is 4
	// or 5 tries; without backoff the 50 ms interval would make 40.
	if failed > 10 {
		t.Errorf("%d polls in 2 s of failures: no backoff", failed)
	}
	recovering := time.Now()
	waitUntil(t, 15*time.Second, func() (bool, string) {
		msgs := r.all()
		for i := len(msgs) - 1; i >= 0; i-- {
			if s, ok := msgs[i].(FeedStateMsg); ok {
				return s.Err == nil, fmt.Sprintf("the feed still reports %v", s.Err)
			}
		}
		return false, "no state"
	})
	if _, ok := r.last(); !ok {
		t.Error("no snapshot after the server came back")
	}
	t.Logf("%d polls in 2 s of failures; recovered %v after the server came back", failed, time.Since(recovering).Round(time.Millisecond))
}

// cutProxy forwards to a node, and can refuse and cut its event streams.
type cutProxy struct {
	*httptest.Server
	mu      sync.Mutex
	cut     bool
	cancels []context.CancelFunc
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	u, _ := url.Parse(target)
	rp := httputil.NewSingleHostReverseProxy(u)
	p := &cutProxy{}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == "/kcd/v1/events" {
			p.mu.Lock()
			if p.cut {
				p.mu.Unlock()
				http.Error(w, `{"error_code":503,"message":"cut"}`, http.StatusServiceUnavailable)
				return
			}
			ctx, cancel := context.WithCancel(req.Context())
			p.cancels = append(p.cancels, cancel)
			p.mu.Unlock()
			req = req.WithContext(ctx)
		}
		rp.ServeHTTP(w, req)
	}))
	t.Cleanup(p.Close)
	return p
}

func (p *cutProxy) setCut(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = on
	if on {
		for _, c := range p.cancels {
			c()
		}
		p.cancels = nil
	}
}

// With the event stream cut, the feed says Polling and keeps polling; it
// goes live again when the stream can be opened.
func TestFeedPollsWhileTheStreamIsCut(t *testing.T) {
	node := startNode(t)
	p := newCutProxy(t, node)
	r, _ := runFeed(t, 200*time.Millisecond, p.URL)
	lastState := func() FeedStateMsg {
		msgs := r.all()
		for i := len(msgs) - 1; i >= 0; i-- {
			if s, ok := msgs[i].(FeedStateMsg); ok {
				return s
			}
		}
		return FeedStateMsg{}
	}
	waitUntil(t, 10*time.Second, func() (bool, string) { return lastState().Live, "not live" })
	p.setCut(true)
	waitUntil(t, 10*time.Second, func() (bool, string) {
		s := lastState()
		return s.Polling && !s.Live && s.Err == nil, fmt.Sprintf("the feed does not say Polling: %+v", s)
	})
	n := r.count(isSnapshot)
	createDatagen(t, node, "gen", 1)
	waitUntil(t, 10*time.Second, func() (bool, string) {
		s, _ := r.last()
		c, ok := connectorOf(s.Snapshot, "gen")
		return r.count(isSnapshot) >= n+5 && ok && c.State == "RUNNING" && lastState().Polling,
			fmt.Sprintf("polls after the cut: %d; gen: %+v", r.count(isSnapshot)-n, c)
	})
	p.setCut(false)
	waitUntil(t, 15*time.Second, func() (bool, string) { return lastState().Live, "not live again after the stream came back" })
}

// A burst of status events (a rebalance of thousands of tasks) is passed
// on one by one only up to maxStatusPerSec; beyond that the feed asks for
// a poll instead, so the model's queue stays bounded.
func TestFeedBoundsTheStatusRate(t *testing.T) {
	f := NewFeed(FeedConfig{Servers: []string{"http://127.0.0.1:1"}})
	r := &recorder{}
	f.send = r.send
	for i := range 3 * maxStatusPerSec {
		f.handle(client.Event{Type: "status", Data: []byte(fmt.Sprintf(`{"connector":"c","task":%d,"state":"RUNNING","worker_id":"w"}`, i))})
	}
	n := r.count(func(m any) bool { _, ok := m.(StatusMsg); return ok })
	if n != maxStatusPerSec {
		t.Errorf("%d status messages passed on from a burst of %d, want %d", n, 3*maxStatusPerSec, maxStatusPerSec)
	}
	select {
	case <-f.pollNow:
	default:
		t.Error("the dropped status events asked for no poll")
	}
	// Task null is the connector's own status; deletions pass on.
	r2 := &recorder{}
	f2 := NewFeed(FeedConfig{})
	f2.send = r2.send
	f2.handle(client.Event{Type: "status", Data: []byte(`{"connector":"c","task":null,"state":"FAILED","worker_id":"w","trace":"boom"}`)})
	f2.handle(client.Event{Type: "status", Data: []byte(`{"connector":"c","task":1,"deleted":true}`)})
	f2.handle(client.Event{Type: "leader", Data: []byte(`{"leader":3,"term":9}`)})
	want := []any{
		StatusMsg{Connector: "c", Task: -1, State: "FAILED", WorkerID: "w", Trace: "boom"},
		StatusMsg{Connector: "c", Task: 1, Deleted: true},
		LeaderMsg{Leader: 3, Term: 9},
	}
	if got := r2.all(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("messages %+v, want %+v", got, want)
	}
}

// A snapshot taken before a status change but delivered after its event
// would hide the change until the next poll: the feed polls again soon
// when status events came while a poll ran.
func TestFeedPollsAgainAfterStatusDuringAPoll(t *testing.T) {
	node := startNode(t)
	createDatagen(t, node, "gen", 1)
	u, _ := url.Parse(node)
	rp := httputil.NewSingleHostReverseProxy(u)
	var mu sync.Mutex
	var hold chan struct{} // set: hold the next GET /connectors answer until closed
	fetched := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		mu.Lock()
		h := hold
		if req.URL.Path == "/connectors" && h != nil {
			hold = nil
		} else {
			h = nil
		}
		mu.Unlock()
		if h == nil {
			rp.ServeHTTP(w, req)
			return
		}
		rec := httptest.NewRecorder()
		rp.ServeHTTP(rec, req) // the answer as it is now...
		fetched <- struct{}{}
		<-h // ...delivered later
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())
	}))
	t.Cleanup(srv.Close)
	r, f := runFeed(t, time.Hour, srv.URL)
	waitUntil(t, 10*time.Second, func() (bool, string) {
		c, ok := connectorOf(r.view(), "gen")
		live := r.count(func(m any) bool { s, ok := m.(FeedStateMsg); return ok && s.Live }) > 0
		return live && ok && c.State == "RUNNING", "the feed is not live with gen RUNNING"
	})
	release := make(chan struct{})
	mu.Lock()
	hold = release
	mu.Unlock()
	createDatagen(t, node, "other", 1) // a rebalance event: a poll starts
	select {
	case <-fetched:
	case <-time.After(10 * time.Second):
		t.Fatal("no poll after a rebalance")
	}
	// Let other's events pass and drop the polls they asked for: only
	// the status change below happens during the held poll.
	waitUntil(t, 10*time.Second, func() (bool, string) {
		for _, m := range r.all() {
			if s, ok := m.(StatusMsg); ok && s.Connector == "other" && s.Task == 0 && s.State == "RUNNING" {
				return true, ""
			}
		}
		return false, "other's task never RUNNING"
	})
	select {
	case <-f.pollNow:
	default:
	}
	if err := client.New(node).PauseConnector(t.Context(), "gen"); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 10*time.Second, func() (bool, string) {
		c, _ := connectorOf(r.view(), "gen")
		return c.State == "PAUSED", "no StatusMsg says gen is PAUSED"
	})
	close(release) // the snapshot that still says RUNNING arrives
	waitUntil(t, 10*time.Second, func() (bool, string) {
		s, _ := r.last()
		c, _ := connectorOf(s.Snapshot, "gen")
		return c.State == "PAUSED", fmt.Sprintf("the last snapshot says gen is %s: no poll after the stale one", c.State)
	})
}

// A sink's lag becomes known once its tasks have fetched: the sum of what
// the workers report for its running tasks; a source's lag stays unknown.
func TestFeedSinkLag(t *testing.T) {
	url := startNode(t)
	r, _ := runFeed(t, 200*time.Millisecond, url)
	createDatagen(t, url, "gen", 1)
	cfg := map[string]string{"connector.class": "FileStreamSink", "topics": "gen", "tasks.max": "2",
		"file": filepath.Join(t.TempDir(), "out.txt")}
	if _, err := client.New(url).PutConnectorConfig(t.Context(), "out", cfg); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 20*time.Second, func() (bool, string) {
		s, _ := r.last()
		sink, ok := connectorOf(s.Snapshot, "out")
		if !ok || sink.Type != "sink" || len(sink.Tasks) != 2 {
			return false, fmt.Sprintf("no sink out with 2 tasks: %+v", s.Snapshot.Connectors)
		}
		if sink.SinkLag < 0 {
			return false, fmt.Sprintf("the sink's lag is not known: %+v", sink)
		}
		if src, _ := connectorOf(s.Snapshot, "gen"); src.SinkLag != -1 {
			return false, fmt.Sprintf("source gen has lag %d, want -1 (not a sink)", src.SinkLag)
		}
		return true, ""
	})
}
