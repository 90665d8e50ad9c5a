package worker

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcd-project/kcd/daemon/clientcfg"
)

// newClient makes a Kafka client with the worker's seeds and options.
func (w *Worker) newClient(opts ...kgo.Opt) (*kgo.Client, error) {
	all := append([]kgo.Opt{kgo.SeedBrokers(w.cfg.Seeds...)}, w.cfg.KafkaOpts...)
	return kgo.NewClient(append(all, opts...)...)
}

// producerOpts are the options of a producer with settings p that may
// have maxRecords in flight: p's (Kafka Connect's producer settings),
// records retried until they are delivered or the delivery timeout ends,
// and a buffer that never blocks Produce, since the worker's budgets bound
// it. client.id, when p sets it, names the producer instead of clientID.
func (w *Worker) producerOpts(p clientcfg.Producer, transactional bool, maxRecords int, clientID string) []kgo.Opt {
	if p.ClientID != "" {
		clientID = p.ClientID
	}
	return append(p.Opts(transactional),
		kgo.ClientID(clientID),
		kgo.MaxBufferedRecords(2*maxRecords+1),
		kgo.RecordPartitioner(connectPartitioner{kgo.UniformBytesPartitioner(64<<10, true, true, nil)}),
		// The worker creates topics before producing; metadata may lag a
		// moment behind on a larger cluster.
		kgo.UnknownTopicRetries(10),
	)
}

// explicitPartition marks a record whose partition the connector chose.
type explicitPartition struct{}

// connectPartitioner honours SourceRecord.Partition when set and otherwise
// partitions as the Java producer does (murmur2 of the key, sticky batches
// for records without a key).
type connectPartitioner struct{ inner kgo.Partitioner }

func (p connectPartitioner) ForTopic(t string) kgo.TopicPartitioner {
	return &connectTopicPartitioner{inner: p.inner.ForTopic(t)}
}

type connectTopicPartitioner struct{ inner kgo.TopicPartitioner }

func explicit(r *kgo.Record) bool {
	return r.Context != nil && r.Context.Value(explicitPartition{}) != nil
}

func (p *connectTopicPartitioner) RequiresConsistency(r *kgo.Record) bool {
	return explicit(r) || p.inner.RequiresConsistency(r)
}

func (p *connectTopicPartitioner) Partition(r *kgo.Record, n int) int {
	if explicit(r) {
		return int(r.Partition)
	}
	return p.inner.Partition(r, n)
}

func (p *connectTopicPartitioner) PartitionByBackup(r *kgo.Record, n int, it kgo.TopicBackupIter) int {
	if explicit(r) {
		return int(r.Partition)
	}
	if b, ok := p.inner.(kgo.TopicBackupPartitioner); ok {
		return b.PartitionByBackup(r, n, it)
	}
	return p.inner.Partition(r, n)
}

func (p *connectTopicPartitioner) OnNewBatch() {
	if o, ok := p.inner.(kgo.TopicPartitionerOnNewBatch); ok {
		o.OnNewBatch()
	}
}

// topicCache creates the topics records go to, once per topic and worker.
type topicCache struct {
	adm *kadm.Client
	log *slog.Logger

	mu     sync.Mutex
	topics map[string]*topicState
}

type topicState struct {
	done       chan struct{}
	ok         bool
	retryAfter time.Time
}

// topicRetry is how long a failed creation is not tried again; producing
// goes ahead meanwhile (the topic may exist, or the broker create it).
const topicRetry = 30 * time.Second

func newTopicCache(adm *kadm.Client, log *slog.Logger) *topicCache {
	return &topicCache{adm: adm, log: log, topics: map[string]*topicState{}}
}

// ensure creates topic unless it exists, with partitions and replication
// (-1: the broker's defaults). It waits for a creation under way; it
// returns an error only when ctx ends.
func (c *topicCache) ensure(ctx context.Context, topic string, partitions int32, replication int16) error {
	for {
		c.mu.Lock()
		st := c.topics[topic]
		// isClosed first: ok and retryAfter are written before done is closed.
		if st == nil || (isClosed(st.done) && !st.ok && time.Now().After(st.retryAfter)) {
			st = &topicState{done: make(chan struct{})}
			c.topics[topic] = st
			c.mu.Unlock()
			c.create(ctx, st, topic, partitions, replication)
			return ctx.Err()
		}
		c.mu.Unlock()
		select {
		case <-st.done:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (c *topicCache) create(ctx context.Context, st *topicState, topic string, partitions int32, replication int16) {
	defer close(st.done)
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, err := c.adm.CreateTopic(rctx, partitions, replication, nil, topic)
	if err == nil {
		err = resp.Err
	}
	switch {
	case err == nil:
		c.log.Info("created topic", "topic", topic, "partitions", resp.NumPartitions, "replication_factor", resp.ReplicationFactor)
		st.ok = true
	case errors.Is(err, kerr.TopicAlreadyExists):
		st.ok = true
	default:
		st.retryAfter = time.Now().Add(topicRetry)
		if ctx.Err() == nil {
			c.log.Warn("could not create topic; producing anyway", "topic", topic, "err", err)
		}
	}
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
