package file

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcd-project/kcd/daemon/connect/converter"
	"github.com/kcd-project/kcd/internal/testenv"
)

// Kafka Connect's FileStreamSinkConnector writes records of many types; each
// line must equal JavaString of the same record read by our JsonConverter.
func TestIntegrationFileSinkMatchesKafkaConnect(t *testing.T) {
	connectURL := testenv.Require(t, testenv.ConnectURL)
	brokers := strings.Split(testenv.Require(t, testenv.Kafka), ",")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	values := []string{
		`{"schema":{"type":"string","optional":false},"payload":"hello wörld"}`,
		`{"schema":{"type":"int64","optional":false},"payload":42}`,
		`{"schema":{"type":"int8","optional":false},"payload":-7}`,
		`{"schema":{"type":"double","optional":false},"payload":3.14}`,
		`{"schema":{"type":"double","optional":false},"payload":1.0E7}`,
		`{"schema":{"type":"double","optional":false},"payload":0.0001}`,
		`{"schema":{"type":"double","optional":false},"payload":1e21}`,
		`{"schema":{"type":"double","optional":false},"payload":100}`,
		`{"schema":{"type":"float","optional":false},"payload":1.1}`,
		`{"schema":{"type":"boolean","optional":false},"payload":true}`,
		`{"schema":{"type":"string","optional":true},"payload":null}`,
		`{"schema":{"type":"struct","fields":[{"field":"a","type":"int32"},{"field":"b","type":"string","optional":true},{"field":"c","type":"double"},{"field":"d","type":"array","items":{"type":"string"}}],"optional":false},"payload":{"a":1,"b":null,"c":2.5,"d":["x","y"]}}`,
		`{"schema":{"type":"array","items":{"type":"int32"},"optional":false},"payload":[1,2,3]}`,
		`{"schema":{"type":"map","keys":{"type":"string"},"values":{"type":"int64"},"optional":false},"payload":{"k":9}}`,
		`{"schema":{"type":"bytes","name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"2"},"optional":false},"payload":"BNI="}`,
	}
	stamp := time.Now().UnixNano()
	name, topic := fmt.Sprintf("kcd-sinkcompat-%d", stamp), fmt.Sprintf("kcd-sinkcompat-%d", stamp)
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, v := range values {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o777)
	out := filepath.Join(dir, "out.txt")
	status, body := call(t, "POST", connectURL+"/connectors", map[string]any{"name": name, "config": map[string]string{
		"connector.class": SinkClass, "tasks.max": "1", "file": out, "topics": topic,
		"key.converter":   "org.apache.kafka.connect.storage.StringConverter",
		"value.converter": "org.apache.kafka.connect.json.JsonConverter",
	}})
	if status != http.StatusCreated {
		t.Fatalf("create connector: %d %s", status, body)
	}
	t.Cleanup(func() { call(t, "DELETE", connectURL+"/connectors/"+name, nil) })
	t.Cleanup(func() { deleteTopic(brokers, topic) })

	var lines []string
	for ctx.Err() == nil {
		b, _ := os.ReadFile(out)
		if lines = strings.Split(strings.TrimSuffix(string(b), "\n"), "\n"); len(b) > 0 && len(lines) >= len(values) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(lines) != len(values) {
		t.Fatalf("Kafka Connect wrote %d lines, want %d", len(lines), len(values))
	}
	conv, err := converter.New("org.apache.kafka.connect.json.JsonConverter")
	if err != nil {
		t.Fatal(err)
	}
	if err := conv.Configure(map[string]string{}, false); err != nil {
		t.Fatal(err)
	}
	for i, v := range values {
		_, val, err := conv.ToConnectData(topic, []byte(v))
		if err != nil {
			t.Fatalf("value %d: %v", i, err)
		}
		if got := JavaString(val); got != lines[i] {
			t.Errorf("value %s: Kafka Connect wrote %q, we write %q", v, lines[i], got)
		}
	}
}
