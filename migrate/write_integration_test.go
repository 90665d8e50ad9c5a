package migrate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcd-project/kcd/internal/testenv"
)

// TestIntegrationWriteRunsOnKafkaConnect writes connectors and offsets into
// fresh internal topics and starts a real Kafka Connect worker on them: it
// must show the same connectors, configs, states and offsets, its source
// must continue at the written line and its sink at the written offset.
func TestIntegrationWriteRunsOnKafkaConnect(t *testing.T) {
	brokers := testenv.Require(t, testenv.Kafka)
	testenv.Require(t, testenv.ConnectWorker)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	id := fmt.Sprintf("kcd-write-%d", time.Now().UnixNano())
	topics := Topics{Config: id + "-configs", Offset: id + "-offsets", Status: id + "-status"}
	srcOut, sinkIn, pausedOut := id+"-src-out", id+"-sink-in", id+"-paused-out"
	for _, topic := range []string{srcOut, sinkIn, pausedOut} {
		if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		adm.DeleteTopics(context.Background(), srcOut, sinkIn, pausedOut, topics.Config, topics.Offset, topics.Status)
		adm.DeleteGroups(context.Background(), id, "connect-"+id+"-sink")
	})

	dir := t.TempDir()
	srcFile, sinkFile := filepath.Join(dir, "in.txt"), filepath.Join(dir, "sink.txt")
	var lines strings.Builder
	for i := 1; i <= 10; i++ {
		fmt.Fprintf(&lines, "line-%d\n", i)
	}
	if err := os.WriteFile(srcFile, []byte(lines.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	after5 := len("line-1\n") * 5 // the byte after line 5
	for i := range 10 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: sinkIn, Value: fmt.Appendf(nil, "rec-%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	str := "org.apache.kafka.connect.storage.StringConverter"
	source := func(name, file, topic string) map[string]string {
		return map[string]string{"name": name, "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
			"tasks.max": "1", "file": file, "topic": topic, "key.converter": str, "value.converter": str}
	}
	task := func(config map[string]string, class string) []map[string]string {
		tc := map[string]string{"task.class": class}
		for k, v := range config {
			tc[k] = v
		}
		return []map[string]string{tc}
	}
	const srcTask, sinkTask = "org.apache.kafka.connect.file.FileStreamSourceTask", "org.apache.kafka.connect.file.FileStreamSinkTask"
	pos := func(n int) map[string]any { return map[string]any{"position": json.Number(fmt.Sprint(n))} }
	file := func(f string) map[string]any { return map[string]any{"filename": f} }

	srcName, pausedName, stoppedName, sinkName := id+"-src", id+"-paused", id+"-stopped", id+"-sink"
	srcCfg := source(srcName, srcFile, srcOut)
	pausedCfg := source(pausedName, srcFile, pausedOut)
	stoppedCfg := source(stoppedName, srcFile, pausedOut)
	sinkCfg := map[string]string{"name": sinkName, "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
		"tasks.max": "1", "file": sinkFile, "topics": sinkIn, "key.converter": str, "value.converter": str}
	c := &Cluster{Connectors: []*Connector{
		{Name: pausedName, Target: "PAUSED", Config: pausedCfg, Tasks: task(pausedCfg, srcTask), TaskCount: 1,
			SourceOffsets: []SourceOffset{{Partition: file(srcFile), Offset: pos(14)}}},
		{Name: sinkName, Target: "STARTED", Config: sinkCfg, Tasks: task(sinkCfg, sinkTask), TaskCount: 1,
			SinkOffsets: []SinkOffset{{Topic: sinkIn, Partition: 0, Offset: 4}}},
		{Name: srcName, Target: "STARTED", Config: srcCfg, Tasks: task(srcCfg, srcTask), TaskCount: 1,
			SourceOffsets: []SourceOffset{{Partition: file(srcFile), Offset: pos(after5)}}},
		{Name: stoppedName, Target: "STOPPED", Config: stoppedCfg,
			SourceOffsets: []SourceOffset{{Partition: file(srcFile), Offset: pos(21)}}},
	}}
	opts := WriteOptions{Topics: topics, ReplicationFactor: 1}
	res, err := Write(ctx, cl, c, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range res.Items {
		if it.Action != ActionCreate {
			t.Errorf("first write: %+v", it)
		}
	}
	// Again: unchanged, nothing written.
	if res, err = Write(ctx, cl, c, opts); err != nil {
		t.Fatal(err)
	}
	for _, it := range res.Items {
		if it.Action != ActionUnchanged {
			t.Errorf("second write: %+v", it)
		}
	}
	if res.ConfigRecords+res.OffsetRecords != 0 {
		t.Errorf("second write wrote %+v", res)
	}
	// A changed config: left alone, then overwritten.
	pausedCfg["batch.size"] = "100"
	c.Connectors[0].Tasks = task(pausedCfg, srcTask)
	if res, err = Write(ctx, cl, c, opts); err != nil || res.Items[0].Action != ActionExists {
		t.Fatalf("changed config without overwrite: %+v %v", res, err)
	}
	opts.Overwrite = true
	if res, err = Write(ctx, cl, c, opts); err != nil || res.Items[0].Action != ActionOverwrite || res.Items[1].Action != ActionUnchanged {
		t.Fatalf("changed config with overwrite: %+v %v", res, err)
	}

	url := testenv.StartConnectWorker(t, map[string]string{
		"group.id": id, "config.storage.topic": topics.Config, "offset.storage.topic": topics.Offset, "status.storage.topic": topics.Status,
	})

	// The same connectors, configs and states.
	states := map[string]string{srcName: "RUNNING", pausedName: "PAUSED", stoppedName: "STOPPED", sinkName: "RUNNING"}
	for _, conn := range c.Connectors {
		var cfg map[string]string
		waitFor(t, ctx, "config of "+conn.Name, func() (bool, string) {
			code, body := rest(ctx, url+"/connectors/"+conn.Name+"/config", &cfg)
			return code == 200 && reflect.DeepEqual(cfg, conn.Config), fmt.Sprintf("%d %s, want %v", code, body, conn.Config)
		})
		var st struct{ Connector struct{ State string } }
		waitFor(t, ctx, "state of "+conn.Name, func() (bool, string) {
			code, body := rest(ctx, url+"/connectors/"+conn.Name+"/status", &st)
			return code == 200 && st.Connector.State == states[conn.Name], fmt.Sprintf("%d %s, want %s", code, body, states[conn.Name])
		})
	}
	// The offsets of the connectors that do not run, exactly as written.
	for _, conn := range []*Connector{c.Connectors[0], c.Connectors[3]} {
		want := fmt.Sprintf(`{"offsets":[{"partition":{"filename":%q},"offset":{"position":%s}}]}`, srcFile, conn.SourceOffsets[0].Offset["position"])
		var got any
		code, body := rest(ctx, url+"/connectors/"+conn.Name+"/offsets", &got)
		if code != 200 || jsonForm(got) != canonicalOf(t, want) {
			t.Errorf("offsets of %s: %d %s, want %s", conn.Name, code, body, want)
		}
	}

	// The source continues after line 5: lines 6..10, none repeated, none lost.
	waitFor(t, ctx, "the source's offset at the end of the file", func() (bool, string) {
		var got any
		code, body := rest(ctx, url+"/connectors/"+srcName+"/offsets", &got)
		want := fmt.Sprintf(`{"offsets":[{"partition":{"filename":%q},"offset":{"position":%d}}]}`, srcFile, len(lines.String()))
		return code == 200 && jsonForm(got) == canonicalOf(t, want), fmt.Sprintf("%d %s", code, body)
	})
	var out []string
	w := &writer{base: cl.Opts(), adm: adm}
	if err := w.scan(ctx, srcOut, func(r *kgo.Record) error { out = append(out, string(r.Value)); return nil }); err != nil {
		t.Fatal(err)
	}
	if want := []string{"line-6", "line-7", "line-8", "line-9", "line-10"}; !reflect.DeepEqual(out, want) {
		t.Errorf("the source produced %q, want %q", out, want)
	}
	// Kafka Connect's own offset commits land in the partition Write chose.
	parts := map[int32]int{}
	if err := w.scan(ctx, topics.Offset, func(r *kgo.Record) error {
		if bytes.HasPrefix(r.Key, []byte(`["`+srcName+`",`)) {
			parts[r.Partition]++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(parts) != 1 {
		t.Errorf("the source's offset records are in partitions %v, want one", parts)
	}

	// The sink continues at offset 4: records 4..9 only.
	wantSink := "rec-4\nrec-5\nrec-6\nrec-7\nrec-8\nrec-9\n"
	waitFor(t, ctx, "the sink's offset at the end of its topic", func() (bool, string) {
		var got any
		code, body := rest(ctx, url+"/connectors/"+sinkName+"/offsets", &got)
		want := fmt.Sprintf(`{"offsets":[{"partition":{"kafka_topic":%q,"kafka_partition":0},"offset":{"kafka_offset":10}}]}`, sinkIn)
		return code == 200 && jsonForm(got) == canonicalOf(t, want), fmt.Sprintf("%d %s", code, body)
	})
	if got, err := os.ReadFile(sinkFile); err != nil || string(got) != wantSink {
		t.Errorf("the sink wrote %q (%v), want %q", got, err, wantSink)
	}
}

// TestIntegrationWriteRefusesBadTopicsAndBrokers: a config topic of 3
// partitions and an unreachable broker give clear errors, in bounded time.
func TestIntegrationWriteRefusesBadTopicsAndBrokers(t *testing.T) {
	brokers := testenv.Require(t, testenv.Kafka)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	id := fmt.Sprintf("kcd-write-bad-%d", time.Now().UnixNano())
	topics := Topics{Config: id + "-configs", Offset: id + "-offsets", Status: id + "-status"}
	if _, err := adm.CreateTopic(ctx, 3, 1, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}, topics.Config); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { adm.DeleteTopics(context.Background(), topics.Config, topics.Offset, topics.Status) })
	_, err = Write(ctx, cl, testCluster(), WriteOptions{Topics: topics, ReplicationFactor: 1})
	if err == nil || !strings.Contains(err.Error(), topics.Config) || !strings.Contains(err.Error(), "3 partitions") {
		t.Errorf("3-partition config topic: %v", err)
	}
	if d, err := adm.ListTopics(ctx, topics.Offset); err != nil || d[topics.Offset].Err == nil {
		t.Errorf("the offsets topic was created despite the bad config topic: %v", d)
	}

	// A sink still running on Kafka Connect: its group has members, of the
	// classic protocol or of the consumer protocol (KIP-848).
	sinkIn := id + "-in"
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, sinkIn); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { adm.DeleteTopics(context.Background(), sinkIn) })
	for _, serverSide := range []bool{false, true} {
		c := testCluster()
		sink := c.Connectors[1]
		sink.Name = fmt.Sprintf("%s-sink-%v", id, serverSide)
		sink.Config["topics"], sink.SinkOffsets[0].Topic = sinkIn, sinkIn
		group := "connect-" + sink.Name
		stop := joinGroup(t, ctx, brokers, group, sinkIn, serverSide)
		tp := Topics{Config: sink.Name + "-configs", Offset: sink.Name + "-offsets", Status: sink.Name + "-status"}
		t.Cleanup(func() { adm.DeleteTopics(context.Background(), tp.Config, tp.Offset, tp.Status) })
		_, err := Write(ctx, cl, c, WriteOptions{Topics: tp, ReplicationFactor: 1})
		if err == nil || !strings.Contains(err.Error(), group) || !strings.Contains(err.Error(), "stop the Kafka Connect sink first") {
			t.Errorf("server-side protocol %v: a sink group with members: %v", serverSide, err)
		}
		stop()
		w := &writer{base: cl.Opts(), adm: adm}
		for _, topic := range []string{tp.Config, tp.Offset} {
			n := 0
			if err := w.scan(ctx, topic, func(*kgo.Record) error { n++; return nil }); err != nil || n != 0 {
				t.Errorf("topic %s: %d records (%v) despite the busy group", topic, n, err)
			}
		}
	}

	dead, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	defer dead.Close()
	dctx, dcancel := context.WithTimeout(ctx, 5*time.Second)
	defer dcancel()
	start := time.Now()
	_, err = Write(dctx, dead, testCluster(), WriteOptions{})
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("unreachable broker: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("unreachable broker: the error took %v", d)
	}
	t.Logf("unreachable broker: %v", err)
}

// joinGroup starts a consumer in group and returns once the broker lists it
// as a member; stop closes it.
func joinGroup(t *testing.T, ctx context.Context, brokers, group, topic string, serverSide bool) (stop func()) {
	t.Helper()
	opts := []kgo.Opt{kgo.SeedBrokers(brokers), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic)}
	if serverSide {
		opts = append(opts, kgo.ServerSideBalancer())
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	pctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for pctx.Err() == nil {
			cl.PollFetches(pctx)
		}
	}()
	stop = func() {
		cancel()
		<-done
		cl.Close()
	}
	adm := kadm.NewClient(cl)
	waitFor(t, ctx, "a member in group "+group, func() (bool, string) {
		if serverSide {
			d, err := adm.DescribeConsumerGroups(ctx, group)
			return err == nil && len(d[group].Members) > 0, fmt.Sprint(d, err)
		}
		d, err := adm.DescribeGroups(ctx, group)
		return err == nil && len(d[group].Members) > 0, fmt.Sprint(d, err)
	})
	return stop
}

func canonicalOf(t *testing.T, s string) string {
	t.Helper()
	var v any
	if err := decodeStrict([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return jsonForm(v)
}

// rest GETs url into v (numbers as json.Number) and returns the status and body.
func rest(ctx context.Context, url string, v any) (int, string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err.Error()
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode == 200 {
		if err := decodeStrict(body, v); err != nil {
			return 0, err.Error()
		}
	}
	return resp.StatusCode, string(body)
}

// waitFor polls cond until it holds, or fails with its last word after a
// minute.
func waitFor(t *testing.T, ctx context.Context, what string, cond func() (bool, string)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		ok, last := cond()
		if ok {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: %s", what, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
