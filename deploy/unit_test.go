// Package deploy holds the files that install kcd on a machine; its test
// checks the systemd unit with systemd's own review.
package deploy

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The unit's overall exposure, as systemd-analyze security rates it from 0
// (locked down) to 10 (unprotected), stays at most maxExposure.
const maxExposure = "15" // 1.5, in tenths as --threshold takes it

func TestSystemdUnitIsHardened(t *testing.T) {
	bin, err := exec.LookPath("systemd-analyze")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("systemd-analyze is not installed (Debian package systemd)")
		}
		t.Skip("systemd-analyze is not installed")
	}
	out, err := exec.Command(bin, "security", "--offline=yes", "--threshold="+maxExposure, "kcd.service").CombinedOutput()
	text := string(out)
	if err != nil {
		t.Fatalf("systemd-analyze security rates deploy/kcd.service above %s/100 exposure, or cannot read it: %v\n%s", maxExposure, err, text)
	}
	for _, want := range []string{"NoNewPrivileges=", "ProtectSystem=", "PrivateDevices=", "SystemCallFilter="} {
		if !strings.Contains(text, "✓ "+want) {
			t.Errorf("the review does not find %s set:\n%s", want, text)
		}
	}
	if i := strings.LastIndex(text, "Overall exposure level"); i >= 0 {
		t.Log(strings.TrimSpace(text[i:]))
	}
}
