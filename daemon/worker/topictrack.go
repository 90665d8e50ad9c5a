package worker

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kcd-project/kcd/daemon/connectstore"
)

// topicQueue bounds the topic uses waiting to be recorded; a use that
// finds it full is recorded on a later record of the same topic.
const topicQueue = 1024

// topicTracker records in the store the topics each connector's tasks use
// (Kafka Connect's topic tracking, GET /connectors/{name}/topics): a
// source task's topic when Kafka acknowledges a record, a sink task's when
// it fetches records of it. The record paths only look a (connector,
// topic) pair up in memory; the first use is written in the background,
// under the task's fence. A reset (the topic keys deleted) makes the
// connector's topics new again, so that they are recorded on next use, as
// Kafka Connect does.
type topicTracker struct {
	w     *Worker
	log   *slog.Logger
	seen  sync.Map // topicUse -> struct{}: recorded, or queued
	queue chan queuedTopic
	once  sync.Map // connector -> struct{}: told it has too many topics
	// gen changes whenever a use leaves seen: a caller that remembers a
	// use it noted (lastUse) notes it again once gen moved on.
	gen atomic.Uint64
}

// lastUse is a record path's memory of the last topic it noted, so
// that a run of records of one topic looks seen up once, not per record
// (two strings hashed through an interface, a sixth of what acknowledging
// a source record costs).
type lastUse struct {
	last atomic.Pointer[notedTopic]
}

type notedTopic struct {
	topic string
	gen   uint64
}

// useCached is use, skipped when c says topic was noted since the last
// time a use left seen. It may be called from several goroutines.
func (t *topicTracker) useCached(c *lastUse, id TaskID, topic string) {
	if t == nil {
		return
	}
	gen := t.gen.Load()
	if n := c.last.Load(); n != nil && n.topic == topic && n.gen == gen {
		return
	}
	t.use(id, topic)
	c.last.Store(&notedTopic{topic: topic, gen: gen})
}

// unsee removes k from seen.
func (t *topicTracker) unsee(k topicUse) {
	t.seen.Delete(k)
	t.gen.Add(1)
}

type topicUse struct{ connector, topic string }

type queuedTopic struct {
	id    TaskID
	topic string
	at    time.Time
}

func newTopicTracker(w *Worker) *topicTracker {
	return &topicTracker{w: w, log: w.log, queue: make(chan queuedTopic, topicQueue)}
}

// use notes that task id used topic. It never blocks: it is called from
// the record paths (a producer's callback among them).
func (t *topicTracker) use(id TaskID, topic string) {
	if t == nil {
		return
	}
	k := topicUse{id.Connector, topic}
	if _, ok := t.seen.Load(k); ok {
		return
	}
	if _, loaded := t.seen.LoadOrStore(k, struct{}{}); loaded {
		return
	}
	select {
	case t.queue <- queuedTopic{id: id, topic: topic, at: time.Now()}:
	default:
		t.unsee(k) // full: the next record of the topic tries again
	}
}

// forget makes a topic of a connector new again: its record was deleted
// (a reset, or the connector's deletion). A connector that had more
// topics than are recorded has all its topics made new, once, since those
// left out have no record whose deletion would say so.
func (t *topicTracker) forget(connector, topic string) {
	if t == nil {
		return
	}
	t.unsee(topicUse{connector, topic})
	if _, over := t.once.LoadAndDelete(connector); over {
		t.seen.Range(func(k, _ any) bool {
			if k.(topicUse).connector == connector {
				t.unsee(k.(topicUse))
			}
			return true
		})
	}
}

// run writes the queued topic uses until ctx ends.
func (t *topicTracker) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case q := <-t.queue:
			t.record(ctx, q)
		}
	}
}

func (t *topicTracker) record(ctx context.Context, q queuedTopic) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	st := connectstore.TopicStatus{Topic: q.topic, Connector: q.id.Connector, Task: q.id.Task, DiscoverTimestamp: q.at.UnixMilli()}
	recorded, err := t.w.store.PutTopic(ctx, st, t.w.cfg.Assignment.Fence(q.id.Connector, q.id.Task))
	switch {
	case errors.Is(err, connectstore.ErrFenced):
		// The task is not this worker's any more; its new owner records.
	case err != nil:
		t.unsee(topicUse{q.id.Connector, q.topic}) // tried again on a later record
		if ctx.Err() == nil || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			t.log.Warn("could not record a topic in use", "connector", q.id.Connector, "task", q.id.Task, "topic", q.topic, "err", err)
		}
	case !recorded:
		if _, told := t.once.LoadOrStore(q.id.Connector, struct{}{}); !told {
			t.log.Warn("connector uses more topics than are recorded; the rest are not listed until a reset",
				"connector", q.id.Connector, "max", connectstore.MaxTopics)
		}
	}
}
