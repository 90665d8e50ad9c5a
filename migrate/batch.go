package migrate

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// maxGroupBytes bounds the records packed into one batch by batchGroups,
// well under Kafka's default max.message.bytes (1 MiB): a connector whose
// records alone exceed it still gets a batch of its own.
const maxGroupBytes = 512 << 10

// batchGroups packs groups of records, in order, into batches of about
// maxGroupBytes at most, never splitting a group.
func batchGroups(groups [][]*kgo.Record) [][][]*kgo.Record {
	var out [][][]*kgo.Record
	var cur [][]*kgo.Record
	size := 0
	for _, g := range groups {
		n := 0
		for _, r := range g {
			n += len(r.Key) + len(r.Value) + 16 // + a record's framing
		}
		if len(cur) > 0 && size+n > maxGroupBytes {
			out, cur, size = append(out, cur), nil, 0
		}
		cur, size = append(cur, g), size+n
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// produceBatch writes recs to one partition as one record batch, in one
// produce request. Kafka appends a batch whole or not at all, and readers
// get all of its records or none, whatever their isolation level: so a
// reader never sees part of recs. franz-go's producer cannot promise one
// batch (it cuts batches as records arrive), hence the raw request.
//
// A produce that fails without an answer may have been written: it is
// retried, and the records are then there twice, in order (Write's config
// records say the same thing twice).
func produceBatch(ctx context.Context, cl *kgo.Client, topic string, partition int32, recs []*kgo.Record) error {
	if len(recs) == 0 {
		return nil
	}
	batch := encodeBatch(recs, time.Now().UnixMilli())
	adm := kadm.NewClient(cl)
	var last error
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return fmt.Errorf("%w (last: %w)", context.Cause(ctx), last)
			case <-time.After(time.Duration(min(attempt, 10)) * 100 * time.Millisecond):
			}
		}
		err := produceOnce(ctx, cl, adm, topic, partition, batch)
		if err == nil {
			return nil
		}
		last = err
		var ke *kerr.Error
		if ctx.Err() != nil || attempt >= 20 || (errors.As(err, &ke) && !ke.Retriable) {
			return err
		}
	}
}

func produceOnce(ctx context.Context, cl *kgo.Client, adm *kadm.Client, topic string, partition int32, batch []byte) error {
	// The partition's leader (and the topic's ID, which produce v13+ names
	// the topic by), from fresh metadata.
	td, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return fmt.Errorf("metadata of topic %s: %w", topic, err)
	}
	d, ok := td[topic]
	switch {
	case !ok:
		return fmt.Errorf("metadata of topic %s: %w", topic, kerr.UnknownTopicOrPartition)
	case d.Err != nil:
		return fmt.Errorf("metadata of topic %s: %w", topic, d.Err)
	}
	pd, ok := d.Partitions[partition]
	if !ok || pd.Leader < 0 {
		return fmt.Errorf("topic %s partition %d: %w", topic, partition, kerr.LeaderNotAvailable)
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks = -1 // every in-sync replica, as the clients' default
	req.TimeoutMillis = 30_000
	t := kmsg.NewProduceRequestTopic()
	t.Topic, t.TopicID = topic, [16]byte(d.ID)
	p := kmsg.NewProduceRequestTopicPartition()
	p.Partition, p.Records = partition, batch
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, cl.Broker(int(pd.Leader)))
	if err != nil {
		return fmt.Errorf("produce to topic %s partition %d: %w", topic, partition, err)
	}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				if rp.ErrorMessage != nil {
					err = fmt.Errorf("%w: %s", err, *rp.ErrorMessage)
				}
				return fmt.Errorf("produce to topic %s partition %d: %w", topic, partition, err)
			}
			return nil
		}
	}
	return fmt.Errorf("produce to topic %s partition %d: no answer for the partition", topic, partition)
}

// encodeBatch encodes recs (keys and values only) as one uncompressed
// record batch (magic 2) without a producer ID, timestamped now.
func encodeBatch(recs []*kgo.Record, now int64) []byte {
	var body []byte
	for i, r := range recs {
		rec := kmsg.Record{OffsetDelta: int32(i), Key: r.Key, Value: r.Value}
		rec.Length = int32(len(rec.AppendTo(nil)) - 1) // everything after the Length varint (0: one byte)
		body = rec.AppendTo(body)
	}
	b := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1,
		Magic:                2,
		LastOffsetDelta:      int32(len(recs) - 1),
		FirstTimestamp:       now,
		MaxTimestamp:         now,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		FirstSequence:        -1,
		NumRecords:           int32(len(recs)),
		Records:              body,
	}
	b.Length = int32(batchHeaderAfterLength + len(body))
	out := b.AppendTo(nil)
	// The CRC-32C covers everything from the attributes on.
	binary.BigEndian.PutUint32(out[crcAt:], crc32.Checksum(out[crcAt+4:], crc32.MakeTable(crc32.Castagnoli)))
	return out
}

const (
	// crcAt is where a batch's CRC sits: after the first offset (8), the
	// length (4), the partition leader epoch (4) and the magic byte (1).
	crcAt = 17
	// batchHeaderAfterLength is the size of a batch's header after its
	// length field: epoch 4, magic 1, crc 4, attributes 2, last offset
	// delta 4, timestamps 8+8, producer ID 8, epoch 2, sequence 4, count 4.
	batchHeaderAfterLength = 49
)
