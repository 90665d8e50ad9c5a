package migrate

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

func writeTestKafka(t *testing.T) *kgo.Client {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	// The sink's topic.
	if _, err := kadm.NewClient(cl).CreateTopic(context.Background(), 1, 1, nil, "in"); err != nil {
		t.Fatal(err)
	}
	return cl
}

type rec struct {
	partition int32
	key       string
	value     string // "<nil>" for a tombstone
}

// readAll returns every record of topic, by partition then offset.
func readAll(t *testing.T, cl *kgo.Client, topic string) []rec {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	w := &writer{base: cl.Opts(), adm: kadm.NewClient(cl)}
	var out []rec
	if err := w.scan(ctx, topic, func(r *kgo.Record) error {
		v := string(r.Value)
		if r.Value == nil {
			v = "<nil>"
		}
		out = append(out, rec{r.Partition, string(r.Key), v})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func testCluster() *Cluster {
	return &Cluster{Connectors: []*Connector{
		{Name: "other", Target: "PAUSED", Config: map[string]string{"name": "other", "connector.class": "S", "a": "1"},
			Tasks: []map[string]string{{"task.class": "T"}}, TaskCount: 1,
			SourceOffsets: []SourceOffset{{Partition: map[string]any{"p": json.Number("7")}, Offset: map[string]any{"o": json.Number("1")}}}},
		{Name: "sink", Config: map[string]string{"connector.class": "K", "topics": "in"},
			Tasks: []map[string]string{{"task.class": "KT", "topics": "in"}}, TaskCount: 1,
			SinkOffsets: []SinkOffset{{Topic: "in", Partition: 0, Offset: 4}}},
		{Name: "src", Target: "STARTED", Config: map[string]string{"name": "src", "connector.class": "S"}, NullKeys: []string{"n"},
			Tasks: []map[string]string{{"task.class": "T", "i": "0"}, {"task.class": "T", "i": "1"}}, TaskCount: 2,
			SourceOffsets: []SourceOffset{
				{Partition: map[string]any{"filename": "/tmp/a.txt"}, Offset: map[string]any{"position": json.Number("10")}},
				{Partition: map[string]any{"filename": "/tmp/b.txt"}, Offset: map[string]any{"position": json.Number("20")}},
			}},
		{Name: "stopped", Target: "STOPPED", Config: map[string]string{"name": "stopped", "connector.class": "S"},
			Tasks: []map[string]string{{"task.class": "T"}}, TaskCount: 1},
	}}
}

func TestWriteRecordsInKafkaConnectsFormatAndOrder(t *testing.T) {
	cl := writeTestKafka(t)
	ctx := context.Background()
	topics := Topics{Config: "cfg", Offset: "off", Status: "st"}
	res, err := Write(ctx, cl, testCluster(), WriteOptions{Topics: topics})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range res.Items {
		if it.Action != ActionCreate {
			t.Errorf("%+v, want create", it)
		}
	}
	want := []rec{
		{0, "target-state-other", `{"state":"PAUSED","state.v2":"PAUSED"}`},
		{0, "connector-other", `{"properties":{"a":"1","connector.class":"S","name":"other"}}`},
		{0, "task-other-0", `{"properties":{"task.class":"T"}}`},
		{0, "commit-other", `{"tasks":1}`},
		{0, "target-state-sink", `{"state":"STARTED","state.v2":"STARTED"}`},
		{0, "connector-sink", `{"properties":{"connector.class":"K","name":"sink","topics":"in"}}`},
		{0, "task-sink-0", `{"properties":{"task.class":"KT","topics":"in"}}`},
		{0, "commit-sink", `{"tasks":1}`},
		{0, "target-state-src", `{"state":"STARTED","state.v2":"STARTED"}`},
		{0, "connector-src", `{"properties":{"connector.class":"S","n":null,"name":"src"}}`},
		{0, "task-src-0", `{"properties":{"i":"0","task.class":"T"}}`},
		{0, "task-src-1", `{"properties":{"i":"1","task.class":"T"}}`},
		{0, "commit-src", `{"tasks":2}`},
		// A stopped connector has no tasks, as Kafka Connect's stop writes.
		{0, "target-state-stopped", `{"state":"PAUSED","state.v2":"STOPPED"}`},
		{0, "connector-stopped", `{"properties":{"connector.class":"S","name":"stopped"}}`},
		{0, "commit-stopped", `{"tasks":0}`},
	}
	if got := readAll(t, cl, "cfg"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("config topic:\n got %v\nwant %v", got, want)
	}
	if res.ConfigRecords != len(want) {
		t.Errorf("ConfigRecords %d, want %d", res.ConfigRecords, len(want))
	}
	// Partitions as the Java client's murmur2 partitioner picks them among 25
	// (computed with org.apache.kafka.common.utils.Utils.murmur2).
	wantOff := []rec{
		{1, `["src",{"filename":"/tmp/b.txt"}]`, `{"position":20}`},
		{5, `["other",{"p":7}]`, `{"o":1}`},
		{17, `["src",{"filename":"/tmp/a.txt"}]`, `{"position":10}`},
	}
	if got := readAll(t, cl, "off"); fmt.Sprint(got) != fmt.Sprint(wantOff) {
		t.Errorf("offsets topic:\n got %v\nwant %v", got, wantOff)
	}
	adm := kadm.NewClient(cl)
	details, err := adm.ListTopics(ctx, "cfg", "off", "st")
	if err != nil {
		t.Fatal(err)
	}
	for topic, n := range map[string]int{"cfg": 1, "off": 25, "st": 5} {
		if got := len(details[topic].Partitions); got != n {
			t.Errorf("topic %s: %d partitions, want %d", topic, got, n)
		}
	}
	if got := readAll(t, cl, "st"); len(got) != 0 {
		t.Errorf("status topic written: %v", got)
	}
	committed, err := adm.FetchOffsets(ctx, "connect-sink")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := committed.Lookup("in", 0); !ok || o.At != 4 {
		t.Errorf("group connect-sink: %+v %v, want offset 4", o, ok)
	}
	if fmt.Sprint(res.Groups) != "[connect-sink]" {
		t.Errorf("groups %v", res.Groups)
	}
	for _, it := range res.Items {
		if want := map[bool]string{true: "connect-sink"}[it.Name == "sink"]; it.Group != want {
			t.Errorf("%s: group %q, want %q", it.Name, it.Group, want)
		}
	}

	// Again: nothing to do.
	last := map[string]Progress{}
	res, err = Write(ctx, cl, testCluster(), WriteOptions{Topics: topics, Progress: func(p Progress) { last[p.Topic] = p }})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range res.Items {
		if it.Action != ActionUnchanged {
			t.Errorf("second write: %+v, want unchanged", it)
		}
	}
	if res.ConfigRecords+res.OffsetRecords != 0 || len(res.Groups) != 0 {
		t.Errorf("second write wrote %+v", res)
	}
	if p := last["cfg"]; p.Read != 16 || p.Total != 16 {
		t.Errorf("progress of the config topic: %+v, want 16 of 16", p)
	}
	if p := last["off"]; p.Read != 3 || p.Total != 3 {
		t.Errorf("progress of the offsets topic: %+v, want 3 of 3", p)
	}
}

func TestWriteKeepsExistingConnectorsUnlessOverwrite(t *testing.T) {
	cl := writeTestKafka(t)
	ctx := context.Background()
	topics := Topics{Config: "cfg", Offset: "off", Status: "st"}
	if _, err := Write(ctx, cl, testCluster(), WriteOptions{Topics: topics}); err != nil {
		t.Fatal(err)
	}
	// A worker wrote src's offset of a.txt under other key bytes, and an
	// offset of a partition the new cluster no longer has.
	foreignKey := `["src", {"filename": "/tmp/a.txt"}]`
	if err := cl.ProduceSync(ctx,
		&kgo.Record{Topic: "off", Key: []byte(foreignKey), Value: []byte(`{"position":11}`)},
		&kgo.Record{Topic: "off", Key: []byte(`["src",{"filename":"/tmp/c.txt"}]`), Value: []byte(`{"position":5}`)},
	).FirstErr(); err != nil {
		t.Fatal(err)
	}
	before := len(readAll(t, cl, "off"))

	c := testCluster()
	c.Connectors[2].Config["x"] = "changed"
	res, err := Write(ctx, cl, c, WriteOptions{Topics: topics})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]WriteItem{}
	for _, it := range res.Items {
		got[it.Name] = it
	}
	if it := got["src"]; it.Action != ActionExists || !strings.Contains(it.Reason, "config") || !strings.Contains(it.Reason, "source offsets") {
		t.Errorf("src: %+v, want exists because of config and source offsets", it)
	}
	if it := got["other"]; it.Action != ActionUnchanged {
		t.Errorf("other: %+v", it)
	}
	if res.ConfigRecords+res.OffsetRecords != 0 || len(readAll(t, cl, "off")) != before {
		t.Fatalf("wrote without overwrite: %+v", res)
	}

	res, err = Write(ctx, cl, c, WriteOptions{Topics: topics, Overwrite: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range res.Items {
		if want := map[bool]string{true: ActionOverwrite, false: ActionUnchanged}[it.Name == "src"]; it.Action != want {
			t.Errorf("%+v, want %s", it, want)
		}
	}
	cfg := readAll(t, cl, "cfg")
	if last := cfg[len(cfg)-1]; last.key != "commit-src" {
		t.Errorf("last config record %v", last)
	}
	if r := cfg[len(cfg)-4]; r.key != "connector-src" || !strings.Contains(r.value, `"x":"changed"`) {
		t.Errorf("connector record %v", r)
	}
	all := readAll(t, cl, "off")
	// a.txt under both key bytes the topic holds (Kafka Connect looks it up
	// by the bytes its converter makes), c.txt tombstoned.
	tail := map[string]string{}
	for _, r := range all {
		tail[r.key] = r.value
	}
	if v := tail[foreignKey]; v != `{"position":10}` {
		t.Errorf("a.txt under the topic's key bytes: %s, want position 10", v)
	}
	if v := tail[`["src",{"filename":"/tmp/c.txt"}]`]; v != "<nil>" {
		t.Errorf("c.txt: %s, want a tombstone", v)
	}
	if v := tail[`["src",{"filename":"/tmp/a.txt"}]`]; v != `{"position":10}` {
		t.Errorf("a.txt under the encoder's key bytes: %s, want position 10", v)
	}
	if res.OffsetRecords != 2 {
		t.Errorf("OffsetRecords %d, want 2 (a.txt under the foreign key, tombstone of c.txt)", res.OffsetRecords)
	}
	// And now it is the same.
	res, err = Write(ctx, cl, c, WriteOptions{Topics: topics})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range res.Items {
		if it.Action != ActionUnchanged {
			t.Errorf("after overwrite: %+v", it)
		}
	}
}

func TestWriteRefusesBadTopicsAndBusyGroups(t *testing.T) {
	cl := writeTestKafka(t)
	ctx := context.Background()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 3, 1, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}, "cfg3"); err != nil {
		t.Fatal(err)
	}
	_, err := Write(ctx, cl, testCluster(), WriteOptions{Topics: Topics{Config: "cfg3", Offset: "o", Status: "s"}})
	if err == nil || !strings.Contains(err.Error(), "cfg3") || !strings.Contains(err.Error(), "3 partitions") {
		t.Errorf("3-partition config topic: %v", err)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"cleanup.policy": kadm.StringPtr("delete")}, "cfgdel"); err != nil {
		t.Fatal(err)
	}
	_, err = Write(ctx, cl, testCluster(), WriteOptions{Topics: Topics{Config: "cfgdel", Offset: "o", Status: "s"}})
	if err == nil || !strings.Contains(err.Error(), "cfgdel") || !strings.Contains(err.Error(), "compact") {
		t.Errorf("non-compacted config topic: %v", err)
	}

	// A non-compacted offsets topic: refused before the config topic is created.
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "offdel"); err != nil {
		t.Fatal(err)
	}
	_, err = Write(ctx, cl, testCluster(), WriteOptions{Topics: Topics{Config: "newcfg", Offset: "offdel", Status: "s"}})
	if err == nil || !strings.Contains(err.Error(), "offdel") || !strings.Contains(err.Error(), "compact") {
		t.Errorf("non-compacted offsets topic: %v", err)
	}
	if d, err := adm.ListTopics(ctx, "newcfg"); err != nil || d["newcfg"].Err == nil {
		t.Errorf("the config topic was created despite the bad offsets topic: %v %v", d, err)
	}

	// A running sink: its group has a member.
	consumer, err := kgo.NewClient(append(cl.Opts(), kgo.ConsumerGroup("connect-sink"), kgo.ConsumeTopics("in"))...)
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		gs, err := adm.DescribeGroups(ctx, "connect-sink")
		if err == nil && len(gs["connect-sink"].Members) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the consumer did not join its group")
		}
		pctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		consumer.PollFetches(pctx)
		cancel()
	}
	topics := Topics{Config: "c2", Offset: "o2", Status: "s2"}
	_, err = Write(ctx, cl, testCluster(), WriteOptions{Topics: topics})
	if err == nil || !strings.Contains(err.Error(), "connect-sink") || !strings.Contains(err.Error(), "stop the Kafka Connect sink first") {
		t.Fatalf("busy group: %v", err)
	}
	if got := readAll(t, cl, "c2"); len(got) != 0 {
		t.Errorf("config records written despite the busy group: %v", got)
	}
	if got := readAll(t, cl, "o2"); len(got) != 0 {
		t.Errorf("offset records written despite the busy group: %v", got)
	}
}

func TestWriteUsesTheKeyBytesReadKept(t *testing.T) {
	cl := writeTestKafka(t)
	key := `["k", {"p": 1}]` // as some other client wrote it
	c := &Cluster{Connectors: []*Connector{{Name: "k", Config: map[string]string{"connector.class": "S"},
		SourceOffsets: []SourceOffset{{Partition: map[string]any{"p": json.Number("1")}, Offset: map[string]any{"o": json.Number("2")}, Key: []byte(key)}}}}}
	res, err := Write(context.Background(), cl, c, WriteOptions{Topics: Topics{Config: "cfg", Offset: "off", Status: "st"}, OffsetPartitions: 3})
	if err != nil {
		t.Fatal(err)
	}
	got := readAll(t, cl, "off")
	if len(got) != 1 || got[0].key != key || got[0].value != `{"o":2}` || res.OffsetRecords != 1 {
		t.Errorf("offsets topic %v, want one record under %s", got, key)
	}
}

func TestWriteInconsistentConnectorWithoutTasks(t *testing.T) {
	cl := writeTestKafka(t)
	c := &Cluster{Connectors: []*Connector{{Name: "i", Target: "PAUSED", Config: map[string]string{"connector.class": "S"}, TaskCount: 2, Inconsistent: true}}}
	res, err := Write(context.Background(), cl, c, WriteOptions{Topics: Topics{Config: "cfg", Offset: "off", Status: "st"}})
	if err != nil {
		t.Fatal(err)
	}
	if it := res.Items[0]; it.Action != ActionCreate || !strings.Contains(it.Reason, "inconsistent") {
		t.Errorf("%+v", it)
	}
	got := readAll(t, cl, "cfg")
	if len(got) != 3 || got[2].key != "commit-i" || got[2].value != `{"tasks":0}` {
		t.Errorf("config topic %v, want target state, connector, and an empty task set", got)
	}
}

func TestWriteDryRunWritesNothing(t *testing.T) {
	cl := writeTestKafka(t)
	ctx := context.Background()
	topics := Topics{Config: "cfg", Offset: "off", Status: "st"}
	dry, err := Write(ctx, cl, testCluster(), WriteOptions{Topics: topics, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	details, err := kadm.NewClient(cl).ListTopics(ctx, "cfg", "off", "st")
	if err != nil {
		t.Fatal(err)
	}
	for name, d := range details {
		if d.Err == nil {
			t.Errorf("a dry run created topic %s", name)
		}
	}
	real, err := Write(ctx, cl, testCluster(), WriteOptions{Topics: topics})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(dry.Items) != fmt.Sprint(real.Items) || dry.ConfigRecords != real.ConfigRecords || dry.OffsetRecords != real.OffsetRecords {
		t.Errorf("dry run %+v, the write %+v", dry, real)
	}
	// On existing topics a dry run changes nothing either.
	c := testCluster()
	c.Connectors[2].Config["x"] = "changed"
	before := len(readAll(t, cl, "cfg"))
	res, err := Write(ctx, cl, c, WriteOptions{Topics: topics, Overwrite: true, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.ConfigRecords == 0 || len(readAll(t, cl, "cfg")) != before {
		t.Errorf("dry run over existing topics: %+v, config records %d → %d", res, before, len(readAll(t, cl, "cfg")))
	}
}

// TestWriteOverwriteDeletesSinkOffsetsNotCarried: a sink's group offsets of
// partitions no sink carries go, as a source's other partitions are
// tombstoned; without overwrite they make the connector differ.
func TestWriteOverwriteDeletesSinkOffsetsNotCarried(t *testing.T) {
	cl := writeTestKafka(t)
	ctx := context.Background()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "gone"); err != nil {
		t.Fatal(err)
	}
	topics := Topics{Config: "cfg", Offset: "off", Status: "st"}
	if _, err := Write(ctx, cl, testCluster(), WriteOptions{Topics: topics}); err != nil {
		t.Fatal(err)
	}
	extra := kadm.Offsets{}
	extra.Add(kadm.Offset{Topic: "gone", Partition: 0, At: 7, LeaderEpoch: -1})
	if resp, err := adm.CommitOffsets(ctx, "connect-sink", extra); err != nil || resp.Error() != nil {
		t.Fatal(err, resp.Error())
	}
	action := func(res WriteResult) string {
		for _, it := range res.Items {
			if it.Name == "sink" {
				return it.Action + ": " + it.Reason
			}
		}
		return "none"
	}
	res, err := Write(ctx, cl, testCluster(), WriteOptions{Topics: topics})
	if err != nil || !strings.HasPrefix(action(res), ActionExists) || !strings.Contains(action(res), "sink offsets") {
		t.Fatalf("without overwrite: %s %v", action(res), err)
	}
	res, err = Write(ctx, cl, testCluster(), WriteOptions{Topics: topics, Overwrite: true})
	if err != nil || !strings.HasPrefix(action(res), ActionOverwrite) {
		t.Fatalf("overwrite: %s %v", action(res), err)
	}
	got, err := adm.FetchOffsets(ctx, "connect-sink")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := got.Lookup("gone", 0); ok && o.At >= 0 {
		t.Errorf("gone/0 still at %d", o.At)
	}
	if o, ok := got.Lookup("in", 0); !ok || o.At != 4 {
		t.Errorf("in/0: %+v %v, want 4", o, ok)
	}
	if res, err = Write(ctx, cl, testCluster(), WriteOptions{Topics: topics}); err != nil || !strings.HasPrefix(action(res), ActionUnchanged) {
		t.Errorf("after overwrite: %s %v", action(res), err)
	}
}
