package migrate

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcd-project/kcd/internal/testenv"
)

func TestEncodeBatch(t *testing.T) {
	recs := []*kgo.Record{{Key: []byte("target-state-a"), Value: []byte(`{"state":"STARTED"}`)}, {Key: []byte("connector-a"), Value: nil}, {Key: []byte("commit-a"), Value: []byte(`{"tasks":0}`)}}
	b := encodeBatch(recs, 1234)
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(b); err != nil {
		t.Fatal(err)
	}
	if int(rb.Length) != len(b)-12 || rb.Magic != 2 || rb.NumRecords != 3 || rb.LastOffsetDelta != 2 || rb.FirstTimestamp != 1234 || rb.ProducerID != -1 {
		t.Fatalf("header %+v (%d bytes)", rb, len(b))
	}
	if crc := crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)); uint32(rb.CRC) != crc {
		t.Fatalf("crc %x, want %x", uint32(rb.CRC), crc)
	}
	got := recordsOf(t, rb)
	if len(got) != 3 || string(got[0].Key) != "target-state-a" || got[1].Value != nil || string(got[2].Value) != `{"tasks":0}` || got[2].OffsetDelta != 2 {
		t.Fatalf("records %+v", got)
	}
}

func TestBatchGroups(t *testing.T) {
	rec := func(size int) *kgo.Record { return &kgo.Record{Key: []byte("k"), Value: make([]byte, size)} }
	groups := [][]*kgo.Record{{rec(10), rec(10)}, {rec(300 << 10)}, {rec(300 << 10)}, {rec(600 << 10)}, {rec(1)}}
	var sizes []int
	for _, b := range batchGroups(groups) {
		sizes = append(sizes, len(b))
	}
	// The first two fit together; the third would pass the bound; the
	// fourth is alone over it; the last goes with nothing before it.
	if want := []int{2, 1, 1, 1}; !reflect.DeepEqual(sizes, want) {
		t.Errorf("groups per batch %v, want %v", sizes, want)
	}
	if b := batchGroups(nil); len(b) != 0 {
		t.Errorf("no groups: %d batches", len(b))
	}
}

// recordsOf decodes the records of an uncompressed batch.
func recordsOf(t *testing.T, rb kmsg.RecordBatch) []kmsg.Record {
	t.Helper()
	var out []kmsg.Record
	body := rb.Records
	for range rb.NumRecords {
		l, n := binary.Varint(body)
		if n <= 0 || n+int(l) > len(body) {
			t.Fatalf("record %d: bad length", len(out))
		}
		var r kmsg.Record
		if err := r.ReadFrom(body[:n+int(l)]); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
		body = body[n+int(l):]
	}
	return out
}

// batchKeys fetches partition 0 of topic raw and returns the keys of each
// record batch in it.
func batchKeys(t *testing.T, ctx context.Context, cl *kgo.Client, topic string) [][]string {
	t.Helper()
	td, err := kadm.NewClient(cl).ListTopics(ctx, topic)
	if err != nil || td[topic].Err != nil {
		t.Fatalf("metadata of %s: %v %v", topic, err, td[topic].Err)
	}
	d := td[topic]
	var out [][]string
	for next, end := int64(0), int64(1); next < end; {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxWaitMillis, req.MaxBytes = -1, 100, 50<<20
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic, ft.TopicID = topic, [16]byte(d.ID)
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch, fp.LogStartOffset = 0, next, 50<<20, -1, -1
		ft.Partitions = append(ft.Partitions, fp)
		req.Topics = append(req.Topics, ft)
		resp, err := req.RequestWith(ctx, cl.Broker(int(d.Partitions[0].Leader)))
		if err != nil {
			t.Fatalf("fetch %s: %v", topic, err)
		}
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 {
			t.Fatalf("fetch %s: error %d", topic, p.ErrorCode)
		}
		end = p.HighWatermark
		for b := p.RecordBatches; len(b) >= 12; {
			size := 12 + int(binary.BigEndian.Uint32(b[8:12]))
			if size > len(b) {
				break // cut by the fetch: fetched again from next
			}
			var rb kmsg.RecordBatch
			if err := rb.ReadFrom(b[:size]); err != nil {
				t.Fatal(err)
			}
			var keys []string
			for _, r := range recordsOf(t, rb) {
				keys = append(keys, string(r.Key))
			}
			out = append(out, keys)
			next = rb.FirstOffset + int64(rb.LastOffsetDelta) + 1
			b = b[size:]
		}
		if ctx.Err() != nil {
			t.Fatalf("fetch %s: %v", topic, ctx.Err())
		}
	}
	return out
}

// TestIntegrationWriteConfigBatches: Write puts each connector's config
// records into one record batch of the config topic, several connectors
// in one when they fit; on a topic whose max.message.bytes is smaller, a
// connector per batch, and a connector too large even for that one record
// per batch. What it wrote reads back as the same connectors.
func TestIntegrationWriteConfigBatches(t *testing.T) {
	brokers := testenv.Require(t, testenv.Kafka)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	id := fmt.Sprintf("kcd-write-batch-%d", time.Now().UnixNano())

	// Topics Write creates: every connector in one batch.
	topics := Topics{Config: id + "-configs", Offset: id + "-offsets", Status: id + "-status"}
	t.Cleanup(func() { adm.DeleteTopics(context.Background(), topics.Config, topics.Offset, topics.Status) })
	tc := testCluster()
	tc.Connectors[1].SinkOffsets = nil // of a topic this Kafka lacks
	all, err := Write(ctx, cl, tc, WriteOptions{Topics: topics, ReplicationFactor: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := batchKeys(t, ctx, cl, topics.Config); len(got) != 1 || len(got[0]) != all.ConfigRecords || all.ConfigRecords < 4*3 {
		t.Errorf("config topic: batches %q, want one of the %d records", got, all.ConfigRecords)
	}

	// A config topic that takes batches of 100,000 bytes at most.
	small := Topics{Config: id + "-small-configs", Offset: id + "-small-offsets", Status: id + "-small-status"}
	t.Cleanup(func() { adm.DeleteTopics(context.Background(), small.Config, small.Offset, small.Status) })
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"cleanup.policy": kadm.StringPtr("compact"), "max.message.bytes": kadm.StringPtr("100000")}, small.Config); err != nil {
		t.Fatal(err)
	}
	big := func(n int) string { return strings.Repeat("x", n) }
	c := &Cluster{}
	for _, n := range []string{"a", "b", "c", "d"} {
		conn := &Connector{Name: n, Target: "STARTED", Config: map[string]string{"name": n, "connector.class": "S"}}
		if n == "c" || n == "d" {
			conn.Config["big"] = big(60_000)
		}
		c.Connectors = append(c.Connectors, conn)
	}
	c.Connectors = append(c.Connectors, &Connector{Name: "e", Target: "PAUSED", Config: map[string]string{"name": "e", "connector.class": "S"},
		Tasks: []map[string]string{{"task.class": "T", "big": big(75_000)}, {"task.class": "T", "big": big(75_000)}}, TaskCount: 2})
	res, err := Write(ctx, cl, c, WriteOptions{Topics: small, ReplicationFactor: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.ConfigRecords != 4*3+5 {
		t.Errorf("%d config records written, want 17", res.ConfigRecords)
	}
	want := [][]string{
		{"target-state-a", "connector-a", "commit-a"},
		{"target-state-b", "connector-b", "commit-b"},
		{"target-state-c", "connector-c", "commit-c"},
		{"target-state-d", "connector-d", "commit-d"},
		{"target-state-e"}, {"connector-e"}, {"task-e-0"}, {"task-e-1"}, {"commit-e"},
	}
	if got := batchKeys(t, ctx, cl, small.Config); !reflect.DeepEqual(got, want) {
		t.Errorf("config topic: batches\n got %q\nwant %q", got, want)
	}
	w := &writer{base: cl.Opts(), adm: adm, opts: WriteOptions{Topics: small}}
	if err := w.readConfigs(ctx); err != nil {
		t.Fatal(err)
	}
	for _, conn := range c.Connectors {
		st := w.configs[conn.Name]
		if st == nil || *st.config["connector.class"] != "S" || len(st.tasks) != len(conn.Tasks) || st.inconsistent || w.target(conn.Name) != conn.Target {
			t.Errorf("connector %s read back: %+v, target %s", conn.Name, st, w.target(conn.Name))
		}
	}
}
