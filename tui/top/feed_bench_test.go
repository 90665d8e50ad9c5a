package top

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/kcd-project/kcd/api"
	"github.com/kcd-project/kcd/daemon/client"
)

// bigCluster serves, from bytes encoded once, what one poll of the feed
// reads of a cluster of 10 workers running 1,000 connectors with 10 tasks
// each: the cost measured is the feed's (requests, decoding, building the
// snapshot), not the server's.
func bigCluster(b *testing.B) *httptest.Server {
	b.Helper()
	const workers, connectors, tasks = 10, 1000, 10
	mux := http.NewServeMux()
	var srv *httptest.Server
	serve := func(path string, v func() any) {
		var body []byte
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			if body == nil {
				body, _ = json.Marshal(v())
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(body)
		})
	}
	workerID := func(i int) string { return fmt.Sprintf("10.0.0.%d:8083", i+1) }
	serve("GET /kcd/v1/cluster", func() any {
		ci := api.ClusterInfo{ClusterID: "bench", Self: 1, Leader: 1, Term: 3}
		for i := range 3 {
			ci.Members = append(ci.Members, api.MemberInfo{ID: uint64(i + 1), RESTURL: srv.URL, Roles: []string{"raft", "worker"}, Raft: "voter", Reachable: true})
		}
		ci.Health = api.ClusterHealth{Voters: 3, VotersUp: 3, Quorum: 2, QuorumOK: true}
		return ci
	})
	serve("GET /kcd/v1/workers", func() any {
		var ws []api.WorkerView
		for i := range workers {
			ws = append(ws, api.WorkerView{ID: workerID(i), State: "alive", RESTURL: srv.URL, NodeID: uint64(i + 1), Weight: 1})
		}
		return ws
	})
	serve("GET /connectors", func() any {
		out := map[string]api.ConnectorExpanded{}
		for c := range connectors {
			name := fmt.Sprintf("orders-%04d", c)
			e := api.ConnectorExpanded{
				Status: api.ConnectorStateInfo{Name: name, Type: "source", Connector: api.ConnectorState{State: "RUNNING", WorkerID: workerID(c % workers)}},
				Info:   api.ConnectorInfo{Name: name, Type: "source", Config: map[string]string{"connector.class": "Datagen", "tasks.max": "10", "topic": name}},
			}
			for t := range tasks {
				e.Status.Tasks = append(e.Status.Tasks, api.TaskState{ID: t, State: "RUNNING", WorkerID: workerID((c + t) % workers)})
				e.Info.Tasks = append(e.Info.Tasks, api.TaskID{Connector: name, Task: t})
			}
			out[name] = e
		}
		return out
	})
	serve("GET /kcd/v1/store/status", func() any { return api.StoreStatus{Backend: "raft"} })
	serve("GET /kcd/v1/rebalances", func() any {
		var rs []api.Rebalance
		for i := range rebalanceLimit {
			rs = append(rs, api.Rebalance{Epoch: api.Epoch{Term: 3, Generation: int64(100 - i)}, Leader: 1, At: time.Now(),
				Triggers: []string{"tasks changed: orders-0001"}, Units: connectors * (tasks + 1), Workers: workers})
		}
		return rs
	})
	// Every worker's own view: each answers for one worker's share.
	serve("GET /kcd/v1/worker", func() any {
		v := api.LocalWorkerView{ID: workerID(0), SessionHeld: true}
		for c := range connectors {
			for t := range tasks {
				if (c+t)%workers == 0 {
					v.Units = append(v.Units, api.LocalUnit{Connector: fmt.Sprintf("orders-%04d", c), Task: &t, Running: true, Starts: 1, Records: int64(c * t)})
				}
			}
		}
		return v
	})
	srv = httptest.NewServer(mux)
	b.Cleanup(srv.Close)
	return srv
}

// BenchmarkPoll is one poll of `kcctl top` against a cluster of 1,000
// connectors and 10,000 tasks: its CPU time over --interval (2 s) is the
// share of a core the dashboard's feed uses.
func BenchmarkPoll(b *testing.B) {
	srv := bigCluster(b)
	f := NewFeed(FeedConfig{Servers: []string{srv.URL}, Client: func(u string) *client.Client { return client.New(u) }})
	ctx := context.Background()
	if _, _, err := f.pollServer(ctx, srv.URL); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := cpuTime()
	for b.Loop() {
		snap, _, err := f.pollServer(ctx, srv.URL)
		if err != nil || len(snap.Connectors) != 1000 {
			b.Fatalf("poll: %d connectors, %v", len(snap.Connectors), err)
		}
	}
	b.StopTimer()
	perPoll := (cpuTime() - start) / time.Duration(b.N)
	b.ReportMetric(float64(perPoll.Microseconds())/1e3, "cpu-ms/poll")
	b.ReportMetric(100*perPoll.Seconds()/DefaultInterval.Seconds(), "%core@interval")
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
