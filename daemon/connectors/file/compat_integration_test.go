package file

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcd-project/kcd/internal/testenv"
	"github.com/kcd-project/kcd/migrate"
)

// The real Kafka Connect FileStreamSourceConnector reads the same file: it
// must send the same lines and store the same final position, so that an
// offset imported from Kafka Connect means the same place here.
func TestIntegrationFileSourceMatchesKafkaConnect(t *testing.T) {
	connectURL := testenv.Require(t, testenv.ConnectURL)
	brokers := strings.Split(testenv.Require(t, testenv.Kafka), ",")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	file := filepath.Join(t.TempDir(), "in.txt")
	var content strings.Builder
	for i := range 40 {
		fmt.Fprintf(&content, "line %d é 日本 😀%s", i, strings.Repeat("𝄞", i%3))
		content.WriteString([]string{"\n", "\r\n", "\r", "\n\n"}[i%4])
	}
	if err := os.WriteFile(file, []byte(content.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}

	// Ours.
	ours := pollAll(t, startSource(t, file, nil))
	want := ours[len(ours)-1].SourceOffset[PositionField].(int64)

	// Kafka Connect's.
	stamp := time.Now().UnixNano()
	name, topic := fmt.Sprintf("kcd-filecompat-%d", stamp), fmt.Sprintf("kcd-filecompat-%d", stamp)
	status, body := call(t, "POST", connectURL+"/connectors", map[string]any{"name": name, "config": map[string]string{
		"connector.class": SourceClass, "tasks.max": "1", "file": file, "topic": topic,
		"value.converter": "org.apache.kafka.connect.storage.StringConverter",
	}})
	if status != http.StatusCreated {
		t.Fatalf("create connector: %d %s", status, body)
	}
	t.Cleanup(func() { call(t, "DELETE", connectURL+"/connectors/"+name, nil) })
	t.Cleanup(func() { deleteTopic(brokers, topic) })

	var lines []string
	readTopic(ctx, t, brokers, topic, func(r *kgo.Record) bool {
		lines = append(lines, string(r.Value))
		return len(lines) == len(ours)
	})
	for i, r := range ours {
		if lines[i] != r.Value {
			t.Fatalf("line %d: Kafka Connect read %q, we read %q", i, lines[i], r.Value)
		}
	}
	var last any
	readTopic(ctx, t, brokers, "connect-offsets", func(r *kgo.Record) bool {
		or, err := migrate.DecodeOffsetRecord(r.Key, r.Value)
		if err != nil || or.Connector != name || or.Offset == nil {
			return false
		}
		last = or.Offset[PositionField]
		return last == json.Number(fmt.Sprint(want))
	})
	if last != json.Number(fmt.Sprint(want)) {
		t.Fatalf("Kafka Connect's last position %v, ours %d", last, want)
	}
	t.Logf("%d lines, final position %d chars (%d bytes): same as Kafka Connect", len(ours), want, content.Len())
}

func call(t *testing.T, method, url string, body any) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, url, rd)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// readTopic reads topic from the start until done says so or ctx ends.
func readTopic(ctx context.Context, t *testing.T, brokers []string, topic string, done func(*kgo.Record) bool) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s: %v", topic, ctx.Err())
		}
		stop := false
		fs.EachRecord(func(r *kgo.Record) { stop = stop || done(r) })
		if stop {
			return
		}
	}
}

func deleteTopic(brokers []string, topic string) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _ = kadm.NewClient(cl).DeleteTopics(ctx, topic)
}
