package metrics

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcd-project/kcd/daemon/connect/converter"
	_ "github.com/kcd-project/kcd/daemon/connectors/all"
	"github.com/kcd-project/kcd/daemon/connectstore"
	"github.com/kcd-project/kcd/daemon/worker"
	"github.com/kcd-project/kcd/internal/testenv"
	"github.com/kcd-project/kcd/raft/fsm"
)

// On kfake: fast, for every run.
func TestScrapeShowsTasksMoving(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.DefaultNumPartitions(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	scenarioTasksMoving(t, c.ListenAddrs())
}

// On the test environment's real Kafka.
func TestIntegrationScrapeShowsTasksMoving(t *testing.T) {
	seeds := strings.Split(testenv.Require(t, testenv.Kafka), ",")
	scenarioTasksMoving(t, seeds)
}

// A worker runs a FileStream source writing to Kafka and a FileStream sink
// reading it back; while lines are appended to the source's file, the
// scrape's per-task counters move, and once a connector is deleted its
// series are gone.
func scenarioTasksMoving(t *testing.T, seeds []string) {
	ctx := t.Context()
	l, err := fsm.OpenLocal(filepath.Join(t.TempDir(), "state.db"), fsm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	cs := connectstore.New(l)
	w, err := worker.New(worker.Config{
		WorkerID: "127.0.0.1:8083", Store: cs, Seeds: seeds,
		Converters:          func(class string) (worker.Converter, error) { return converter.New(class) },
		Logger:              slog.New(slog.DiscardHandler),
		OffsetFlushInterval: 200 * time.Millisecond,
		ShutdownTimeout:     5 * time.Second,
		SinkRelistInterval:  500 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := w.Run(wctx); err != nil {
			t.Errorf("worker: %v", err)
		}
	}()
	uniq := fmt.Sprintf("kcd-metrics-%d", time.Now().UnixNano())
	topic, src, sink := uniq, uniq+"-src", uniq+"-sink"
	t.Cleanup(func() {
		stop()
		<-done
		deleteTopics(seeds, topic)
	})

	dir := t.TempDir()
	in := filepath.Join(dir, "in.txt")
	if err := os.WriteFile(in, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for name, cfg := range map[string]map[string]string{
		src:  {"connector.class": "FileStreamSource", "file": in, "topic": topic, "value.converter": "org.apache.kafka.connect.storage.StringConverter"},
		sink: {"connector.class": "FileStreamSink", "file": filepath.Join(dir, "out.txt"), "topics": topic, "value.converter": "org.apache.kafka.connect.storage.StringConverter"},
	} {
		cfg["name"] = name
		if ok, err := cs.CreateConnector(ctx, name, cfg, connectstore.TargetStarted); err != nil || !ok {
			t.Fatalf("create %s: %v %v", name, ok, err)
		}
	}
	srv := httptest.NewServer(New(Sources{Worker: w}))
	t.Cleanup(srv.Close)

	scrape := func() (map[string]float64, string) {
		resp, err := http.Get(srv.URL)
		if err != nil {
			return nil, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		mfs := Parse(t, strings.NewReader(string(b)))
		get := func(name, conn string, extra ...string) float64 {
			want := map[string]string{"connector": conn}
			for i := 0; i+1 < len(extra); i += 2 {
				want[extra[i]] = extra[i+1]
			}
			v, ok := value(mfs, name, want)
			if !ok {
				return -1
			}
			return v
		}
		m := map[string]float64{
			"polled":    get("kcd_source_task_record_poll_total", src, "task", "0"),
			"written":   get("kcd_source_task_record_write_total", src, "task", "0"),
			"polls":     get("kcd_source_task_poll_batch_seconds", src, "task", "0"),
			"srcCommit": get("kcd_connector_task_offset_commit_success_total", src, "task", "0"),
			"read":      get("kcd_sink_task_record_read_total", sink, "task", "0"),
			"sent":      get("kcd_sink_task_record_send_total", sink, "task", "0"),
			"sinkDone":  get("kcd_sink_task_offset_commit_completion_total", sink, "task", "0"),
			"running":   get("kcd_connector_task_status", src, "task", "0", "status", "running"),
			"srcSeries": float64(strings.Count(string(b), `connector="`+src+`"`)),
		}
		return m, fmt.Sprint(m)
	}
	wait := func(what string, cond func(map[string]float64) bool) map[string]float64 {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			m, state := scrape()
			if m != nil && cond(m) {
				return m
			}
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s; last scrape: %s", what, state)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	appendLines := func(from, n int) {
		f, err := os.OpenFile(in, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		var sb strings.Builder
		for i := from; i < from+n; i++ {
			fmt.Fprintf(&sb, "line %d\n", i)
		}
		if _, err := f.WriteString(sb.String()); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}

	wait("both tasks running", func(m map[string]float64) bool { return m["running"] == 1 && m["read"] >= 0 })
	prev := 0.0
	for round := 1; round <= 3; round++ {
		appendLines((round-1)*500, 500)
		m := wait(fmt.Sprintf("round %d's records counted", round), func(m map[string]float64) bool {
			return m["written"] >= float64(500*round) && m["polled"] >= float64(500*round) && m["sent"] >= float64(500*round) && m["read"] >= float64(500*round)
		})
		if m["written"] <= prev {
			t.Fatalf("round %d: the write counter did not move: %v", round, m)
		}
		prev = m["written"]
	}
	wait("offset commits counted", func(m map[string]float64) bool { return m["srcCommit"] > 0 && m["sinkDone"] > 0 && m["polls"] > 0 })

	// Bounded: the source's series go with it.
	if ok, err := cs.DeleteConnector(ctx, src); err != nil || !ok {
		t.Fatalf("delete %s: %v %v", src, ok, err)
	}
	wait("the deleted connector's series gone", func(m map[string]float64) bool { return m["srcSeries"] == 0 && m["sent"] >= 1500 })
}

func deleteTopics(seeds []string, topics ...string) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _ = kadm.NewClient(cl).DeleteTopics(ctx, topics...)
}
