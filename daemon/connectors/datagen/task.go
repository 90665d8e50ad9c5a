package datagen

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/kcd-project/kcd/daemon/connect"
	"github.com/kcd-project/kcd/daemon/connect/data"
)

// UserSchema is the value schema of the json and user shapes.
var UserSchema = data.NewStructSchema().Name("io.kcd.connect.datagen.User").
	Field("id", data.Int64Schema).
	Field("name", data.StringSchema).
	Field("email", data.StringSchema).
	Field("created", data.TimestampSchema(false)).
	Field("score", data.Float64Schema).
	Field("active", data.BooleanSchema).
	Build()

// UserID is the id of task t's n-th user: t×10¹² + n, readable in decimal.
func UserID(task int, seq int64) int64 { return int64(task)*1_000_000_000_000 + seq }

var (
	names   = []string{"alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan", "judy"}
	created = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	// filler is the alphabet over and over, the bytes after a payload's
	// numbers: byte i of record n is 'a'+(i+n) mod 26.
	filler = []byte(strings.Repeat("abcdefghijklmnopqrstuvwxyz", 64))
	// idle is how long Poll waits when a task has nothing to emit yet;
	// done how long once it emitted max.records and never will again, so
	// that finished tasks cost next to nothing (a stop ends the wait).
	idle = 200 * time.Millisecond
	done = 5 * time.Second
)

// Task emits the records of one task.
type Task struct {
	cfg       config
	partition map[string]any // shared by all records: read-only
	taskBox   any            // int32(task), boxed once
	next      int64          // sequence number of the next record
	start     time.Time
	emitted   int64 // since start, for the rate
	// out are the batches of the Polls the runtime has not given back:
	// two, as it polls one ahead while it sends the last
	// (connect.SourceRecordRecycler); spare ones it is done with, whose
	// memory the next Polls reuse.
	out   [maxOut]batch
	spare []batch
}

// batch is the memory of a Poll's records: one allocation for the records
// and one for their headers.
type batch struct {
	recs    []*connect.SourceRecord
	slab    []connect.SourceRecord
	headers []connect.Header
}

var (
	_ connect.SourceTask           = (*Task)(nil)
	_ connect.SourceRecordRecycler = (*Task)(nil)
)

// Start reads the config and the stored offset: the task continues after
// the last sequence number stored.
func (t *Task) Start(ctx connect.SourceTaskContext, cfg map[string]string) error {
	c, err := parse(cfg)
	if err != nil {
		return err
	}
	t.cfg = c
	t.partition = map[string]any{TaskField: c.task}
	t.taskBox = int32(c.task)
	rctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	off, err := ctx.OffsetReader().Offset(rctx, t.partition)
	if err != nil {
		return fmt.Errorf("read the offset of task %d: %w", c.task, err)
	}
	if v, ok := off[SeqField]; ok && v != nil {
		seq, err := toInt64(v)
		if err != nil {
			return fmt.Errorf("stored offset of task %d: %w", c.task, err)
		}
		t.next = seq + 1
	}
	t.start = time.Now()
	return nil
}

func toInt64(v any) (int64, error) {
	switch v := v.(type) {
	case json.Number:
		return v.Int64()
	case int64:
		return v, nil
	case int:
		return int64(v), nil
	case float64:
		if v == math.Trunc(v) {
			return int64(v), nil
		}
	}
	return 0, fmt.Errorf("seq %v is not an integer", v)
}

// Poll returns the next batch: what the rate allows, up to batch.size,
// and nothing (after a short wait) once max.records were emitted.
func (t *Task) Poll(ctx context.Context) ([]*connect.SourceRecord, error) {
	n := int64(t.cfg.batch)
	if t.cfg.maxRecords > 0 {
		n = min(n, t.cfg.maxRecords-t.next)
		if n <= 0 {
			t.spare = nil // done: no memory kept for records that will not come
			sleep(ctx, done)
			return nil, nil
		}
	}
	if t.cfg.rate > 0 {
		allowed := int64(time.Since(t.start).Seconds()*t.cfg.rate) + 1 - t.emitted
		if allowed <= 0 {
			wait := time.Duration(float64(1-allowed) / t.cfg.rate * float64(time.Second))
			sleep(ctx, min(wait, idle))
			return nil, nil
		}
		n = min(n, allowed)
	}
	b := t.batch(int(n))
	recs, slab, headers := b.recs, b.slab, b.headers
	// The bytes shape's values share one allocation too (without
	// pointers, which the garbage collector need not scan).
	var values []byte
	if t.cfg.shape == ShapeBytes {
		values = make([]byte, int(n)*max(t.cfg.recordSize, 12))
	}
	for i := range recs {
		recs[i] = &slab[i]
		t.fill(&slab[i], headers[2*i:2*i+2:2*i+2], t.next, values)
		t.next++
		if values != nil {
			values = values[max(t.cfg.recordSize, 12):]
		}
	}
	// Only the last record of a batch carries the source offset: the
	// runtime commits the offset of the last record acknowledged in order,
	// and one map per batch instead of one per record is a third of the
	// cost of a record. After a restart the task goes on after the last
	// whole batch Kafka had.
	last := &slab[n-1]
	last.SourcePartition = t.partition
	last.SourceOffset = map[string]any{SeqField: last.Headers[1].Value}
	t.emitted += n
	copy(t.out[:], t.out[1:]) // the oldest is forgotten, if still out
	t.out[maxOut-1] = b
	return recs, nil
}

// maxOut is how many batches the task remembers as out.
const maxOut = 2

// batch returns zero records and headers for n records: a spare batch's
// memory when one is large enough.
func (t *Task) batch(n int) batch {
	for len(t.spare) > 0 {
		b := t.spare[len(t.spare)-1]
		t.spare[len(t.spare)-1] = batch{}
		t.spare = t.spare[:len(t.spare)-1]
		if cap(b.recs) >= n {
			b.recs, b.slab, b.headers = b.recs[:n], b.slab[:n], b.headers[:2*n]
			clear(b.slab)
			clear(b.headers)
			return b
		}
	}
	return batch{recs: make([]*connect.SourceRecord, n), slab: make([]connect.SourceRecord, n), headers: make([]connect.Header, 2*n)}
}

// RecycleRecords takes back the records of a Poll: a later Poll reuses
// their structs and headers (not their values and offsets, which may
// still be in flight: those are new in every Poll).
func (t *Task) RecycleRecords(recs []*connect.SourceRecord) {
	if len(recs) == 0 {
		return
	}
	for i, b := range t.out {
		if len(b.recs) > 0 && &recs[0] == &b.recs[0] {
			t.out[i] = batch{}
			if len(t.spare) < maxOut {
				t.spare = append(t.spare, b)
			}
			return
		}
	}
}

// fill makes r (zero) the task's record number seq; a value of the bytes
// shape goes at the start of values.
func (t *Task) fill(r *connect.SourceRecord, headers []connect.Header, seq int64, values []byte) {
	c := &t.cfg
	boxed := any(seq) // shared by the header, the key and the offset
	// r and headers are zero: setting fields is cheaper than copying
	// whole structs into the heap.
	headers[0].Key, headers[0].Schema, headers[0].Value = TaskHeader, data.Int32Schema, t.taskBox
	headers[1].Key, headers[1].Schema, headers[1].Value = SeqHeader, data.Int64Schema, boxed
	r.Topic, r.Headers = c.topic, headers
	switch c.key {
	case KeySequence:
		r.KeySchema, r.Key = data.Int64Schema, boxed
	case KeyTask:
		r.KeySchema, r.Key = data.Int32Schema, t.taskBox
	}
	switch c.shape {
	case ShapeJSON, ShapeUser:
		r.ValueSchema, r.Value = UserSchema, User(c.task, seq)
	case ShapeBytes:
		r.ValueSchema, r.Value = data.BytesSchema, putPayload(values, c.task, seq, c.recordSize)
	default:
		r.ValueSchema, r.Value = data.StringSchema, Counter(c.task, seq)
	}
}

// Counter is the value of the counter shape.
func Counter(task int, seq int64) string { return fmt.Sprintf("task-%d-%d", task, seq) }

// User is the value of the json and user shapes.
func User(task int, seq int64) *data.Struct {
	name := names[seq%int64(len(names))]
	return data.NewStruct(UserSchema).
		Put("id", UserID(task, seq)).
		Put("name", name).
		Put("email", fmt.Sprintf("%s.%d.%d@example.com", name, task, seq)).
		Put("created", created.Add(time.Duration(seq)*time.Second)).
		Put("score", float64(seq%1000)/10).
		Put("active", seq%2 == 0)
}

// Payload is the value of the bytes shape: the task (4 bytes) and the
// sequence number (8 bytes), big-endian, then filler up to size.
func Payload(task int, seq int64, size int) []byte {
	return putPayload(make([]byte, max(size, 12)), task, seq, size)
}

// putPayload writes Payload into the first max(size, 12) bytes of b and
// returns them, with a capacity of size: appending to a value does not
// overwrite the next one.
func putPayload(b []byte, task int, seq int64, size int) []byte {
	b = b[:max(size, 12)]
	binary.BigEndian.PutUint32(b, uint32(task))
	binary.BigEndian.PutUint64(b[4:], uint64(seq))
	for i, off := 12, int((12+seq)%26); i < len(b); {
		n := copy(b[i:], filler[off:])
		i, off = i+n, 0
	}
	return b[:size:size]
}

// ParsePayload returns the task and sequence number of a bytes-shape value.
func ParsePayload(b []byte) (task int, seq int64, ok bool) {
	if len(b) < 12 {
		return 0, 0, false
	}
	return int(binary.BigEndian.Uint32(b)), int64(binary.BigEndian.Uint64(b[4:])), true
}

// Stop does nothing: the task holds no resources.
func (t *Task) Stop() error { return nil }

func sleep(ctx context.Context, d time.Duration) {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
	case <-ctx.Done():
	}
}
