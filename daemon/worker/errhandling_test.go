package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcd-project/kcd/daemon/connect"
	"github.com/kcd-project/kcd/daemon/connect/data"
	"github.com/kcd-project/kcd/daemon/connectstore"
	"github.com/kcd-project/kcd/internal/testenv"
)

func TestWorkerRetryTimeout(t *testing.T)      { t.Parallel(); scenarioRetryTimeout(fakeEnv(t)) }
func TestIntegrationRetryTimeout(t *testing.T) { t.Parallel(); scenarioRetryTimeout(kafkaEnv(t)) }

// flakyConverter reads values as strings, failing with a RetriableError
// the first fails times it sees each value (per connector, by its
// "flaky.id" setting); fails < 0: always.
type flakyConverter struct {
	id    string
	fails int
}

var flakySeen sync.Map // id+value → *int attempts

func (c *flakyConverter) Configure(cfg map[string]string, _ bool) error {
	c.id = cfg["id"]
	_, err := fmt.Sscan(cfg["fails"], &c.fails)
	return err
}

func (c *flakyConverter) FromConnectData(_ string, _ *data.Schema, v any) ([]byte, error) {
	return fmt.Append(nil, v), nil
}

func (c *flakyConverter) ToConnectData(_ string, b []byte) (*data.Schema, any, error) {
	n, _ := flakySeen.LoadOrStore(c.id+"/"+string(b), new(int))
	p := n.(*int)
	*p++ // one task goroutine per connector: no race
	if c.fails < 0 || *p <= c.fails {
		return nil, nil, &connect.RetriableError{Err: errors.New("flaky: try again")}
	}
	return nil, string(b), nil
}

// errors.retry.timeout: a conversion that fails with a retriable error is
// retried until it succeeds within the timeout (nothing skipped), and not
// retried at all with the default 0 (the record is skipped at once); one
// that keeps failing is retried until the timeout, then skipped.
func scenarioRetryTimeout(e *env) {
	t := e.t
	topic := e.name("retry")
	e.createTopic(topic, 1)
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.seeds...), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := range 3 {
		cl.Produce(context.Background(), &kgo.Record{Value: fmt.Appendf(nil, "v%d", i)}, nil)
	}
	if err := cl.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sink := func(name, fails, timeout string) {
		e.create(name, map[string]string{"connector.class": "FileStreamSink", "file": filepath.Join(dir, name), "topics": topic,
			"value.converter": "flaky", "value.converter.id": name, "value.converter.fails": fails,
			"errors.tolerance": "all", "errors.retry.timeout": timeout, "errors.retry.delay.max.ms": "20"})
	}
	retried, unretried, hopeless := e.name("retried"), e.name("unretried"), e.name("hopeless")
	sink(retried, "2", "10000")
	sink(unretried, "2", "0")
	sink(hopeless, "-1", "100")
	w := e.start(func(c *Config) {
		c.Converters = func(class string) (Converter, error) {
			if class == "flaky" {
				return &flakyConverter{}, nil
			}
			return testConverters(class)
		}
	})
	waitFor(t, 30*time.Second, "every record retried into the file", func() (bool, string) {
		got := readLines(t, filepath.Join(dir, retried))
		return slices.Equal(got, []string{"v0", "v1", "v2"}), fmt.Sprint(got)
	})
	check := func(name string, ok func(TaskStats) bool) {
		waitFor(t, 30*time.Second, name+"'s error counters", func() (bool, string) {
			ts, found := w.Stats().Task(name, 0)
			return found && ok(ts), fmt.Sprintf("%+v", ts)
		})
	}
	check(retried, func(ts TaskStats) bool {
		return ts.Errors.Retries == 6 && ts.Errors.Failures == 6 && ts.Errors.Errors == 0 && ts.Skipped == 0 && ts.Records == 3
	})
	check(unretried, func(ts TaskStats) bool {
		return ts.Errors.Retries == 0 && ts.Errors.Failures == 3 && ts.Errors.Errors == 3 && ts.Skipped == 3 && ts.Records == 0 && ts.Read == 3
	})
	check(hopeless, func(ts TaskStats) bool {
		// Waits of 20 ms within 100 ms: a few retries per record.
		return ts.Errors.Retries >= 3 && ts.Errors.Failures == ts.Errors.Retries+3 && ts.Errors.Errors == 3 && ts.Skipped == 3
	})
	e.waitState(hopeless, 0, connectstore.StateRunning)
}

// The dead letter queue records of kcd and of a real Kafka Connect 4.3
// worker for the same malformed records: the same context headers in the
// same order with the same values, but for the connector name and the
// stack trace (Java frames), and a message that starts with Kafka
// Connect's (kcd's also names the cause).
func TestIntegrationDeadLetterHeadersMatchKafkaConnect(t *testing.T) {
	connectURL := testenv.Require(t, testenv.ConnectURL)
	e := kafkaEnv(t)
	topic, kcDLQ, kcdDLQ := e.name("dlqcmp"), e.name("dlq-kc"), e.name("dlq-kcd")
	e.createTopic(topic, 1)
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.seeds...), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, v := range []string{"not json", `{"schema":{"type":"string","optional":false},"payload":"ok"}`, `{"schema":{"type":"string"},"payload":`} {
		cl.Produce(context.Background(), &kgo.Record{Value: []byte(v), Headers: []kgo.RecordHeader{{Key: "mine", Value: []byte("1")}}}, nil)
	}
	if err := cl.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	cfg := func(name, dlq, file string) map[string]string {
		return map[string]string{"connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector", "name": name, "file": file, "topics": topic,
			"key.converter": "org.apache.kafka.connect.json.JsonConverter", "value.converter": "org.apache.kafka.connect.json.JsonConverter",
			"errors.tolerance": "all", "errors.deadletterqueue.topic.name": dlq, "errors.deadletterqueue.topic.replication.factor": "1",
			"errors.deadletterqueue.context.headers.enable": "true"}
	}
	dir := t.TempDir()
	kcName, kcdName := e.name("kc"), e.name("kcd")
	body, _ := json.Marshal(map[string]any{"name": kcName, "config": cfg(kcName, kcDLQ, filepath.Join(dir, "kc.txt"))})
	resp, err := http.Post(connectURL+"/connectors", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create the connector on Kafka Connect: %d", resp.StatusCode)
	}
	t.Cleanup(func() {
		req, _ := http.NewRequest(http.MethodDelete, connectURL+"/connectors/"+kcName, nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	})
	e.create(kcdName, cfg(kcdName, kcdDLQ, filepath.Join(dir, "kcd.txt")))
	e.start(nil)

	headers := func(r *kgo.Record) ([]string, map[string]string) {
		var keys []string
		hs := map[string]string{}
		for _, h := range r.Headers {
			keys = append(keys, h.Key)
			hs[h.Key] = string(h.Value)
		}
		return keys, hs
	}
	kc := e.consumeN(kcDLQ, 2, 500*time.Millisecond)
	kcd := e.consumeN(kcdDLQ, 2, 500*time.Millisecond)
	if len(kc) != 2 || len(kcd) != 2 {
		t.Fatalf("dead letters: Kafka Connect %d, kcd %d; want 2 each", len(kc), len(kcd))
	}
	const p = "__connect.errors."
	for i := range kc {
		kcKeys, kcH := headers(kc[i])
		kcdKeys, kcdH := headers(kcd[i])
		if !slices.Equal(kcKeys, kcdKeys) {
			t.Errorf("dead letter %d: kcd's headers %q, Kafka Connect's %q", i, kcdKeys, kcKeys)
		}
		for _, k := range kcKeys {
			switch k {
			case p + "connector.name", p + "exception.stacktrace":
			case p + "exception.message":
				if !strings.HasPrefix(kcdH[k], strings.TrimSpace(kcH[k])) {
					t.Errorf("dead letter %d: kcd's message %q does not start with Kafka Connect's %q", i, kcdH[k], kcH[k])
				}
			default:
				if kcdH[k] != kcH[k] {
					t.Errorf("dead letter %d: %s is %q in kcd, %q in Kafka Connect", i, k, kcdH[k], kcH[k])
				}
			}
		}
		if !bytes.Equal(kc[i].Value, kcd[i].Value) || !kc[i].Timestamp.Equal(kcd[i].Timestamp) {
			t.Errorf("dead letter %d: kcd's %q at %v, Kafka Connect's %q at %v", i, kcd[i].Value, kcd[i].Timestamp, kc[i].Value, kc[i].Timestamp)
		}
		t.Logf("Kafka Connect's exception.stacktrace starts %q", firstLine(kcH[p+"exception.stacktrace"]))
	}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// errors.retry.timeout takes any long, as Kafka Connect's ConfigDef does.
func TestRetryTimeoutSetting(t *testing.T) {
	for v, want := range map[string]time.Duration{"": 0, "0": 0, "-1": -1, "-5": 0, "1500": 1500 * time.Millisecond} {
		s, err := parseSettings("c", map[string]string{"errors.retry.timeout": v}, Config{})
		if err != nil || s.retryTimeout != want {
			t.Errorf("errors.retry.timeout=%q: %v, %v; want %v", v, s.retryTimeout, err, want)
		}
	}
	if _, err := parseSettings("c", map[string]string{"errors.retry.timeout": "soon"}, Config{}); err == nil ||
		err.Error() != "invalid value soon for configuration errors.retry.timeout: not a number" {
		t.Errorf("errors.retry.timeout=soon: %v", err)
	}
}
