package worker

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcd-project/kcd/daemon/connect"
	"github.com/kcd-project/kcd/daemon/connect/data"
	"github.com/kcd-project/kcd/daemon/connectstore"
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
