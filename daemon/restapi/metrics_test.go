package restapi

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// GET /metrics hands the request to the metrics handler, whose text format
// passes through untouched; without one it answers 503 in Kafka Connect's
// error shape.
func TestMetricsRoute(t *testing.T) {
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_, _ = io.WriteString(w, "kcd_worker_task_count 3\n")
	})
	srv := httptest.NewServer(NewHandler(&fakeNode{ready: true}, Options{Metrics: metrics}))
	defer srv.Close()
	req, _ := http.NewRequest("GET", srv.URL+"/metrics", nil)
	req.Header.Set("Accept", "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5,*/*;q=0.1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "kcd_worker_task_count 3\n" || resp.Header.Get("Content-Type") != "text/plain; version=0.0.4; charset=utf-8" {
		t.Errorf("GET /metrics: %d %q %q", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}

	bare := httptest.NewServer(NewHandler(&fakeNode{ready: true}, Options{}))
	defer bare.Close()
	resp, err = http.Get(bare.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || string(body) != `{"error_code":503,"message":"this node serves no metrics"}` {
		t.Errorf("GET /metrics without metrics: %d %s", resp.StatusCode, body)
	}
}
