package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kcd-project/kcd/daemon"
	"github.com/kcd-project/kcd/daemon/config"
	"github.com/kcd-project/kcd/internal/version"
)

func kcctl(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func startNode(t *testing.T) string {
	t.Helper()
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
	// Ready: it leads, and its worker holds a session with its coordinator
	// (GET /health answers 200 only then).
	waitUntil(t, func() (bool, string) {
		res, err := http.Get(n.RESTURL() + "/health")
		if err != nil {
			return false, fmt.Sprintf("the node did not become healthy: %v", err)
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK, "the node did not become healthy: " + res.Status
	})
	return n.RESTURL()
}

// waitUntil polls cond until it holds, failing the test after 20 s with
// what cond last said.
func waitUntil(t *testing.T, cond func() (ok bool, last string)) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ok, last := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(last)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestVersionAgainstARunningNode(t *testing.T) {
	url := startNode(t)
	code, out, errOut := kcctl(t, "--server", url, "version", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var v versionInfo
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if v.Server == nil || v.Server.Version != version.Version || v.Server.ConnectAPIVersion == "" {
		t.Errorf("server version missing: %+v", v)
	}
	if v.Client.Version != version.Version {
		t.Errorf("client version %q", v.Client.Version)
	}

	code, out, _ = kcctl(t, "--server", url, "version")
	if code != 0 || !strings.Contains(out, "kcd ") || strings.Contains(out, "<unknown>") {
		t.Errorf("table: exit %d\n%s", code, out)
	}
}

func TestVersionWithUnreachableServer(t *testing.T) {
	// kcctl's own version is printed, and the exit status says the server
	// could not be asked.
	code, out, errOut := kcctl(t, "--server", "http://127.0.0.1:1", "version")
	if code != exitError {
		t.Fatalf("exit %d", code)
	}
	if !strings.Contains(out, "kcd") || !strings.Contains(out, "<unknown>") {
		t.Errorf("table:\n%s", out)
	}
	if !strings.Contains(errOut, "cannot reach the server at http://127.0.0.1:1") {
		t.Errorf("stderr does not say why: %q", errOut)
	}
}

func TestUsageErrorsExitTwo(t *testing.T) {
	for _, args := range [][]string{{"version", "-o", "xml"}, {"version", "--nope"}} {
		code, _, errOut := kcctl(t, args...)
		if code != exitUsage || !strings.Contains(errOut, "Error:") {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut)
		}
	}
}

func TestServerFromEnvironment(t *testing.T) {
	url := startNode(t)
	t.Setenv("KCCTL_SERVER", url)
	code, out, errOut := kcctl(t, "version", "-o", "name")
	if code != 0 || !strings.Contains(out, "kcd/"+version.Version) {
		t.Errorf("exit %d, out %q, err %q", code, out, errOut)
	}
}
