package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The context commands write the config file that every command reads:
// a context set with set-context is used by the next command, use-context
// switches, get-contexts shows how each authenticates but never a secret,
// and the file stays private.
func TestConfigContexts(t *testing.T) {
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "kcctl", "config.yaml")
	t.Setenv("KCCTL_CONFIG", cfgFile)
	t.Setenv("KCCTL_SERVER", "")
	t.Setenv("KCCTL_TOKEN", "")
	t.Setenv("KCCTL_USER", "")
	url := startNode(t)

	if code, _, errOut := kcctl(t, "config", "current-context"); code != exitNotFound || !strings.Contains(errOut, "use-context") {
		t.Errorf("current-context of no file: exit %d, %q", code, errOut)
	}
	if code, out, errOut := kcctl(t, "config", "set-context", "local", "--server", url, "--token", "kcd-canary-secret-ctx-token"); code != 0 || out != "context/local created\n" {
		t.Fatalf("set-context: exit %d, %q %q", code, out, errOut)
	}
	if code, out, _ := kcctl(t, "config", "set-context", "prod", "--server", "https://10.0.0.1:8083", "--user", "alice", "--password-file", "prod.pw"); code != 0 || out != "context/prod created\n" {
		t.Fatalf("set-context prod: exit %d, %q", code, out)
	}
	fi, err := os.Stat(cfgFile)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("config file: %v, %v; want mode 0600", fi, err)
	}
	// The first context set is current: a command with no --server uses it.
	if code, out, errOut := kcctl(t, "version", "-o", "name"); code != 0 || !strings.Contains(out, "kcd/") {
		t.Errorf("version through the context: exit %d, %q %q", code, out, errOut)
	}
	code, out, _ := kcctl(t, "config", "get-contexts")
	if code != 0 || !strings.Contains(out, "*         local") || !strings.Contains(out, "token") || !strings.Contains(out, "user alice") || strings.Contains(out, "canary") {
		t.Errorf("get-contexts: exit %d\n%s", code, out)
	}
	if _, out, _ := kcctl(t, "config", "get-contexts", "-o", "json"); strings.Contains(out, "canary") || !strings.Contains(out, `"current": true`) {
		t.Errorf("get-contexts -o json shows a secret or no current context:\n%s", out)
	}
	if _, out, _ := kcctl(t, "config", "get-contexts", "-o", "name"); out != "context/local\ncontext/prod\n" {
		t.Errorf("get-contexts -o name: %q", out)
	}
	b, _ := os.ReadFile(cfgFile)
	if !strings.Contains(string(b), filepath.Join(mustWd(t), "prod.pw")) {
		t.Errorf("the password file is not stored absolute:\n%s", b)
	}

	if code, out, _ := kcctl(t, "config", "use-context", "prod"); code != 0 || out != "context/prod is now current\n" {
		t.Errorf("use-context: exit %d, %q", code, out)
	}
	if _, out, _ := kcctl(t, "config", "current-context"); out != "prod\n" {
		t.Errorf("current-context: %q", out)
	}
	if code, _, _ := kcctl(t, "config", "use-context", "nope"); code != exitNotFound {
		t.Errorf("use-context nope: exit %d, want %d", code, exitNotFound)
	}
	if code, out, _ := kcctl(t, "config", "delete-context", "prod"); code != 0 || out != "context/prod deleted\n" {
		t.Errorf("delete-context: exit %d, %q", code, out)
	}
	if code, _, errOut := kcctl(t, "config", "current-context"); code != exitNotFound {
		t.Errorf("current-context after deleting it: exit %d, %q", code, errOut)
	}
	if code, _, _ := kcctl(t, "config", "set-context", "bad", "--server", "::nope"); code != exitUsage {
		t.Errorf("set-context with a bad server: exit %d, want %d", code, exitUsage)
	}
}

func mustWd(t *testing.T) string {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd
}
