package migrate

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcd-project/kcd/internal/testenv"
)

// benchConnectors and benchOffsets are the measure: 1,000
// connectors with 100,000 offset records.
const (
	benchConnectors = 1000
	benchOffsets    = 100_000
)

// BenchmarkAccumulate folds the records of 1,000 connectors (config, one
// task, commit, status) and 100,000 offset records (100 partitions per
// connector) without Kafka.
func BenchmarkAccumulate(b *testing.B) {
	type r struct {
		topic      int
		at         at
		key, value []byte
	}
	var recs []r
	for i := range benchConnectors {
		n := fmt.Sprintf("connector-%04d", i)
		recs = append(recs,
			r{0, at{}, []byte("connector-" + n), []byte(`{"properties":{"connector.class":"org.apache.kafka.connect.file.FileStreamSourceConnector","tasks.max":"1","file":"/data/` + n + `"}}`)},
			r{0, at{}, []byte("task-" + n + "-0"), []byte(`{"properties":{"task.class":"org.apache.kafka.connect.file.FileStreamSourceTask","file":"/data/` + n + `"}}`)},
			r{0, at{}, []byte("commit-" + n), []byte(`{"tasks":1}`)},
			r{2, at{}, []byte("status-connector-" + n), []byte(`{"state":"RUNNING","trace":null,"worker_id":"10.0.0.1:8083","generation":3}`)})
	}
	for i := range benchOffsets {
		n := fmt.Sprintf("connector-%04d", i%benchConnectors)
		recs = append(recs, r{1, at{Partition: int32(i % 25), Offset: int64(i / 25), Timestamp: int64(i)},
			fmt.Appendf(nil, `[%q,{"filename":"/data/%s/%d"}]`, n, n, (i/benchConnectors)%100),
			fmt.Appendf(nil, `{"position":%d}`, i)})
	}
	b.ReportAllocs()
	for b.Loop() {
		acc := newAccumulator(DefaultTopics(), nil)
		for _, rc := range recs {
			switch rc.topic {
			case 0:
				acc.configRecord(rc.at, rc.key, rc.value)
			case 1:
				acc.offsetRecord(rc.at, rc.key, rc.value)
			case 2:
				acc.statusRecord(rc.at, rc.key, rc.value)
			}
		}
		if c := acc.cluster(); len(c.Connectors) != benchConnectors || len(c.Connectors[0].SourceOffsets) != 100 {
			b.Fatalf("%d connectors", len(c.Connectors))
		}
	}
}

// BenchmarkReadKafka reads 1,000 connectors and 100,000 offset records
// from fresh topics on the test environment's Kafka, and reports the heap
// in use after a read (the Cluster it returns held) besides the time.
func BenchmarkReadKafka(b *testing.B) {
	brokers := testenv.Lookup(testenv.Kafka)
	if brokers == "" {
		b.Skip("needs the test environment's Kafka (KCD_TEST_KAFKA)")
	}
	ctx, cancel := context.WithTimeout(b.Context(), 5*time.Minute)
	defer cancel()
	name := fmt.Sprintf("benchread-%d", time.Now().UnixNano())
	topics := Topics{Config: name + "-configs", Offset: name + "-offsets", Status: name + "-status"}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	compact := "compact"
	for t, n := range map[string]int32{topics.Config: 1, topics.Offset: 25, topics.Status: 5} {
		if _, err := adm.CreateTopic(ctx, n, 1, map[string]*string{"cleanup.policy": &compact}, t); err != nil {
			b.Fatal(err)
		}
	}
	defer func() { _, _ = adm.DeleteTopics(context.Background(), topics.Config, topics.Offset, topics.Status) }()
	var recs []*kgo.Record
	for i := range benchConnectors {
		n := fmt.Sprintf("connector-%04d", i)
		recs = append(recs,
			&kgo.Record{Topic: topics.Config, Key: []byte("connector-" + n), Value: []byte(`{"properties":{"connector.class":"org.apache.kafka.connect.file.FileStreamSourceConnector","tasks.max":"1","file":"/data/` + n + `"}}`)},
			&kgo.Record{Topic: topics.Config, Key: []byte("task-" + n + "-0"), Value: []byte(`{"properties":{"task.class":"org.apache.kafka.connect.file.FileStreamSourceTask","file":"/data/` + n + `"}}`)},
			&kgo.Record{Topic: topics.Config, Key: []byte("commit-" + n), Value: []byte(`{"tasks":1}`)},
			&kgo.Record{Topic: topics.Status, Key: []byte("status-connector-" + n), Value: []byte(`{"state":"RUNNING","trace":null,"worker_id":"10.0.0.1:8083","generation":3}`)})
	}
	for i := range benchOffsets {
		n := fmt.Sprintf("connector-%04d", i%benchConnectors)
		recs = append(recs, &kgo.Record{Topic: topics.Offset,
			Key:   fmt.Appendf(nil, `[%q,{"filename":"/data/%s/%d"}]`, n, n, (i/benchConnectors)%100),
			Value: fmt.Appendf(nil, `{"position":%d}`, i)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		b.Fatal(err)
	}
	recs = nil
	var heap uint64
	b.ResetTimer()
	for b.Loop() {
		c, err := Read(ctx, cl, ReadOptions{Topics: topics})
		if err != nil {
			b.Fatal(err)
		}
		if len(c.Connectors) != benchConnectors || len(c.Connectors[0].SourceOffsets) != 100 {
			b.Fatalf("%d connectors", len(c.Connectors))
		}
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		heap = max(heap, ms.HeapInuse)
		runtime.KeepAlive(c)
	}
	b.ReportMetric(float64(heap)/(1<<20), "MiB-heap-after")
}
