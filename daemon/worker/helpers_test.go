package worker

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func (e *env) createTopic(topic string, partitions int32) {
	e.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.seeds...))
	if err != nil {
		e.t.Fatal(err)
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).CreateTopic(context.Background(), partitions, -1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		e.t.Fatalf("create topic %s: %v", topic, err)
	}
}

func readLines(t testing.TB, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

// jsonString decodes a JsonConverter envelope holding a string.
func jsonString(t testing.TB, b []byte) string {
	t.Helper()
	var env struct {
		Schema  struct{ Type string }
		Payload string
	}
	if err := json.Unmarshal(b, &env); err != nil || env.Schema.Type != "string" {
		t.Fatalf("not a JSON string envelope: %s (%v)", b, err)
	}
	return env.Payload
}

func firstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// taskStats returns the live counters of a running task.
func (w *Worker) taskStats(name string, id int) *taskStats {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.tasks[TaskID{name, id}]
}
