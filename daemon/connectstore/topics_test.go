package connectstore

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/kcd-project/kcd/store"
)

// Topics in use are recorded once (the first use is kept), listed sorted,
// bounded per connector, forgotten by a reset and by the connector's
// deletion, and never seen by a new connector of the same name.
func TestTopics(t *testing.T) {
	ctx := context.Background()
	c := open(t)
	if ok, err := c.CreateConnector(ctx, "a.b", map[string]string{"connector.class": "X"}, TargetStarted); err != nil || !ok {
		t.Fatal(ok, err)
	}
	names := func(name string) []string {
		t.Helper()
		sts, err := c.Topics(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, st := range sts {
			out = append(out, st.Topic)
		}
		return out
	}
	put := func(name, topic string, task int, at int64) bool {
		t.Helper()
		ok, err := c.PutTopic(ctx, TopicStatus{Topic: topic, Connector: name, Task: task, DiscoverTimestamp: at}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	put("a.b", "zeta", 0, 1)
	put("a.b", "alpha", 1, 2)
	put("a.b", "zeta", 1, 3) // already recorded: kept as first seen
	put("a", "other", 0, 4)  // "a" shares no keys with "a.b"
	if got := names("a.b"); !slices.Equal(got, []string{"alpha", "zeta"}) {
		t.Errorf("topics %v", got)
	}
	sts, _ := c.Topics(ctx, "a.b")
	if sts[1] != (TopicStatus{Topic: "zeta", Connector: "a.b", Task: 0, DiscoverTimestamp: 1}) {
		t.Errorf("zeta recorded as %+v, want its first use", sts[1])
	}
	for _, kv := range must(c.Raw().Scan(ctx, Prefix+"topic/", 0)) {
		if n, topic, ok := ParseTopicKey(kv.Key); !ok || (n != "a.b" && n != "a") || topic == "" {
			t.Errorf("ParseTopicKey(%q) = %q, %q, %v", kv.Key, n, topic, ok)
		}
	}

	if err := c.ResetTopics(ctx, "a.b"); err != nil {
		t.Fatal(err)
	}
	if got := names("a.b"); len(got) != 0 {
		t.Errorf("after reset: %v", got)
	}
	if got := names("a"); !slices.Equal(got, []string{"other"}) {
		t.Errorf("reset of a.b touched a: %v", got)
	}

	// Bounded.
	var ops []store.Op
	for i := range MaxTopics {
		topic := fmt.Sprintf("t%05d", i)
		ops = append(ops, store.Put(topicKey("a.b", topic), mustJSON(TopicStatus{Topic: topic, Connector: "a.b"})))
	}
	for len(ops) > 0 {
		n := min(len(ops), store.MaxBatchOps)
		if _, _, err := c.Raw().Batch(ctx, nil, ops[:n]); err != nil {
			t.Fatal(err)
		}
		ops = ops[n:]
	}
	if put("a.b", "one-too-many", 0, 5) {
		t.Errorf("recorded a topic beyond MaxTopics")
	}
	if !put("a.b", "t00007", 0, 5) {
		t.Errorf("a recorded topic is not reported recorded at the bound")
	}

	// Deleting the connector forgets its topics; so does creating one of a
	// name whose delete left topics behind.
	if ok, err := c.DeleteConnector(ctx, "a.b"); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if got := names("a.b"); len(got) != 0 {
		t.Errorf("after delete: %d topics", len(got))
	}
	put("gone", "left", 0, 6)
	if ok, err := c.CreateConnector(ctx, "gone", map[string]string{"connector.class": "X"}, TargetStarted); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if got := names("gone"); len(got) != 0 {
		t.Errorf("a new connector sees an earlier one's topics: %v", got)
	}
}

func must[T any](v T, _ int64, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
