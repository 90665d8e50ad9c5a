package worker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcd-project/kcd/daemon/clientcfg"
)

// The codecs of a record batch's attributes.
var codecNames = map[int16]string{0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}

// compressionOnTopic fetches partition 0 of topic from its leader and
// returns the codecs its record batches were written with, as the broker
// stores them.
func (e *env) compressionOnTopic(topic string) map[string]int {
	t := e.t
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	td, err := kadm.NewClient(cl).ListTopics(ctx, topic)
	if err != nil || td[topic].Err != nil {
		t.Fatalf("list %s: %v %v", topic, err, td[topic].Err)
	}
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MaxBytes = 100, 16<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, td[topic].ID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.PartitionMaxBytes = 0, 16<<20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl.Broker(int(td[topic].Partitions[0].Leader)))
	if err != nil {
		t.Fatalf("fetch %s: %v", topic, err)
	}
	codecs := map[string]int{}
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			if p.ErrorCode != 0 {
				t.Fatalf("fetch %s: error code %d", topic, p.ErrorCode)
			}
			for b := p.RecordBatches; len(b) >= 12; {
				n := 12 + int(int32(b[8])<<24|int32(b[9])<<16|int32(b[10])<<8|int32(b[11]))
				if n > len(b) {
					break // a partial batch at the end of the response
				}
				var rb kmsg.RecordBatch
				if err := rb.ReadFrom(b[:n]); err != nil {
					t.Fatalf("batch of %s: %v", topic, err)
				}
				if rb.Attributes&0x20 == 0 { // not a control batch
					codecs[codecNames[rb.Attributes&0x07]]++
				}
				b = b[n:]
			}
		}
	}
	return codecs
}

// A FileStream source of lines, its topic and the number of lines.
func (e *env) lineSource(extra map[string]string) (name, topic string, n int) {
	t := e.t
	in := filepath.Join(t.TempDir(), "in.txt")
	n = 2000
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "line %05d %s\n", i, strings.Repeat("compressible ", 8))
	}
	if err := os.WriteFile(in, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	name, topic = e.name("src"), e.name("topic")
	cfg := map[string]string{"connector.class": "FileStreamSource", "file": in, "topic": topic,
		"topic.creation.default.partitions": "1", "topic.creation.default.replication.factor": "-1"}
	for k, v := range extra {
		cfg[k] = v
	}
	e.create(name, cfg)
	return name, topic, n
}

// compression.type takes effect: the worker's producer.compression.type
// on the shared producer, a connector's producer.override on its own
// producer and on a transactional one, and none by default, as Kafka
// Connect; an override the policy refuses fails the connector with Kafka
// Connect's message.
func TestIntegrationProducerCompression(t *testing.T) {
	t.Run("shared", func(t *testing.T) {
		e := kafkaEnv(t)
		_, plain, n := e.lineSource(nil)
		_, over, _ := e.lineSource(map[string]string{"producer.override.compression.type": "zstd"})
		e.start(func(c *Config) {
			c.ExactlyOnceSource = ExactlyOnceDisabled
			c.Producer = map[string]string{"compression.type": "gzip"}
		})
		e.consumeN(plain, n, 0)
		e.consumeN(over, n, 0)
		if got := e.compressionOnTopic(plain); len(got) != 1 || got["gzip"] == 0 {
			t.Errorf("worker producer.compression.type=gzip: batches %v", got)
		}
		if got := e.compressionOnTopic(over); len(got) != 1 || got["zstd"] == 0 {
			t.Errorf("producer.override.compression.type=zstd: batches %v", got)
		}
	})
	t.Run("transactional", func(t *testing.T) {
		e := kafkaEnv(t)
		_, plain, n := e.lineSource(nil)
		_, over, _ := e.lineSource(map[string]string{"producer.override.compression.type": "lz4", "producer.override.linger.ms": "50"})
		e.start(nil)
		e.consumeN(plain, n, 0)
		e.consumeN(over, n, 0)
		if got := e.compressionOnTopic(plain); len(got) != 1 || got["none"] == 0 {
			t.Errorf("defaults: batches %v, want none (Kafka Connect's default)", got)
		}
		if got := e.compressionOnTopic(over); len(got) != 1 || got["lz4"] == 0 {
			t.Errorf("producer.override.compression.type=lz4: batches %v", got)
		}
	})
	t.Run("refused", func(t *testing.T) {
		e := kafkaEnv(t)
		name, _, _ := e.lineSource(map[string]string{"producer.override.compression.type": "zstd"})
		e.start(func(c *Config) { c.OverridePolicy = clientcfg.PolicyNone })
		st := e.waitState(name, -1, "FAILED")
		if want := "The 'None' policy does not allow 'compression.type' to be overridden in the connector configuration."; !strings.Contains(st.Trace, want) {
			t.Errorf("trace %q lacks %q", st.Trace, want)
		}
	})
}
