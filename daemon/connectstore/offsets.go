package connectstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/kcd-project/kcd/store"
)

// SourceOffset returns the stored offset of one source partition, or nil.
func (c *Store) SourceOffset(ctx context.Context, name string, partition map[string]any) (map[string]any, error) {
	key, err := partitionKey(name, partition)
	if err != nil {
		return nil, err
	}
	var so SourceOffset
	found, _, err := getJSONNumbers(ctx, c.s, key, &so)
	if err != nil || !found {
		return nil, err
	}
	return so.Offset, nil
}

// PutSourceOffsets stores offsets of several source partitions, under
// fence; a nil Offset deletes the partition's offset.
func (c *Store) PutSourceOffsets(ctx context.Context, name string, offsets []SourceOffset, fence Fence) error {
	ops := make([]store.Op, 0, len(offsets))
	for _, o := range offsets {
		key, err := partitionKey(name, o.Partition)
		if err != nil {
			return err
		}
		if o.Offset == nil {
			ops = append(ops, store.Delete(key))
			continue
		}
		ops = append(ops, store.Put(key, mustJSON(o)))
	}
	return c.fencedBatch(ctx, fence, ops)
}

// SourceOffsets lists every stored source offset of a connector.
func (c *Store) SourceOffsets(ctx context.Context, name string) ([]SourceOffset, error) {
	kvs, _, err := c.s.Scan(ctx, offsetPrefix(name), 0)
	if err != nil {
		return nil, err
	}
	out := make([]SourceOffset, 0, len(kvs))
	for _, kv := range kvs {
		var so SourceOffset
		if err := decodeNumbers(kv.Value, &so); err != nil {
			return nil, fmt.Errorf("connectstore: %s: %w", kv.Key, err)
		}
		out = append(out, so)
	}
	return out, nil
}

// PutSinkOffsets stores the next offsets to read of a sink connector's
// partitions, under fence.
func (c *Store) PutSinkOffsets(ctx context.Context, name string, offsets []SinkOffset, fence Fence) error {
	ops := make([]store.Op, 0, len(offsets))
	for _, o := range offsets {
		ops = append(ops, store.Put(sinkOffsetKey(name, o.Topic, o.Partition), mustJSON(o)))
	}
	return c.fencedBatch(ctx, fence, ops)
}

// SinkOffsets lists a sink connector's stored offsets.
func (c *Store) SinkOffsets(ctx context.Context, name string) ([]SinkOffset, error) {
	kvs, _, err := c.s.Scan(ctx, sinkOffsetPrefix(name), 0)
	if err != nil {
		return nil, err
	}
	out := make([]SinkOffset, 0, len(kvs))
	for _, kv := range kvs {
		var so SinkOffset
		if err := json.Unmarshal(kv.Value, &so); err != nil {
			return nil, fmt.Errorf("connectstore: %s: %w", kv.Key, err)
		}
		out = append(out, so)
	}
	return out, nil
}

// DeleteOffsets removes all of a connector's offsets, source and sink.
func (c *Store) DeleteOffsets(ctx context.Context, name string) error {
	for _, prefix := range []string{offsetPrefix(name), sinkOffsetPrefix(name)} {
		for {
			kvs, _, err := c.s.Scan(ctx, prefix, store.MaxBatchOps)
			if err != nil {
				return err
			}
			if len(kvs) == 0 {
				break
			}
			ops := make([]store.Op, 0, len(kvs))
			for _, kv := range kvs {
				ops = append(ops, store.Delete(kv.Key))
			}
			if _, _, err := c.s.Batch(ctx, nil, ops); err != nil {
				return err
			}
		}
	}
	return nil
}

// ParseSinkOffsetKey is the inverse of the sink offset key layout, for
// watchers.
func ParseSinkOffsetKey(key string) (name, topic string, partition int32, ok bool) {
	rest, found := strings.CutPrefix(key, Prefix+"sinkoffset/")
	if !found {
		return "", "", 0, false
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 3 {
		return "", "", 0, false
	}
	p, err := strconv.Atoi(parts[2])
	name, err1 := url.PathUnescape(parts[0])
	topic, err2 := url.PathUnescape(parts[1])
	if err != nil || err1 != nil || err2 != nil {
		return "", "", 0, false
	}
	return name, topic, int32(p), true
}

// Offsets keep JSON numbers exact (json.Number), so that a stored position
// comes back as the same integer.
func getJSONNumbers(ctx context.Context, s store.Store, key string, v any) (bool, int64, error) {
	kv, found, err := s.Get(ctx, key)
	if err != nil || !found {
		return false, 0, err
	}
	if err := decodeNumbers(kv.Value, v); err != nil {
		return false, 0, fmt.Errorf("connectstore: %s: %w", key, err)
	}
	return true, kv.ModRevision, nil
}

func decodeNumbers(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return dec.Decode(v)
}

// MaxOffsetKeyBytes bounds SourceOffset.Key: a connector name and a few
// partition fields (api.MaxSourceOffsetKey).
const MaxOffsetKeyBytes = 8192

// CheckOffsetKey says why key cannot be SourceOffset.Key of connector
// name's partition, or nil: it must be at most MaxOffsetKeyBytes of valid
// UTF-8 (Kafka Connect writes UTF-8), and decode to [name, partition] with
// the same fields and values (numbers as written).
func CheckOffsetKey(name string, partition map[string]any, key string) error {
	switch {
	case len(key) > MaxOffsetKeyBytes:
		return fmt.Errorf("offset key of %d bytes: at most %d", len(key), MaxOffsetKeyBytes)
	case !utf8.ValidString(key):
		return errors.New("offset key: not valid UTF-8")
	case !json.Valid([]byte(key)):
		return fmt.Errorf("offset key %q: not JSON", key)
	}
	var k []json.RawMessage
	if err := decodeNumbers([]byte(key), &k); err != nil || len(k) != 2 {
		return fmt.Errorf("offset key %q: not a JSON [connector, partition]", key)
	}
	var conn string
	var part map[string]any
	if err := json.Unmarshal(k[0], &conn); err != nil || conn != name {
		return fmt.Errorf("offset key %q: not of connector %q", key, name)
	}
	if err := decodeNumbers(k[1], &part); err != nil || part == nil {
		return fmt.Errorf("offset key %q: no partition map", key)
	}
	a, err1 := json.Marshal(part)
	b, err2 := json.Marshal(partition)
	if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
		return fmt.Errorf("offset key %q: its partition is not %s", key, b)
	}
	return nil
}

// CheckOffsetFormat says why m cannot be a source partition or offset, or
// nil: its values must be primitives (Kafka Connect's
// OffsetUtils.validateFormat, whose message it gives). Fields are checked
// in key order, so the answer does not depend on map order.
func CheckOffsetFormat(m map[string]any) error {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		switch m[k].(type) {
		case map[string]any:
			return fmt.Errorf("Offsets may only contain primitive types as values, but field %s contains MAP", k)
		case []any:
			return fmt.Errorf("Offsets may only contain primitive types as values, but field %s contains ARRAY", k)
		}
	}
	return nil
}
