package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/cobra"
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
