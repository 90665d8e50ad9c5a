package systemtest

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcd-project/kcd/internal/testenv"
)

const javaConnectVersion = "4.3.1" // the Java plugins' version; kcd's built-ins report kcd's

// TestIntegrationJavaHostFileStreamIdentical: the same input file is read
// by Kafka Connect's own FileStreamSourceConnector jar through the Java
// host (kcd.runtime=java) and by kcd's built-in Go FileStream source into
// two topics with StringConverter: the records' keys, values and headers
// are byte-identical, in the same order. Then the Go topic is written to
// two files by the Java and by the Go FileStreamSink: the files are
// byte-identical (and hold every line of the input).
func TestIntegrationJavaHostFileStreamIdentical(t *testing.T) {
	bin := binary(t)
	brokers := testenv.Require(t, testenv.Kafka)
	args := javaHostArgs(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()

	// Lines that exercise the readers: empty lines, tabs, multi-byte
	// UTF-8, a line longer than the tasks' first buffer, a CR before LF.
	var in bytes.Buffer
	lines := 0
	for i := range 300 {
		switch i % 6 {
		case 0:
			fmt.Fprintf(&in, "line %d\n", i)
		case 1:
			fmt.Fprintf(&in, "tab\there %d — ünïcödé ✓ 日本\n", i)
		case 2:
			fmt.Fprintf(&in, "%d %s\n", i, strings.Repeat("long-", 500))
		case 3:
			fmt.Fprintf(&in, "crlf %d\r\n", i)
		case 4:
			fmt.Fprintf(&in, "  spaced %d  \n", i)
		case 5:
			fmt.Fprintf(&in, "{\"json\": %d, \"s\": \"q\\\"x\"}\n", i)
		}
		lines++
	}
	dir := t.TempDir()
	inFile := filepath.Join(dir, "in.txt")
	if err := os.WriteFile(inFile, in.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	suffix := fmt.Sprintf("%x", rand.Uint64())
	goTopic, javaTopic := "kcd-systemtest-fs-go-"+suffix, "kcd-systemtest-fs-java-"+suffix
	dropTopicsAtEnd(t, brokers, goTopic, javaTopic)

	c := StartCluster(t, bin, Options{Size: 1, Bootstrap: brokers, ExtraArgs: append(args, "--offset-flush-interval", "500ms")})
	if _, err := WaitLeader(ctx, c.Nodes()...); err != nil {
		t.Fatal(err)
	}
	n := c.Node(1)
	conv := func(m map[string]string) map[string]string {
		m["key.converter"] = "org.apache.kafka.connect.storage.StringConverter"
		m["value.converter"] = "org.apache.kafka.connect.storage.StringConverter"
		m["tasks.max"] = "1"
		return m
	}
	const srcClass, sinkClass = "org.apache.kafka.connect.file.FileStreamSourceConnector", "org.apache.kafka.connect.file.FileStreamSinkConnector"
	createConnector(ctx, t, n, "go-src", conv(map[string]string{"connector.class": srcClass, "file": inFile, "topic": goTopic}))
	createConnector(ctx, t, n, "java-src", conv(map[string]string{"connector.class": srcClass, "kcd.runtime": "java", "file": inFile, "topic": javaTopic}))
	goOut, javaOut := filepath.Join(dir, "go.out"), filepath.Join(dir, "java.out")
	createConnector(ctx, t, n, "go-sink", conv(map[string]string{"connector.class": sinkClass, "file": goOut, "topics": goTopic}))
	createConnector(ctx, t, n, "java-sink", conv(map[string]string{"connector.class": sinkClass, "kcd.runtime": "java", "file": javaOut, "topics": goTopic}))

	// Each runs, the java ones as the Java plugin (its version is the
	// jar's), the others as kcd's built-ins.
	for _, name := range []string{"go-src", "java-src", "go-sink", "java-sink"} {
		if err := WaitFor(ctx, 100*time.Millisecond, func() (bool, error) {
			st, err := statusOf(ctx, n, name)
			if err != nil {
				return false, err
			}
			ok, _ := runningOn(st, 1)
			if ok && (st.Connector.Version == javaConnectVersion) != strings.HasPrefix(name, "java") {
				t.Fatalf("%s runs version %q: the wrong implementation", name, st.Connector.Version) // cond runs on the test goroutine
			}
			return ok && st.Connector.State == "RUNNING", fmt.Errorf("status %+v", st)
		}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if javaHostPid(n.PID()) == 0 {
		t.Fatal("no Java host runs: kcd.runtime=java did not reach it")
	}

	goRecs := readRecords(ctx, t, brokers, goTopic, lines)
	javaRecs := readRecords(ctx, t, brokers, javaTopic, lines)
	if len(goRecs) != len(javaRecs) {
		t.Fatalf("the Go source wrote %d records, the Java one %d", len(goRecs), len(javaRecs))
	}
	for i := range goRecs {
		g, j := goRecs[i], javaRecs[i]
		if !bytes.Equal(g.Key, j.Key) || (g.Key == nil) != (j.Key == nil) || !bytes.Equal(g.Value, j.Value) || !sameHeaders(g.Headers, j.Headers) {
			t.Fatalf("record %d differs:\n Go   key %q value %q headers %v\n Java key %q value %q headers %v", i, g.Key, g.Value, g.Headers, j.Key, j.Value, j.Headers)
		}
	}
	t.Logf("%d records byte-identical (keys, values, headers) from the Go and the Java FileStreamSource", len(goRecs))

	// The sinks: both files complete (every record's line) and identical.
	var want bytes.Buffer
	for _, r := range goRecs {
		want.Write(r.Value)
		want.WriteByte('\n')
	}
	if err := WaitFor(ctx, 100*time.Millisecond, func() (bool, error) {
		g, _ := os.ReadFile(goOut)
		j, _ := os.ReadFile(javaOut)
		return len(g) >= want.Len() && len(j) >= want.Len(), fmt.Errorf("Go sink file %d bytes, Java %d, want %d", len(g), len(j), want.Len())
	}); err != nil {
		t.Fatalf("the sinks did not write every record: %v", err)
	}
	g, _ := os.ReadFile(goOut)
	j, _ := os.ReadFile(javaOut)
	if !bytes.Equal(g, j) {
		i := 0
		for i < min(len(g), len(j)) && g[i] == j[i] {
			i++
		}
		t.Fatalf("the sinks' files differ at byte %d of %d/%d: Go %q, Java %q", i, len(g), len(j), g[i:min(len(g), i+40)], j[i:min(len(j), i+40)])
	}
	if !bytes.Equal(g, want.Bytes()) {
		t.Fatalf("the sinks' files (%d bytes) are not the topic's values, one a line (%d bytes)", len(g), want.Len())
	}
	t.Logf("FileStreamSink Go and Java: files byte-identical, %d bytes", len(g))
}

// readRecords reads topic (one partition) from the start until n records
// came, then a quiet second more to catch extra ones.
func readRecords(ctx context.Context, t *testing.T, brokers, topic string, n int) []*kgo.Record {
	t.Helper()
	cl := kafkaClient(t, brokers, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var out []*kgo.Record
	var reached time.Time
	for rctx.Err() == nil {
		if len(out) >= n {
			if reached.IsZero() {
				reached = time.Now()
			} else if time.Since(reached) > time.Second {
				break
			}
		}
		pctx, pcancel := context.WithTimeout(rctx, 200*time.Millisecond)
		fs := cl.PollFetches(pctx)
		pcancel()
		fs.EachRecord(func(r *kgo.Record) { out = append(out, r) })
	}
	if len(out) < n {
		t.Fatalf("%s: %d records, want %d", topic, len(out), n)
	}
	return out
}

func sameHeaders(a, b []kgo.RecordHeader) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Key != b[i].Key || !bytes.Equal(a[i].Value, b[i].Value) {
			return false
		}
	}
	return true
}
