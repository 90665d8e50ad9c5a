package main

import (
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/kcd-project/kcd/"

// serverPackage tells whether a kcd package is server code that no client
// may link: daemon and everything under it but the client, and raft.
func serverPackage(path string) bool {
	rel, ok := strings.CutPrefix(path, module)
	if !ok {
		return false
	}
	if rel == "daemon/client" || strings.HasPrefix(rel, "daemon/client/") {
		return false
	}
	for _, server := range []string{"daemon", "raft"} {
		if rel == server || strings.HasPrefix(rel, server+"/") {
			return true
		}
	}
	return false
}

// goTool finds the go command on the path; without one the test is
// skipped, but never under CI=true.
func goTool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("go")
	if err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("no go command to list the dependencies with: %v", err)
	}
	t.Skipf("no go command to list the dependencies with: %v", err)
	return ""
}

// kcdDeps lists, for each package matched by patterns, the kcd packages
// it links (tests not included).
func kcdDeps(t *testing.T, patterns ...string) map[string][]string {
	t.Helper()
	args := append([]string{"list", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`}, patterns...)
	out, err := exec.Command(goTool(t), args...).Output()
	if err != nil {
		var stderr string
		if ee, ok := errors.AsType[*exec.ExitError](err); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go list %s: %v\n%s", strings.Join(patterns, " "), err, stderr)
	}
	deps := map[string][]string{}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		pkg := f[0]
		deps[pkg] = nil
		for _, d := range f[1:] {
			if strings.HasPrefix(d, module) {
				deps[pkg] = append(deps[pkg], d)
			}
		}
	}
	return deps
}

// TestClientsLinkNoServerCode: kcctl and the packages it is built from
// (the REST client, the TUI, migrate, the wire types) share the api
// package with the server, never a server package, so kcctl stays small
// and the server's internals can change without breaking clients.
func TestClientsLinkNoServerCode(t *testing.T) {
	root := module + "cmd/kcctl"
	deps := kcdDeps(t, root, module+"daemon/client/...", module+"tui/...", module+"migrate/...", module+"api/...")
	if _, ok := deps[root]; !ok {
		t.Fatalf("go list did not list %s: %v", root, deps)
	}
	for pkg, ds := range deps {
		for _, d := range ds {
			if serverPackage(d) {
				t.Errorf("%s links server package %s", pkg, d)
			}
		}
	}
	// The wire types are a leaf: nothing of kcd but the store's types.
	for pkg, ds := range deps {
		if pkg != module+"api" && !strings.HasPrefix(pkg, module+"api/") {
			continue
		}
		for _, d := range ds {
			if !slices.Contains([]string{"api", "store"}, strings.TrimPrefix(d, module)) && !strings.HasPrefix(d, module+"api/") {
				t.Errorf("%s imports %s; the api package may import only store/", pkg, d)
			}
		}
	}
}

func TestServerPackage(t *testing.T) {
	for path, want := range map[string]bool{
		module + "daemon/client":      false,
		module + "daemon/restapi":     true,
		module + "daemon":             true,
		module + "daemonx":            false,
		module + "daemon/coordinator": true,
		module + "raft":               true,
		module + "raft/fsm":           true,
		module + "api":                false,
		module + "tui/printer":        false,
		"github.com/other/daemon/x":   false,
	} {
		if got := serverPackage(path); got != want {
			t.Errorf("serverPackage(%s) = %v, want %v", path, got, want)
		}
	}
}
