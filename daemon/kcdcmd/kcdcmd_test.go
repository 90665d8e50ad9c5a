package kcdcmd

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/kcd-project/kcd/daemon/config"
	"github.com/kcd-project/kcd/store"
)

func TestVersionListsBackends(t *testing.T) {
	store.Register("kcdcmd-test", func(context.Context, map[string]string) (store.Store, error) { return nil, nil })
	var out, errOut bytes.Buffer
	if code := Run([]string{"version"}, &out, &errOut); code != 0 {
		t.Fatalf("kcd version: exit %d: %s", code, errOut.String())
	}
	if !strings.HasPrefix(out.String(), "kcd ") || !strings.Contains(out.String(), "store backends: raft, ") || !strings.Contains(out.String(), "kcdcmd-test") {
		t.Fatalf("kcd version printed %q", out.String())
	}
}

func TestHelpAndBadConfig(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := Run([]string{"--help"}, &out, &errOut); code != 0 {
		t.Fatalf("kcd --help: exit %d: %s", code, errOut.String())
	}
	for _, flag := range []string{"--store ", "--store-dsn", "--store-setting"} {
		if !strings.Contains(out.String(), flag) {
			t.Errorf("kcd --help lacks %s", flag)
		}
	}
	out.Reset()
	errOut.Reset()
	code := Run([]string{"--dev-kafka", "--store", "mysql", "--store-dsn", "kcd:Sup3rS3cret@tcp(db:3306)/kcd", "--store-setting", "password"}, &out, &errOut)
	if code != exitUsage || !strings.Contains(errOut.String(), "KEY=VALUE") || strings.Contains(errOut.String(), "Sup3rS3cret") {
		t.Fatalf("kcd with a bad store setting: exit %d: %s", code, errOut.String())
	}
}

// A backend this binary lacks is refused at start, naming those it has; a
// worker-only node, which never opens the backend, does not care.
func TestUnknownBackendRefused(t *testing.T) {
	var out, errOut bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- Run([]string{"--dev-kafka", "--dev-kafka-port", "0", "--data-dir", t.TempDir(), "--rest-addr", "127.0.0.1:0",
			"--peer-addr", "127.0.0.1:0", "--store", "no-such-backend", "--store-dsn", "${env:X}"}, &out, &errOut)
	}()
	select {
	case code := <-done:
		if code != exitUsage || !strings.Contains(errOut.String(), `store "no-such-backend" is not built into this kcd (built in: raft, `) {
			t.Fatalf("kcd --store no-such-backend: exit %d: %s", code, errOut.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("kcd --store no-such-backend started")
	}
	cfg := config.Default()
	cfg.Roles, cfg.Store.Backend = []string{config.RoleWorker}, "no-such-backend"
	if err := checkBackend(cfg); err != nil {
		t.Fatalf("a worker-only node: %v", err)
	}
	cfg.Roles, cfg.Store.Backend = []string{config.RoleRaft}, "raft"
	if err := checkBackend(cfg); err != nil {
		t.Fatalf("raft: %v", err)
	}
}

// The example backend under examples/ is never linked into kcd, and no
// package outside examples/ imports it, not even in tests: it is no stand-in
// for a real backend.
func TestExamplesNotLinked(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/kcd-project/kcd/cmd/kcd").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "github.com/kcd-project/kcd/daemon/kcdcmd") {
		t.Fatalf("go list -deps of cmd/kcd lacks kcdcmd:\n%s", out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.Contains(pkg, "/examples/") {
			t.Errorf("kcd links the example %s", pkg)
		}
	}
	out, err = exec.Command("go", "list", "-f", "{{.ImportPath}} {{.Imports}} {{.TestImports}} {{.XTestImports}}", "github.com/kcd-project/kcd/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, " ")
		if !strings.Contains(pkg, "/examples/") && strings.Contains(imports, "/examples/") {
			t.Errorf("%s imports an example: %s", pkg, imports)
		}
	}
}

// A bad command line exits 2 with a hint, as kcctl's does.
func TestUsageErrorsExitTwo(t *testing.T) {
	for _, args := range [][]string{{"--bogus"}, {"serve"}, {"version", "extra"}, {"--rest-port-typo=1"}} {
		var out, errOut bytes.Buffer
		code := Run(args, &out, &errOut)
		if code != exitUsage || !strings.Contains(errOut.String(), "kcd --help") {
			t.Errorf("kcd %v: exit %d: %s", args, code, errOut.String())
		}
	}
}
