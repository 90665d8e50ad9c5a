package restapi

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	kcdapi "github.com/kcd-project/kcd/api"
	"github.com/kcd-project/kcd/daemon/connectstore"
	"github.com/kcd-project/kcd/daemon/herder"
	"github.com/kcd-project/kcd/daemon/herder/herdertest"
)

// fakeImporter records what reaches it.
type fakeImporter struct {
	offs kcdapi.ImportOffsets
}

func (f *fakeImporter) Import(_ context.Context, req kcdapi.ImportRequest) (kcdapi.Import, error) {
	if req.Connectors[0].Name == "busy" {
		return kcdapi.Import{}, Errorf(http.StatusConflict, "import x is staging")
	}
	return kcdapi.Import{ID: "x", State: kcdapi.ImportStaging}, nil
}

func (f *fakeImporter) ImportOffsets(_ context.Context, id string, offs kcdapi.ImportOffsets) (kcdapi.Import, error) {
	f.offs = offs
	return kcdapi.Import{ID: id}, nil
}
func (f *fakeImporter) Commit(_ context.Context, id string) (kcdapi.Import, error) {
	return kcdapi.Import{}, Errorf(http.StatusNotFound, "no import %q", id)
}
func (f *fakeImporter) Abort(_ context.Context, id string) (kcdapi.Import, error) {
	return kcdapi.Import{ID: id, State: kcdapi.ImportAborted}, nil
}
func (f *fakeImporter) Get(_ context.Context, id string) (kcdapi.Import, error) {
	return kcdapi.Import{ID: id}, nil
}
func (f *fakeImporter) List(context.Context) ([]kcdapi.Import, error) { return nil, nil }

// The import routes: bodies bounded and strict, errors in Kafka Connect's
// shape, offsets' numbers kept exact; the export's page size checked.
func TestImportRoutes(t *testing.T) {
	quiet := slog.New(slog.DiscardHandler)
	fi := &fakeImporter{}
	cs := herdertest.Store(t)
	h := NewHandler(&fakeNode{ready: true}, Options{Cluster: leaderCluster{}, Importer: fi, Connect: herder.New(cs, herder.Options{Logger: quiet}), Logger: quiet})
	srv := httptest.NewServer(h)
	defer srv.Close()
	call := func(method, path, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	conn := `{"connectors":[{"name":"%s","config":{"connector.class":"X"},"target":"STOPPED"}]%s}`
	for _, tc := range []struct {
		method, path, body string
		status             int
	}{
		{"POST", "/kcd/v1/imports", strings.Replace(strings.Replace(conn, "%s", "a", 1), "%s", "", 1), 201},
		{"POST", "/kcd/v1/imports", strings.Replace(strings.Replace(conn, "%s", "a", 1), "%s", `,"dry_run":true`, 1), 200},
		{"POST", "/kcd/v1/imports", strings.Replace(strings.Replace(conn, "%s", "busy", 1), "%s", "", 1), 409},
		{"POST", "/kcd/v1/imports", `{"connectors":[],"bogus":1}`, 400},
		{"POST", "/kcd/v1/imports", `{"connectors":[{"name":"a","config":{"x":"` + strings.Repeat("y", MaxBody) + `"}}]}`, 413},
		{"POST", "/kcd/v1/imports/x/offsets", `{"source":[{"connector":"a","partition":{"f":"a"},"offset":{"p":12345678901234567890}}]}`, 200},
		{"POST", "/kcd/v1/imports/x/offsets", `{"source":[],"extra":[]}`, 400},
		{"POST", "/kcd/v1/imports/nope/commit", ``, 404},
		{"DELETE", "/kcd/v1/imports/x", ``, 200},
		{"GET", "/kcd/v1/imports/x", ``, 200},
		{"PUT", "/kcd/v1/imports/x", ``, 405},
		{"GET", "/kcd/v1/export", ``, 200},
		{"GET", "/kcd/v1/export?limit=0", ``, 400},
		{"GET", "/kcd/v1/export?limit=1001", ``, 400},
		{"GET", "/kcd/v1/export?limit=x", ``, 400},
	} {
		status, body := call(tc.method, tc.path, tc.body)
		if status != tc.status {
			t.Errorf("%s %s: %d %.200s, want %d", tc.method, tc.path, status, body, tc.status)
			continue
		}
		if status >= 400 {
			var em ErrorMessage
			if json.Unmarshal([]byte(body), &em) != nil || em.ErrorCode != status || em.Message == "" {
				t.Errorf("%s %s: error body %.200s", tc.method, tc.path, body)
			}
		}
	}
	if got := fi.offs.Source[0].Offset["p"]; got != json.Number("12345678901234567890") {
		t.Errorf("offset reached the importer as %T %v", got, got)
	}

	// Export of a connector with an offset.
	ctx := t.Context()
	if _, err := cs.CreateConnector(ctx, "c1", map[string]string{"connector.class": "X"}, connectstore.TargetPaused); err != nil {
		t.Fatal(err)
	}
	if err := cs.PutSinkOffsets(ctx, "c1", []connectstore.SinkOffset{{Topic: "t", Partition: 1, Offset: 7}}, nil); err != nil {
		t.Fatal(err)
	}
	_, body := call("GET", "/kcd/v1/export?limit=1", "")
	var ex kcdapi.Export
	if err := json.Unmarshal([]byte(body), &ex); err != nil || len(ex.Connectors) != 1 || ex.Connectors[0].Target != "PAUSED" ||
		len(ex.Connectors[0].SinkOffsets) != 1 || ex.Connectors[0].SinkOffsets[0].Offset != 7 || ex.Revision == 0 {
		t.Errorf("export: %s %v", body, err)
	}

	// A node without an importer.
	h2 := NewHandler(&fakeNode{ready: true}, Options{Cluster: leaderCluster{}, Logger: quiet})
	rec := httptest.NewRecorder()
	h2.ServeHTTP(rec, httptest.NewRequest("GET", "/kcd/v1/imports", nil))
	if rec.Code != http.StatusServiceUnavailable {
		t.Errorf("without an importer: %d", rec.Code)
	}
}
