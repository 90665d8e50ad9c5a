package main

import (
	"strings"
	"testing"
)

// kcctl top refuses to run without a terminal (exit 2, saying what to use
// instead) and refuses a too-short --interval; neither needs a server.
func TestTopNeedsATerminal(t *testing.T) {
	code, out, errOut := kcctl(t, "--server", "http://127.0.0.1:1", "top")
	if code != exitUsage || out != "" || !strings.Contains(errOut, "needs a terminal") || !strings.Contains(errOut, "kcctl get connectors") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, _, errOut = kcctl(t, "--server", "http://127.0.0.1:1", "top", "--interval", "1ms")
	if code != exitUsage || !strings.Contains(errOut, "--interval") {
		t.Errorf("--interval 1ms: exit %d, stderr %q", code, errOut)
	}
	code, _, _ = kcctl(t, "top", "extra")
	if code != exitUsage {
		t.Errorf("top with an argument: exit %d", code)
	}
}
