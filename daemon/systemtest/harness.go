package systemtest

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kcd-project/kcd/internal/testenv"
)

// BinEnv names an environment variable that, when set, is the kcd binary
// to run instead of building one (a binary built with -race, or one from
// another checkout while this one does not compile).
const BinEnv = "KCD_SYSTEMTEST_BIN"

// Build compiles ./cmd/kcd of the module that contains the working
// directory into dir and returns the binary's path; with $KCD_SYSTEMTEST_BIN
// set it returns that instead.
func Build(dir string) (string, error) {
	if bin := os.Getenv(BinEnv); bin != "" {
		if _, err := os.Stat(bin); err != nil {
			return "", fmt.Errorf("%s: %w", BinEnv, err)
		}
		return filepath.Abs(bin)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	root, err := ModuleRoot(wd)
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "kcd")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/kcd")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/kcd in %s: %w\n%s", root, err, out)
	}
	return bin, nil
}

// ModuleRoot returns the nearest directory at or above dir that holds a
// go.mod.
func ModuleRoot(dir string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod at or above %s", dir)
		}
	}
}

// FreeAddr returns a loopback host:port reserved for this test process; see
// testenv.FreeAddr.
func FreeAddr() (string, error) { return testenv.FreeAddr() }

// Node is one kcd process: its flags, its data dir and its log file stay
// the same across restarts.
type Node struct {
	ID       uint64
	RESTAddr string // host:port
	PeerAddr string // host:port
	DataDir  string
	LogPath  string
	// Args are the flags the node starts with; tests may change them
	// between a stop and the next Start.
	Args []string
	// Env is added to the process's environment (KCD_JOIN_TOKEN, so that
	// the secret is not in the arguments).
	Env []string
	// client, when set, sends the tests' requests over HTTPS (Options.RESTTLS).
	client *http.Client
	// Token is the bearer token the harness's requests to the node send
	// ("" none), for nodes started with --rest-auth-file.
	Token string

	bin string

	mu       sync.Mutex
	cmd      *exec.Cmd
	done     chan struct{} // closed when the current process has exited
	waitErr  error
	logStart int64 // where the current run's output starts in the log
	runs     int
}

// URL is the node's REST base URL.
func (n *Node) URL() string {
	if n.client != nil {
		return "https://" + n.RESTAddr
	}
	return "http://" + n.RESTAddr
}

// HTTPClient is what the tests' requests to the node go through.
func (n *Node) HTTPClient() *http.Client {
	if n.client != nil {
		return n.client
	}
	return httpClient
}

// Start starts the node's process. The node must not be running.
func (n *Node) Start() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd != nil && !isClosed(n.done) {
		return fmt.Errorf("node %d is already running (pid %d)", n.ID, n.cmd.Process.Pid)
	}
	f, err := os.OpenFile(n.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	n.runs++
	fmt.Fprintf(f, "### systemtest: run %d of node %d at %s: kcd %s\n", n.runs, n.ID, time.Now().Format(time.RFC3339Nano), strings.Join(n.Args, " "))
	if n.logStart, err = f.Seek(0, io.SeekEnd); err != nil {
		return err
	}
	cmd := exec.Command(n.bin, n.Args...)
	cmd.Env = append(os.Environ(), n.Env...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start node %d: %w", n.ID, err)
	}
	done := make(chan struct{})
	n.cmd, n.done, n.waitErr = cmd, done, nil
	go func() {
		err := cmd.Wait()
		n.mu.Lock()
		n.waitErr = err
		n.mu.Unlock()
		close(done)
	}()
	return nil
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// Running tells whether the node's process is alive.
func (n *Node) Running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cmd != nil && !isClosed(n.done)
}

// PID is the process id of the current (or last) run; 0 before the first.
func (n *Node) PID() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return 0
	}
	return n.cmd.Process.Pid
}

// Exited is closed when the current run's process has exited.
func (n *Node) Exited() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.done == nil {
		ch := make(chan struct{})
		close(ch)
		return ch
	}
	return n.done
}

// ExitCode is the exit status of the last run once it has exited: -1 when
// a signal ended it or it is still running.
func (n *Node) ExitCode() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil || !isClosed(n.done) || n.cmd.ProcessState == nil {
		return -1
	}
	return n.cmd.ProcessState.ExitCode()
}

// Signal sends sig to the running process.
func (n *Node) Signal(sig os.Signal) error {
	n.mu.Lock()
	cmd, done := n.cmd, n.done
	n.mu.Unlock()
	if cmd == nil || isClosed(done) {
		return fmt.Errorf("node %d is not running", n.ID)
	}
	return cmd.Process.Signal(sig)
}

// Kill ends the process with SIGKILL, as a crash would, and waits for it.
func (n *Node) Kill() {
	if n.Signal(syscall.SIGKILL) == nil {
		<-n.Exited()
	}
}

// Stop asks the process to stop (SIGTERM) and waits up to timeout for it,
// then kills it. It returns an error if it had to kill.
func (n *Node) Stop(timeout time.Duration) error {
	if n.Signal(syscall.SIGTERM) != nil {
		return nil
	}
	select {
	case <-n.Exited():
		return nil
	case <-time.After(timeout):
		n.Kill()
		return fmt.Errorf("node %d did not stop within %v of SIGTERM; killed", n.ID, timeout)
	}
}

// WaitExit waits up to timeout for the process to exit by itself.
func (n *Node) WaitExit(timeout time.Duration) bool {
	select {
	case <-n.Exited():
		return true
	case <-time.After(timeout):
		return false
	}
}

// Log returns everything the node has logged, over all its runs.
func (n *Node) Log() string {
	b, _ := os.ReadFile(n.LogPath)
	return string(b)
}

// RunLog returns what the current (or last) run has logged.
func (n *Node) RunLog() string {
	n.mu.Lock()
	start := n.logStart
	n.mu.Unlock()
	b, _ := os.ReadFile(n.LogPath)
	if int64(len(b)) < start {
		return ""
	}
	return string(b[start:])
}

// LogTail returns the last lines of the node's log.
func (n *Node) LogTail(lines int) string {
	b, _ := os.ReadFile(n.LogPath)
	b = bytes.TrimRight(b, "\n")
	for i, cut := len(b)-1, 0; i >= 0; i-- {
		if b[i] == '\n' {
			if cut++; cut == lines {
				return string(b[i+1:])
			}
		}
	}
	return string(b)
}

// RSS returns the process's resident set size (VmRSS) in bytes.
func (n *Node) RSS() (int64, error) {
	pid := n.PID()
	if pid == 0 || !n.Running() {
		return 0, fmt.Errorf("node %d is not running", n.ID)
	}
	return ProcStatusBytes(pid, "VmRSS")
}

// ProcStatusBytes reads a "kB" field (VmRSS, VmHWM, ...) of
// /proc/<pid>/status, in bytes.
func ProcStatusBytes(pid int, field string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || k != field {
			continue
		}
		f := strings.Fields(v)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("/proc/%d/status: unexpected %s line %q", pid, field, line)
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		return kb << 10, err
	}
	return 0, fmt.Errorf("/proc/%d/status has no %s", pid, field)
}

// KafkaMode says where a cluster's nodes find Kafka: none of these tests
// needs Kafka, but a node is only "ready" once it has reached some.
type KafkaMode int

const (
	// DevKafkaEach gives every node its own embedded dev broker on a port
	// of its own (--dev-kafka --dev-kafka-port 0).
	DevKafkaEach KafkaMode = iota
	// DevKafkaFirst runs one embedded dev broker in node 1 on a fixed free
	// port; the other nodes use it (--bootstrap-servers).
	DevKafkaFirst
)

// Options shape a cluster.
type Options struct {
	Size int // voters bootstrapped together (default 3)
	// SnapshotEntries sets --raft-snapshot-entries (0: kcd's default).
	SnapshotEntries int
	// ElectionTimeout sets --raft-election-timeout (0: kcd's default).
	ElectionTimeout time.Duration
	Kafka           KafkaMode
	// Bootstrap, when set, points every node at that Kafka (a real broker)
	// instead of an embedded dev broker; Kafka is then ignored.
	Bootstrap string
	LogLevel  string // default info
	ExtraArgs []string
	// JoinToken is given to every node (KCD_JOIN_TOKEN): the cluster's
	// token, and what joiners present. Default: a random one; "-": none.
	JoinToken string
	// RESTTLS, when set, is the TLS configuration the tests reach the
	// nodes' REST APIs with, over https:// (ExtraArgs give the nodes their
	// --rest-tls-* flags).
	RESTTLS *tls.Config
	// Token is every node's Node.Token: what the harness authenticates
	// with when ExtraArgs turn authentication on.
	Token string
}

// Cluster is a set of kcd processes that bootstrapped one Raft cluster.
type Cluster struct {
	tb      testing.TB
	bin     string
	dir     string
	opts    Options
	initial string
	kafka   string // the shared dev broker's address (DevKafkaFirst)

	mu    sync.Mutex
	nodes map[uint64]*Node
}

// StartCluster starts opts.Size nodes (ids 1..Size) of a new cluster and
// returns without waiting for a leader. Every process is killed when tb
// ends; when tb failed, the tail of each node's log is logged first.
func StartCluster(tb testing.TB, bin string, opts Options) *Cluster {
	tb.Helper()
	if opts.Size == 0 {
		opts.Size = 3
	}
	if opts.LogLevel == "" {
		opts.LogLevel = "info"
	}
	switch opts.JoinToken {
	case "":
		opts.JoinToken = fmt.Sprintf("systemtest-%x", rand.Uint64())
	case "-":
		opts.JoinToken = ""
	}
	c := &Cluster{tb: tb, bin: bin, dir: tb.TempDir(), opts: opts, nodes: map[uint64]*Node{}}
	if opts.Kafka == DevKafkaFirst {
		c.kafka = mustFreeAddr(tb)
	}
	var members []string
	for id := uint64(1); id <= uint64(opts.Size); id++ {
		n := c.newNode(id)
		members = append(members, fmt.Sprintf("%d=%s", id, n.PeerAddr))
	}
	c.initial = strings.Join(members, ",")
	tb.Cleanup(c.cleanup)
	for id := uint64(1); id <= uint64(opts.Size); id++ {
		n := c.Node(id)
		n.Args = append(n.Args, "--initial-cluster", c.initial)
		n.Args = append(n.Args, c.kafkaArgs(id)...)
		if err := n.Start(); err != nil {
			tb.Fatal(err)
		}
	}
	return c
}

func mustFreeAddr(tb testing.TB) string {
	tb.Helper()
	a, err := FreeAddr()
	if err != nil {
		tb.Fatal(err)
	}
	return a
}

// newNode registers node id with fresh ports, data dir and log, and the
// flags every node gets; it does not start it.
func (c *Cluster) newNode(id uint64) *Node {
	c.tb.Helper()
	n := &Node{
		ID:       id,
		RESTAddr: mustFreeAddr(c.tb),
		PeerAddr: mustFreeAddr(c.tb),
		DataDir:  filepath.Join(c.dir, fmt.Sprintf("node%d", id)),
		LogPath:  filepath.Join(c.dir, fmt.Sprintf("node%d.log", id)),
		bin:      c.bin,
		Token:    c.opts.Token,
	}
	if c.opts.RESTTLS != nil {
		n.client = &http.Client{Transport: &http.Transport{TLSClientConfig: c.opts.RESTTLS.Clone(), MaxIdleConnsPerHost: 64, IdleConnTimeout: 30 * time.Second}}
	}
	n.Args = []string{
		"--node-id", strconv.FormatUint(id, 10),
		"--data-dir", n.DataDir,
		"--rest-addr", n.RESTAddr,
		"--peer-addr", n.PeerAddr,
		"--log-level", c.opts.LogLevel,
	}
	if c.opts.SnapshotEntries > 0 {
		n.Args = append(n.Args, "--raft-snapshot-entries", strconv.Itoa(c.opts.SnapshotEntries))
	}
	if c.opts.ElectionTimeout > 0 {
		n.Args = append(n.Args, "--raft-election-timeout", c.opts.ElectionTimeout.String())
	}
	n.Args = append(n.Args, c.opts.ExtraArgs...)
	if c.opts.JoinToken != "" {
		n.Env = append(n.Env, "KCD_JOIN_TOKEN="+c.opts.JoinToken)
	}
	c.mu.Lock()
	c.nodes[id] = n
	c.mu.Unlock()
	return n
}

func (c *Cluster) kafkaArgs(id uint64) []string {
	switch {
	case c.opts.Bootstrap != "":
		return []string{"--bootstrap-servers", c.opts.Bootstrap}
	case c.opts.Kafka == DevKafkaFirst && id == 1:
		_, port, _ := net.SplitHostPort(c.kafka)
		return []string{"--dev-kafka", "--dev-kafka-port", port}
	case c.opts.Kafka == DevKafkaFirst:
		return []string{"--bootstrap-servers", c.kafka}
	default:
		return []string{"--dev-kafka", "--dev-kafka-port", "0"}
	}
}

// NewWorker prepares a worker-only node id that finds the cluster through
// the founding nodes' REST URLs and uses the cluster's Kafka; start it with
// Start.
func (c *Cluster) NewWorker(id uint64) *Node {
	c.tb.Helper()
	var seeds []string
	for _, m := range c.Nodes() {
		seeds = append(seeds, m.URL())
	}
	n := c.newNode(id)
	n.Args = append(n.Args, "--roles", "worker", "--seeds", strings.Join(seeds, ","))
	if c.opts.Bootstrap != "" {
		n.Args = append(n.Args, "--bootstrap-servers", c.opts.Bootstrap)
	} else if c.kafka != "" {
		n.Args = append(n.Args, "--bootstrap-servers", c.kafka)
	} else {
		n.Args = append(n.Args, "--dev-kafka", "--dev-kafka-port", "0")
	}
	return n
}

// JoinToken is the join token every node of the cluster is given ("" none).
func (c *Cluster) JoinToken() string { return c.opts.JoinToken }

// Initial is the --initial-cluster value the founding nodes started with.
func (c *Cluster) Initial() string { return c.initial }

// NewJoiner prepares node id to join the cluster through the member at
// via (a REST URL); start it with Start.
func (c *Cluster) NewJoiner(id uint64, via string) *Node {
	c.tb.Helper()
	n := c.newNode(id)
	n.Args = append(n.Args, "--join", via)
	n.Args = append(n.Args, c.kafkaArgs(id)...)
	return n
}

// Node returns node id (nil if there is none).
func (c *Cluster) Node(id uint64) *Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[id]
}

// Nodes returns every node, running or not, by id.
func (c *Cluster) Nodes() []*Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*Node, 0, len(c.nodes))
	for id := uint64(1); len(out) < len(c.nodes); id++ {
		if n := c.nodes[id]; n != nil {
			out = append(out, n)
		}
	}
	return out
}

// Running returns the nodes whose process is alive.
func (c *Cluster) Running() []*Node {
	var out []*Node
	for _, n := range c.Nodes() {
		if n.Running() {
			out = append(out, n)
		}
	}
	return out
}

// Except returns the running nodes other than id.
func (c *Cluster) Except(id uint64) []*Node {
	var out []*Node
	for _, n := range c.Running() {
		if n.ID != id {
			out = append(out, n)
		}
	}
	return out
}

func (c *Cluster) cleanup() {
	nodes := c.Nodes()
	for _, n := range nodes {
		n.Kill()
	}
	for _, n := range nodes {
		CheckLogForSecrets(c.tb, n)
	}
	if c.tb.Failed() {
		for _, n := range nodes {
			c.tb.Logf("--- last lines of node %d's log (%s):\n%s", n.ID, n.LogPath, n.LogTail(40))
		}
	}
}

// SecretCanary starts every secret value tests put in a connector config or
// a credentials file; no node may ever log one (docs/security.md), and
// scripts/test.sh looks for it in the tests' output too.
const SecretCanary = "kcd-canary-secret-"

// CheckLogForSecrets fails tb when n's log holds a value that starts with
// SecretCanary; the message gives the line, not the value.
func CheckLogForSecrets(tb testing.TB, n *Node) {
	tb.Helper()
	b, err := os.ReadFile(n.LogPath)
	if err != nil {
		return
	}
	for i, line := range bytes.Split(b, []byte("\n")) {
		if bytes.Contains(line, []byte(SecretCanary)) {
			tb.Errorf("node %d's log %s holds a secret of a connector config (a value starting %q) on line %d", n.ID, n.LogPath, SecretCanary, i+1)
			return
		}
	}
}

// WaitLeader waits until every node in nodes reports the same leader, one
// of nodes, and returns it. A node that does not answer counts as no.
func WaitLeader(ctx context.Context, nodes ...*Node) (uint64, error) {
	var last string
	for {
		lead, why := agreedLeader(ctx, nodes)
		if lead != 0 {
			return lead, nil
		}
		last = why
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("no agreed leader among %s: %s (%w)", ids(nodes), last, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func agreedLeader(ctx context.Context, nodes []*Node) (uint64, string) {
	var lead uint64
	for _, n := range nodes {
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		info, err := n.Info(rctx)
		cancel()
		switch {
		case err != nil:
			return 0, fmt.Sprintf("node %d: %v", n.ID, err)
		case info.Leader == 0:
			return 0, fmt.Sprintf("node %d knows no leader", n.ID)
		case lead != 0 && info.Leader != lead:
			return 0, fmt.Sprintf("node %d says leader %d, another says %d", n.ID, info.Leader, lead)
		}
		lead = info.Leader
	}
	for _, n := range nodes {
		if n.ID == lead {
			return lead, ""
		}
	}
	return 0, fmt.Sprintf("leader %d is not among them", lead)
}

func ids(nodes []*Node) string {
	s := make([]string, len(nodes))
	for i, n := range nodes {
		s[i] = strconv.FormatUint(n.ID, 10)
	}
	return "nodes [" + strings.Join(s, " ") + "]"
}

// WaitFor polls cond every interval until it returns true, an error that
// is not retryable, or ctx ends; then it returns cond's last error.
func WaitFor(ctx context.Context, interval time.Duration, cond func() (bool, error)) error {
	var lastErr error
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		if err != nil {
			lastErr = err
		}
		select {
		case <-ctx.Done():
			if lastErr != nil {
				return fmt.Errorf("%w (last error: %v)", ctx.Err(), lastErr)
			}
			return ctx.Err()
		case <-time.After(interval):
		}
	}
}
