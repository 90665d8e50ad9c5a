package migrate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcd-project/kcd/internal/testenv"
)

func kafkaClient(t *testing.T, brokers string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func uniqueName(t *testing.T) string {
	return fmt.Sprintf("%s-%d-%04x", strings.ToLower(strings.TrimPrefix(t.Name(), "TestIntegration")), time.Now().UnixNano(), rand.IntN(1<<16))
}

// TestIntegrationReadCraftedTopics reads records written by hand to fresh
// topics on the real Kafka: malformed records, a config topic of two
// partitions, an offsets topic that is not compacted and was truncated
// with DeleteRecords, one source partition written with two key
// encodings to two partitions, a committed and an aborted transaction
// (whose marker is a partition's last offset), and sink groups.
func TestIntegrationReadCraftedTopics(t *testing.T) {
	brokers := testenv.Require(t, testenv.Kafka)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	name := uniqueName(t)
	topics := Topics{Config: name + "-configs", Offset: name + "-offsets", Status: name + "-status"}
	sinkTopic := name + "-data"
	cl := kafkaClient(t, brokers, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	compact, del := "compact", "delete"
	for _, tc := range []struct {
		name   string
		n      int32
		policy *string
	}{{topics.Config, 2, &compact}, {topics.Offset, 3, &del}, {topics.Status, 2, &compact}, {sinkTopic, 2, nil}} {
		var cfg map[string]*string
		if tc.policy != nil {
			cfg = map[string]*string{"cleanup.policy": tc.policy}
		}
		if _, err := adm.CreateTopic(ctx, tc.n, 1, cfg, tc.name); err != nil {
			t.Fatalf("create %s: %v", tc.name, err)
		}
	}
	t.Cleanup(func() {
		_, _ = adm.DeleteTopics(context.Background(), topics.Config, topics.Offset, topics.Status, sinkTopic)
		_, _ = adm.DeleteGroups(context.Background(), "connect-"+name+"-sink", name+"-group")
	})

	base := time.Now().Add(-time.Hour)
	r := func(topic string, p int32, key, value string, age time.Duration) *kgo.Record {
		rc := record(topic, key, value)
		rc.Partition, rc.Timestamp = p, base.Add(age)
		return rc
	}
	src, sink, sink2 := name+"-src", name+"-sink", name+"-sink2"
	produce(t, cl,
		r(topics.Config, 0, "connector-"+src, `{"properties":{"connector.class":"S","tasks.max":"2","nullable":null}}`, 0),
		r(topics.Config, 0, "task-"+src+"-0", `{"properties":{"task.class":"T","i":"0"}}`, 0),
		r(topics.Config, 0, "task-"+src+"-1", `{"properties":{"task.class":"T","i":"1"}}`, 0),
		r(topics.Config, 0, "commit-"+src, `{"tasks":2}`, 0),
		r(topics.Config, 0, "target-state-"+src, `{"state":"PAUSED"}`, 0),
		r(topics.Config, 0, "connector-"+sink, `{"properties":{"connector.class":"K","topics":"`+sinkTopic+`"}}`, 0),
		r(topics.Config, 0, "task-"+sink+"-0", `{"properties":{"task.class":"KT"}}`, 0),
		r(topics.Config, 0, "commit-"+sink, `{"tasks":2}`, 0), // task 1 missing: inconsistent
		r(topics.Config, 0, "connector-"+sink2, `{"properties":{"connector.class":"K","topics.regex":"x.*","consumer.override.group.id":"`+name+`-group"}}`, 0),
		r(topics.Config, 0, "connector-"+name+"-deleted", `{"properties":{}}`, 0),
		r(topics.Config, 0, "connector-"+name+"-deleted", "null", 0),
		r(topics.Config, 0, "connector-"+src+"-broken", `{"properties":`, 0),
		r(topics.Config, 0, "session-key", `{"key":"c2VjcmV0","algorithm":"HmacSHA256","creation-timestamp":1}`, 0),
		r(topics.Config, 1, "connector-"+name+"-p1", `{"properties":{"on":"partition 1"}}`, 0),

		r(topics.Offset, 0, `["`+src+`",{"file":"/a"}]`, `{"position":1}`, 0), // truncated away below
		r(topics.Offset, 0, `["`+src+`",{"file":"/a"}]`, `{"position":2}`, time.Second),
		r(topics.Offset, 2, `["`+src+`", {"file": "/a"}]`, `{"position":3}`, 2*time.Second), // the same partition, other key bytes, later
		r(topics.Offset, 1, `["`+src+`",{"file":"/b"}]`, `{"position":5,"big":12345678901234567890}`, 0),
		r(topics.Offset, 1, `["`+name+`-deleted",{"file":"/c"}]`, `{"position":1}`, 0),
		r(topics.Offset, 1, `["`+src+`",{"file":"/d"}]`, `{"position":1}`, 0),
		r(topics.Offset, 1, `["`+src+`",{"file":"/d"}]`, "null", time.Second),
		r(topics.Offset, 1, `["`+src+`"]`, `{"position":1}`, 0),

		r(topics.Status, 0, "status-connector-"+src, `{"state":"PAUSED","trace":null,"worker_id":"w:8083","generation":2}`, 0),
		r(topics.Status, 1, "status-task-"+src+"-0", `{"state":"FAILED","trace":"boom","worker_id":"w:8083","generation":2}`, 0),
		r(topics.Status, 1, "status-connector-"+sink, `{"state":"SLEEPING"}`, 0),
	)
	// Truncate offsets partition 0 past its first record, as retention would.
	var trunc kadm.Offsets
	trunc.AddOffset(topics.Offset, 0, 1, -1)
	if resp, err := adm.DeleteRecords(ctx, trunc); err != nil || resp.Error() != nil {
		t.Fatalf("delete records: %v %v", err, resp.Error())
	}
	// A committed and an aborted transaction on the status topic's
	// partition 0: the aborted record is not Kafka Connect's state, and
	// the partition ends with the abort marker.
	for _, commit := range []bool{true, false} {
		tx := kafkaClient(t, brokers, kgo.TransactionalID(fmt.Sprintf("%s-tx-%v", name, commit)), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		if err := tx.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		v := `{"state":"RUNNING","trace":null,"worker_id":"w:8083","generation":3}`
		if !commit {
			v = `{"state":"UNASSIGNED","trace":null,"worker_id":"aborted","generation":4}`
		}
		produce(t, tx, r(topics.Status, 0, "status-connector-"+src, v, time.Second))
		if err := tx.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
	}
	var groupOffs kadm.Offsets
	groupOffs.AddOffset(sinkTopic, 1, 11, -1)
	groupOffs.AddOffset(sinkTopic, 0, 10, -1)
	if _, err := adm.CommitOffsets(ctx, "connect-"+sink, groupOffs); err != nil {
		t.Fatal(err)
	}

	c, err := Read(ctx, kafkaClient(t, brokers), ReadOptions{Topics: topics})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, conn := range c.Connectors {
		names = append(names, conn.Name)
	}
	if want := []string{name + "-p1", sink, sink2, src}; !reflect.DeepEqual(names, want) {
		t.Fatalf("connectors %v, want %v", names, want)
	}
	byName := map[string]*Connector{}
	for _, conn := range c.Connectors {
		byName[conn.Name] = conn
	}
	s := byName[src]
	if s.Target != "PAUSED" || s.TaskCount != 2 || len(s.Tasks) != 2 || s.Tasks[1]["i"] != "1" ||
		!reflect.DeepEqual(s.NullKeys, []string{"nullable"}) || s.Config["connector.class"] != "S" {
		t.Errorf("src %s", jsonOf(t, s))
	}
	if s.Status == nil || s.Status.State != "RUNNING" || s.Status.WorkerID != "w:8083" || len(s.Status.Tasks) != 1 || s.Status.Tasks[0].Trace != "boom" {
		t.Errorf("src status (the aborted transaction's record must not count): %s", jsonOf(t, s.Status))
	}
	gotOffsets := jsonOf(t, s.SourceOffsets)
	if want := `[{"partition":{"file":"/a"},"offset":{"position":3}},{"partition":{"file":"/b"},"offset":{"big":12345678901234567890,"position":5}}]`; gotOffsets != want {
		t.Errorf("src offsets\n got %s\nwant %s", gotOffsets, want)
	}
	if len(s.SourceOffsets) > 0 && string(s.SourceOffsets[0].Key) != `["`+src+`", {"file": "/a"}]` {
		t.Errorf("the key of /a is the latest record's: %s", s.SourceOffsets[0].Key)
	}
	k := byName[sink]
	if !k.Inconsistent || len(k.Tasks) != 0 || k.TaskCount != 2 || k.SinkGroup != "connect-"+sink ||
		jsonOf(t, k.SinkOffsets) != fmt.Sprintf(`[{"topic":%q,"partition":0,"offset":10},{"topic":%q,"partition":1,"offset":11}]`, sinkTopic, sinkTopic) {
		t.Errorf("sink %s", jsonOf(t, k))
	}
	if k2 := byName[sink2]; k2.SinkGroup != name+"-group" || len(k2.SinkOffsets) != 0 {
		t.Errorf("sink2, a group that never committed: %s", jsonOf(t, k2))
	}
	if !reflect.DeepEqual(c.Orphans, map[string]int{name + "-deleted": 1}) {
		t.Errorf("orphans %v", c.Orphans)
	}
	type where struct {
		topic     string
		partition int32
		offset    int64
		reason    string
	}
	var got []where
	for _, p := range c.Problems {
		got = append(got, where{p.Topic, p.Partition, p.Offset, p.Reason})
	}
	want := []struct {
		topic     string
		partition int32
		offset    int64
		reason    string
	}{
		{topics.Config, -1, -1, "the config topic has 2 partitions"},
		{topics.Config, -1, -1, "skipped: session key of the old cluster, not carried over"},
		{topics.Config, 0, 11, "malformed JSON"},
		{topics.Offset, -1, -1, "not compacted"},
		{topics.Offset, 0, -1, "truncated: records before offset 1 are gone"},
		{topics.Offset, 1, 4, "want [connector, partition]"},
		{topics.Status, 1, 1, `unknown state "SLEEPING"`},
	}
	if len(got) != len(want) {
		t.Fatalf("problems %s", jsonOf(t, c.Problems))
	}
	for i, w := range want {
		if g := got[i]; g.topic != w.topic || g.partition != w.partition || g.offset != w.offset || !strings.Contains(g.reason, w.reason) {
			t.Errorf("problem %d: %+v, want %+v", i, g, w)
		}
	}
	stats := map[string]TopicStats{}
	for _, st := range c.Stats {
		stats[st.Topic] = st
	}
	if st := stats[topics.Offset]; st.Compacted || st.Partitions != 3 || st.Records != 7 {
		t.Errorf("offsets stats %+v", st)
	}
	if st := stats[topics.Status]; !st.Compacted || st.Records != 4 {
		t.Errorf("status stats %+v (the aborted record and the markers not counted)", st)
	}
}

// connectAPI is the test environment's real Kafka Connect worker.
type connectAPI struct {
	t   *testing.T
	url string
}

func (c connectAPI) call(method, path string, body any) (int, []byte) {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			c.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // also in Cleanup, after t.Context ends
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.url+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	return res.StatusCode, out
}

func (c connectAPI) must(method, path string, body any, want int) []byte {
	c.t.Helper()
	// While its group rebalances, Kafka Connect answers 500 and asks to be
	// asked again; the test waits that out, up to a minute.
	deadline := time.Now().Add(time.Minute)
	for {
		status, out := c.call(method, path, body)
		if status == want {
			return out
		}
		if status != http.StatusInternalServerError || !connectTransient(out) || time.Now().After(deadline) {
			c.t.Fatalf("%s %s: %d %s", method, path, status, out)
		}
		<-time.After(200 * time.Millisecond)
	}
}

// connectTransient tells whether a 500 of Kafka Connect is one of its
// answers during a rebalance.
func connectTransient(body []byte) bool {
	return bytes.Contains(body, []byte("rebalance is expected")) || bytes.Contains(body, []byte("can be safely retried")) ||
		bytes.Contains(body, []byte("rebalance is in progress"))
}

type restOffsets struct {
	Offsets []struct {
		Partition map[string]any `json:"partition"`
		Offset    map[string]any `json:"offset"`
	} `json:"offsets"`
}

func decodeNumbers(t *testing.T, b []byte, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
}

// TestIntegrationReadRealConnect drives the test environment's real Kafka
// Connect worker — a FileStream source and sink with committed offsets, a
// paused, a stopped and a deleted connector, a task count changed — and
// reads its real internal topics: the connectors, configs, target states,
// task configs and offsets equal what the worker's REST API says.
func TestIntegrationReadRealConnect(t *testing.T) {
	connectURL := testenv.Require(t, testenv.ConnectURL)
	brokers := testenv.Require(t, testenv.Kafka)
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	api := connectAPI{t: t, url: connectURL}
	name := uniqueName(t)
	src, sink, gone := name+"-src", name+"-sink", name+"-gone"
	topic := name + "-lines"
	dir := t.TempDir()
	lines := []string{"alpha", "beta", "gamma", "delta"}
	input := filepath.Join(dir, "input.txt")
	if err := os.WriteFile(input, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	goneInput := filepath.Join(dir, "gone.txt")
	if err := os.WriteFile(goneInput, []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Registered first, so run last: after the connectors are deleted.
	adm := kadm.NewClient(kafkaClient(t, brokers))
	t.Cleanup(func() {
		_, _ = adm.DeleteTopics(context.Background(), topic)
		// The group empties once the worker has stopped the deleted sink's tasks.
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		for ctx.Err() == nil {
			resp, err := adm.DeleteGroup(ctx, "connect-"+sink)
			if err == nil && (resp.Err == nil || errors.Is(resp.Err, kerr.GroupIDNotFound)) {
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
		t.Logf("consumer group connect-%s not deleted", sink)
	})
	create := func(n string, cfg map[string]string) {
		api.must("POST", "/connectors", map[string]any{"name": n, "config": cfg}, 201)
		t.Cleanup(func() { api.call("DELETE", "/connectors/"+n, nil) })
	}
	create(src, map[string]string{"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
		"tasks.max": "1", "file": input, "topic": topic})
	create(sink, map[string]string{"connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
		"tasks.max": "1", "file": filepath.Join(dir, "output.txt"), "topics": topic})
	create(gone, map[string]string{"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
		"tasks.max": "1", "file": goneInput, "topic": topic})

	offsetsOf := func(n string) restOffsets {
		var o restOffsets
		decodeNumbers(t, api.must("GET", "/connectors/"+n+"/offsets", nil, 200), &o)
		return o
	}
	// Offsets committed: the sources at their files' ends, the sink past every line.
	waitFor(t, ctx, "source offsets committed", func() (bool, string) {
		o := offsetsOf(src)
		return len(o.Offsets) == 1 && fmt.Sprint(o.Offsets[0].Offset["position"]) == fmt.Sprint(len(strings.Join(lines, "\n"))+1), fmt.Sprint(o)
	})
	waitFor(t, ctx, "deleted source's offsets committed", func() (bool, string) {
		o := offsetsOf(gone)
		return len(o.Offsets) == 1 && fmt.Sprint(o.Offsets[0].Offset["position"]) == "4", fmt.Sprint(o)
	})
	waitFor(t, ctx, "sink offsets committed", func() (bool, string) {
		o := offsetsOf(sink)
		return len(o.Offsets) == 1 && fmt.Sprint(o.Offsets[0].Offset["kafka_offset"]) == fmt.Sprint(len(lines)+1), fmt.Sprint(o)
	})
	// The sink goes to 2 tasks, then pauses; the source stops; the third is deleted.
	sinkCfg := map[string]string{}
	decodeNumbers(t, api.must("GET", "/connectors/"+sink+"/config", nil, 200), &sinkCfg)
	sinkCfg["tasks.max"] = "2"
	api.must("PUT", "/connectors/"+sink+"/config", sinkCfg, 200)
	waitFor(t, ctx, "the sink's 2 tasks", func() (bool, string) {
		_, b := api.call("GET", "/connectors/"+sink+"/tasks", nil)
		var tasks []any
		_ = json.Unmarshal(b, &tasks)
		return len(tasks) == 2, string(b)
	})
	api.must("PUT", "/connectors/"+sink+"/pause", nil, 202)
	api.must("PUT", "/connectors/"+src+"/stop", nil, 204)
	api.must("DELETE", "/connectors/"+gone, nil, 204)
	for n, state := range map[string]string{sink: "PAUSED", src: "STOPPED"} {
		waitFor(t, ctx, n+" "+state, func() (bool, string) {
			_, b := api.call("GET", "/connectors/"+n+"/status", nil)
			var st struct{ Connector struct{ State string } }
			_ = json.Unmarshal(b, &st)
			return st.Connector.State == state, string(b)
		})
	}
	waitFor(t, ctx, "the stopped source's empty task set", func() (bool, string) {
		_, b := api.call("GET", "/connectors/"+src+"/tasks", nil)
		return string(b) == "[]", string(b)
	})

	c, err := Read(ctx, kafkaClient(t, brokers), ReadOptions{Include: func(n string) bool { return strings.HasPrefix(n, name) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Connectors) != 2 || c.Connectors[0].Name != sink || c.Connectors[1].Name != src {
		t.Fatalf("connectors %s", jsonOf(t, c.Connectors))
	}
	if c.Orphans[gone] != 1 || len(c.Orphans) != 1 {
		t.Errorf("orphans %v", c.Orphans)
	}
	for _, conn := range c.Connectors {
		var cfg map[string]string
		decodeNumbers(t, api.must("GET", "/connectors/"+conn.Name+"/config", nil, 200), &cfg)
		if !reflect.DeepEqual(conn.Config, cfg) {
			t.Errorf("%s config\n got %v\nwant %v", conn.Name, conn.Config, cfg)
		}
		var tasks []struct{ Config map[string]string }
		decodeNumbers(t, api.must("GET", "/connectors/"+conn.Name+"/tasks", nil, 200), &tasks)
		var want []map[string]string
		for _, tk := range tasks {
			want = append(want, tk.Config)
		}
		if len(conn.Tasks) != len(want) || (len(want) > 0 && !reflect.DeepEqual(conn.Tasks, want)) || conn.TaskCount != len(want) {
			t.Errorf("%s tasks\n got %v (%d)\nwant %v", conn.Name, conn.Tasks, conn.TaskCount, want)
		}
		// The worker's own offsets, in Read's shape.
		var got []map[string]any
		if conn.IsSink() {
			for _, o := range conn.SinkOffsets {
				got = append(got, map[string]any{"partition": map[string]any{"kafka_topic": o.Topic, "kafka_partition": json.Number(fmt.Sprint(o.Partition))},
					"offset": map[string]any{"kafka_offset": json.Number(fmt.Sprint(o.Offset))}})
			}
		} else {
			for _, o := range conn.SourceOffsets {
				got = append(got, map[string]any{"partition": o.Partition, "offset": o.Offset})
			}
		}
		var rest []map[string]any
		for _, o := range offsetsOf(conn.Name).Offsets {
			rest = append(rest, map[string]any{"partition": o.Partition, "offset": o.Offset})
		}
		sort.Slice(rest, func(i, j int) bool { return jsonOf(t, rest[i]) < jsonOf(t, rest[j]) })
		if jsonOf(t, got) != jsonOf(t, rest) || len(rest) == 0 {
			t.Errorf("%s offsets\n got %s\nwant %s (GET /connectors/%s/offsets)", conn.Name, jsonOf(t, got), jsonOf(t, rest), conn.Name)
		}
	}
	sk, sr := c.Connectors[0], c.Connectors[1]
	// Statuses: present; their states may have moved on since the REST
	// calls above (another test's connector rebalances the shared worker).
	if sk.Target != "PAUSED" || sk.TaskCount != 2 || sk.SinkGroup != "connect-"+sink || sk.Status == nil || sk.Status.State == "" {
		t.Errorf("sink %s", jsonOf(t, sk))
	}
	if sr.Target != "STOPPED" || sr.TaskCount != 0 || sr.Status == nil || sr.Status.State == "" {
		t.Errorf("source %s", jsonOf(t, sr))
	}
	for _, p := range c.Problems {
		if p.Connector != "" {
			t.Errorf("problem of one of the test's connectors: %+v", p)
		}
	}
	if os.Getenv("KCD_CAPTURE_INTERNAL_TOPICS") != "" {
		captureInternalTopics(ctx, t, brokers, name)
	}
}

// fixture is one captured record of an internal topic; Value nil is a tombstone.
type fixture struct {
	Key   string  `json:"key"`
	Value *string `json:"value"`
}

// fixtureDir holds records captured from the real internal topics, the
// fuzz tests' seeds.
const fixtureDir = "../golden/testdata/internal-topics"

// captureInternalTopics writes the records of the test's connectors in the
// real internal topics to fixtureDir, the connector names prefix and the
// temp dir replaced by fixed ones. Run with KCD_CAPTURE_INTERNAL_TOPICS=1.
func captureInternalTopics(ctx context.Context, t *testing.T, brokers, name string) {
	t.Helper()
	dir := filepath.Dir(t.TempDir()) // the test's temp dir root
	anon := strings.NewReplacer(name, "fixture", dir, "/tmp/kcd-fixture")
	adm := kadm.NewClient(kafkaClient(t, brokers))
	def := DefaultTopics()
	for file, topic := range map[string]string{"configs.json": def.Config, "offsets.json": def.Offset, "status.json": def.Status} {
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		assign := map[string]map[int32]kgo.Offset{topic: {}}
		left := 0
		ends.Each(func(o kadm.ListedOffset) {
			if o.Offset > 0 {
				assign[topic][o.Partition] = kgo.NewOffset().AtStart()
				left++
			}
		})
		cl := kafkaClient(t, brokers, kgo.ConsumePartitions(assign))
		var out []fixture
		done := map[int32]bool{}
		for len(done) < left {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatal(ctx.Err())
			}
			fs.EachRecord(func(r *kgo.Record) {
				if e, _ := ends.Lookup(topic, r.Partition); r.Offset >= e.Offset-1 {
					done[r.Partition] = true
				}
				if !bytes.Contains(r.Key, []byte(name)) {
					return
				}
				f := fixture{Key: anon.Replace(string(r.Key))}
				if r.Value != nil {
					v := anon.Replace(string(r.Value))
					f.Value = &v
				}
				out = append(out, f)
			})
		}
		b, err := json.MarshalIndent(out, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(fixtureDir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(fixtureDir, file), append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("captured %d records of %s into %s", len(out), topic, file)
	}
}

// TestIntegrationReadEndsAfterAnAbortedTail: the last offset before a
// partition's end offset is an aborted transaction's record, which a
// read_committed fetch never returns; Read still ends, and says where it
// stopped.
func TestIntegrationReadEndsAfterAnAbortedTail(t *testing.T) {
	brokers := testenv.Require(t, testenv.Kafka)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	name := uniqueName(t)
	topics := Topics{Config: name + "-configs", Offset: name + "-offsets", Status: name + "-status"}
	cl := kafkaClient(t, brokers)
	createTopics(t, cl, topics, true)
	adm := kadm.NewClient(cl)
	t.Cleanup(func() { _, _ = adm.DeleteTopics(context.Background(), topics.Config, topics.Offset, topics.Status) })
	produce(t, cl, record(topics.Config, "connector-"+name, `{"properties":{"k":"v"}}`))

	// A writes offset 1 in a transaction, B offset 2 in another; A aborts
	// (marker at 3). The last stable offset is B's first, 2: offset 1,
	// aborted, is the last before it.
	a := kafkaClient(t, brokers, kgo.TransactionalID(name+"-a"))
	b := kafkaClient(t, brokers, kgo.TransactionalID(name+"-b"))
	for _, tx := range []*kgo.Client{a, b} {
		if err := tx.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		produce(t, tx, record(topics.Config, "connector-"+name, `{"properties":{"k":"uncommitted"}}`))
	}
	if err := a.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = b.EndTransaction(context.Background(), kgo.TryAbort) }()

	start := time.Now()
	c, err := Read(ctx, kafkaClient(t, brokers), ReadOptions{Topics: topics})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Connectors) != 1 || c.Connectors[0].Config["k"] != "v" {
		t.Fatalf("connectors %s", jsonOf(t, c.Connectors))
	}
	var stopped *Problem
	for i, p := range c.Problems {
		if strings.HasPrefix(p.Reason, "stopped at offset 1 before the end offset 2") {
			stopped = &c.Problems[i]
		}
	}
	if stopped == nil || stopped.Topic != topics.Config || stopped.Partition != 0 {
		t.Fatalf("problems %s", jsonOf(t, c.Problems))
	}
	t.Logf("read in %s", time.Since(start))
}

// TestIntegrationReadWhatWriteWrote: Read gives back the Cluster Write
// put into fresh topics — connectors, configs, target states, task
// configs, source offsets (numbers exact) and sink offsets.
func TestIntegrationReadWhatWriteWrote(t *testing.T) {
	brokers := testenv.Require(t, testenv.Kafka)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	name := uniqueName(t)
	topics := Topics{Config: name + "-configs", Offset: name + "-offsets", Status: name + "-status"}
	data := name + "-data"
	cl := kafkaClient(t, brokers)
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, data); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = adm.DeleteTopics(context.Background(), topics.Config, topics.Offset, topics.Status, data)
		_, _ = adm.DeleteGroups(context.Background(), name+"-group")
	})
	want := &Cluster{Connectors: []*Connector{
		{Name: name + "-a", Config: map[string]string{"connector.class": "S", "tasks.max": "2", "name": name + "-a"}, Target: "PAUSED", TaskCount: 2,
			Tasks: []map[string]string{{"task.class": "T", "i": "0"}, {"task.class": "T", "i": "1"}},
			SourceOffsets: []SourceOffset{
				{Partition: map[string]any{"file": "/x", "n": json.Number("1")}, Offset: map[string]any{"pos": json.Number("12345678901234567890")}},
				{Partition: map[string]any{"file": "/y"}, Offset: map[string]any{"pos": json.Number("2.5"), "ok": true}},
			}},
		{Name: name + "-b", Config: map[string]string{"connector.class": "K", "topics": data, "consumer.override.group.id": name + "-group", "name": name + "-b"},
			Target: "STOPPED", TaskCount: 0, Tasks: []map[string]string{}, SinkGroup: name + "-group",
			SinkOffsets: []SinkOffset{{Topic: data, Partition: 0, Offset: 3}, {Topic: data, Partition: 2, Offset: 9}}},
	}}
	if _, err := Write(ctx, cl, want, WriteOptions{Topics: topics, ReplicationFactor: 1, OffsetPartitions: 5, StatusPartitions: 2}); err != nil {
		t.Fatal(err)
	}
	got, err := Read(ctx, kafkaClient(t, brokers), ReadOptions{Topics: topics})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Connectors) != len(want.Connectors) {
		t.Fatalf("connectors %s", jsonOf(t, got.Connectors))
	}
	for i, w := range want.Connectors {
		g := got.Connectors[i]
		for j := range g.SourceOffsets {
			g.SourceOffsets[j].Key = nil // Write's encoding; compared below through the decoder
		}
		if a, b := jsonOf(t, g), jsonOf(t, w); a != b {
			t.Errorf("connector %d:\n got %s\nwant %s", i, a, b)
		}
	}
	for _, p := range got.Problems {
		t.Errorf("problem %+v", p)
	}
}
