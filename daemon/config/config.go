// Package config holds the daemon's typed configuration and loads it from
// defaults, a YAML file, KCD_* environment variables and command-line flags,
// later sources winning.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"

	"github.com/kcd-project/kcd/daemon/clientcfg"
)

// Config is everything a kcd node is started with.
type Config struct {
	// NodeID identifies the node in the cluster; it must be unique and non-zero.
	NodeID uint64 `yaml:"node-id"`
	// DataDir holds everything the node persists.
	DataDir string `yaml:"data-dir"`
	// RESTAddr is the listen address of the REST API.
	RESTAddr string `yaml:"rest-addr"`
	// BootstrapServers are the Kafka brokers of the data plane.
	BootstrapServers []string `yaml:"bootstrap-servers"`
	// DevKafka starts an embedded in-process Kafka-protocol broker (kfake) and
	// uses it as the data plane. For trying kcd out only: not a real Kafka.
	DevKafka bool `yaml:"dev-kafka"`
	// DevKafkaPort is the loopback port of the embedded dev broker.
	DevKafkaPort int `yaml:"dev-kafka-port"`
	// Roles are what the node does: raft (a Raft member), worker (runs
	// tasks), or both.
	Roles []string `yaml:"roles"`
	// PeerAddr is where the node listens for Raft traffic and how the other
	// members reach it (host:port).
	PeerAddr string `yaml:"peer-addr"`
	// InitialCluster bootstraps a new cluster: id=host:port of every
	// founding member. Empty: a single-node cluster of this node alone.
	InitialCluster string `yaml:"initial-cluster"`
	// Join is the REST URL of any member of a running cluster to join.
	Join string `yaml:"join"`
	// JoinToken is the cluster's join credential: a node presents it to
	// join, and a founding member publishes it for the cluster to check
	// joiners against. JoinTokenFile names a file that holds it instead.
	// Never logged.
	JoinToken     string `yaml:"join-token"`
	JoinTokenFile string `yaml:"join-token-file"`
	// Seeds are REST URLs of cluster members, for worker-only nodes.
	Seeds []string `yaml:"seeds"`
	// PeerTLSCert, PeerTLSKey and PeerTLSCA turn on mutual TLS between
	// members: each presents its certificate and accepts only peers whose
	// certificate the CA signed. All three or none.
	PeerTLSCert string `yaml:"peer-tls-cert"`
	PeerTLSKey  string `yaml:"peer-tls-key"`
	PeerTLSCA   string `yaml:"peer-tls-ca"`
	// SnapshotEntries is how many applied Raft entries trigger a snapshot.
	SnapshotEntries uint64 `yaml:"raft-snapshot-entries"`
	// ElectionTimeout is how long followers wait for a leader before
	// electing a new one (randomised up to twice that).
	ElectionTimeout time.Duration `yaml:"raft-election-timeout"`
	// CorruptionCheckInterval is how often the Raft members compare hashes
	// of their states (0: never).
	CorruptionCheckInterval time.Duration `yaml:"corruption-check-interval"`
	// OffsetFlushInterval is how often tasks commit their offsets, as
	// Kafka Connect's offset.flush.interval.ms.
	OffsetFlushInterval time.Duration `yaml:"offset-flush-interval"`
	// WorkerWeight is this worker's share of the work relative to the
	// others (0 takes none); operators change it at run time with
	// kcctl worker weight.
	WorkerWeight float64 `yaml:"worker-weight"`
	// WorkerCapacity is the most connectors and tasks this worker runs,
	// whatever its weight; 0: no limit.
	WorkerCapacity int `yaml:"worker-capacity"`
	// SessionTimeout: a worker with no heartbeat answered for this long
	// stops its tasks; the coordinator moves them once it has heard nothing
	// for this long plus FenceMargin. The same on every node.
	SessionTimeout time.Duration `yaml:"session-timeout"`
	// HeartbeatInterval is how often workers heartbeat the coordinator.
	HeartbeatInterval time.Duration `yaml:"heartbeat-interval"`
	// FenceMargin is the time a silent worker has to stop its tasks
	// before the coordinator hands them to others.
	FenceMargin time.Duration `yaml:"fence-margin"`
	// RebalanceDelay keeps a departed worker's tasks waiting this long
	// before they move (for rolling restarts); 0 moves them at once.
	RebalanceDelay time.Duration `yaml:"rebalance-delay"`
	// LeaderWeightFactor scales the weight of the worker on the Raft
	// leader's node, which also coordinates.
	LeaderWeightFactor float64 `yaml:"leader-weight-factor"`
	// MemoryLimit is the Go runtime's soft memory limit for the process
	// (runtime/debug.SetMemoryLimit): the garbage collector works harder
	// as the heap nears it, so that garbage does not double the resident
	// memory under load. 0: kcd sets none (the runtime then follows
	// GOMEMLIMIT, if set). GOMEMLIMIT in the environment replaces the
	// default; memory-limit, when given, wins over GOMEMLIMIT.
	MemoryLimit ByteSize `yaml:"memory-limit"`
	// WorkerInFlightBytes and WorkerInFlightRecords bound what all source
	// tasks of the worker have produced but Kafka has not yet acknowledged
	// (bytes count keys, values, headers and about 512 bytes of
	// bookkeeping per record); TaskInFlightBytes and TaskInFlightRecords
	// bound one task. A task at a limit is not polled. More in flight
	// keeps a producer busier at the cost of memory: see the trade-off in
	// docs/notes/benchmarks-lab-notebook-2026-12.md. A task's limits must not exceed the worker's.
	WorkerInFlightBytes   ByteSize `yaml:"worker-in-flight-bytes"`
	WorkerInFlightRecords int      `yaml:"worker-in-flight-records"`
	TaskInFlightBytes     ByteSize `yaml:"task-in-flight-bytes"`
	TaskInFlightRecords   int      `yaml:"task-in-flight-records"`
	// StaleReadMax is how stale a REST read of connector configs,
	// statuses, tasks or offsets may be when a Raft node cannot confirm
	// its replica is current (no leader, no quorum): it is then served
	// from the replica if that holds every write acknowledged more than
	// this long ago. 0: such reads wait for, or fail without, a leader.
	StaleReadMax time.Duration `yaml:"stale-read-max"`
	// ExactlyOnceSourceSupport is Kafka Connect's
	// exactly.once.source.support: enabled (each source task produces in
	// transactions under its own transactional id, so the broker fences a
	// zombie run of it; sinks read committed records) or disabled.
	ExactlyOnceSourceSupport string `yaml:"exactly-once-source-support"`
	// MaxTasksPerConnector is the most tasks a connector may ask for
	// (tasks.max): larger values are refused by validate and create, and
	// fail the connector on a worker. The same on every node.
	MaxTasksPerConnector int `yaml:"max-tasks-per-connector"`
	// TopicTrackingEnable and TopicTrackingAllowReset are Kafka Connect's
	// topic.tracking.enable and topic.tracking.allow.reset: workers record
	// the topics each connector's tasks use (GET
	// /connectors/{name}/topics), and PUT /connectors/{name}/topics/reset
	// forgets them. Both default to true.
	TopicTrackingEnable     bool `yaml:"topic-tracking-enable"`
	TopicTrackingAllowReset bool `yaml:"topic-tracking-allow-reset"`
	// RESTMaxConnections bounds the REST API's open connections; the last
	// eighth of them is kept for worker heartbeats and /health.
	RESTMaxConnections int `yaml:"rest-max-connections"`
	// RESTAllowedHosts are the host names (comma-separated, no port) that
	// the REST API answers to in a request's Host header; "*" any. Empty:
	// only loopback names when rest-addr is on loopback, else any.
	RESTAllowedHosts string `yaml:"rest-allowed-hosts"`
	// RESTTLSCert and RESTTLSKey make the REST API HTTPS (both or
	// neither); under mutual TLS the node also presents them to other
	// nodes. RESTTLSClientCA requires of every client a certificate it
	// signed (mutual TLS). RESTTLSCA is what this node trusts for other
	// nodes' REST certificates (empty: the system's roots). Every file is
	// loaded again when it changes.
	RESTTLSCert     string `yaml:"rest-tls-cert"`
	RESTTLSKey      string `yaml:"rest-tls-key"`
	RESTTLSClientCA string `yaml:"rest-tls-client-ca"`
	RESTTLSCA       string `yaml:"rest-tls-ca"`
	// RESTAuthFile is the REST API's credentials file (users, roles,
	// password and token hashes; YAML, reloaded when it changes). Empty:
	// the API is open.
	RESTAuthFile string `yaml:"rest-auth-file"`
	// NodeTokenFile holds the cluster's node secret, the same on every node,
	// with which nodes authenticate to each other's REST APIs. Required
	// with RESTAuthFile. Never logged.
	NodeTokenFile string `yaml:"node-token-file"`
	// FileConnectorDirs, when set, are the only directories whose files
	// the FileStream connectors may read and write (absolute paths):
	// validate and create refuse other paths, and a worker refuses to run
	// a connector or task with one. Empty: any path the process can open,
	// as in Kafka Connect. Each node enforces its own setting: give every
	// node the same.
	FileConnectorDirs []string `yaml:"file-connector-dirs"`
	// ConfigProviders are the config providers (file, env, directory) that
	// resolve references such as ${file:/path:key} in connector configs,
	// on the worker that runs the connector or task (Kafka Connect's
	// config.providers). Empty: none, references stay as written.
	ConfigProviders []string `yaml:"config-providers"`
	// ConfigProviderAllowedPaths confine the file and directory providers
	// to these absolute paths (Kafka Connect's allowed.paths). Empty: any.
	ConfigProviderAllowedPaths []string `yaml:"config-provider-allowed-paths"`
	// ConfigEncryptionKeyFile holds the keys that encrypt connector and
	// task configs in the store (AES-256-GCM): one key per line, 32 bytes
	// in hex or base64; the first encrypts, all decrypt. Empty: stored in
	// plain text. Never logged.
	ConfigEncryptionKeyFile string `yaml:"config-encryption-key-file"`
	// PluginPath are the directories (Kafka Connect's plugin.path) the
	// Java connector host loads plugins from. Empty: no Java host; only
	// built-in connectors run.
	PluginPath []string `yaml:"plugin-path"`
	// JavaHostHeap is the Java host's heap bound (-Xmx), e.g. 512m, 2g.
	JavaHostHeap string `yaml:"java-host-heap"`
	// Java is the java executable of the host (Java 17+). Empty:
	// $JAVA_HOME/bin/java, else java on PATH.
	Java string `yaml:"java"`
	// JavaHostDir holds kcd-javahost.jar and its lib/. Empty: javahost
	// next to the kcd executable, else javahost/target/javahost of the
	// source checkout kcd runs from.
	JavaHostDir string `yaml:"java-host-dir"`
	// JavaHostHangLimit is how long a Java plugin call may take before
	// its task fails with the plugin thread's stack.
	JavaHostHangLimit time.Duration `yaml:"java-host-hang-limit"`
	// JavaHostJVMOptions are extra options of the host's JVM (a garbage
	// collector, -Xss...); the heap bound is JavaHostHeap's.
	JavaHostJVMOptions []string `yaml:"java-host-jvm-options"`
	// Producer and Consumer are Kafka Connect's worker settings
	// producer.<prop> and consumer.<prop> (keys without the prefix): the
	// settings of every producer and sink consumer of the worker, over
	// Kafka Connect's defaults. Unsupported ones are refused at start.
	Producer map[string]string `yaml:"producer"`
	Consumer map[string]string `yaml:"consumer"`
	// ClientConfigOverridePolicy is Kafka Connect's
	// connector.client.config.override.policy: which producer.override.*
	// and consumer.override.* settings a connector may have (None,
	// Principal, All; simple or class names).
	ClientConfigOverridePolicy string `yaml:"connector-client-config-override-policy"`
	// PluginDiscovery is Kafka Connect's plugin.discovery: how the host
	// finds plugins (only_scan, hybrid_warn, hybrid_fail, service_load).
	PluginDiscovery string `yaml:"plugin-discovery"`
	// File is the YAML file the config was loaded from ("" none): it may
	// hold secrets, which config providers must not read.
	File string `yaml:"-"`
	// Store is the metadata store's backend a new cluster starts with; the
	// active backend then lives in Raft and changes only by kcctl store
	// switch.
	Store StoreConfig `yaml:"store"`
	// LogLevel is one of debug, info, warn, error.
	LogLevel string `yaml:"log-level"`
	// LogFormat is text or json.
	LogFormat string `yaml:"log-format"`
}

// Default returns the configuration a node runs with when nothing is set.
func Default() Config {
	return Config{
		NodeID:              1,
		DataDir:             "kcd-data",
		RESTAddr:            "127.0.0.1:8083",
		DevKafkaPort:        9092,
		Roles:               []string{RoleRaft, RoleWorker},
		PeerAddr:            "127.0.0.1:8093",
		SnapshotEntries:     10000,
		ElectionTimeout:     500 * time.Millisecond,
		OffsetFlushInterval: time.Minute,
		WorkerWeight:        1,
		SessionTimeout:      3 * time.Second,
		HeartbeatInterval:   500 * time.Millisecond,
		FenceMargin:         500 * time.Millisecond,
		LeaderWeightFactor:  0.5,
		MemoryLimit:         DefaultMemoryLimit,
		// raft/corruption.go
		CorruptionCheckInterval: 5 * time.Minute,
		// The worker's defaults (worker.Default; a test keeps them equal).
		WorkerInFlightBytes:   32 << 20,
		WorkerInFlightRecords: 100_000,
		TaskInFlightBytes:     32 << 20,
		TaskInFlightRecords:   100_000,
		StaleReadMax:          30 * time.Second,
		MaxTasksPerConnector:  1000,

		TopicTrackingEnable:     true,
		TopicTrackingAllowReset: true,
		RESTMaxConnections:      512,
		LogLevel:                "info",
		LogFormat:               "text",
		Store:                   StoreConfig{Backend: DefaultStoreBackend},

		ExactlyOnceSourceSupport: "enabled",
		JavaHostHeap:             "512m",
		JavaHostHangLimit:        5 * time.Minute,
		PluginDiscovery:          "hybrid_warn",

		ClientConfigOverridePolicy: string(clientcfg.PolicyAll),
	}
}

// javaHeapBytes reads a JVM heap size as -Xmx takes it: a number of
// bytes, or of k, m or g.
func javaHeapBytes(v string) (int64, bool) {
	shift := 0
	switch {
	case v == "":
		return 0, false
	case strings.ContainsAny(v[len(v)-1:], "kK"):
		shift = 10
	case strings.ContainsAny(v[len(v)-1:], "mM"):
		shift = 20
	case strings.ContainsAny(v[len(v)-1:], "gG"):
		shift = 30
	}
	if shift > 0 {
		v = v[:len(v)-1]
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 || n > (1<<50)>>shift || v[0] == '+' {
		return 0, false
	}
	return n << shift, true
}

// DefaultMemoryLimit is the default of Config.MemoryLimit: with the
// worker's default in-flight limits, a node under a full Connect load
// stays below 100 MB resident (docs/notes/benchmarks-lab-notebook-2026-12.md).
const DefaultMemoryLimit ByteSize = 80 << 20

// MinJoinTokenLen is the shortest join token accepted: the cluster keeps
// only a salted hash of it, which must not be guessable.
const MinJoinTokenLen = 16

// The roles a node can have.
const (
	RoleRaft   = "raft"
	RoleWorker = "worker"
)

// HasRole tells whether the node has role r.
func (c *Config) HasRole(r string) bool { return slices.Contains(c.Roles, r) }

// Validate reports every problem with c at once.
func (c *Config) Validate() error {
	var errs []error
	if c.NodeID == 0 {
		errs = append(errs, errors.New("node-id must be a positive integer"))
	}
	if strings.TrimSpace(c.DataDir) == "" {
		errs = append(errs, errors.New("data-dir must not be empty"))
	}
	if _, _, err := net.SplitHostPort(c.RESTAddr); err != nil {
		errs = append(errs, fmt.Errorf("rest-addr %q is not host:port: %w", c.RESTAddr, err))
	}
	if c.DevKafka && len(c.BootstrapServers) > 0 {
		errs = append(errs, errors.New("dev-kafka and bootstrap-servers exclude each other: the embedded broker is the data plane"))
	}
	if !c.DevKafka && len(c.BootstrapServers) == 0 {
		errs = append(errs, errors.New("bootstrap-servers is required (or dev-kafka for a trial run with an embedded broker)"))
	}
	for _, s := range c.BootstrapServers {
		if _, _, err := net.SplitHostPort(s); err != nil {
			errs = append(errs, fmt.Errorf("bootstrap server %q is not host:port", s))
		}
	}
	if c.DevKafkaPort < 0 || c.DevKafkaPort > 65535 {
		errs = append(errs, fmt.Errorf("dev-kafka-port %d is out of range", c.DevKafkaPort))
	}
	if len(c.Roles) == 0 {
		errs = append(errs, errors.New("roles must name raft, worker or both (raft+worker)"))
	}
	for _, r := range c.Roles {
		if r != RoleRaft && r != RoleWorker {
			errs = append(errs, fmt.Errorf("unknown role %q: use raft, worker or raft+worker", r))
		}
	}
	if c.HasRole(RoleRaft) {
		if _, _, err := net.SplitHostPort(c.PeerAddr); err != nil {
			errs = append(errs, fmt.Errorf("peer-addr %q is not host:port: %w", c.PeerAddr, err))
		}
		if c.Join != "" && c.InitialCluster != "" {
			errs = append(errs, errors.New("join and initial-cluster exclude each other: bootstrap a new cluster or join a running one"))
		}
		if c.JoinToken != "" && c.JoinTokenFile != "" {
			errs = append(errs, errors.New("join-token and join-token-file exclude each other"))
		}
		if c.JoinToken != "" && len(c.JoinToken) < MinJoinTokenLen {
			errs = append(errs, fmt.Errorf("join-token is shorter than %d characters", MinJoinTokenLen))
		}
		if n := countSet(c.PeerTLSCert, c.PeerTLSKey, c.PeerTLSCA); n != 0 && n != 3 {
			errs = append(errs, errors.New("peer TLS needs peer-tls-cert, peer-tls-key and peer-tls-ca together"))
		}
		if c.ElectionTimeout < 100*time.Millisecond {
			errs = append(errs, fmt.Errorf("raft-election-timeout %v is below 100ms", c.ElectionTimeout))
		}
		if c.CorruptionCheckInterval != 0 && c.CorruptionCheckInterval < 100*time.Millisecond {
			errs = append(errs, fmt.Errorf("corruption-check-interval %v is below 100ms (0 turns the check off)", c.CorruptionCheckInterval))
		}
	} else if len(c.Seeds) == 0 {
		errs = append(errs, errors.New("a worker-only node needs seeds: REST URLs of cluster members"))
	}
	if c.RESTAuthFile != "" && c.NodeTokenFile == "" {
		errs = append(errs, errors.New("rest-auth-file needs node-token-file: the secret (at least 32 bytes, the same on every node) with which nodes call each other's REST APIs"))
	}
	if c.OffsetFlushInterval < 10*time.Millisecond {
		errs = append(errs, fmt.Errorf("offset-flush-interval %v is below 10ms", c.OffsetFlushInterval))
	}
	if c.WorkerWeight < 0 || c.WorkerWeight > 1e6 {
		errs = append(errs, fmt.Errorf("worker-weight %v must be from 0 to 1000000", c.WorkerWeight))
	}
	if c.WorkerCapacity < 0 {
		errs = append(errs, fmt.Errorf("worker-capacity %d must not be negative (0: no limit)", c.WorkerCapacity))
	}
	if c.LeaderWeightFactor <= 0 || c.LeaderWeightFactor > 1 {
		errs = append(errs, fmt.Errorf("leader-weight-factor %v must be above 0 and at most 1", c.LeaderWeightFactor))
	}
	if c.HeartbeatInterval < 10*time.Millisecond {
		errs = append(errs, fmt.Errorf("heartbeat-interval %v is below 10ms", c.HeartbeatInterval))
	}
	if c.SessionTimeout < 2*c.HeartbeatInterval {
		errs = append(errs, fmt.Errorf("session-timeout %v must be at least twice heartbeat-interval %v", c.SessionTimeout, c.HeartbeatInterval))
	}
	if c.FenceMargin < 0 || c.RebalanceDelay < 0 {
		errs = append(errs, errors.New("fence-margin and rebalance-delay must not be negative"))
	}
	if c.StaleReadMax < 0 {
		errs = append(errs, fmt.Errorf("stale-read-max %v must not be negative (0: no stale reads)", c.StaleReadMax))
	}
	if c.MemoryLimit < 0 {
		errs = append(errs, fmt.Errorf("memory-limit %v is negative", c.MemoryLimit))
	} else if c.MemoryLimit > 0 && c.MemoryLimit < 16<<20 {
		errs = append(errs, fmt.Errorf("memory-limit %v is below 16MiB: the node could not run", c.MemoryLimit))
	}
	errs = append(errs, c.validateInFlight()...)
	switch c.ExactlyOnceSourceSupport {
	case "enabled", "disabled":
	default:
		errs = append(errs, fmt.Errorf("exactly-once-source-support %q is not one of enabled, disabled", c.ExactlyOnceSourceSupport))
	}
	if n, ok := javaHeapBytes(c.JavaHostHeap); !ok {
		errs = append(errs, fmt.Errorf("java-host-heap %q is not a JVM heap size such as 512m or 2g", c.JavaHostHeap))
	} else if n < 64<<20 {
		errs = append(errs, fmt.Errorf("java-host-heap %q is below 64m: the host could not load plugins", c.JavaHostHeap))
	}
	if c.JavaHostHangLimit < time.Second {
		errs = append(errs, fmt.Errorf("java-host-hang-limit %v is below 1s", c.JavaHostHangLimit))
	}
	for _, o := range c.JavaHostJVMOptions {
		switch {
		case !strings.HasPrefix(o, "-"):
			errs = append(errs, fmt.Errorf("java-host-jvm-options: %q is not a JVM option", o))
		case strings.HasPrefix(o, "-Xmx") || strings.HasPrefix(o, "-XX:MaxHeapSize"):
			errs = append(errs, fmt.Errorf("java-host-jvm-options: %q: the heap bound is java-host-heap's", o))
		case strings.HasPrefix(o, "-Djava.security.manager") || o == "-jar" || o == "-cp" || o == "-classpath":
			errs = append(errs, fmt.Errorf("java-host-jvm-options: %q is set by kcd: the host needs its own", o))
		}
	}
	switch c.PluginDiscovery {
	case "only_scan", "hybrid_warn", "hybrid_fail", "service_load":
	default:
		errs = append(errs, fmt.Errorf("plugin-discovery %q is not one of only_scan, hybrid_warn, hybrid_fail, service_load", c.PluginDiscovery))
	}
	for _, d := range c.PluginPath {
		if !filepath.IsAbs(d) {
			errs = append(errs, fmt.Errorf("plugin-path %q is not an absolute path", d))
		}
	}
	if c.MaxTasksPerConnector < 1 || c.MaxTasksPerConnector > 100_000 {
		errs = append(errs, fmt.Errorf("max-tasks-per-connector %d must be from 1 to 100000", c.MaxTasksPerConnector))
	}
	if (c.RESTTLSCert == "") != (c.RESTTLSKey == "") {
		errs = append(errs, errors.New("rest-tls-cert and rest-tls-key go together: give both for HTTPS, or neither"))
	}
	if c.RESTTLSClientCA != "" && c.RESTTLSCert == "" {
		errs = append(errs, errors.New("rest-tls-client-ca needs rest-tls-cert and rest-tls-key: client certificates are asked for over HTTPS only"))
	}
	for _, d := range c.FileConnectorDirs {
		if !filepath.IsAbs(d) {
			errs = append(errs, fmt.Errorf("file-connector-dirs: %q is not an absolute path", d))
		} else if filepath.Clean(d) == string(filepath.Separator) {
			errs = append(errs, errors.New("file-connector-dirs: / would allow every file; leave the setting empty for no confinement"))
		}
	}
	if c.RESTMaxConnections < 16 {
		errs = append(errs, fmt.Errorf("rest-max-connections %d is below 16", c.RESTMaxConnections))
	}
	for _, p := range c.ConfigProviders {
		if p != "file" && p != "env" && p != "directory" {
			errs = append(errs, fmt.Errorf("config-providers: %q is not one of file, env, directory", p))
		}
	}
	for _, p := range c.ConfigProviderAllowedPaths {
		if !strings.HasPrefix(p, "/") {
			errs = append(errs, fmt.Errorf("config-provider-allowed-paths: %q is not an absolute path", p))
		}
	}
	errs = append(errs, c.Store.validate()...)
	errs = append(errs, c.validateClients()...)
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("log-level %q is not one of debug, info, warn, error", c.LogLevel))
	}
	switch c.LogFormat {
	case "text", "json":
	default:
		errs = append(errs, fmt.Errorf("log-format %q is not one of text, json", c.LogFormat))
	}
	return errors.Join(errs...)
}

// In-flight limits: below minInFlightBytes a plain number was most
// likely meant in MiB (a record larger than the limit still goes, alone,
// but one at a time); above maxInFlightRecords the producer's buffer
// (twice the records) and the offset ring would be sized beyond reason.
const (
	minInFlightBytes   ByteSize = 64 << 10
	maxInFlightRecords          = 10_000_000
)

func (c *Config) validateInFlight() []error {
	var errs []error
	bytesOK, recordsOK := true, true
	for _, b := range []struct {
		name string
		v    ByteSize
	}{{"worker-in-flight-bytes", c.WorkerInFlightBytes}, {"task-in-flight-bytes", c.TaskInFlightBytes}} {
		if b.v < minInFlightBytes {
			bytesOK = false
			errs = append(errs, fmt.Errorf("%s %v is below %v (a plain number is bytes: write 32MiB for 32 MiB)", b.name, b.v, minInFlightBytes))
		}
	}
	for _, r := range []struct {
		name string
		v    int
	}{{"worker-in-flight-records", c.WorkerInFlightRecords}, {"task-in-flight-records", c.TaskInFlightRecords}} {
		if r.v < 1 || r.v > maxInFlightRecords {
			recordsOK = false
			errs = append(errs, fmt.Errorf("%s %d must be from 1 to %d", r.name, r.v, maxInFlightRecords))
		}
	}
	if bytesOK && c.TaskInFlightBytes > c.WorkerInFlightBytes {
		errs = append(errs, fmt.Errorf("task-in-flight-bytes %v exceeds worker-in-flight-bytes %v: one task may not hold more than the worker", c.TaskInFlightBytes, c.WorkerInFlightBytes))
	}
	if recordsOK && c.TaskInFlightRecords > c.WorkerInFlightRecords {
		errs = append(errs, fmt.Errorf("task-in-flight-records %d exceeds worker-in-flight-records %d: one task may not hold more than the worker", c.TaskInFlightRecords, c.WorkerInFlightRecords))
	}
	return errs
}

// validateClients checks the producer and consumer settings as the
// worker takes them (worker.Config.Producer, Consumer).
func (c *Config) validateClients() []error {
	var errs []error
	if _, err := clientcfg.ParsePolicy(c.ClientConfigOverridePolicy); err != nil {
		errs = append(errs, errors.New("connector-client-config-override-policy: "+strings.TrimPrefix(err.Error(), clientcfg.PolicyKey+" ")))
	}
	p, err := clientcfg.DefaultProducer().With(c.Producer, clientcfg.ProducerPrefix)
	if err == nil {
		err = p.Check(clientcfg.ProducerPrefix, c.ExactlyOnceSourceSupport != "disabled")
	}
	if err != nil {
		errs = append(errs, err)
	}
	if cc, err := clientcfg.DefaultConsumer().With(c.Consumer, clientcfg.ConsumerPrefix); err != nil {
		errs = append(errs, err)
	} else if cc.GroupID != "" {
		errs = append(errs, errors.New("consumer.group.id would put every sink connector in one group: set consumer.override.group.id per connector"))
	}
	return errs
}

// clientSettingField is a repeatable KEY=VALUE setting of a producer or
// consumer (comma-separated in the environment).
func clientSettingField(name, usage string, at func(*Config) *map[string]string) field {
	return field{name, usage,
		func(c *Config, v string) error { return addKeyValues(at(c), splitSettings(v)) },
		func(c *Config) string { return "" }}
}

// addKeyValues adds KEY=VALUE entries to m. A malformed entry is named by
// its place, not shown: it may be a password.
func addKeyValues(m *map[string]string, entries []string) error {
	var errs []error
	for i, e := range entries {
		k, v, ok := strings.Cut(e, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			errs = append(errs, fmt.Errorf("entry %d is not KEY=VALUE (not shown: it may hold a secret)", i+1))
			continue
		}
		if *m == nil {
			*m = map[string]string{}
		}
		(*m)[k] = strings.TrimSpace(v)
	}
	return errors.Join(errs...)
}

// field describes one setting once, for the YAML file, the environment and
// the command line alike.
type field struct {
	name  string // kebab-case: the flag, the YAML key; KCD_ + SNAKE_CASE in the environment
	usage string
	set   func(*Config, string) error
	get   func(*Config) string
}

// byteSizeField is a setting written as a byte size (32MiB, or plain bytes).
func byteSizeField(name, usage string, at func(*Config) *ByteSize) field {
	return field{name, usage,
		func(c *Config, v string) (err error) { *at(c), err = ParseByteSize(v); return err },
		func(c *Config) string { return at(c).String() }}
}

// countField is a setting written as a whole number, spaces around it
// ignored.
func countField(name, usage string, at func(*Config) *int) field {
	return field{name, usage,
		func(c *Config, v string) (err error) { *at(c), err = strconv.Atoi(strings.TrimSpace(v)); return err },
		func(c *Config) string { return strconv.Itoa(*at(c)) }}
}

func fields() []field {
	return []field{
		{"node-id", "Unique, non-zero id of this node in the cluster",
			func(c *Config, v string) (err error) { c.NodeID, err = strconv.ParseUint(v, 10, 64); return err },
			func(c *Config) string { return strconv.FormatUint(c.NodeID, 10) }},
		{"data-dir", "Directory where the node keeps its state",
			func(c *Config, v string) error { c.DataDir = v; return nil },
			func(c *Config) string { return c.DataDir }},
		{"rest-addr", "Listen address of the REST API (Kafka Connect's and /kcd/v1)",
			func(c *Config, v string) error { c.RESTAddr = v; return nil },
			func(c *Config) string { return c.RESTAddr }},
		{"bootstrap-servers", "Kafka brokers of the data plane, comma-separated host:port",
			func(c *Config, v string) error { c.BootstrapServers = splitList(v); return nil },
			func(c *Config) string { return strings.Join(c.BootstrapServers, ",") }},
		{"dev-kafka", "Start an embedded in-process Kafka-protocol broker as the data plane (dev only, not a real Kafka)",
			func(c *Config, v string) (err error) { c.DevKafka, err = strconv.ParseBool(v); return err },
			func(c *Config) string { return strconv.FormatBool(c.DevKafka) }},
		{"dev-kafka-port", "Loopback port of the embedded dev broker (0 picks a free one)",
			func(c *Config, v string) (err error) { c.DevKafkaPort, err = strconv.Atoi(v); return err },
			func(c *Config) string { return strconv.Itoa(c.DevKafkaPort) }},
		{"roles", "What the node does: raft, worker or raft+worker",
			func(c *Config, v string) error { c.Roles = splitRoles(v); return nil },
			func(c *Config) string { return strings.Join(c.Roles, "+") }},
		{"peer-addr", "Listen and advertised address (host:port) for Raft traffic between members",
			func(c *Config, v string) error { c.PeerAddr = v; return nil },
			func(c *Config) string { return c.PeerAddr }},
		{"initial-cluster", "Bootstrap a new cluster: id=host:port of every founding member, comma-separated",
			func(c *Config, v string) error { c.InitialCluster = v; return nil },
			func(c *Config) string { return c.InitialCluster }},
		{"join", "REST URL of any member of a running cluster to join (as a learner, promoted once caught up)",
			func(c *Config, v string) error { c.Join = v; return nil },
			func(c *Config) string { return c.Join }},
		{"join-token", "Secret a node presents to join the cluster; on a founding member, the token the cluster requires of joiners (at least 16 characters; prefer the environment or join-token-file)",
			func(c *Config, v string) error { c.JoinToken = v; return nil },
			func(c *Config) string { return "" }}, // never shown
		{"join-token-file", "File holding the join token (instead of join-token)",
			func(c *Config, v string) error { c.JoinTokenFile = v; return nil },
			func(c *Config) string { return c.JoinTokenFile }},
		{"seeds", "REST URLs of cluster members, comma-separated (worker-only nodes)",
			func(c *Config, v string) error { c.Seeds = splitList(v); return nil },
			func(c *Config) string { return strings.Join(c.Seeds, ",") }},
		{"peer-tls-cert", "PEM certificate this node presents to its Raft peers (mutual TLS)",
			func(c *Config, v string) error { c.PeerTLSCert = v; return nil },
			func(c *Config) string { return c.PeerTLSCert }},
		{"peer-tls-key", "PEM private key of peer-tls-cert",
			func(c *Config, v string) error { c.PeerTLSKey = v; return nil },
			func(c *Config) string { return c.PeerTLSKey }},
		{"peer-tls-ca", "PEM CA certificate that signs every member's peer certificate",
			func(c *Config, v string) error { c.PeerTLSCA = v; return nil },
			func(c *Config) string { return c.PeerTLSCA }},
		{"raft-snapshot-entries", "Applied Raft entries between snapshots (for a state over 1 MiB up to 4x as many while they hold less than half its size)",
			func(c *Config, v string) (err error) {
				c.SnapshotEntries, err = strconv.ParseUint(v, 10, 64)
				return err
			},
			func(c *Config) string { return strconv.FormatUint(c.SnapshotEntries, 10) }},
		{"raft-election-timeout", "How long followers wait for a leader before electing one",
			func(c *Config, v string) (err error) { c.ElectionTimeout, err = time.ParseDuration(v); return err },
			func(c *Config) string { return c.ElectionTimeout.String() }},
		{"corruption-check-interval", "How often the Raft members compare hashes of their states (0: never)",
			func(c *Config, v string) (err error) {
				c.CorruptionCheckInterval, err = time.ParseDuration(v)
				return err
			},
			func(c *Config) string { return c.CorruptionCheckInterval.String() }},
		{"offset-flush-interval", "How often tasks commit their offsets (Kafka Connect's offset.flush.interval.ms)",
			func(c *Config, v string) (err error) { c.OffsetFlushInterval, err = time.ParseDuration(v); return err },
			func(c *Config) string { return c.OffsetFlushInterval.String() }},
		{"worker-weight", "This worker's share of the work relative to the others (0: none)",
			func(c *Config, v string) (err error) { c.WorkerWeight, err = strconv.ParseFloat(v, 64); return err },
			func(c *Config) string { return strconv.FormatFloat(c.WorkerWeight, 'g', -1, 64) }},
		{"worker-capacity", "The most connectors and tasks this worker runs, whatever its weight (0: no limit)",
			func(c *Config, v string) (err error) { c.WorkerCapacity, err = strconv.Atoi(v); return err },
			func(c *Config) string { return strconv.Itoa(c.WorkerCapacity) }},
		{"session-timeout", "A worker with no heartbeat answered for this long stops its tasks (same on every node)",
			func(c *Config, v string) (err error) { c.SessionTimeout, err = time.ParseDuration(v); return err },
			func(c *Config) string { return c.SessionTimeout.String() }},
		{"heartbeat-interval", "How often workers heartbeat the coordinator",
			func(c *Config, v string) (err error) { c.HeartbeatInterval, err = time.ParseDuration(v); return err },
			func(c *Config) string { return c.HeartbeatInterval.String() }},
		{"fence-margin", "Extra wait after session-timeout before a silent worker's tasks move",
			func(c *Config, v string) (err error) { c.FenceMargin, err = time.ParseDuration(v); return err },
			func(c *Config) string { return c.FenceMargin.String() }},
		{"rebalance-delay", "How long a departed worker's tasks wait before they move (rolling restarts)",
			func(c *Config, v string) (err error) { c.RebalanceDelay, err = time.ParseDuration(v); return err },
			func(c *Config) string { return c.RebalanceDelay.String() }},
		{"leader-weight-factor", "Weight factor of the worker on the Raft leader's node (it also coordinates)",
			func(c *Config, v string) (err error) {
				c.LeaderWeightFactor, err = strconv.ParseFloat(v, 64)
				return err
			},
			func(c *Config) string { return strconv.FormatFloat(c.LeaderWeightFactor, 'g', -1, 64) }},
		byteSizeField("memory-limit", "Soft memory limit of the process (Go's GOMEMLIMIT), e.g. 80MiB, 1GiB; 0: none. GOMEMLIMIT, when set, replaces the default",
			func(c *Config) *ByteSize { return &c.MemoryLimit }),
		byteSizeField("worker-in-flight-bytes", "Bytes all source tasks of the worker may have produced and not yet seen acknowledged, e.g. 32MiB; a task at a limit is not polled",
			func(c *Config) *ByteSize { return &c.WorkerInFlightBytes }),
		countField("worker-in-flight-records", "Records all source tasks of the worker may have in flight",
			func(c *Config) *int { return &c.WorkerInFlightRecords }),
		byteSizeField("task-in-flight-bytes", "Bytes one source task may have in flight, e.g. 32MiB (at most worker-in-flight-bytes)",
			func(c *Config) *ByteSize { return &c.TaskInFlightBytes }),
		countField("task-in-flight-records", "Records one source task may have in flight (at most worker-in-flight-records)",
			func(c *Config) *int { return &c.TaskInFlightRecords }),
		{"stale-read-max", "How stale a REST read of connectors, statuses or offsets may be when no Raft leader confirms the local replica (0: never stale)",
			func(c *Config, v string) (err error) { c.StaleReadMax, err = time.ParseDuration(v); return err },
			func(c *Config) string { return c.StaleReadMax.String() }},
		{"exactly-once-source-support", "enabled: each source task produces in transactions under its own transactional id, so the broker fences a stale run of it, and sinks read committed records; disabled: one producer per worker (Kafka Connect's exactly.once.source.support)",
			func(c *Config, v string) error { c.ExactlyOnceSourceSupport = strings.TrimSpace(v); return nil },
			func(c *Config) string { return c.ExactlyOnceSourceSupport }},
		countField("max-tasks-per-connector", "The most tasks a connector may have (tasks.max); larger values are refused. The same on every node",
			func(c *Config) *int { return &c.MaxTasksPerConnector }),
		{"topic-tracking-enable", "Record the topics each connector's tasks use, for GET /connectors/{name}/topics (Kafka Connect's topic.tracking.enable)",
			func(c *Config, v string) (err error) { c.TopicTrackingEnable, err = strconv.ParseBool(v); return err },
			func(c *Config) string { return strconv.FormatBool(c.TopicTrackingEnable) }},
		{"topic-tracking-allow-reset", "Allow PUT /connectors/{name}/topics/reset (Kafka Connect's topic.tracking.allow.reset)",
			func(c *Config, v string) (err error) {
				c.TopicTrackingAllowReset, err = strconv.ParseBool(v)
				return err
			},
			func(c *Config) string { return strconv.FormatBool(c.TopicTrackingAllowReset) }},
		countField("rest-max-connections", "The most open connections of the REST API; the last eighth is kept for worker heartbeats and /health",
			func(c *Config) *int { return &c.RESTMaxConnections }),
		{"rest-allowed-hosts", "Host names the REST API answers to in the Host header, comma-separated (* any); default: only localhost and loopback addresses when rest-addr is on loopback (against DNS rebinding), else any",
			func(c *Config, v string) error { c.RESTAllowedHosts = strings.TrimSpace(v); return nil },
			func(c *Config) string { return c.RESTAllowedHosts }},
		{"rest-tls-cert", "PEM certificate of the REST API (with any intermediates): serve HTTPS (needs rest-tls-key); loaded again when the file changes",
			func(c *Config, v string) error { c.RESTTLSCert = v; return nil },
			func(c *Config) string { return c.RESTTLSCert }},
		{"rest-tls-key", "PEM private key of rest-tls-cert",
			func(c *Config, v string) error { c.RESTTLSKey = v; return nil },
			func(c *Config) string { return c.RESTTLSKey }},
		{"rest-tls-client-ca", "PEM CA certificates: the REST API requires a client certificate they signed (mutual TLS; other nodes present their rest-tls-cert)",
			func(c *Config, v string) error { c.RESTTLSClientCA = v; return nil },
			func(c *Config) string { return c.RESTTLSClientCA }},
		{"rest-tls-ca", "PEM CA certificates this node trusts for other nodes' REST certificates (default: the system's roots)",
			func(c *Config, v string) error { c.RESTTLSCA = v; return nil },
			func(c *Config) string { return c.RESTTLSCA }},
		{"rest-auth-file", "Credentials file of the REST API (YAML: users with a role read, operate or admin and a bcrypt/argon2id password hash, sha256 token hashes or a client certificate CN); reloaded when it changes. Unset: the API is open",
			func(c *Config, v string) error { c.RESTAuthFile = strings.TrimSpace(v); return nil },
			func(c *Config) string { return c.RESTAuthFile }},
		{"node-token-file", "File holding the cluster's node secret (at least 32 bytes, the same on every node): nodes authenticate to each other's REST APIs with it. Required with rest-auth-file",
			func(c *Config, v string) error { c.NodeTokenFile = strings.TrimSpace(v); return nil },
			func(c *Config) string { return c.NodeTokenFile }},
		{"file-connector-dirs", "Directories (absolute, comma-separated) whose files the FileStream connectors may read and write; other paths, stdin and stdout are refused. Empty: any path. The same on every node",
			func(c *Config, v string) error { c.FileConnectorDirs = cleanPaths(splitList(v)); return nil },
			func(c *Config) string { return strings.Join(c.FileConnectorDirs, ",") }},
		{"config-providers", "Config providers that resolve references in connector configs on the worker that runs them, comma-separated: file (${file:/path/props:key}), env (${env:NAME}), directory (${directory:/dir:file}); default none, references stay as written",
			func(c *Config, v string) error { c.ConfigProviders = splitList(v); return nil },
			func(c *Config) string { return strings.Join(c.ConfigProviders, ",") }},
		{"config-provider-allowed-paths", "Absolute paths the file and directory config providers may read below, comma-separated; default any",
			func(c *Config, v string) error { c.ConfigProviderAllowedPaths = splitList(v); return nil },
			func(c *Config) string { return strings.Join(c.ConfigProviderAllowedPaths, ",") }},
		{"config-encryption-key-file", "File of keys (one per line, 32 bytes in hex or base64; the first encrypts, all decrypt) that encrypt connector and task configs in the store; default: stored in plain text",
			func(c *Config, v string) error { c.ConfigEncryptionKeyFile = strings.TrimSpace(v); return nil },
			func(c *Config) string { return c.ConfigEncryptionKeyFile }},
		{"store", "Metadata store backend a new cluster starts with: raft, or another registered backend (mysql, postgres...); afterwards kcctl store switch changes it",
			func(c *Config, v string) error { c.Store.Backend = strings.TrimSpace(v); return nil },
			func(c *Config) string { return c.Store.Backend }},
		{"store-dsn", "DSN of the store backend, usually a reference such as ${env:KCD_DB_DSN} or kcd:${file:/run/secrets/db}@tcp(db:3306)/kcd",
			func(c *Config, v string) error { c.Store.DSN = v; return nil },
			func(c *Config) string { return "" }}, // never shown
		{storeSettingFlag, "Other setting of the store backend, KEY=VALUE (repeatable; in the environment, comma-separated)",
			func(c *Config, v string) error { return c.Store.addSettings(splitSettings(v)) },
			func(c *Config) string { return "" }},
		{"plugin-path", "Directories (absolute, comma-separated) of Kafka Connect plugins (its plugin.path) that the Java connector host runs; empty: no Java host",
			func(c *Config, v string) error { c.PluginPath = cleanPaths(splitList(v)); return nil },
			func(c *Config) string { return strings.Join(c.PluginPath, ",") }},
		{"java-host-heap", "Heap bound of the Java connector host (-Xmx), e.g. 512m, 2g",
			func(c *Config, v string) error { c.JavaHostHeap = strings.TrimSpace(v); return nil },
			func(c *Config) string { return c.JavaHostHeap }},
		{"java", "Java 17+ executable of the Java connector host; default $JAVA_HOME/bin/java, else java on PATH",
			func(c *Config, v string) error { c.Java = strings.TrimSpace(v); return nil },
			func(c *Config) string { return c.Java }},
		{"java-host-dir", "Directory of kcd-javahost.jar and its lib/; default: javahost next to the kcd executable, else javahost/target/javahost of the source checkout kcd runs in",
			func(c *Config, v string) error { c.JavaHostDir = strings.TrimSpace(v); return nil },
			func(c *Config) string { return c.JavaHostDir }},
		{"java-host-hang-limit", "How long a Java plugin call (poll, put...) may take before its task fails with the plugin thread's stack",
			func(c *Config, v string) (err error) { c.JavaHostHangLimit, err = time.ParseDuration(v); return err },
			func(c *Config) string { return c.JavaHostHangLimit.String() }},
		{"java-host-jvm-options", "Extra JVM options of the Java connector host, space-separated, e.g. -XX:+UseSerialGC (the heap bound is --java-host-heap)",
			func(c *Config, v string) error { c.JavaHostJVMOptions = strings.Fields(v); return nil },
			func(c *Config) string { return strings.Join(c.JavaHostJVMOptions, " ") }},
		clientSettingField("producer", "Kafka Connect producer setting of the worker's producers, KEY=VALUE as its producer.KEY (repeatable; in the environment, comma-separated), e.g. compression.type=zstd",
			func(c *Config) *map[string]string { return &c.Producer }),
		clientSettingField("consumer", "Kafka Connect consumer setting of the worker's sink consumers, KEY=VALUE as its consumer.KEY (repeatable; in the environment, comma-separated), e.g. max.poll.records=1000",
			func(c *Config) *map[string]string { return &c.Consumer }),
		{"connector-client-config-override-policy", "Which producer.override.* and consumer.override.* settings connectors may have (Kafka Connect's connector.client.config.override.policy): None, Principal or All",
			func(c *Config, v string) error { c.ClientConfigOverridePolicy = strings.TrimSpace(v); return nil },
			func(c *Config) string { return c.ClientConfigOverridePolicy }},
		{"plugin-discovery", "How the Java connector host finds plugins, as Kafka Connect's plugin.discovery: only_scan, hybrid_warn, hybrid_fail or service_load (fastest start, smallest memory; needs the plugins' ServiceLoader manifests)",
			func(c *Config, v string) error { c.PluginDiscovery = strings.TrimSpace(v); return nil },
			func(c *Config) string { return c.PluginDiscovery }},
		{"log-level", "Log level: debug, info, warn or error",
			func(c *Config, v string) error { c.LogLevel = v; return nil },
			func(c *Config) string { return c.LogLevel }},
		{"log-format", "Log format: text or json",
			func(c *Config, v string) error { c.LogFormat = v; return nil },
			func(c *Config) string { return c.LogFormat }},
	}
}

// RESTTLS tells whether the REST API is HTTPS.
func (c *Config) RESTTLS() bool { return c.RESTTLSCert != "" }

// PeerTLS tells whether peer traffic uses mutual TLS.
func (c *Config) PeerTLS() bool { return c.PeerTLSCert != "" }

func countSet(vs ...string) int {
	n := 0
	for _, v := range vs {
		if v != "" {
			n++
		}
	}
	return n
}

// splitRoles reads "raft+worker" (or "raft,worker").
func splitRoles(v string) []string {
	return splitList(strings.ReplaceAll(v, "+", ","))
}

// cleanPaths cleans each path (a relative one stays relative, for
// Validate to refuse).
func cleanPaths(ps []string) []string {
	for i, p := range ps {
		ps[i] = filepath.Clean(p)
	}
	return ps
}

func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// EnvName is the environment variable that sets the named field.
func EnvName(name string) string {
	return "KCD_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// LoadFile overlays the YAML file at path on c. Unknown keys are an error, so a
// misspelt setting is not silently ignored.
func (c *Config) LoadFile(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read config file: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("parse config file %s: %w", path, err)
	}
	return nil
}

// ApplyEnv overlays the KCD_* variables found by lookup (os.LookupEnv in
// production) on c.
func (c *Config) ApplyEnv(lookup func(string) (string, bool)) error {
	var errs []error
	for _, f := range fields() {
		if v, ok := lookup(EnvName(f.name)); ok {
			if err := f.set(c, v); err != nil {
				errs = append(errs, fmt.Errorf("%s=%s: %w", EnvName(f.name), shown(f.name, v), err))
			}
		}
	}
	return errors.Join(errs...)
}

// Flags binds every setting to a flag of fs. Call Apply after parsing to
// overlay the flags that were given on a Config.
type Flags struct {
	fs     *pflag.FlagSet
	values map[string]*string
	// repeated holds the flags that may be given more than once
	// (--store-setting, --producer, --consumer).
	repeated map[string]*[]string
}

// repeatable tells whether the flag name may be given more than once.
func repeatable(name string) bool {
	return name == storeSettingFlag || name == "producer" || name == "consumer"
}

// RegisterFlags adds one flag per setting to fs, with defaults shown from def.
func RegisterFlags(fs *pflag.FlagSet, def Config) *Flags {
	fl := &Flags{fs: fs, values: map[string]*string{}, repeated: map[string]*[]string{}}
	for _, f := range fields() {
		v := new(string)
		fl.values[f.name] = v
		usage := f.usage + " (env " + EnvName(f.name) + ")"
		if repeatable(f.name) {
			fl.repeated[f.name] = fs.StringArray(f.name, nil, usage)
			continue
		}
		if f.name == "dev-kafka" {
			fs.Var(&boolString{v}, f.name, usage)
			fs.Lookup(f.name).NoOptDefVal = "true"
			continue
		}
		fs.StringVar(v, f.name, f.get(&def), usage)
	}
	return fl
}

// Apply overlays on c the flags that were set on the command line.
func (fl *Flags) Apply(c *Config) error {
	var errs []error
	for _, f := range fields() {
		if !fl.fs.Changed(f.name) {
			continue
		}
		if f.name == storeSettingFlag {
			if err := c.Store.addSettings(*fl.repeated[f.name]); err != nil {
				errs = append(errs, fmt.Errorf("--%s: %w", f.name, err))
			}
			continue
		}
		if repeatable(f.name) {
			// One flag, one setting: a value may hold commas.
			m := &c.Producer
			if f.name == "consumer" {
				m = &c.Consumer
			}
			if err := addKeyValues(m, *fl.repeated[f.name]); err != nil {
				errs = append(errs, fmt.Errorf("--%s: %w", f.name, err))
			}
			continue
		}
		if err := f.set(c, *fl.values[f.name]); err != nil {
			errs = append(errs, fmt.Errorf("--%s=%s: %w", f.name, shown(f.name, *fl.values[f.name]), err))
		}
	}
	return errors.Join(errs...)
}

// boolString is a flag that reads as a bool on the command line
// (--dev-kafka, --dev-kafka=false) and keeps its text for Apply.
type boolString struct{ v *string }

func (b *boolString) String() string {
	if b.v == nil || *b.v == "" {
		return "false"
	}
	return *b.v
}
func (b *boolString) Set(s string) error {
	if _, err := strconv.ParseBool(s); err != nil {
		return err
	}
	*b.v = s
	return nil
}
func (b *boolString) Type() string { return "bool" }

// IsBoolFlag lets pflag print it as a bool flag.
func (b *boolString) IsBoolFlag() bool { return true }

// Load builds the configuration the way kcd does at start: defaults, then the
// YAML file (when path is not empty), then the environment, then the flags.
func Load(path string, lookup func(string) (string, bool), flags *Flags) (Config, error) {
	c := Default()
	if _, ok := lookup("GOMEMLIMIT"); ok {
		c.MemoryLimit = 0 // the runtime follows GOMEMLIMIT unless memory-limit is set
	}
	if path != "" {
		if err := c.LoadFile(path); err != nil {
			return c, err
		}
		c.File = path
	}
	if err := c.ApplyEnv(lookup); err != nil {
		return c, fmt.Errorf("environment: %w", err)
	}
	if flags != nil {
		if err := flags.Apply(&c); err != nil {
			return c, fmt.Errorf("flags: %w", err)
		}
	}
	if err := c.Validate(); err != nil {
		return c, fmt.Errorf("invalid configuration:\n%w", err)
	}
	return c, nil
}
