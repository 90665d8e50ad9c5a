package worker

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/kcd-project/kcd/daemon/connectstore"
	"github.com/kcd-project/kcd/store"
)

// The tracker records a topic on its first use only, records it again
// after a reset once the watch reports the deletion, and never blocks
// the record paths: a use that finds the queue full is retried on a later
// record.
func TestTopicTracker(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	cs := openStore(t)
	w := &Worker{cfg: Config{Assignment: All{}}, store: cs, log: slog.New(slog.DiscardHandler)}
	tr := newTopicTracker(w)
	id := TaskID{Connector: "c", Task: 1}

	// A full queue: the use is dropped, not blocked on, and not marked.
	for range topicQueue {
		tr.queue <- queuedTopic{id: TaskID{Connector: "filler"}, topic: "f"}
	}
	tr.use(id, "t1")
	if _, ok := tr.seen.Load(topicUse{"c", "t1"}); ok {
		t.Fatal("a use dropped on a full queue is marked seen")
	}
	go tr.run(ctx)
	waitFor(t, 10*time.Second, "the queued topic uses written", func() (bool, string) {
		return len(tr.queue) == 0, fmt.Sprintf("%d queued", len(tr.queue))
	})

	topics := func() []string {
		sts, err := cs.Topics(ctx, "c")
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, st := range sts {
			out = append(out, st.Topic)
		}
		return out
	}
	waitTopics := func(want ...string) {
		t.Helper()
		waitFor(t, 10*time.Second, fmt.Sprintf("topics %v", want), func() (bool, string) {
			got := topics()
			return slices.Equal(got, want), fmt.Sprint(got)
		})
	}
	tr.use(id, "t1")
	tr.use(id, "t2")
	tr.use(id, "t1")
	waitTopics("t1", "t2")
	sts, _ := cs.Topics(ctx, "c")
	if sts[0].Task != 1 || sts[0].DiscoverTimestamp == 0 {
		t.Errorf("recorded %+v", sts[0])
	}

	// A reset: the deletions come through the worker's watch.
	rev, err := cs.Raw().Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.ResetTopics(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	wt, err := cs.Raw().Watch(ctx, connectstore.Prefix, rev)
	if err != nil {
		t.Fatal(err)
	}
	defer wt.Close()
	for deleted := 0; deleted < 2; {
		ev := <-wt.Events()
		if name, topic, ok := connectstore.ParseTopicKey(ev.KV.Key); ok && ev.Type == store.EventDelete {
			tr.forget(name, topic)
			deleted++
		}
	}
	waitTopics()
	tr.use(id, "t2")
	waitTopics("t2")

	var nilTracker *topicTracker // topic tracking off
	nilTracker.use(id, "t3")
	nilTracker.forget("c", "t3")
}

// A record path's cached use skips the lookup for a run of one topic, and
// notes the topic again once any use left seen: a reset, or a use dropped
// on a full queue.
func TestTopicTrackerCachedUse(t *testing.T) {
	tr := newTopicTracker(&Worker{log: slog.New(slog.DiscardHandler)})
	id := TaskID{Connector: "c"}
	var c lastUse
	tr.useCached(&c, id, "t")
	tr.useCached(&c, id, "t")
	if len(tr.queue) != 1 {
		t.Fatalf("%d uses queued, want 1", len(tr.queue))
	}
	<-tr.queue
	tr.forget("c", "t")
	tr.useCached(&c, id, "t")
	if len(tr.queue) != 1 {
		t.Fatalf("after a reset: %d uses queued, want 1", len(tr.queue))
	}
	<-tr.queue

	for range topicQueue {
		tr.queue <- queuedTopic{id: TaskID{Connector: "filler"}, topic: "f"}
	}
	tr.useCached(&c, id, "u")
	if _, ok := tr.seen.Load(topicUse{"c", "u"}); ok {
		t.Fatal("a use dropped on a full queue is marked seen")
	}
	<-tr.queue
	tr.useCached(&c, id, "u")
	if _, ok := tr.seen.Load(topicUse{"c", "u"}); !ok {
		t.Fatal("a use dropped on a full queue is not noted on the next record")
	}
	var nilTracker *topicTracker
	nilTracker.useCached(&c, id, "v")
}
