package connectstore

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/kcd-project/kcd/store"
)

// MaxTopics is the most topics recorded as used by one connector: the
// list (GET /connectors/{name}/topics) and its keys stay bounded even for
// a sink subscribed to a regex over thousands of topics. Topics beyond it
// are not recorded until a reset.
const MaxTopics = 4096

// TopicStatus records that a task of a connector used a topic: a source
// task produced to it or a sink task consumed from it (Kafka Connect's
// TopicStatus in its status topic).
type TopicStatus struct {
	Topic     string `json:"topic"`
	Connector string `json:"connector"`
	Task      int    `json:"task"`
	// DiscoverTimestamp is when the task first used the topic, in Unix
	// milliseconds.
	DiscoverTimestamp int64 `json:"discoverTimestamp"`
}

func topicPrefix(name string) string     { return Prefix + "topic/" + esc(name) + "/" }
func topicKey(name, topic string) string { return topicPrefix(name) + esc(topic) }

// ParseTopicKey returns the connector and topic of a key that records a
// topic in use (PutTopic); ok is false for any other key.
func ParseTopicKey(key string) (name, topic string, ok bool) {
	rest, ok := strings.CutPrefix(key, Prefix+"topic/")
	if !ok {
		return "", "", false
	}
	escName, escTopic, ok := strings.Cut(rest, "/")
	if !ok {
		return "", "", false
	}
	name, err1 := url.PathUnescape(escName)
	topic, err2 := url.PathUnescape(escTopic)
	if err1 != nil || err2 != nil {
		return "", "", false
	}
	return name, topic, true
}

// PutTopic records, under fence, that a task used a topic, unless it is
// recorded already (by another task or worker: the first use is kept).
// recorded is false when the connector already has MaxTopics topics
// recorded, and not this one.
func (c *Store) PutTopic(ctx context.Context, st TopicStatus, fence Fence) (recorded bool, err error) {
	kvs, _, err := c.s.Scan(ctx, topicPrefix(st.Connector), MaxTopics)
	if err != nil {
		return false, err
	}
	if slices.ContainsFunc(kvs, func(kv store.KV) bool { return kv.Key == topicKey(st.Connector, st.Topic) }) {
		return true, nil
	}
	if len(kvs) >= MaxTopics {
		return false, nil
	}
	if err := c.fencedBatch(ctx, fence, []store.Op{store.Put(topicKey(st.Connector, st.Topic), mustJSON(st))}); err != nil {
		return false, err
	}
	return true, nil
}

// Topics returns the topics a connector's tasks used since its last reset,
// sorted.
func (c *Store) Topics(ctx context.Context, name string) ([]TopicStatus, error) {
	kvs, _, err := c.s.Scan(ctx, topicPrefix(name), 0)
	if err != nil {
		return nil, err
	}
	out := make([]TopicStatus, 0, len(kvs))
	for _, kv := range kvs {
		var st TopicStatus
		if err := json.Unmarshal(kv.Value, &st); err != nil {
			return nil, fmt.Errorf("connectstore: %s holds bad JSON: %w", kv.Key, err)
		}
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b TopicStatus) int { return strings.Compare(a.Topic, b.Topic) })
	return out, nil
}

// ResetTopics forgets the topics a connector's tasks used; a running task
// records a topic again when it next uses it.
func (c *Store) ResetTopics(ctx context.Context, name string) error {
	kvs, _, err := c.s.Scan(ctx, topicPrefix(name), 0)
	if err != nil || len(kvs) == 0 {
		return err
	}
	keys := make([]string, len(kvs))
	for i, kv := range kvs {
		keys[i] = kv.Key
	}
	return c.deleteKeys(ctx, keys)
}
