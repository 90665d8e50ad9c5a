package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kcd.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestLoadPrecedenceFileEnvFlags(t *testing.T) {
	path := writeFile(t, `
node-id: 7
data-dir: /var/lib/kcd
rest-addr: 127.0.0.1:18083
bootstrap-servers: [a:9092, b:9092]
log-level: debug
`)
	fs := pflag.NewFlagSet("kcd", pflag.ContinueOnError)
	flags := RegisterFlags(fs, Default())
	if err := fs.Parse([]string{"--rest-addr", "127.0.0.1:28083"}); err != nil {
		t.Fatal(err)
	}
	env := envOf(map[string]string{"KCD_DATA_DIR": "/srv/kcd", "KCD_REST_ADDR": "127.0.0.1:38083"})

	c, err := Load(path, env, flags)
	if err != nil {
		t.Fatal(err)
	}
	if c.NodeID != 7 {
		t.Errorf("node-id from file: got %d", c.NodeID)
	}
	if c.DataDir != "/srv/kcd" {
		t.Errorf("env must override file: data-dir %q", c.DataDir)
	}
	if c.RESTAddr != "127.0.0.1:28083" {
		t.Errorf("flag must override env and file: rest-addr %q", c.RESTAddr)
	}
	if strings.Join(c.BootstrapServers, ",") != "a:9092,b:9092" {
		t.Errorf("bootstrap-servers from file: %v", c.BootstrapServers)
	}
	if c.LogLevel != "debug" || c.LogFormat != "text" {
		t.Errorf("log settings: %q %q", c.LogLevel, c.LogFormat)
	}
}

func TestUnchangedFlagsDoNotOverrideFile(t *testing.T) {
	path := writeFile(t, "rest-addr: 127.0.0.1:18083\ndev-kafka: true\n")
	fs := pflag.NewFlagSet("kcd", pflag.ContinueOnError)
	flags := RegisterFlags(fs, Default())
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path, envOf(nil), flags)
	if err != nil {
		t.Fatal(err)
	}
	if c.RESTAddr != "127.0.0.1:18083" || !c.DevKafka {
		t.Errorf("file settings lost: %+v", c)
	}
}

func TestDevKafkaFlagIsABool(t *testing.T) {
	for _, args := range [][]string{{"--dev-kafka"}, {"--dev-kafka=true"}} {
		fs := pflag.NewFlagSet("kcd", pflag.ContinueOnError)
		flags := RegisterFlags(fs, Default())
		if err := fs.Parse(args); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		c, err := Load("", envOf(nil), flags)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if !c.DevKafka {
			t.Errorf("%v: dev-kafka not set", args)
		}
	}
	fs := pflag.NewFlagSet("kcd", pflag.ContinueOnError)
	RegisterFlags(fs, Default())
	if err := fs.Parse([]string{"--dev-kafka=maybe"}); err == nil {
		t.Error("--dev-kafka=maybe accepted")
	}
}

func TestUnknownKeyInFileIsAnError(t *testing.T) {
	path := writeFile(t, "rest-adr: 127.0.0.1:1\n")
	_, err := Load(path, envOf(nil), nil)
	if err == nil || !strings.Contains(err.Error(), "rest-adr") {
		t.Fatalf("want an error naming the unknown key, got %v", err)
	}
}

func TestEmptyFileIsAllowed(t *testing.T) {
	path := writeFile(t, "")
	c, err := Load(path, envOf(map[string]string{"KCD_DEV_KAFKA": "1"}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !c.DevKafka {
		t.Error("KCD_DEV_KAFKA=1 not applied")
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	c := Default()
	c.NodeID = 0
	c.RESTAddr = "nope"
	c.LogLevel = "loud"
	err := c.Validate()
	if err == nil {
		t.Fatal("invalid config accepted")
	}
	for _, want := range []string{"node-id", "rest-addr", "log-level", "bootstrap-servers"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %s: %v", want, err)
		}
	}
}

func TestBadEnvValueNamesTheVariable(t *testing.T) {
	_, err := Load("", envOf(map[string]string{"KCD_NODE_ID": "x", "KCD_DEV_KAFKA": "true"}), nil)
	if err == nil || !strings.Contains(err.Error(), "KCD_NODE_ID") {
		t.Fatalf("got %v", err)
	}
}

func TestDevKafkaExcludesBootstrapServers(t *testing.T) {
	_, err := Load("", envOf(map[string]string{"KCD_DEV_KAFKA": "true", "KCD_BOOTSTRAP_SERVERS": "k:9092"}), nil)
	if err == nil {
		t.Fatal("both dev-kafka and bootstrap-servers accepted")
	}
}

func TestRoles(t *testing.T) {
	for in, want := range map[string]string{"raft+worker": "raft+worker", "raft": "raft", "worker": "worker"} {
		env := map[string]string{"KCD_DEV_KAFKA": "true", "KCD_ROLES": in}
		if in == "worker" {
			env["KCD_SEEDS"] = "http://a:8083"
		}
		c, err := Load("", envOf(env), nil)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if got := strings.Join(c.Roles, "+"); got != want {
			t.Errorf("%s: roles %q", in, got)
		}
	}
	if _, err := Load("", envOf(map[string]string{"KCD_DEV_KAFKA": "true", "KCD_ROLES": "worker"}), nil); err == nil || !strings.Contains(err.Error(), "seeds") {
		t.Errorf("worker-only without seeds: %v", err)
	}
	if _, err := Load("", envOf(map[string]string{"KCD_DEV_KAFKA": "true", "KCD_ROLES": "raft+chef"}), nil); err == nil || !strings.Contains(err.Error(), "chef") {
		t.Errorf("unknown role: %v", err)
	}
	if _, err := Load("", envOf(map[string]string{"KCD_DEV_KAFKA": "true", "KCD_JOIN": "http://a:8083", "KCD_INITIAL_CLUSTER": "1=a:1"}), nil); err == nil {
		t.Error("join with initial-cluster accepted")
	}
}

func TestYAMLClusterSettings(t *testing.T) {
	path := writeFile(t, `
dev-kafka: true
roles: [raft, worker]
peer-addr: 10.0.0.1:8093
initial-cluster: 1=10.0.0.1:8093,2=10.0.0.2:8093
raft-election-timeout: 750ms
`)
	c, err := Load(path, envOf(nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.ElectionTimeout.Milliseconds() != 750 || c.PeerAddr != "10.0.0.1:8093" || !c.HasRole(RoleRaft) || !c.HasRole(RoleWorker) {
		t.Errorf("%+v", c)
	}
}

// The example config shipped in deploy/ must stay loadable.
func TestDeployExampleLoads(t *testing.T) {
	c, err := Load("../../deploy/kcd.yaml", envOf(nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.NodeID != 1 || c.InitialCluster == "" || len(c.BootstrapServers) != 3 {
		t.Errorf("%+v", c)
	}
}

// loadWith loads a configuration from env and the flags args (after
// --dev-kafka), with no file.
func loadWith(t *testing.T, env map[string]string, args ...string) (Config, error) {
	t.Helper()
	fs := pflag.NewFlagSet("kcd", pflag.ContinueOnError)
	flags := RegisterFlags(fs, Default())
	if err := fs.Parse(append([]string{"--dev-kafka"}, args...)); err != nil {
		t.Fatal(err)
	}
	return Load("", envOf(env), flags)
}

func TestMemoryLimit(t *testing.T) {
	load := func(env map[string]string, args ...string) (Config, error) { return loadWith(t, env, args...) }
	for _, c := range []struct {
		name string
		env  map[string]string
		args []string
		want ByteSize
	}{
		{"default", nil, nil, DefaultMemoryLimit},
		{"GOMEMLIMIT replaces the default", map[string]string{"GOMEMLIMIT": "1GiB"}, nil, 0},
		{"the env wins over GOMEMLIMIT", map[string]string{"GOMEMLIMIT": "1GiB", "KCD_MEMORY_LIMIT": "200MiB"}, nil, 200 << 20},
		{"the flag wins over the env", map[string]string{"KCD_MEMORY_LIMIT": "200MiB"}, []string{"--memory-limit", "1g"}, 1 << 30},
		{"off", nil, []string{"--memory-limit", "0"}, 0},
		{"bytes", nil, []string{"--memory-limit", "104857600"}, 100 << 20},
	} {
		cfg, err := load(c.env, c.args...)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if cfg.MemoryLimit != c.want {
			t.Errorf("%s: memory limit %v, want %v", c.name, cfg.MemoryLimit, c.want)
		}
	}
	for _, bad := range []string{"lots", "-5MiB", "1MiB", "1.5GiB"} {
		if _, err := load(nil, "--memory-limit", bad); err == nil {
			t.Errorf("--memory-limit %s accepted", bad)
		}
	}
	c := Default()
	if err := c.LoadFile(writeFile(t, "memory-limit: 256MiB\n")); err != nil || c.MemoryLimit != 256<<20 {
		t.Errorf("from YAML: %v, %v", c.MemoryLimit, err)
	}
	if s := ByteSize(80 << 20).String(); s != "80MiB" {
		t.Errorf("80MiB prints as %s", s)
	}
}

func TestInFlightLimits(t *testing.T) {
	load := func(env map[string]string, args ...string) (Config, error) { return loadWith(t, env, args...) }
	c, err := load(nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.WorkerInFlightBytes != 32<<20 || c.TaskInFlightBytes != 32<<20 || c.WorkerInFlightRecords != 100_000 || c.TaskInFlightRecords != 100_000 {
		t.Errorf("defaults: %v %v %d %d", c.WorkerInFlightBytes, c.TaskInFlightBytes, c.WorkerInFlightRecords, c.TaskInFlightRecords)
	}
	c, err = load(map[string]string{"KCD_WORKER_IN_FLIGHT_BYTES": "256MiB", "KCD_TASK_IN_FLIGHT_BYTES": "64MiB", "KCD_TASK_IN_FLIGHT_RECORDS": "5000"},
		"--task-in-flight-bytes", "16MiB", "--worker-in-flight-records", "200000")
	if err != nil {
		t.Fatal(err)
	}
	if c.WorkerInFlightBytes != 256<<20 || c.TaskInFlightBytes != 16<<20 || c.WorkerInFlightRecords != 200_000 || c.TaskInFlightRecords != 5000 {
		t.Errorf("env and flags (the flag wins): %v %v %d %d", c.WorkerInFlightBytes, c.TaskInFlightBytes, c.WorkerInFlightRecords, c.TaskInFlightRecords)
	}
	y := Default()
	if err := y.LoadFile(writeFile(t, "worker-in-flight-bytes: 1GiB\ntask-in-flight-bytes: 48MiB\nworker-in-flight-records: 300000\ntask-in-flight-records: 1000\n")); err != nil {
		t.Fatal(err)
	}
	if y.WorkerInFlightBytes != 1<<30 || y.TaskInFlightBytes != 48<<20 || y.WorkerInFlightRecords != 300_000 || y.TaskInFlightRecords != 1000 {
		t.Errorf("from YAML: %v %v %d %d", y.WorkerInFlightBytes, y.TaskInFlightBytes, y.WorkerInFlightRecords, y.TaskInFlightRecords)
	}
	// Each bad value is refused with a message that names the setting.
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"--worker-in-flight-bytes", "lots"}, `--worker-in-flight-bytes="lots"`},
		{[]string{"--task-in-flight-bytes", "-1MiB"}, `--task-in-flight-bytes="-1MiB"`},
		{[]string{"--task-in-flight-bytes", "32"}, "task-in-flight-bytes 32 is below 64KiB (a plain number is bytes"},
		{[]string{"--worker-in-flight-bytes", "0"}, "worker-in-flight-bytes 0 is below 64KiB"},
		{[]string{"--task-in-flight-records", "0"}, "task-in-flight-records 0 must be from 1 to 10000000"},
		{[]string{"--worker-in-flight-records", "1e6"}, `--worker-in-flight-records="1e6"`},
		{[]string{"--worker-in-flight-records", "20000000", "--task-in-flight-records", "1000"}, "worker-in-flight-records 20000000 must be from 1 to 10000000"},
		{[]string{"--task-in-flight-bytes", "64MiB"}, "task-in-flight-bytes 64MiB exceeds worker-in-flight-bytes 32MiB"},
		{[]string{"--worker-in-flight-records", "1000"}, "task-in-flight-records 100000 exceeds worker-in-flight-records 1000"},
	} {
		_, err := load(nil, bad.args...)
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%v: error %v, want one containing %q", bad.args, err, bad.want)
		}
	}
	if _, err := load(map[string]string{"KCD_TASK_IN_FLIGHT_BYTES": "1x"}); err == nil || !strings.Contains(err.Error(), `KCD_TASK_IN_FLIGHT_BYTES="1x"`) {
		t.Errorf("bad env value: %v", err)
	}
}

func TestJoinToken(t *testing.T) {
	c, err := Load("", envOf(map[string]string{"KCD_JOIN_TOKEN": "sixteen-chars-ok", "KCD_DEV_KAFKA": "true"}), nil)
	if err != nil || c.JoinToken != "sixteen-chars-ok" {
		t.Fatalf("token from the environment: %q, %v", c.JoinToken, err)
	}
	_, err = Load("", envOf(map[string]string{"KCD_JOIN_TOKEN": "short-secret", "KCD_DEV_KAFKA": "true"}), nil)
	if err == nil || !strings.Contains(err.Error(), "shorter than 16") {
		t.Errorf("short token: %v", err)
	} else if strings.Contains(err.Error(), "short-secret") {
		t.Errorf("the error shows the token: %v", err)
	}
	_, err = Load("", envOf(map[string]string{"KCD_JOIN_TOKEN": "sixteen-chars-ok", "KCD_JOIN_TOKEN_FILE": "/x", "KCD_DEV_KAFKA": "true"}), nil)
	if err == nil || !strings.Contains(err.Error(), "exclude each other") {
		t.Errorf("token and file: %v", err)
	}
	// --help never shows a token, whatever the defaults hold.
	def := Default()
	def.JoinToken = "sixteen-chars-ok"
	fs := pflag.NewFlagSet("kcd", pflag.ContinueOnError)
	RegisterFlags(fs, def)
	if got := fs.Lookup("join-token").DefValue; got != "" {
		t.Errorf("join-token's default shows %q", got)
	}
}

func TestExactlyOnceSourceSupport(t *testing.T) {
	c, err := loadWith(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.ExactlyOnceSourceSupport != "enabled" {
		t.Errorf("default %q, want enabled", c.ExactlyOnceSourceSupport)
	}
	c, err = loadWith(t, map[string]string{"KCD_EXACTLY_ONCE_SOURCE_SUPPORT": "disabled"})
	if err != nil || c.ExactlyOnceSourceSupport != "disabled" {
		t.Errorf("from the environment: %q %v", c.ExactlyOnceSourceSupport, err)
	}
	// Kafka Connect's preparing stage exists for rolling upgrades of its
	// own fencing; kcd needs none, and refuses it rather than guess.
	_, err = loadWith(t, nil, "--exactly-once-source-support", "preparing")
	if err == nil || !strings.Contains(err.Error(), `exactly-once-source-support "preparing" is not one of enabled, disabled`) {
		t.Errorf("preparing: %v", err)
	}
}

func TestRESTTLS(t *testing.T) {
	c, err := loadWith(t, map[string]string{"KCD_REST_TLS_CERT": "/etc/kcd/rest.pem", "KCD_REST_TLS_KEY": "/etc/kcd/rest-key.pem"},
		"--rest-tls-client-ca", "/etc/kcd/clients.pem", "--rest-tls-ca", "/etc/kcd/ca.pem")
	if err != nil {
		t.Fatal(err)
	}
	if !c.RESTTLS() || c.RESTTLSCert != "/etc/kcd/rest.pem" || c.RESTTLSKey != "/etc/kcd/rest-key.pem" ||
		c.RESTTLSClientCA != "/etc/kcd/clients.pem" || c.RESTTLSCA != "/etc/kcd/ca.pem" {
		t.Errorf("loaded %+v", c)
	}
	if c, _ := loadWith(t, nil); c.RESTTLS() {
		t.Error("HTTPS without a certificate")
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--rest-tls-cert", "c.pem"}, "rest-tls-cert and rest-tls-key go together"},
		{[]string{"--rest-tls-key", "k.pem"}, "rest-tls-cert and rest-tls-key go together"},
		{[]string{"--rest-tls-client-ca", "ca.pem"}, "rest-tls-client-ca needs rest-tls-cert and rest-tls-key"},
	} {
		if _, err := loadWith(t, nil, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
}

func TestRESTAuthFileNeedsNodeTokenFile(t *testing.T) {
	c := Default()
	c.DevKafka = true
	c.RESTAuthFile = "/etc/kcd/users.yaml"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "rest-auth-file needs node-token-file") {
		t.Fatalf("Validate: %v", err)
	}
	c.NodeTokenFile = "/etc/kcd/node-token"
	if err := c.Validate(); err != nil {
		t.Fatalf("with both: %v", err)
	}
	cfg, err := Load("", envOf(map[string]string{"KCD_REST_AUTH_FILE": "/a", "KCD_NODE_TOKEN_FILE": "/b", "KCD_DEV_KAFKA": "true"}), nil)
	if err != nil || cfg.RESTAuthFile != "/a" || cfg.NodeTokenFile != "/b" {
		t.Fatalf("from the environment: %+v, %v", cfg, err)
	}
}

func TestFileConnectorDirs(t *testing.T) {
	c, err := loadWith(t, nil)
	if err != nil || c.FileConnectorDirs != nil {
		t.Fatalf("default %v, %v: want none", c.FileConnectorDirs, err)
	}
	c, err = loadWith(t, map[string]string{"KCD_FILE_CONNECTOR_DIRS": "/data/in/, /data/x/../out"})
	if err != nil || strings.Join(c.FileConnectorDirs, ",") != "/data/in,/data/out" {
		t.Errorf("from the environment, cleaned: %q %v", c.FileConnectorDirs, err)
	}
	c, err = loadWith(t, nil, "--file-connector-dirs", "/srv/files")
	if err != nil || strings.Join(c.FileConnectorDirs, ",") != "/srv/files" {
		t.Errorf("from a flag: %q %v", c.FileConnectorDirs, err)
	}
	_, err = loadWith(t, nil, "--file-connector-dirs", "/data,relative/dir")
	if err == nil || !strings.Contains(err.Error(), `file-connector-dirs: "relative/dir" is not an absolute path`) {
		t.Errorf("relative: %v", err)
	}
	_, err = loadWith(t, nil, "--file-connector-dirs", "/")
	if err == nil || !strings.Contains(err.Error(), "every file") {
		t.Errorf("/: %v", err)
	}
	c = Default()
	c.DevKafka = true
	if err := c.LoadFile(writeFile(t, "file-connector-dirs: [/a, b]\n")); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), `"b" is not an absolute path`) {
		t.Errorf("relative in the file: %v", err)
	}
}

func TestJavaHostSettings(t *testing.T) {
	cfg, err := loadWith(t, map[string]string{"KCD_PLUGIN_PATH": "/opt/connect/plugins, /opt/more"}, "--java-host-heap", "2g", "--java", "/usr/bin/java")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(cfg.PluginPath, ",") != "/opt/connect/plugins,/opt/more" || cfg.JavaHostHeap != "2g" || cfg.Java != "/usr/bin/java" ||
		cfg.JavaHostHangLimit != 5*time.Minute {
		t.Errorf("loaded %q %q %q %v", cfg.PluginPath, cfg.JavaHostHeap, cfg.Java, cfg.JavaHostHangLimit)
	}
	if d := Default(); d.JavaHostHeap != "512m" || len(d.PluginPath) != 0 {
		t.Errorf("defaults: heap %q, plugin path %q", d.JavaHostHeap, d.PluginPath)
	}
	for _, ok := range []string{"512m", "1G", "65536k", "134217728"} {
		if _, err := loadWith(t, nil, "--java-host-heap", ok); err != nil {
			t.Errorf("--java-host-heap %s: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "lots", "-5m", "1.5g", "32m", "512mb", "+512m"} {
		if _, err := loadWith(t, nil, "--java-host-heap", bad); err == nil {
			t.Errorf("--java-host-heap %q accepted", bad)
		}
	}
	if _, err := loadWith(t, nil, "--plugin-path", "relative/dir"); err == nil {
		t.Error("a relative plugin path accepted")
	}
	if _, err := loadWith(t, nil, "--java-host-hang-limit", "10ms"); err == nil {
		t.Error("a hang limit of 10ms accepted")
	}
	cfg, err = loadWith(t, nil, "--java-host-jvm-options", " -XX:+UseSerialGC  -Xss512k ", "--plugin-discovery", "service_load")
	if err != nil || !slices.Equal(cfg.JavaHostJVMOptions, []string{"-XX:+UseSerialGC", "-Xss512k"}) || cfg.PluginDiscovery != "service_load" {
		t.Errorf("JVM options and discovery: %q %q, %v", cfg.JavaHostJVMOptions, cfg.PluginDiscovery, err)
	}
	if d := Default().PluginDiscovery; d != "hybrid_warn" {
		t.Errorf("default plugin discovery %q, want Kafka Connect's hybrid_warn", d)
	}
	for _, bad := range []string{"-Xmx2g", "-XX:MaxHeapSize=1g", "-Djava.security.manager=disallow", "-jar", "UseSerialGC"} {
		if _, err := loadWith(t, nil, "--java-host-jvm-options", bad); err == nil {
			t.Errorf("--java-host-jvm-options %q accepted", bad)
		}
	}
	if _, err := loadWith(t, nil, "--plugin-discovery", "scan_all"); err == nil {
		t.Error("--plugin-discovery scan_all accepted")
	}
	c := Default()
	if err := c.LoadFile(writeFile(t, "plugin-path: [/opt/p]\njava-host-heap: 1g\njava-host-dir: /opt/kcd/javahost\n")); err != nil ||
		c.PluginPath[0] != "/opt/p" || c.JavaHostHeap != "1g" || c.JavaHostDir != "/opt/kcd/javahost" {
		t.Errorf("from YAML: %+v, %v", c, err)
	}
}
