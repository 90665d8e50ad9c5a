package bench

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/kcd-project/kcd/daemon/systemtest"
)

// BenchmarkLoadRSS measures the resident memory of a kcd process under a
// Connect load on the real Kafka broker of the test environment: a Datagen
// source with 4 tasks at full speed (struct records with schemas, through
// the JsonConverter) and a FileStream sink reading them back, for 20 s.
// rss-max-MB is the largest VmRSS sampled (every 250 ms), hwm-MB the
// kernel's peak (VmHWM); records/s what the sink's source produced. Needs
// KCD_TEST_KAFKA (scripts/testenv up kafka). Target: under 100 MB.
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
	c := systemtest.StartCluster(b, bin, systemtest.Options{Size: 1, Bootstrap: brokers})
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
	var maxRSS int64
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if r, err := n.RSS(); err == nil && r > maxRSS {
			maxRSS = r
		}
		time.Sleep(250 * time.Millisecond)
	}
	hwm, err := systemtest.ProcStatusBytes(n.PID(), "VmHWM")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(maxRSS)/mb, "rss-max-MB")
	b.ReportMetric(float64(hwm)/mb, "hwm-MB")
	progress("under load: VmRSS max %.1f MB, VmHWM %.1f MB", float64(maxRSS)/mb, float64(hwm)/mb)
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
