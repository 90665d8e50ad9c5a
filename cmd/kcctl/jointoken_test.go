package main

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kcd-project/kcd/daemon"
	"github.com/kcd-project/kcd/daemon/config"
)

// A node started without a join token generates one; kcctl cluster
// join-token prints it from the data dir, and kcctl cluster add is refused
// without it and accepted with it (KCCTL_JOIN_TOKEN).
func TestClusterJoinToken(t *testing.T) {
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.RESTAddr = "127.0.0.1:0"
	cfg.DevKafka = true
	cfg.DevKafkaPort = 0
	cfg.PeerAddr = "127.0.0.1:0"
	n := daemon.New(cfg, slog.New(slog.DiscardHandler))
	if err := n.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	t.Setenv("KCCTL_SERVER", n.RESTURL())

	file := filepath.Join(cfg.DataDir, "join-token")
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(file); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no join token generated into %s", file)
		}
		time.Sleep(50 * time.Millisecond)
	}
	code, out, errOut := kcctl(t, "cluster", "join-token", "--data-dir", cfg.DataDir)
	token := strings.TrimSpace(out)
	if code != 0 || len(token) < 32 {
		t.Fatalf("join-token: exit %d, out %q, err %q", code, out, errOut)
	}
	if code, _, errOut := kcctl(t, "cluster", "join-token", "--data-dir", t.TempDir()); code == 0 || !strings.Contains(errOut, "no generated join token") {
		t.Errorf("join-token of an empty dir: exit %d, err %q", code, errOut)
	}

	code, _, errOut = kcctl(t, "cluster", "add", "7", "--peer-url", "http://127.0.0.1:1")
	if code == 0 || !strings.Contains(errOut, "join token") {
		t.Errorf("add without a token: exit %d, err %q", code, errOut)
	}
	code, _, errOut = kcctl(t, "cluster", "add", "7", "--peer-url", "http://127.0.0.1:1", "--join-token", "wrong-token-0123456789")
	if code == 0 || !strings.Contains(errOut, "not the cluster's") {
		t.Errorf("add with a wrong token: exit %d, err %q", code, errOut)
	}
	t.Setenv("KCCTL_JOIN_TOKEN", token)
	if code, out, errOut := kcctl(t, "cluster", "add", "7", "--peer-url", "http://127.0.0.1:1", "-o", "name"); code != 0 || strings.TrimSpace(out) != "member/7" {
		t.Errorf("add with the token: exit %d, out %q, err %q", code, out, errOut)
	}
}
