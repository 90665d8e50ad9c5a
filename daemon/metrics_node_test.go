package daemon

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// A node serves GET /metrics with the parts it runs: Raft, the
// coordinator once it leads, the store backend, the worker and the runtime.
func TestNodeServesMetrics(t *testing.T) {
	n := New(devConfig(t, t.TempDir()), slog.New(slog.DiscardHandler))
	if err := n.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer n.Close()

	want := []string{"kcd_raft_term", "kcd_raft_is_leader", "kcd_raft_commit_index", "kcd_coordinator_leading",
		"kcd_store_backend_info", "kcd_store_op_duration_seconds", "kcd_worker_task_count",
		"kcd_worker_rebalance_epoch", "go_goroutines", "process_resident_memory_bytes"}
	var state string
	defer func() {
		if t.Failed() {
			t.Logf("last scrape: %s", state)
		}
	}()
	waitFor(t, "a complete scrape", func() bool {
		res, err := http.Get(n.RESTURL() + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/plain") {
			t.Fatalf("GET /metrics: %d %q %s", res.StatusCode, res.Header.Get("Content-Type"), body)
		}
		parser := expfmt.NewTextParser(model.UTF8Validation)
		mfs, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
		if err != nil {
			t.Fatalf("the scrape does not parse: %v", err)
		}
		var missing []string
		for _, name := range want {
			if mfs[name] == nil {
				missing = append(missing, name)
			}
		}
		leads := mfs["kcd_raft_is_leader"] != nil && mfs["kcd_raft_is_leader"].GetMetric()[0].GetGauge().GetValue() == 1 &&
			mfs["kcd_coordinator_leading"] != nil && mfs["kcd_coordinator_leading"].GetMetric()[0].GetGauge().GetValue() == 1
		backend := mfs["kcd_store_backend_info"] != nil && mfs["kcd_store_backend_info"].GetMetric()[0].GetLabel()[0].GetValue() == "raft"
		state = fmt.Sprintf("missing %s; leads %v, raft backend %v", strings.Join(missing, ", "), leads, backend)
		return len(missing) == 0 && leads && backend
	})
}
