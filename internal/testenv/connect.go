package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The variables scripts/testenv writes for tests that start Kafka Connect
// workers of their own: the command that runs one worker in the
// foreground (its argument: the worker properties file), and the
// plugin.path holding the FileStream connectors.
const (
	ConnectWorker     = "KCD_TEST_CONNECT_WORKER"
	ConnectPluginPath = "KCD_TEST_CONNECT_PLUGIN_PATH"
)

// connectStartTimeout bounds a worker's start: a JVM on a busy 2-core
// machine takes 10–30 s.
const connectStartTimeout = 120 * time.Second

// StartConnectWorker starts a fresh real Kafka Connect distributed worker
// on the test environment's Kafka and returns its REST URL once it is
// healthy and serves the FileStream connectors. props override the
// defaults (group.id, the three storage topics, and any other worker
// property); the defaults are unique per call. The worker is killed at the
// end of the test; its log is printed when the test failed.
func StartConnectWorker(t testing.TB, props map[string]string) (url string) {
	t.Helper()
	url, _ = StartConnectWorkerPID(t, props)
	return url
}

// StartConnectWorkerPID is StartConnectWorker, and also returns the
// worker's JVM process id (the worker script execs the JVM).
func StartConnectWorkerPID(t testing.TB, props map[string]string) (url string, pid int) {
	t.Helper()
	kafka := Require(t, Kafka)
	script := Require(t, ConnectWorker)
	pluginPath := Require(t, ConnectPluginPath)
	addr, err := FreeAddr()
	if err != nil {
		t.Fatalf("connect worker: %v", err)
	}
	host, port, _ := strings.Cut(addr, ":")
	dir := t.TempDir()
	unique := fmt.Sprintf("kcd-test-%d-%s", time.Now().UnixNano(), port)
	all := map[string]string{
		"bootstrap.servers":                 kafka,
		"group.id":                          unique,
		"config.storage.topic":              unique + "-configs",
		"offset.storage.topic":              unique + "-offsets",
		"status.storage.topic":              unique + "-status",
		"config.storage.replication.factor": "1",
		"offset.storage.replication.factor": "1",
		"status.storage.replication.factor": "1",
		"key.converter":                     "org.apache.kafka.connect.json.JsonConverter",
		"value.converter":                   "org.apache.kafka.connect.json.JsonConverter",
		"listeners":                         "http://" + addr,
		"rest.advertised.host.name":         host,
		"rest.advertised.port":              port,
		"offset.flush.interval.ms":          "1000",
		"plugin.path":                       pluginPath,
		"plugin.discovery":                  "service_load",
	}
	for k, v := range props {
		all[k] = v
	}
	var b strings.Builder
	keys := make([]string, 0, len(all))
	for k := range all {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%s\n", k, all[k])
	}
	propsFile := filepath.Join(dir, "worker.properties")
	if err := os.WriteFile(propsFile, []byte(b.String()), 0o644); err != nil {
		t.Fatalf("connect worker: %v", err)
	}
	logFile := filepath.Join(dir, "worker.log")
	logw, err := os.Create(logFile)
	if err != nil {
		t.Fatalf("connect worker: %v", err)
	}
	cmd := exec.Command(script, propsFile)
	cmd.Stdout, cmd.Stderr = logw, logw
	cmd.SysProcAttr = workerProcAttr()
	if err := cmd.Start(); err != nil {
		logw.Close()
		t.Fatalf("connect worker: start %s: %v", script, err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		// The script execs the JVM; its group holds whatever it forked.
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
		logw.Close()
		if t.Failed() {
			printLog(t, logFile)
		}
	})

	url = "http://" + addr
	ctx, cancel := context.WithTimeout(context.Background(), connectStartTimeout)
	defer cancel()
	hc := &http.Client{Timeout: 5 * time.Second}
	for {
		// /health answers 200 once the worker has joined its group and read
		// the config topic.
		if get(ctx, hc, url+"/health") != nil &&
			bytes.Contains(get(ctx, hc, url+"/connector-plugins"), []byte("FileStreamSourceConnector")) {
			return url, cmd.Process.Pid
		}
		select {
		case <-exited:
			t.Fatalf("connect worker exited before it was healthy (%v); log: %s", cmd.ProcessState, logFile)
		case <-ctx.Done():
			t.Fatalf("connect worker at %s: not healthy with FileStream connectors within %v; log: %s", url, connectStartTimeout, logFile)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// get returns the body of a 200 answer, else nil.
func get(ctx context.Context, hc *http.Client, url string) []byte {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil
	}
	return body
}

// printLog logs the tail of a worker's log: its start and its errors are
// what explain a failure.
func printLog(t testing.TB, path string) {
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Logf("connect worker log %s: %v", path, err)
		return
	}
	const max = 64 << 10
	if len(data) > max {
		data = append([]byte("…\n"), data[len(data)-max:]...)
	}
	t.Logf("connect worker log %s:\n%s", path, data)
}
