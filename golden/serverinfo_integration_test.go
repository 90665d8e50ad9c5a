package golden

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/kcd-project/kcd/daemon"
	"github.com/kcd-project/kcd/daemon/config"
	"github.com/kcd-project/kcd/internal/testenv"
)

// TestIntegrationBasicEndpointsMatchKafkaConnect starts a kcd node on the same
// Kafka as the real Kafka Connect worker and asks both the same questions:
// server info, health, an unknown path and a wrong method must answer alike.
func TestIntegrationBasicEndpointsMatchKafkaConnect(t *testing.T) {
	connect := testenv.Require(t, testenv.ConnectURL)
	brokers := testenv.Require(t, testenv.Kafka)

	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.RESTAddr = "127.0.0.1:0"
	cfg.BootstrapServers = []string{brokers}
	cfg.PeerAddr = "127.0.0.1:0"
	node := daemon.New(cfg, slog.New(slog.DiscardHandler))
	if err := node.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	kcd := node.RESTURL()
	deadline := time.Now().Add(time.Minute)
	for {
		if status, _ := call(t, "GET", kcd+"/health", nil); status == 200 {
			break
		}
		mustf(t, time.Now().Before(deadline), "kcd did not become healthy on %s", brokers)
		time.Sleep(50 * time.Millisecond)
	}

	// GET /: same fields, same Kafka cluster.
	_, kb := call(t, "GET", kcd+"/", nil)
	_, cb := call(t, "GET", connect+"/", nil)
	ki, ci := decode[map[string]any](t, "kcd /", kb), decode[map[string]any](t, "connect /", cb)
	mustf(t, sameKeys(ki, ci), "GET / fields differ: kcd %s, connect %s", kb, cb)
	mustf(t, ki["kafka_cluster_id"] == ci["kafka_cluster_id"], "kafka_cluster_id differs: kcd %s, connect %s", kb, cb)

	// The same answers, status and body, where both should be identical.
	for _, req := range []struct{ method, path string }{
		{"GET", "/health"},
		{"GET", "/no-such-path"},
		{"GET", "/connectors-not/really"},
		{"POST", "/"},
		{"DELETE", "/health"},
	} {
		ks, kb := call(t, req.method, kcd+req.path, nil)
		cs, cb := call(t, req.method, connect+req.path, nil)
		if ks != cs || !sameJSON(kb, cb) {
			t.Errorf("%s %s: kcd %d %s, Kafka Connect %d %s", req.method, req.path, ks, kb, cs, cb)
		}
	}
}

func sameKeys(a, b map[string]any) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if _, ok := b[k]; !ok {
			return false
		}
	}
	return true
}

func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}
