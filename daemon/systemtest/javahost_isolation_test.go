package systemtest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcd-project/kcd/internal/testenv"
)

// Settings of the isolation tests' node: a short hang limit and a small
// host heap, so that the misbehaviours show within seconds.
const (
	isoHangLimit = 3 * time.Second
	isoHeap      = "128m"
	isoHeapBytes = 128 << 20
)

const (
	misbehaveSource = "io.kcd.testplugins.MisbehaveSourceConnector"
	misbehaveSink   = "io.kcd.testplugins.MisbehaveSinkConnector"
)

// isoCase is one misbehaving plugin.
type isoCase struct {
	sink bool
	mode string
	// trace holds what the bad task's status trace must contain: the
	// exception and the plugin's frames.
	trace []string
	// hostDies: the misbehaviour ends the host's JVM (its heap is full), so
	// the host must come back and what it ran must be restarted.
	hostDies bool
}

func TestIntegrationJavaHostIsolationSourceThrows(t *testing.T) {
	runIsolation(t, isoCase{mode: "throw", trace: []string{
		"org.apache.kafka.connect.errors.ConnectException: misbehave: poll throws after 10 records",
		"at io.kcd.testplugins.MisbehaveSourceTask.misbehave(", "at io.kcd.testplugins.MisbehaveSourceTask.poll("}})
}

func TestIntegrationJavaHostIsolationSinkThrows(t *testing.T) {
	runIsolation(t, isoCase{sink: true, mode: "throw", trace: []string{
		"org.apache.kafka.connect.errors.ConnectException: misbehave: put throws",
		"at io.kcd.testplugins.MisbehaveSinkTask.put("}})
}

func TestIntegrationJavaHostIsolationSourceHangs(t *testing.T) {
	runIsolation(t, isoCase{mode: "hang", trace: []string{
		"did not return from poll within " + isoHangLimit.String(),
		"at io.kcd.testplugins.MisbehaveSourceTask.misbehave(", "at io.kcd.testplugins.MisbehaveSourceTask.poll("}})
}

func TestIntegrationJavaHostIsolationSinkHangs(t *testing.T) {
	runIsolation(t, isoCase{sink: true, mode: "hang", trace: []string{
		"did not return from put within " + isoHangLimit.String(),
		"at io.kcd.testplugins.MisbehaveSinkTask.put("}})
}

func TestIntegrationJavaHostIsolationExit(t *testing.T) {
	runIsolation(t, isoCase{sink: true, mode: "exit", trace: []string{
		"java.lang.SecurityException: System.exit(3) called by a plugin",
		"at io.kcd.testplugins.MisbehaveSinkTask.put("}})
}

func TestIntegrationJavaHostIsolationHeapExhausted(t *testing.T) {
	runIsolation(t, isoCase{mode: "heap", hostDies: true, trace: []string{
		"java.lang.OutOfMemoryError: Java heap space",
		"at io.kcd.testplugins.Leak.more(", "at io.kcd.testplugins.MisbehaveSourceTask.poll("}})
}

// A thread of the plugin's own, not a call, runs out of heap: the task still
// fails naming the OutOfMemoryError and the thread.
func TestIntegrationJavaHostIsolationHeapExhaustedByPluginThread(t *testing.T) {
	runIsolation(t, isoCase{mode: "heap-thread", hostDies: true, trace: []string{
		"OutOfMemoryError", "misbehave-heap"}})
}

// javaHostBuild returns the built host's directory and the plugin path of
// the misbehaving test plugins; the test skips when they are not built (and
// fails on CI).
func javaHostBuild(t *testing.T) (hostDir, plugins string) {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root, err := ModuleRoot(wd)
	if err != nil {
		t.Fatal(err)
	}
	hostDir = filepath.Join(root, "javahost", "target", "javahost")
	plugins = filepath.Join(root, "javahost", "testplugins", "target", "plugin")
	for _, need := range []struct{ path, build string }{
		{filepath.Join(hostDir, "kcd-javahost.jar"), "mvn -B -ntp -q -f javahost/pom.xml package -DskipTests"},
		{filepath.Join(plugins, "kcd-testplugins"), "mvn -B -ntp -q -f javahost/testplugins/pom.xml package"},
	} {
		if _, err := os.Stat(need.path); err != nil {
			msg := fmt.Sprintf("%s is not built: `%s`", need.path, need.build)
			if os.Getenv("CI") == "true" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
	return hostDir, plugins
}

// isoStatus is GET /connectors/{name}/status as the tests read it.
type isoStatus struct {
	Connector struct {
		State string `json:"state"`
		Trace string `json:"trace"`
	} `json:"connector"`
	Tasks []struct {
		ID    int    `json:"id"`
		State string `json:"state"`
		Trace string `json:"trace"`
	} `json:"tasks"`
}

func (s isoStatus) task0() (state, trace string) {
	for _, t := range s.Tasks {
		if t.ID == 0 {
			return t.State, t.Trace
		}
	}
	return "", ""
}

// seqOffset is the highest "seq" of a connector's stored source offsets
// (Datagen's and the misbehaving source's), -1 when none is stored.
func seqOffset(ctx context.Context, n *Node, name string) (int64, error) {
	var out struct {
		Offsets []struct {
			Offset map[string]json.Number `json:"offset"`
		} `json:"offsets"`
	}
	if err := n.GetJSON(ctx, "/connectors/"+name+"/offsets", &out); err != nil {
		return -1, err
	}
	seq := int64(-1)
	for _, o := range out.Offsets {
		if v, err := o.Offset["seq"].Int64(); err == nil {
			seq = max(seq, v)
		}
	}
	return seq, nil
}

// javaHostPID is the pid of the shared Java host child of process parent,
// 0 if there is none.
func javaHostPID(parent int) int {
	for pid, cmd := range javaHostPIDs(parent) {
		if !strings.Contains(cmd, ownHostFlag) {
			return pid
		}
	}
	return 0
}

// ownHostFlag marks the command line of a quarantined connector's own host.
const ownHostFlag = "-Dkcd.javahost.connector="

// ownJavaHostPIDs are the pids of the quarantined connectors' own hosts
// under process parent.
func ownJavaHostPIDs(parent int) []int {
	var out []int
	for pid, cmd := range javaHostPIDs(parent) {
		if strings.Contains(cmd, ownHostFlag) {
			out = append(out, pid)
		}
	}
	return out
}

// javaHostPIDs are the Java host children of process parent, with their
// command lines.
func javaHostPIDs(parent int) map[int]string {
	out := map[int]string{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so cut at its ')'.
		i := strings.LastIndexByte(string(stat), ')')
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 2 || f[1] != strconv.Itoa(parent) {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if strings.Contains(string(cmd), "kcd-javahost.jar") {
			out[pid] = string(cmd)
		}
	}
	return out
}

// startIsoNode starts one kcd node on the real Kafka with the isolation
// tests' settings and the misbehaving test plugins.
func startIsoNode(t *testing.T) (n *Node, brokers string) {
	bin := binary(t)
	brokers = testenv.Require(t, testenv.Kafka)
	hostDir, plugins := javaHostBuild(t)
	dir := t.TempDir()
	n = &Node{ID: 1, RESTAddr: mustFreeAddr(t), PeerAddr: mustFreeAddr(t),
		DataDir: filepath.Join(dir, "node1"), LogPath: filepath.Join(dir, "node1.log"), bin: bin}
	n.Args = []string{"--node-id", "1", "--data-dir", n.DataDir, "--rest-addr", n.RESTAddr,
		"--peer-addr", n.PeerAddr, "--bootstrap-servers", brokers, "--offset-flush-interval", "500ms",
		"--plugin-path", plugins, "--java-host-dir", hostDir, "--java-host-heap", isoHeap,
		"--java-host-hang-limit", isoHangLimit.String()}
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		n.Kill()
		CheckLogForSecrets(t, n)
		if t.Failed() {
			t.Logf("node log:\n%s", n.LogTail(60))
		}
	})
	return n, brokers
}

// isoCreate creates a connector, waiting for the node to take it.
func isoCreate(ctx context.Context, t *testing.T, n *Node, name string, cfg map[string]string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"name": name, "config": cfg})
	if err := WaitFor(ctx, 100*time.Millisecond, func() (bool, error) {
		status, err := n.do(ctx, "POST", "/connectors", body, nil)
		if se, ok := err.(*StatusError); ok && se.Status == 400 {
			t.Fatalf("create %s: %v", name, err)
		}
		return err == nil && status == 201, err // the node may still be starting
	}); err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
}

func isoStatusOf(ctx context.Context, n *Node, name string) (isoStatus, error) {
	rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
	defer rcancel()
	var s isoStatus
	err := n.GetJSON(rctx, "/connectors/"+name+"/status", &s)
	return s, err
}

func isoSeq(ctx context.Context, n *Node, name string) int64 {
	rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
	defer rcancel()
	s, _ := seqOffset(rctx, n, name)
	return s
}

// runIsolation runs one kcd node on the real Kafka with a Go connector
// (Datagen) and a healthy Java one (MisbehaveSourceConnector mode=ok)
// throughout, adds the misbehaving connector of tc, and checks that only
// its task fails, with the plugin's Java stack, while kcd, its REST API,
// the Go connector and the healthy Java connector go on (or, when the host
// dies, that the host and the healthy connector come back without losing a
// record); kcd's memory stays where it was.
func runIsolation(t *testing.T, tc isoCase) {
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	n, brokers := startIsoNode(t)
	pid := n.PID()

	prefix := fmt.Sprintf("kcd-iso-%s-%d", tc.mode, time.Now().UnixNano())
	genTopic, healthyTopic, badTopic := prefix+"-gen", prefix+"-healthy", prefix+"-bad"
	t.Cleanup(func() { deleteTopics(brokers, genTopic, healthyTopic, badTopic) })
	create := func(name string, cfg map[string]string) { isoCreate(ctx, t, n, name, cfg) }
	status := func(name string) (isoStatus, error) { return isoStatusOf(ctx, n, name) }
	seq := func(name string) int64 { return isoSeq(ctx, n, name) }
	// No connector names converters: all use the worker's (JSON), so the
	// bad sink reads what Datagen writes.
	create("gen", map[string]string{"connector.class": "Datagen", "topic": genTopic, "tasks.max": "1",
		"rate.per.task": "200"})
	create("healthy", map[string]string{"connector.class": misbehaveSource, "topic": healthyTopic, "tasks.max": "1",
		"mode": "ok", "interval.ms": "50"})

	// Both run and store offsets before the bad connector comes.
	if err := WaitFor(ctx, 100*time.Millisecond, func() (bool, error) {
		s, err := status("healthy")
		st, _ := s.task0()
		return err == nil && st == "RUNNING" && seq("gen") > 0 && seq("healthy") > 0, err
	}); err != nil {
		t.Fatalf("the Go and the healthy Java connectors do not run: %v", err)
	}
	hostPID := javaHostPID(pid)
	if hostPID == 0 {
		t.Fatal("no Java host process runs under kcd")
	}
	rss0, err := n.RSS()
	if err != nil {
		t.Fatal(err)
	}
	hostRSS0, _ := ProcStatusBytes(hostPID, "VmRSS")
	t.Logf("before: kcd pid %d RSS %d MiB; java host pid %d RSS %d MiB", pid, rss0>>20, hostPID, hostRSS0>>20)

	// maxRSS follows kcd's memory; check fails the test if kcd went away
	// or its REST API did not answer.
	maxRSS := rss0
	check := func(when string) {
		t.Helper()
		if !n.Running() || n.PID() != pid {
			t.Fatalf("%s: kcd (pid %d) is gone: exit code %d", when, pid, n.ExitCode())
		}
		if r, err := n.RSS(); err == nil {
			maxRSS = max(maxRSS, r)
		}
	}

	bad := map[string]string{"connector.class": misbehaveSource, "topic": badTopic, "tasks.max": "1",
		"mode": tc.mode, "after": "10"}
	if tc.sink {
		bad = map[string]string{"connector.class": misbehaveSink, "topics": genTopic, "tasks.max": "1",
			"mode": tc.mode}
	}
	gen0, healthy0 := seq("gen"), seq("healthy")
	start := time.Now()
	create("bad", bad)

	// The bad task fails with the plugin's stack. Meanwhile kcd answers,
	// and, while the host lives, the healthy Java task stays RUNNING.
	var detected time.Duration
	var trace string
	// Every misbehaviour shows within seconds (the hang limit is 3s).
	dctx, dcancel := context.WithTimeout(ctx, 60*time.Second)
	defer dcancel()
	if err := WaitFor(dctx, 50*time.Millisecond, func() (bool, error) {
		check("while the bad connector misbehaves")
		if !tc.hostDies {
			hs, err := status("healthy")
			if err != nil {
				return false, fmt.Errorf("REST: %w", err)
			}
			if st, tr := hs.task0(); st != "RUNNING" {
				t.Fatalf("the healthy Java task is %s while the bad one misbehaves: %s", st, tr)
			}
		}
		s, err := status("bad")
		if err != nil {
			return false, fmt.Errorf("REST: %w", err)
		}
		st, tr := s.task0()
		if st != "FAILED" {
			return false, fmt.Errorf("the bad task is %q", st)
		}
		trace = tr
		detected = time.Since(start)
		return true, nil
	}); err != nil {
		t.Fatalf("the bad task never failed: %v", err)
	}
	for _, w := range tc.trace {
		if !strings.Contains(trace, w) {
			t.Errorf("the bad task's trace lacks %q:\n%s", w, trace)
		}
	}
	t.Logf("the bad task (mode %s) FAILED %v after its connector was created; trace:\n%s", tc.mode,
		detected.Round(time.Millisecond), firstLines(trace, 8))

	// What runs beside it goes on: the Go connector's offsets advance, the
	// healthy Java task runs (again) and its offsets advance.
	// When the host died, the bad task, restarted with the others, fills
	// the new host's heap again: the healthy task runs in the windows
	// between, so its RUNNING and its progress are checked apart.
	gen1, healthy1 := seq("gen"), seq("healthy")
	var back time.Duration
	var newHost int
	var sawRunning bool
	rctx, rcancel := context.WithTimeout(ctx, 120*time.Second)
	defer rcancel()
	if err := WaitFor(rctx, 100*time.Millisecond, func() (bool, error) {
		check("after the failure")
		hs, err := status("healthy")
		if err != nil {
			return false, fmt.Errorf("REST: %w", err)
		}
		st, tr := hs.task0()
		if !tc.hostDies && st != "RUNNING" {
			t.Fatalf("the healthy Java task is %s after the bad one failed: %s", st, tr)
		}
		if tc.hostDies && newHost == 0 {
			if p := javaHostPID(pid); p != 0 && p != hostPID {
				newHost = p
				t.Logf("a new Java host (pid %d) runs %v after the failure", p, (time.Since(start) - detected).Round(time.Millisecond))
			}
		}
		if st == "RUNNING" && (!tc.hostDies || newHost != 0) && !sawRunning {
			sawRunning = true
			back = time.Since(start) - detected
		}
		ok := sawRunning && seq("gen") > gen1+100 && seq("healthy") > healthy1+20
		return ok, fmt.Errorf("healthy task %s (%s), RUNNING again: %v; gen seq %d from %d, healthy seq %d from %d",
			st, firstLines(tr, 3), sawRunning, seq("gen"), gen1, seq("healthy"), healthy1)
	}); err != nil {
		t.Fatalf("the connectors beside the bad one did not go on: %v", err)
	}
	t.Logf("gen seq %d → %d → %d, healthy seq %d → %d → %d; healthy RUNNING (again) %v after the failure",
		gen0, gen1, seq("gen"), healthy0, healthy1, seq("healthy"), back.Round(time.Millisecond))
	if tc.hostDies && newHost == 0 {
		t.Errorf("the Java host (pid %d) did not die and come back", hostPID)
	}
	if !tc.hostDies {
		if p := javaHostPID(pid); p != hostPID {
			t.Errorf("the Java host changed (pid %d, now %d): the misbehaviour took it down", hostPID, p)
		}
	}
	hp := javaHostPID(pid)
	hostRSS, _ := ProcStatusBytes(hp, "VmRSS")
	check("at the end")
	t.Logf("kcd RSS %d MiB before, at most %d MiB since; java host pid %d RSS %d MiB now",
		rss0>>20, maxRSS>>20, hp, hostRSS>>20)
	// The plugin's memory is the host's: kcd grows by far less than the
	// heap the plugin filled.
	if maxRSS-rss0 > isoHeapBytes/2 {
		t.Errorf("kcd's RSS grew from %d to %d MiB", rss0>>20, maxRSS>>20)
	}

	// The healthy Java connector lost nothing: every sequence number up to
	// its stored offset is in its topic.
	upTo := seq("healthy")
	got := healthySeqs(t, brokers, healthyTopic, upTo, 60*time.Second)
	for s := int64(0); s <= upTo; s++ {
		if !got[s] {
			t.Fatalf("the healthy Java connector's record t0-%d (of 0..%d committed) is not in %s", s, upTo, healthyTopic)
		}
	}
	t.Logf("the healthy Java connector's records 0..%d are all in its topic", upTo)
}

// healthySeqs reads topic from its start until every seq up to upTo came
// (values holding "t0-<seq>" in whatever the worker's converter wrote) or timeout passed.
func healthySeqs(t *testing.T, brokers, topic string, upTo int64, timeout time.Duration) map[int64]bool {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	got := map[int64]bool{}
	for ctx.Err() == nil {
		done := true
		for s := int64(0); s <= upTo; s++ {
			if !got[s] {
				done = false
				break
			}
		}
		if done {
			break
		}
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			if m := healthyValue.FindSubmatch(r.Value); m != nil {
				if s, err := strconv.ParseInt(string(m[1]), 10, 64); err == nil {
					got[s] = true
				}
			}
		})
	}
	return got
}

var healthyValue = regexp.MustCompile(`"?t0-([0-9]+)"?`)

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = append(lines[:n], "\t...")
	}
	return strings.Join(lines, "\n")
}

func deleteTopics(brokers string, topics ...string) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...))
	if err != nil {
		return
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _ = kadm.NewClient(cl).DeleteTopics(ctx, topics...)
}
