package bench

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcd-project/kcd/daemon/systemtest"
)

// BenchmarkLoadRSS measures the resident memory of a kcd process under a
// Connect load on the real Kafka broker of the test environment: a Datagen
// source with 4 tasks at full speed (struct records with schemas, through
// the JsonConverter) and a FileStream sink reading them back, for 20 s.
// rss-max-MB is the largest VmRSS sampled (every 250 ms), hwm-MB the
// kernel's peak (VmHWM); source-records/s and sink-records/s are what the
// source produced and the sink committed from 5 s to 20 s. Settings of
// the process come from the environment (KCD_MEMORY_LIMIT, GOMEMLIMIT...).
// Needs KCD_TEST_KAFKA (scripts/testenv up kafka). Target: under 100 MB.
func BenchmarkLoadRSS(b *testing.B) {
	brokers := os.Getenv("KCD_TEST_KAFKA")
	if brokers == "" {
		b.Skip("needs KCD_TEST_KAFKA: scripts/testenv up kafka")
	}
	bin := kcdBinary(b)
	for b.Loop() {
		measureLoadRSS(b, bin, brokers)
	}
}

func measureLoadRSS(b *testing.B, bin, brokers string) {
	c := systemtest.StartCluster(b, bin, systemtest.Options{Size: 1, Bootstrap: brokers,
		// Sink offsets every second: the consumer group's offsets are how
		// the benchmark sees the sink's progress.
		ExtraArgs: []string{"--offset-flush-interval", "1s"}})
	n := c.Node(1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := systemtest.WaitLeader(ctx, n); err != nil {
		b.Fatal(err)
	}
	topic := fmt.Sprintf("kcd-bench-load-%d", time.Now().UnixNano())
	for _, body := range []string{
		fmt.Sprintf(`{"name":"gen","config":{"connector.class":"Datagen","topic":%q,"tasks.max":"4","shape":"user"}}`, topic),
		fmt.Sprintf(`{"name":"sink","config":{"connector.class":"FileStreamSink","topics":%q,"file":"/dev/null"}}`, topic),
	} {
		if err := postConnector(ctx, n, body); err != nil {
			b.Fatal(err)
		}
	}
	const mb = 1 << 20
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	var maxRSS int64
	start := time.Now()
	var t0 time.Time
	var produced0, consumed0 int64
	for time.Since(start) < 20*time.Second {
		if r, err := n.RSS(); err == nil && r > maxRSS {
			maxRSS = r
		}
		if t0.IsZero() && time.Since(start) > 5*time.Second {
			t0 = time.Now()
			produced0, consumed0 = loadProgress(ctx, adm, topic)
		}
		time.Sleep(250 * time.Millisecond)
	}
	produced, consumed := loadProgress(ctx, adm, topic)
	el := time.Since(t0).Seconds()
	hwm, err := systemtest.ProcStatusBytes(n.PID(), "VmHWM")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(maxRSS)/mb, "rss-max-MB")
	b.ReportMetric(float64(hwm)/mb, "hwm-MB")
	b.ReportMetric(float64(produced-produced0)/el, "source-records/s")
	b.ReportMetric(float64(consumed-consumed0)/el, "sink-records/s")
	progress("under load: VmRSS max %.1f MB, VmHWM %.1f MB; source %.0f records/s, sink %.0f records/s (from 5 s to 20 s)",
		float64(maxRSS)/mb, float64(hwm)/mb, float64(produced-produced0)/el, float64(consumed-consumed0)/el)
}

// loadProgress returns how many records the topic has (its end offsets)
// and how many of them the sink committed (the offsets of its consumer
// group, connect-sink, committed every second here).
func loadProgress(ctx context.Context, adm *kadm.Client, topic string) (produced, consumed int64) {
	if ends, err := adm.ListEndOffsets(ctx, topic); err == nil {
		ends.Each(func(o kadm.ListedOffset) { produced += o.Offset })
	}
	if offs, err := adm.FetchOffsets(ctx, "connect-sink"); err == nil {
		offs.Each(func(o kadm.OffsetResponse) {
			if o.Topic == topic {
				consumed += o.At
			}
		})
	}
	return produced, consumed
}

func postConnector(ctx context.Context, n *systemtest.Node, body string) error {
	for {
		status, err := n.Post(ctx, "/connectors", []byte(body))
		if err == nil && status == 201 {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("create connector: %d %v", status, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
