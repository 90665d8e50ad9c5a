// Package testenv gives integration tests the endpoints of the test
// environment that scripts/testenv starts: a real Kafka broker, a real Kafka
// Connect worker, MariaDB and PostgreSQL.
//
// Integration tests are named TestIntegration…, skip under -short, and skip
// with a clear message when their service is missing — except with CI=true,
// where a missing service fails the test.
package testenv

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// The variables scripts/testenv writes to .testenv/env.
const (
	Kafka      = "KCD_TEST_KAFKA"
	ConnectURL = "KCD_TEST_CONNECT_URL"
	MySQLDSN   = "KCD_TEST_MYSQL_DSN"
	PostgreDSN = "KCD_TEST_POSTGRES_DSN"

	// The same broker's SASL_PLAINTEXT listener (mechanisms PLAIN and
	// SCRAM-SHA-512, one test-only user for both) and its SSL listener
	// (a certificate for 127.0.0.1 signed by the CA in KafkaTLSCA, a PEM
	// file).
	KafkaSASL         = "KCD_TEST_KAFKA_SASL"
	KafkaSASLUser     = "KCD_TEST_KAFKA_SASL_USER"
	KafkaSASLPassword = "KCD_TEST_KAFKA_SASL_PASSWORD"
	KafkaTLS          = "KCD_TEST_KAFKA_TLS"
	KafkaTLSCA        = "KCD_TEST_KAFKA_TLS_CA"

	// Kafka Connect plugins from Maven Central for kcd's Java host, as a
	// plugin.path value: comma-separated directories, each holding one
	// folder per plugin (see Plugins).
	PluginPathVar = "KCD_TEST_PLUGIN_PATH"
)

// Plugins are the plugin folders scripts/testenv puts under
// KCD_TEST_PLUGIN_PATH: Debezium's PostgreSQL connector 3.6.1.Final,
// MirrorMaker 2's connectors and the FileStream connectors, both of the
// test Connect worker's Kafka release. The worker at KCD_TEST_CONNECT_URL
// has the same plugin.path.
var Plugins = []string{"connect-file", "connect-mirror", "debezium-connector-postgres"}

// Require returns the value of the service variable name, taken from the
// environment or else from the repository's .testenv/env. When there is none,
// the test is skipped, or failed under CI=true.
func Require(t testing.TB, name string) string {
	t.Helper()
	return require(t, name, "the service is not running")
}

// require is Require with what a missing variable means.
func require(t testing.TB, name, meaning string) string {
	t.Helper()
	// Benchmarks run only when asked for (-bench), never in make test-unit.
	if !strings.HasPrefix(t.Name(), "TestIntegration") && !strings.HasPrefix(t.Name(), "Benchmark") {
		t.Fatalf("%s needs %s: tests that need a service must be named TestIntegration… so that make test-unit leaves them out", t.Name(), name)
	}
	if testing.Short() {
		t.Skipf("integration test (needs %s): skipped with -short", name)
	}
	if v := lookup(name); v != "" {
		return v
	}
	msg := name + " is not set: " + meaning + ". Start the test environment with `make testenv-up` (or run `make test`)"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg + "; under CI=true a missing service is a failure")
	}
	t.Skip(msg)
	return ""
}

// PluginPath returns KCD_TEST_PLUGIN_PATH, a plugin.path value for Kafka
// Connect's plugin isolation. Like Require, it skips the test when the
// variable is missing (the plugins are not downloaded), or fails it under
// CI=true.
func PluginPath(t testing.TB) string {
	t.Helper()
	return require(t, PluginPathVar, "the connector plugins are not downloaded")
}

// RequireTool returns the path of the program name (e.g. tmux), which the
// test environment installs. When it is missing the test is skipped, or
// failed under CI=true.
func RequireTool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	msg := name + " is not installed: `make testenv-up` (or `make test`) installs it"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg + "; under CI=true a missing tool is a failure")
	}
	t.Skip(msg)
	return ""
}

var (
	fileOnce sync.Once
	fileVars map[string]string
)

func lookup(name string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	fileOnce.Do(func() { fileVars = readEnvFile() })
	return fileVars[name]
}

// readEnvFile reads the export lines of .testenv/env at the module root.
func readEnvFile() map[string]string {
	vars := map[string]string{}
	root, ok := moduleRoot()
	if !ok {
		return vars
	}
	f, err := os.Open(filepath.Join(root, ".testenv", "env"))
	if err != nil {
		return vars
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(sc.Text()), "export "))
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.HasPrefix(k, "#") {
			continue
		}
		vars[k] = strings.Trim(v, `'"`)
	}
	return vars
}

func moduleRoot() (string, bool) {
	dir, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// Lookup returns the value of the service variable name, from the
// environment or else from the repository's .testenv/env, or "" — for
// benchmarks, which Require refuses since they are not TestIntegration….
func Lookup(name string) string { return lookup(name) }

// JavaHostDir returns the folder of a built Java connector host
// (kcd-javahost.jar and lib/): KCD_TEST_JAVA_HOST_DIR, which make test sets,
// else javahost/target/javahost of this checkout. Without a built host the
// test is skipped, or failed under CI=true.
func JavaHostDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("KCD_TEST_JAVA_HOST_DIR")
	if dir == "" {
		if root, ok := moduleRoot(); ok {
			dir = filepath.Join(root, "javahost", "target", "javahost")
		}
	}
	jar := filepath.Join(dir, "kcd-javahost.jar")
	if _, err := os.Stat(jar); err != nil || dir == "" {
		msg := "the Java host is not built (" + jar + " is missing): build it with `scripts/javahost.sh test` or point KCD_TEST_JAVA_HOST_DIR at one"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg + "; under CI=true that is a failure")
		}
		t.Skip(msg)
	}
	return dir
}
