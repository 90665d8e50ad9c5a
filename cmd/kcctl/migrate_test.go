package main

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kfake"
)

// The command that resumes what a failed migration stopped carries the
// peer's URL and credential flags as kcctl's own, quoted for a shell,
// and never a password.
func TestResumeCommand(t *testing.T) {
	got := resumeCommand(&connectPeer{url: "https://connect:8083", user: "ops", passwordFile: "/etc/kc pw", caFile: "/etc/ca.pem"},
		[]string{"orders-src", "it's"})
	want := `kcctl --server https://connect:8083 --user ops --password-file '/etc/kc pw' --ca-file /etc/ca.pem resume connector orders-src 'it'\''s'`
	if got != want {
		t.Errorf("resumeCommand:\n got %s\nwant %s", got, want)
	}
	if got := resumeCommand(&connectPeer{url: "http://kcd:8083"}, []string{"a"}); got != "kcctl --server http://kcd:8083 resume connector a" {
		t.Errorf("resumeCommand without credentials: %s", got)
	}
}

// The warning about connectors still running advises what applies to
// the flags given.
func TestWarnRunning(t *testing.T) {
	for _, c := range []struct {
		stopSource, dryRun bool
		advice             string
	}{
		{false, false, "Stop them first, or pass --stop-source."},
		{false, true, "Stop them first, or pass --stop-source."},
		{true, true, "--stop-source stops them when run without --dry-run."},
		{true, false, "--stop-source leaves them running: this run does not write them"},
	} {
		var b bytes.Buffer
		cmd := &cobra.Command{}
		cmd.SetErr(&b)
		warnRunning(cmd, []string{"a", "b"}, "Kafka Connect", "kcd", c.stopSource, c.dryRun)
		if !strings.HasPrefix(b.String(), "Warning: 2 connector(s) still run on Kafka Connect (a, b): started in kcd too") || !strings.Contains(b.String(), c.advice) {
			t.Errorf("stopSource %v, dryRun %v: %q, want advice %q", c.stopSource, c.dryRun, b.String(), c.advice)
		}
	}
	var b bytes.Buffer
	cmd := &cobra.Command{}
	cmd.SetErr(&b)
	warnRunning(cmd, nil, "kcd", "Kafka Connect", false, false)
	if b.Len() != 0 {
		t.Errorf("a warning about no connectors: %q", b.String())
	}
}

// A to-kafka run that fails after --stop-source stopped connectors in kcd
// names them and prints the command that resumes them. The kcd here is a
// fake whose second export fails; Kafka is franz-go's kfake.
func TestToKafkaFailureAfterStopNamesStopped(t *testing.T) {
	kafka, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer kafka.Close()
	var mu sync.Mutex
	stopped, exports := false, 0
	kcd := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/connectors":
			st := `{"state":"RUNNING","worker_id":"w"},"tasks":[{"id":0,"state":"RUNNING","worker_id":"w"}]`
			if stopped {
				st = `{"state":"STOPPED","worker_id":"w"},"tasks":[]`
			}
			fmt.Fprintf(w, `{"orders-src":{"status":{"name":"orders-src","connector":%s,"type":"source"}}}`, st)
		case r.Method == http.MethodPut && r.URL.Path == "/connectors/orders-src/stop":
			stopped = true
			w.WriteHeader(http.StatusAccepted)
		case r.Method == http.MethodGet && r.URL.Path == "/kcd/v1/export":
			if exports++; exports > 1 {
				w.WriteHeader(http.StatusInternalServerError)
				fmt.Fprint(w, `{"error_code":500,"message":"the store is gone"}`)
				return
			}
			target := "STARTED"
			if stopped {
				target = "STOPPED"
			}
			fmt.Fprintf(w, `{"revision":3,"connectors":[{"name":"orders-src","config":{"connector.class":"FileStreamSource","file":"/in","topic":"t"},"target":%q,"tasks":[]}]}`, target)
		default:
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprintf(w, `{"error_code":404,"message":"no %s %s"}`, r.Method, r.URL.Path)
		}
	}))
	defer kcd.Close()

	code, out, errOut := kcctl(t, "--server", kcd.URL, "migrate", "to-kafka", "--bootstrap-servers", strings.Join(kafka.ListenAddrs(), ","), "--stop-source")
	if code == 0 {
		t.Fatalf("exit 0, want a failure\n%s\n%s", out, errOut)
	}
	t.Logf("stderr:\n%s", errOut)
	for _, want := range []string{
		"stopping 1 connector(s) on kcd: orders-src",
		"The migration failed after it stopped 1 connector(s) on kcd: orders-src.",
		"kcctl --server " + kcd.URL + " resume connector orders-src",
		"the store is gone",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
}
