package daemon

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kcd-project/kcd/daemon/config"
)

func devConfig(t *testing.T, dir string) config.Config {
	t.Helper()
	cfg := config.Default()
	cfg.DataDir = dir
	cfg.RESTAddr = "127.0.0.1:0"
	cfg.DevKafka = true
	cfg.DevKafkaPort = 0
	cfg.PeerAddr = "127.0.0.1:0"
	cfg.JoinToken = "daemon-test-join-token" // every node of these tests shares it
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func getJSON(t *testing.T, url string) (int, map[string]any) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(res.Body).Decode(&m); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return res.StatusCode, m
}

func TestNodeWithDevKafkaBecomesHealthy(t *testing.T) {
	dir := t.TempDir()
	n := New(devConfig(t, dir), slog.New(slog.DiscardHandler))
	if err := n.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer n.Close()

	deadline := time.Now().Add(10 * time.Second)
	for {
		status, body := getJSON(t, n.RESTURL()+"/health")
		if status == 200 && body["status"] == "healthy" {
			break
		}
		if status != 503 || body["status"] != "starting" {
			t.Fatalf("health while starting: %d %v", status, body)
		}
		if time.Now().After(deadline) {
			t.Fatal("node did not become healthy")
		}
		time.Sleep(20 * time.Millisecond)
	}
	status, info := getJSON(t, n.RESTURL()+"/")
	if status != 200 || info["kafka_cluster_id"] != "kcd-dev-kafka" {
		t.Errorf("server info: %d %v", status, info)
	}

	// A second node on the same data dir must refuse to start.
	other := New(devConfig(t, dir), slog.New(slog.DiscardHandler))
	err := other.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "in use") {
		other.Close()
		t.Fatalf("second node on the same data dir: %v", err)
	}

	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(n.RESTURL() + "/health"); err == nil {
		t.Error("REST API still answers after Close")
	}
	// The lock is released: the data dir can be used again.
	again := New(devConfig(t, dir), slog.New(slog.DiscardHandler))
	if err := again.Start(context.Background()); err != nil {
		t.Fatalf("restart on the same data dir: %v", err)
	}
	again.Close()
}

func TestNodeStaysStartingWithoutKafka(t *testing.T) {
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.RESTAddr = "127.0.0.1:0"
	cfg.BootstrapServers = []string{"127.0.0.1:1"} // nothing listens on port 1
	cfg.PeerAddr = "127.0.0.1:0"
	n := New(cfg, slog.New(slog.DiscardHandler))
	if err := n.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	time.Sleep(300 * time.Millisecond)
	if status, body := getJSON(t, n.RESTURL()+"/health"); status != 503 || body["status"] != "starting" {
		t.Errorf("health without kafka: %d %v", status, body)
	}
	if status, body := getJSON(t, n.RESTURL()+"/"); status != 503 || body["error_code"] != float64(503) {
		t.Errorf("server info without kafka: %d %v", status, body)
	}
}

func TestRESTAddrInUseIsAClearError(t *testing.T) {
	first := New(devConfig(t, t.TempDir()), slog.New(slog.DiscardHandler))
	if err := first.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	cfg := devConfig(t, t.TempDir())
	cfg.RESTAddr = strings.TrimPrefix(first.RESTURL(), "http://")
	second := New(cfg, slog.New(slog.DiscardHandler))
	err := second.Start(t.Context())
	if err == nil || !strings.Contains(err.Error(), "rest-addr") {
		second.Close()
		t.Fatalf("got %v", err)
	}
}

func TestJoinAndRefuseAnotherCluster(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	first := New(devConfig(t, t.TempDir()), log)
	if err := first.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer first.Close()

	// A second node joins the first one's cluster and becomes a voter.
	cfg := devConfig(t, t.TempDir())
	cfg.NodeID = 2
	cfg.Join = first.RESTURL()
	second := New(cfg, log)
	if err := second.Start(t.Context()); err != nil {
		t.Fatalf("join: %v", err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		st := first.Raft().Status()
		if len(st.Members) == 2 && st.Members[1].Raft == "voter" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node 2 not promoted: %+v", st.Members)
		}
		time.Sleep(50 * time.Millisecond)
	}
	second.Close()

	// A node of another cluster told to join this one refuses to start.
	other := devConfig(t, t.TempDir())
	other.NodeID = 7
	lone := New(other, log)
	if err := lone.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	lone.Close()
	other.Join = first.RESTURL()
	err := New(other, log).Start(t.Context())
	if err == nil || !strings.Contains(err.Error(), "belongs to cluster") {
		t.Fatalf("restart into another cluster: %v", err)
	}
}

// A single node answers GET /connectors without waiting for an election
// timeout, on a fresh and on an existing data dir: with a timeout of an
// hour here, only its immediate campaign can make it leader.
func TestLoneNodeServesWithoutElectionTimeout(t *testing.T) {
	dir := t.TempDir()
	cfg := devConfig(t, dir)
	cfg.ElectionTimeout = time.Hour
	// Without a leader a read waits for one: the client gives up.
	hc := &http.Client{Timeout: 10 * time.Second}
	for _, run := range []string{"fresh", "existing"} {
		n := New(cfg, slog.New(slog.DiscardHandler))
		if err := n.Start(t.Context()); err != nil {
			t.Fatalf("%s data dir: %v", run, err)
		}
		closed := false
		t.Cleanup(func() {
			if !closed {
				n.Close()
			}
		})
		waitFor(t, run+" data dir: GET /connectors never answered 200", func() bool {
			res, err := hc.Get(n.RESTURL() + "/connectors")
			if err != nil {
				t.Fatalf("%s data dir: %v", run, err)
			}
			res.Body.Close()
			return res.StatusCode == http.StatusOK
		})
		closed = true
		if err := n.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
