package remotestore

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kcd-project/kcd/store"
)

// answerAll answers every request of a remote store with the fuzzer's
// status and body, and every watch with its stream.
type answerAll struct {
	status      int
	body, watch []byte
}

func (a answerAll) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	status, body := a.status, a.body
	if strings.HasSuffix(r.URL.Path, "/watch") {
		status, body = http.StatusOK, a.watch
	}
	return &http.Response{
		StatusCode: status, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(bytes.NewReader(body)), Request: r, ProtoMajor: 1, ProtoMinor: 1,
	}, nil
}

// FuzzRemoteStoreAnswers is a remote store whose nodes answer anything:
// any status and body to the unary calls, any stream to a watch. It never
// panics, every call returns within its bounds, and a watch delivers
// revisions in order, never one older than what it delivered.
func FuzzRemoteStoreAnswers(f *testing.F) {
	f.Add(uint16(200), []byte(`{"revision":3,"found":true,"kv":{"key":"aw==","value":"dg==","create_revision":2,"mod_revision":3}}`),
		[]byte(`{"start_revision":2,"heartbeat_ms":100}`+"\n"+`{"events":[{"type":"put","kv":{"key":"aw==","value":"dg==","create_revision":3,"mod_revision":3}},{"type":"delete","kv":{"key":"aw==","mod_revision":4}}]}`+"\n"))
	f.Add(uint16(503), []byte(`{"error_code":503,"message":"no leader"}`), []byte(`{"start_revision":5}`+"\n"+`{"error":{"error_code":410,"message":"compacted"}}`+"\n"))
	f.Add(uint16(200), []byte(`{"revision":1,"kvs":[{"key":"","value":null}],"ok":false,"deleted":true}`), []byte(`{"heartbeat_ms":-1}`+"\n"))
	f.Add(uint16(404), []byte("not json"), []byte(`{"start_revision":9223372036854775807,"heartbeat_ms":9223372036854775807}`+"\n"+`{"events":[{"kv":{"mod_revision":-1}},{"kv":{"mod_revision":1}}]}`))
	f.Fuzz(func(t *testing.T, status uint16, body, watch []byte) {
		st := int(status)
		if st < 200 || st > 599 {
			st = 200
		}
		s, err := New([]string{"http://node-a:1", "http://node-b:1"}, Options{
			HTTPClient:      &http.Client{Transport: answerAll{st, body, watch}},
			RequestTimeout:  50 * time.Millisecond,
			RetryTimeout:    10 * time.Millisecond,
			RefreshInterval: time.Hour,
			ProbeInterval:   -1,
			WatchHeartbeat:  100 * time.Millisecond,
			Logger:          slog.New(slog.DiscardHandler),
		})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		within := func(what string, fn func()) {
			t.Helper()
			start := time.Now()
			fn()
			if d := time.Since(start); d > time.Second {
				t.Fatalf("%s took %v", what, d)
			}
		}
		within("Get", func() { _, _, _ = s.Get(ctx, "k") })
		within("Put", func() { _, _ = s.Put(ctx, "k", []byte("v")) })
		within("Scan", func() { _, _, _ = s.Scan(ctx, "", 0) })
		within("CompareAndSet", func() { _, _, _ = s.CompareAndSet(ctx, "k", 1, []byte("v")) })
		within("Batch", func() {
			_, _, _ = s.Batch(ctx, []store.Cond{{Key: "k", ModRevision: 1}}, []store.Op{{Type: store.OpDelete, Key: "k"}})
		})
		within("Revision", func() { _, _ = s.Revision(ctx) })

		wctx, wcancel := context.WithTimeout(ctx, 20*time.Millisecond)
		defer wcancel()
		w, err := s.Watch(wctx, "", 1)
		if err != nil {
			return
		}
		var last int64
		within("watch", func() {
			for ev := range w.Events() {
				if rev := ev.KV.ModRevision; rev < last {
					t.Fatalf("watch delivered revision %d after %d", rev, last)
				} else {
					last = rev
				}
			}
		})
		w.Close()
	})
}
