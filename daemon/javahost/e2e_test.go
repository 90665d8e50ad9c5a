package javahost

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcd-project/kcd/daemon/connect"
	"github.com/kcd-project/kcd/daemon/connect/converter"
	"github.com/kcd-project/kcd/daemon/connectstore"
	"github.com/kcd-project/kcd/daemon/worker"
	"github.com/kcd-project/kcd/internal/testenv"
	"github.com/kcd-project/kcd/raft/fsm"
)

// javaFileSource is the class under which the tests register the host's
// FileStreamSourceConnector: its own class name is kcd's built-in Go one,
// which wins the lookup.
const (
	javaFileSource = "kcd.test.JavaFileStreamSourceConnector"
	javaFileSink   = "kcd.test.JavaFileStreamSinkConnector"
)

var registerOnce, registerSinkOnce sync.Once

// TestIntegrationJavaHostFileStreamSource runs Kafka Connect's own
// FileStreamSourceConnector through the host under kcd's worker against
// the real Kafka: the lines arrive as the plugin's converter wrote them,
// the offsets kcd stores are the plugin's, and a second run resumes from
// them (the host reads them back through OffsetStorageReader).
func TestIntegrationJavaHostFileStreamSource(t *testing.T) {
	seeds := strings.Split(testenv.Require(t, testenv.Kafka), ",")
	h := newTestHost(t, time.Minute)
	p := NewProvider(h)
	cp, ok := p.Lookup(fileSource)
	if !ok {
		t.Fatalf("the host has no %s", fileSource)
	}
	registerOnce.Do(func() {
		connect.Register(connect.Plugin{Class: javaFileSource, Type: connect.PluginSource, Version: cp.Version, New: cp.New})
	})

	cs := openStore(t)

	name := fmt.Sprintf("kcd-javahost-file-%d", time.Now().UnixNano())
	topic := name
	t.Cleanup(func() { deleteTopic(seeds, topic) })
	file := filepath.Join(t.TempDir(), "in.txt")
	if err := os.WriteFile(file, []byte("one\ntwo\nthree\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := map[string]string{
		"name": name, "connector.class": javaFileSource, "tasks.max": "1",
		"file": file, "topic": topic,
		"key.converter":   "org.apache.kafka.connect.storage.StringConverter",
		"value.converter": "org.apache.kafka.connect.storage.StringConverter",
	}
	if created, err := cs.CreateConnector(context.Background(), name, cfg, connectstore.TargetStarted); err != nil || !created {
		t.Fatalf("create: %v %v", created, err)
	}

	run := func() (stop func()) { return runWorker(t, cs, seeds) }

	stop := run()
	got := consumeValues(t, seeds, topic, 3, 60*time.Second)
	if strings.Join(got, ",") != "one,two,three" {
		t.Fatalf("values %q, want one, two, three", got)
	}
	waitUntil(t, 30*time.Second, "the plugin's offset is stored", func() bool {
		offs, _ := cs.SourceOffsets(context.Background(), name)
		return len(offs) == 1 && offs[0].Partition["filename"] == file && fmt.Sprint(offs[0].Offset["position"]) == "14"
	})
	offs, _ := cs.SourceOffsets(context.Background(), name)
	if _, ok := offs[0].Offset["position"].(json.Number); !ok {
		t.Errorf("the stored position is a %T, want json.Number as kcd stores numbers", offs[0].Offset["position"])
	}
	// The key Kafka Connect's worker would write: the host's JSON of the
	// plugin's own map.
	if want := fmt.Sprintf(`[%q,{"filename":%q}]`, name, file); offs[0].Key != want {
		t.Errorf("the stored offset's key %q, want %q", offs[0].Key, want)
	}
	stop()

	f, err := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString("four\nfive\n")
	f.Close()
	stop = run()
	defer stop()
	got = consumeValues(t, seeds, topic, 5, 60*time.Second)
	if strings.Join(got, ",") != "one,two,three,four,five" {
		t.Fatalf("values after the restart %q, want one to five once each", got)
	}
}

// runWorker runs a kcd worker over cs until stop is called.
func runWorker(t *testing.T, cs *connectstore.Store, seeds []string) (stop func()) {
	t.Helper()
	w, err := worker.New(worker.Config{
		WorkerID: "127.0.0.1:8083", Store: cs, Seeds: seeds,
		Converters:          func(class string) (worker.Converter, error) { return converter.New(class) },
		Logger:              testLogger(t),
		OffsetFlushInterval: 200 * time.Millisecond,
		ShutdownTimeout:     10 * time.Second,
		RestartBackoff:      worker.Backoff{Initial: 100 * time.Millisecond, Max: time.Second},
		SinkRelistInterval:  500 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := w.Run(ctx); err != nil {
			t.Errorf("worker: %v", err)
		}
	}()
	return func() { cancel(); <-done }
}

func openStore(t *testing.T) *connectstore.Store {
	t.Helper()
	l, err := fsm.OpenLocal(filepath.Join(t.TempDir(), "state.db"), fsm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return connectstore.New(l)
}

// TestIntegrationJavaHostFileStreamSink runs Kafka Connect's
// FileStreamSinkConnector through the host: the raw records reach the
// plugin's converter, the file gets their lines, and kcd commits the
// offsets the task's preCommit returned. It needs the worker's support of
// connect.SerializedRecords for sinks (raw bytes).
func TestIntegrationJavaHostFileStreamSink(t *testing.T) {
	seeds := strings.Split(testenv.Require(t, testenv.Kafka), ",")
	h := newTestHost(t, time.Minute)
	p := NewProvider(h)
	cp, ok := p.Lookup(fileSink)
	if !ok {
		t.Fatalf("the host has no %s", fileSink)
	}
	registerSinkOnce.Do(func() {
		connect.Register(connect.Plugin{Class: javaFileSink, Type: connect.PluginSink, Version: cp.Version, New: cp.New})
	})
	cs := openStore(t)
	name := fmt.Sprintf("kcd-javahost-filesink-%d", time.Now().UnixNano())
	topic := name
	t.Cleanup(func() { deleteTopic(seeds, topic) })

	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, v := range []string{"alpha", "beta", "gamma"} {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(t.TempDir(), "out.txt")
	cfg := map[string]string{
		"name": name, "connector.class": javaFileSink, "tasks.max": "1", "file": file, "topics": topic,
		"key.converter":   "org.apache.kafka.connect.storage.StringConverter",
		"value.converter": "org.apache.kafka.connect.storage.StringConverter",
	}
	if created, err := cs.CreateConnector(context.Background(), name, cfg, connectstore.TargetStarted); err != nil || !created {
		t.Fatalf("create: %v %v", created, err)
	}
	stop := runWorker(t, cs, seeds)
	defer stop()
	waitUntil(t, 60*time.Second, "the file has the three lines", func() bool {
		b, _ := os.ReadFile(file)
		return string(b) == "alpha\nbeta\ngamma\n"
	})
	waitUntil(t, 30*time.Second, "kcd committed the sink's offsets", func() bool {
		offs, _ := cs.SinkOffsets(context.Background(), name)
		return len(offs) == 1 && offs[0].Topic == topic && offs[0].Offset == 3
	})
}

// consumeValues reads topic from the start until n records came, then a
// quiet second more to catch duplicates.
func consumeValues(t *testing.T, seeds []string, topic string, n int, timeout time.Duration) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var out []string
	var reached time.Time
	for ctx.Err() == nil {
		if len(out) >= n {
			if reached.IsZero() {
				reached = time.Now()
			} else if time.Since(reached) > time.Second {
				break
			}
		}
		pctx, pcancel := context.WithTimeout(ctx, 200*time.Millisecond)
		fs := cl.PollFetches(pctx)
		pcancel()
		fs.EachRecord(func(r *kgo.Record) {
			if r.Key != nil {
				t.Errorf("record %d has key %q, want none", r.Offset, r.Key)
			}
			out = append(out, string(r.Value))
		})
	}
	if len(out) < n {
		t.Fatalf("%s: %d records %q, want %d", topic, len(out), out, n)
	}
	return out
}

func deleteTopic(seeds []string, topic string) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _ = kadm.NewClient(cl).DeleteTopics(ctx, topic)
}
