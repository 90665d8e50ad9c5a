package restapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/kcd-project/kcd/raft/fsm"
)

func storePost(t *testing.T, base, op string, req StoreRequest) (*http.Response, []byte) {
	t.Helper()
	body, _ := json.Marshal(req)
	res, err := http.Post(base+"/kcd/v1/store/"+op, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out bytes.Buffer
	_, _ = out.ReadFrom(res.Body)
	return res, out.Bytes()
}

// The store API's wire format: binary keys and values in base64, store
// errors as statuses, and the header that says a request did nothing.
func TestStoreAPIWire(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	// A node without a store refuses before doing anything.
	none := httptest.NewServer(NewHandler(&fakeNode{}, Options{Logger: log}))
	defer none.Close()
	res, body := storePost(t, none.URL, "put", StoreRequest{Key: []byte("k"), Value: []byte("v")})
	var em ErrorMessage
	if res.StatusCode != 503 || res.Header.Get(UnappliedHeader) != "true" || json.Unmarshal(body, &em) != nil || em.ErrorCode != 503 {
		t.Fatalf("put without a store: %d %q %s", res.StatusCode, res.Header.Get(UnappliedHeader), body)
	}

	st, err := fsm.OpenLocal(filepath.Join(t.TempDir(), "state.db"), fsm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	srv := httptest.NewUnstartedServer(NewHandler(&fakeNode{}, Options{Store: st, Logger: log}))
	srv.Start()
	defer srv.Close()

	key, value := []byte("bin\xff\x00"), []byte{0, 1, 0xfe}
	res, body = storePost(t, srv.URL, "put", StoreRequest{Key: key, Value: value})
	var out StoreResponse
	if res.StatusCode != 200 || json.Unmarshal(body, &out) != nil || out.Revision != 1 {
		t.Fatalf("put: %d %s", res.StatusCode, body)
	}
	if !bytes.Contains(body, []byte(`"revision":1`)) {
		t.Fatalf("put answer %s", body)
	}
	res, body = storePost(t, srv.URL, "get", StoreRequest{Key: key})
	out = StoreResponse{}
	if res.StatusCode != 200 || json.Unmarshal(body, &out) != nil || out.KV == nil || !bytes.Equal(out.KV.Key, key) || !bytes.Equal(out.KV.Value, value) {
		t.Fatalf("get: %d %s", res.StatusCode, body)
	}
	if !bytes.Contains(body, []byte(`"value":"AAH+"`)) {
		t.Fatalf("value not in base64: %s", body)
	}
	res, body = storePost(t, srv.URL, "put", StoreRequest{Value: value}) // no key
	if res.StatusCode != 400 || res.Header.Get(UnappliedHeader) != "true" {
		t.Fatalf("put without a key: %d %s", res.StatusCode, body)
	}
	res, body = storePost(t, srv.URL, "batch", StoreRequest{Ops: []StoreOp{{Type: "upsert", Key: key}}})
	if res.StatusCode != 400 {
		t.Fatalf("batch with an unknown op: %d %s", res.StatusCode, body)
	}
	if res, err := http.Get(srv.URL + "/kcd/v1/store/put"); err != nil || res.StatusCode != 405 {
		t.Fatalf("GET of a POST route: %v %v", res.StatusCode, err)
	}
	// A watch from before what history keeps: 410.
	for i := range 3 {
		storePost(t, srv.URL, "put", StoreRequest{Key: []byte{'a', byte(i)}})
	}
	if res, body = storePost(t, srv.URL, "compact", StoreRequest{Revision: 3}); res.StatusCode != 200 {
		t.Fatalf("compact: %d %s", res.StatusCode, body)
	}
	if res, body = storePost(t, srv.URL, "watch", StoreRequest{AfterRevision: 1}); res.StatusCode != StatusCompacted {
		t.Fatalf("watch from a compacted revision: %d %s", res.StatusCode, body)
	}

	// A watch stream: its start, its events, and its end when the server
	// shuts down, which does not wait for it.
	req, _ := json.Marshal(StoreRequest{Prefix: []byte("w/")})
	wres, err := http.Post(srv.URL+"/kcd/v1/store/watch", "application/json", bytes.NewReader(req))
	if err != nil || wres.StatusCode != 200 {
		t.Fatalf("watch: %v %v", wres.StatusCode, err)
	}
	defer wres.Body.Close()
	lines := bufio.NewScanner(wres.Body)
	next := func() WatchMessage {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("stream ended: %v", lines.Err())
		}
		var m WatchMessage
		if err := json.Unmarshal(lines.Bytes(), &m); err != nil {
			t.Fatalf("line %s: %v", lines.Bytes(), err)
		}
		return m
	}
	if m := next(); m.StartRevision == nil || *m.StartRevision != 4 || m.HeartbeatMS <= 0 {
		t.Fatalf("first line %+v", m)
	}
	storePost(t, srv.URL, "put", StoreRequest{Key: []byte("w/1"), Value: []byte("x")})
	if m := next(); len(m.Events) != 1 || m.Events[0].Type != "put" || string(m.Events[0].KV.Key) != "w/1" || m.Events[0].KV.ModRevision != 5 {
		t.Fatalf("event line %+v", m)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := srv.Config.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown with a watch stream open: %v", err)
	}
	if m := next(); m.Error == nil || m.Error.ErrorCode != 503 {
		t.Fatalf("last line %+v", m)
	}
}
