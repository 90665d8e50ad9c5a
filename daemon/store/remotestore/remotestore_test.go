package remotestore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kcd-project/kcd/daemon/restapi"
	"github.com/kcd-project/kcd/raft"
	"github.com/kcd-project/kcd/raft/raftstore"
	"github.com/kcd-project/kcd/raft/rafttest"
	"github.com/kcd-project/kcd/store"
	"github.com/kcd-project/kcd/store/storetest"
)

// cluster is an in-process Raft cluster whose nodes serve kcd's REST API
// (the store API and GET /kcd/v1/cluster) on loopback, each from its own
// raftstore, as kcd nodes do.
type cluster struct {
	t   *testing.T
	rc  *rafttest.Cluster
	mu  sync.Mutex
	srv map[uint64]*http.Server
	url map[uint64]string
}

func newCluster(t *testing.T, size int) *cluster {
	t.Helper()
	c := &cluster{t: t, rc: rafttest.NewCluster(t, size, nil), srv: map[uint64]*http.Server{}, url: map[uint64]string{}}
	c.rc.Leader(10 * time.Second)
	for _, n := range c.rc.Nodes() {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		st := raftstore.New(n)
		srv := &http.Server{Handler: restapi.NewHandler(nodeInfo{}, restapi.Options{
			Store: st, Cluster: memberList{c}, Logger: slog.New(slog.DiscardHandler),
		})}
		go srv.Serve(ln)
		c.srv[n.ID()], c.url[n.ID()] = srv, "http://"+ln.Addr().String()
		t.Cleanup(func() {
			srv.Close()
			st.Close()
		})
	}
	return c
}

// stop stops node id's REST API and Raft member: gracefully (Shutdown,
// which must not wait for watch streams) or the way a crash does.
func (c *cluster) stop(id uint64, graceful bool) {
	c.t.Helper()
	c.mu.Lock()
	srv := c.srv[id]
	delete(c.srv, id)
	c.mu.Unlock()
	if graceful {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			c.t.Fatalf("Shutdown of node %d's REST API: %v (a watch stream held it up?)", id, err)
		}
	} else {
		srv.Close()
	}
	c.rc.Kill(id)
}

func (c *cluster) idOf(url string) uint64 {
	for id, u := range c.url {
		if u == url {
			return id
		}
	}
	c.t.Fatalf("no node at %s", url)
	return 0
}

type nodeInfo struct{}

func (nodeInfo) KafkaClusterID() (string, bool) { return "test", true }
func (nodeInfo) Ready() bool                    { return true }

// memberList is restapi.Cluster reporting the cluster's running members
// and their REST URLs, so that the store can learn them.
type memberList struct{ c *cluster }

func (m memberList) Info(context.Context) (restapi.ClusterInfo, error) {
	m.c.mu.Lock()
	defer m.c.mu.Unlock()
	var info restapi.ClusterInfo
	for id := range m.c.srv {
		info.Members = append(info.Members, restapi.MemberInfo{ID: id, RESTURL: m.c.url[id], Roles: []string{"raft", "worker"}, Raft: "voter"})
	}
	return info, nil
}

var errTest = errors.New("not in this test")

func (memberList) AddMember(context.Context, restapi.NewMember) error     { return errTest }
func (memberList) RemoveMember(context.Context, uint64) error             { return errTest }
func (memberList) TransferLeader(context.Context, uint64) (uint64, error) { return 0, errTest }
func (memberList) Leader() (bool, string)                                 { return true, "" }

func follower(c *cluster) *raft.Node {
	return c.rc.Follower()
}

// The conformance suite against a follower of a three-node cluster, over
// HTTP: the follower's reads need the ReadIndex barrier and its writes go
// through the leader.
func TestConformanceOnFollower(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		c := newCluster(t, 3)
		s, err := New([]string{c.url[follower(c).ID()]}, Options{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// A watch whose node goes away continues on another node from where it
// was, with no event lost or repeated; the store learned the other nodes
// from the one URL it was given.
func TestWatchSurvivesItsNode(t *testing.T) {
	for _, graceful := range []bool{false, true} {
		t.Run(fmt.Sprintf("graceful=%v", graceful), func(t *testing.T) {
			c := newCluster(t, 3)
			first := follower(c).ID()
			// The reader here is slower than the writer: room for all.
			s, err := New([]string{c.url[first]}, Options{WatchBuffer: 20000, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			deadline := time.Now().Add(10 * time.Second)
			for len(s.Endpoints()) < 3 {
				if time.Now().After(deadline) {
					t.Fatalf("the store did not learn the members: %v", s.Endpoints())
				}
				time.Sleep(20 * time.Millisecond)
			}
			ctx := t.Context()
			if _, err := s.Put(ctx, "w/0", []byte("before")); err != nil {
				t.Fatal(err)
			}
			start, err := s.Revision(ctx)
			if err != nil {
				t.Fatal(err)
			}
			w, err := s.Watch(ctx, "w/", start)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			victim := c.idOf(s.Endpoints()[0])

			// Writes go straight to a node that stays: batches of several
			// events per revision, so that a stream may break inside one.
			var writer *raft.Node
			for _, n := range c.rc.Nodes() {
				if n.ID() != victim {
					writer = n
				}
			}
			ws := raftstore.New(writer)
			defer ws.Close()
			const revs, perRev = 40, 100
			wrote := make(chan error, 1)
			go func() {
				for i := range revs {
					ops := make([]store.Op, perRev)
					for j := range ops {
						ops[j] = store.Put(fmt.Sprintf("w/%03d/%03d", i, j), []byte{byte(i)})
					}
					if _, _, err := ws.Batch(ctx, nil, ops); err != nil {
						wrote <- err
						return
					}
					if i == revs/3 {
						c.stop(victim, graceful)
					}
					// Paced, so that a slow machine (-race) keeps up: a
					// reader that does not is dropped (ErrWatcherLagging),
					// which is right but not this test.
					time.Sleep(10 * time.Millisecond)
				}
				wrote <- nil
			}()
			var got []store.Event
			timeout := time.After(30 * time.Second)
			for len(got) < revs*perRev {
				select {
				case ev, ok := <-w.Events():
					if !ok {
						t.Fatalf("watch ended after %d events: %v", len(got), w.Err())
					}
					got = append(got, ev)
				case err := <-wrote:
					if err != nil {
						t.Fatalf("Batch: %v", err)
					}
					wrote = nil
				case <-timeout:
					t.Fatalf("got %d of %d events", len(got), revs*perRev)
				}
			}
			for i, ev := range got {
				r, j := i/perRev, i%perRev
				if want := fmt.Sprintf("w/%03d/%03d", r, j); ev.KV.Key != want || ev.KV.ModRevision != start+1+int64(r) {
					t.Fatalf("event %d = %q @%d, want %q @%d", i, ev.KV.Key, ev.KV.ModRevision, want, start+1+int64(r))
				}
			}
			select {
			case ev := <-w.Events():
				t.Fatalf("an event too many: %q @%d", ev.KV.Key, ev.KV.ModRevision)
			case <-time.After(100 * time.Millisecond):
			}
			if now := s.Endpoints()[0]; now == c.url[victim] {
				t.Fatalf("the store still prefers the stopped node %s", now)
			}
			t.Logf("resumes inside a revision so far: %d", partialResumes.Load())
			// Reads and writes go on through the remaining nodes.
			if _, err := s.Put(ctx, "after", []byte("x")); err != nil {
				t.Fatalf("Put after the node stopped: %v", err)
			}
		})
	}
}

// A stream that breaks inside a revision resumes inside it: the rest of
// that revision is delivered, and what was delivered of it is not again.
func TestWatchResumesInsideARevision(t *testing.T) {
	c := newCluster(t, 3)
	s, err := New([]string{c.url[follower(c).ID()]}, Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	r0, err := s.Put(ctx, "first", nil)
	if err != nil {
		t.Fatal(err)
	}
	// Revisions of 300 events: more than one line of the stream holds.
	const revs, perRev = 3, 300
	for i := range revs {
		ops := make([]store.Op, perRev)
		for j := range ops {
			ops[j] = store.Put(fmt.Sprintf("k/%d/%03d", i, j), []byte{byte(j)})
		}
		if _, _, err := s.Batch(ctx, nil, ops); err != nil {
			t.Fatal(err)
		}
	}
	var breaks atomic.Int64
	breakStream = func() bool { return breaks.Add(1) <= 2 } // after each of the first two lines
	defer func() { breakStream = nil }()
	before := partialResumes.Load()
	w, err := s.Watch(ctx, "k/", r0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for i := range revs * perRev {
		select {
		case ev, ok := <-w.Events():
			if !ok {
				t.Fatalf("watch ended after %d events: %v", i, w.Err())
			}
			r, j := i/perRev, i%perRev
			if want := fmt.Sprintf("k/%d/%03d", r, j); ev.KV.Key != want || ev.KV.ModRevision != r0+1+int64(r) {
				t.Fatalf("event %d = %q @%d, want %q @%d", i, ev.KV.Key, ev.KV.ModRevision, want, r0+1+int64(r))
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no event %d", i)
		}
	}
	select {
	case ev := <-w.Events():
		t.Fatalf("an event too many: %q @%d", ev.KV.Key, ev.KV.ModRevision)
	case <-time.After(100 * time.Millisecond):
	}
	if n := partialResumes.Load() - before; n == 0 {
		t.Fatalf("the stream broke %d times but never inside a revision", breaks.Load())
	}
}

// A write that cannot reach any node fails; one whose node is unreachable
// goes to another (nothing was sent).
func TestWriteFailsOverOnlyWhenUnsent(t *testing.T) {
	c := newCluster(t, 3)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there now: dialling fails
	s, err := New([]string{dead, c.url[follower(c).ID()]}, Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range 5 {
		if _, err := s.Put(t.Context(), fmt.Sprint("k", i), []byte("v")); err != nil {
			t.Fatalf("Put with a dead first node: %v", err)
		}
	}
	kvs, _, err := s.Scan(t.Context(), "k", 0)
	if err != nil || len(kvs) != 5 {
		t.Fatalf("Scan = %d keys, %v; want 5 (each Put applied once)", len(kvs), err)
	}

	lone, err := New([]string{dead}, Options{RetryTimeout: 300 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer lone.Close()
	if _, err := lone.Put(t.Context(), "k", []byte("v")); err == nil || errors.Is(err, ErrUnknownOutcome) {
		t.Fatalf("Put with no node reachable: %v, want a failure that is not an unknown outcome", err)
	}
	if !slices.Contains(lone.Endpoints(), dead) {
		t.Fatalf("endpoints %v lost the seed", lone.Endpoints())
	}
}

func TestNewChecksURLs(t *testing.T) {
	for _, urls := range [][]string{nil, {""}, {"10.0.0.1:8083"}, {"ftp://h:1"}, {"http://"}} {
		if s, err := New(urls, Options{}); err == nil {
			s.Close()
			t.Errorf("New(%q) accepted", urls)
		}
	}
	_, err := New([]string{"http://admin:secret@h:8083"}, Options{})
	if err == nil || strings.Contains(err.Error(), "secret") {
		t.Errorf("New with credentials in a URL: %v", err)
	}
	s, err := New([]string{"http://h:1/", "http://h:1", " http://g:2 "}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := s.Endpoints(); !slices.Equal(got, []string{"http://h:1", "http://g:2"}) {
		t.Errorf("endpoints %q", got)
	}
}

// A write that reached a node whose connection then broke is not sent to
// another node: it may have been applied (here, the node had proposed it
// while cut off from the others, and would propose it again once back).
func TestWriteWithLostAnswerIsNotRetried(t *testing.T) {
	c := newCluster(t, 3)
	id := follower(c).ID()
	var others []string
	for oid, u := range c.url {
		if oid != id {
			others = append(others, u)
		}
	}
	// The cut-off node first; the others are known too.
	s, err := New(append([]string{c.url[id]}, others...), Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Put(t.Context(), "before", nil); err != nil {
		t.Fatal(err)
	}
	c.rc.Net().Isolate(id)
	done := make(chan error, 1)
	go func() {
		_, err := s.Put(t.Context(), "lost", []byte("v"))
		done <- err
	}()
	time.Sleep(300 * time.Millisecond) // the Put waits on the cut-off node for a leader
	c.mu.Lock()
	srv := c.srv[id]
	c.mu.Unlock()
	srv.Close() // its connections break under the request
	select {
	case err := <-done:
		if !errors.Is(err, ErrUnknownOutcome) {
			t.Fatalf("Put whose answer was lost: %v, want ErrUnknownOutcome", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Put did not return")
	}
	// Not retried elsewhere: the others never saw it.
	kv, found, err := s.Get(t.Context(), "lost")
	if err != nil || found {
		t.Fatalf("Get(lost) = %q, %v, %v; want not found", kv.Value, found, err)
	}
	// Reads and writes carry on through the other nodes.
	if _, err := s.Put(t.Context(), "after", nil); err != nil {
		t.Fatalf("Put on the other nodes: %v", err)
	}
}
