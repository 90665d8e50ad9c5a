package restapi

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kcd-project/kcd/daemon/connectstore"
	"github.com/kcd-project/kcd/daemon/herder"
	"github.com/kcd-project/kcd/daemon/herder/herdertest"
	"github.com/kcd-project/kcd/raft/fsm"
	"github.com/kcd-project/kcd/store"
)

// staleReplica is a store whose reads, when allowed to be stale, are: it
// marks them 1.5 s stale, and counts the reads made under each rule.
type staleReplica struct {
	store.Store
	mu            sync.Mutex
	stale, strict int
}

func (s *staleReplica) read(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := store.StaleOK(ctx); st != nil {
		st.Record(1500 * time.Millisecond)
		s.stale++
	} else {
		s.strict++
	}
}

func (s *staleReplica) counts() (stale, strict int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stale, s.strict
}

func (s *staleReplica) Get(ctx context.Context, key string) (store.KV, bool, error) {
	s.read(ctx)
	return s.Store.Get(ctx, key)
}

func (s *staleReplica) Scan(ctx context.Context, prefix string, limit int) ([]store.KV, int64, error) {
	s.read(ctx)
	return s.Store.Scan(ctx, prefix, limit)
}

func (s *staleReplica) Revision(ctx context.Context) (int64, error) {
	s.read(ctx)
	return s.Store.Revision(ctx)
}

// Kafka Connect's REST reads of connectors, configs and statuses may be
// stale, and then say so in X-Kcd-Stale-Ms; writes (and the reads they
// make), the operator's store keys and the store API unless asked read
// strictly and carry no mark.
func TestStaleReadsOnlyWhereAllowed(t *testing.T) {
	herdertest.Register()
	l, err := fsm.OpenLocal(filepath.Join(t.TempDir(), "state.db"), fsm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	s := &staleReplica{Store: l}
	quiet := slog.New(slog.DiscardHandler)
	cs := connectstore.New(s)
	h := NewHandler(&fakeNode{ready: true, clusterID: "c"}, Options{Store: s, Connect: herder.New(cs, herder.Options{Logger: quiet}), Logger: quiet})

	r := send(t, h, "POST", "/connectors", `{"name":"a","config":{"connector.class":"`+herdertest.SourceClass+`","topic":"t"}}`)
	r.expect(t, http.StatusCreated, "")
	if stale, _ := s.counts(); stale != 0 || r.header.Get(StaleHeader) != "" {
		t.Fatalf("creating a connector: %d reads allowed to be stale, header %q; want none", stale, r.header.Get(StaleHeader))
	}
	if err := cs.PutConnectorStatus(t.Context(), "a", connectstore.Status{State: connectstore.StateRunning, WorkerID: "w"}, nil); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/connectors", "/connectors?expand=status", "/connectors/a", "/connectors/a/config", "/connectors/a/status", "/connectors/a/tasks", "/connectors/a/offsets"} {
		before, _ := s.counts()
		r := send(t, h, "GET", path, "")
		if r.status != http.StatusOK {
			t.Errorf("GET %s: %d %s", path, r.status, r.body)
			continue
		}
		if after, _ := s.counts(); after == before {
			t.Errorf("GET %s made no read that may be stale", path)
		}
		if got := r.header.Get(StaleHeader); got != "1500" {
			t.Errorf("GET %s: %s %q, want 1500", path, StaleHeader, got)
		}
	}
	stale, _ := s.counts()
	for _, c := range []struct{ method, path, body string }{
		{"PUT", "/connectors/a/config", `{"connector.class":"` + herdertest.SourceClass + `","topic":"u"}`},
		{"GET", "/kcd/v1/store/keys?prefix=", ""},
		{"POST", "/kcd/v1/store/get", `{"key":"YQ=="}`},
	} {
		r := send(t, h, c.method, c.path, c.body)
		if r.status/100 != 2 {
			t.Errorf("%s %s: %d %s", c.method, c.path, r.status, r.body)
		}
		if now, _ := s.counts(); now != stale || r.header.Get(StaleHeader) != "" {
			t.Errorf("%s %s read with staleness allowed (header %q)", c.method, c.path, r.header.Get(StaleHeader))
		}
	}
	req := httptest.NewRequest("POST", "/kcd/v1/store/get", strings.NewReader(`{"key":"YQ=="}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(AllowStaleHeader, "true")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK || rec.Header().Get(StaleHeader) != "1500" {
		t.Errorf("store API get with %s: %d, %s %q", AllowStaleHeader, rec.Code, StaleHeader, rec.Header().Get(StaleHeader))
	}
}
