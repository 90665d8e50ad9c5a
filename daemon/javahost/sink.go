package javahost

import (
	"context"
	"time"

	"github.com/kcd-project/kcd/daemon/connect"
	"github.com/kcd-project/kcd/daemon/javahost/hostpb"
)

// sinkTask proxies a Java SinkTask: records go to the host as the raw
// Kafka records; what the task asked of its SinkTaskContext comes back
// with each answer and is applied through the runtime's
// connect.SinkTaskControl when it offers one.
type sinkTask struct {
	taskBase
	ctl connect.SinkTaskControl // nil: the runtime offers none
	log interface {
		Warn(msg string, args ...any)
	}
}

func (t *sinkTask) Start(ctx connect.SinkTaskContext, config map[string]string) error {
	t.log = ctx.Logger()
	if ctl, ok := ctx.(connect.SinkTaskControl); ok {
		t.ctl = ctl
		t.errant = ctl.ReportErrant
	}
	return t.start(ctx, config, true)
}

func tps(ps []connect.TopicPartition) []*hostpb.TopicPartition {
	out := make([]*hostpb.TopicPartition, len(ps))
	for i, p := range ps {
		out[i] = &hostpb.TopicPartition{Topic: p.Topic, Partition: p.Partition}
	}
	return out
}

func fromTPs(ps []*hostpb.TopicPartition) []connect.TopicPartition {
	out := make([]connect.TopicPartition, len(ps))
	for i, p := range ps {
		out[i] = connect.TopicPartition{Topic: p.GetTopic(), Partition: p.GetPartition()}
	}
	return out
}

func (t *sinkTask) Open(partitions []connect.TopicPartition) error {
	_, err := t.call(context.Background(), &hostpb.Request{Call: &hostpb.Request_Open{Open: &hostpb.PartitionsRequest{Task: t.id, Partitions: tps(partitions)}}})
	return t.quiet(err)
}

func (t *sinkTask) Close(partitions []connect.TopicPartition) error {
	_, err := t.call(context.Background(), &hostpb.Request{Call: &hostpb.Request_Close{Close: &hostpb.PartitionsRequest{Task: t.id, Partitions: tps(partitions)}}})
	return t.quiet(err)
}

// quiet: a call cut short by Stop is no failure.
func (t *sinkTask) quiet(err error) error {
	if err == errStopped {
		return nil
	}
	return err
}

func (t *sinkTask) Put(records []*connect.SinkRecord) error {
	req := &hostpb.PutRequest{Task: t.id, Records: make([]*hostpb.SinkRecord, len(records))}
	for i, r := range records {
		req.Records[i] = sinkRecordPB(r)
	}
	resp, err := t.call(context.Background(), &hostpb.Request{Call: &hostpb.Request_Put{Put: req}})
	if err != nil {
		return t.quiet(err)
	}
	t.apply(resp.GetPut().GetContext())
	return nil
}

// BorrowedSinkRecords is connect.BorrowedSinkRecords: Put copies what it
// sends of the records into its request, and the host gets the bytes.
func (t *sinkTask) BorrowedSinkRecords() {}

// PreCommit calls the task's preCommit (flush by default): what it
// returns may be committed.
func (t *sinkTask) PreCommit(offsets map[connect.TopicPartition]int64) (map[connect.TopicPartition]int64, error) {
	req := &hostpb.PreCommitRequest{Task: t.id}
	for tp, o := range offsets {
		req.Offsets = append(req.Offsets, &hostpb.PartitionOffset{Topic: tp.Topic, Partition: tp.Partition, Offset: o})
	}
	resp, err := t.call(context.Background(), &hostpb.Request{Call: &hostpb.Request_PreCommit{PreCommit: req}})
	if err != nil {
		return nil, t.quiet(err)
	}
	pc := resp.GetPreCommit()
	t.apply(pc.GetContext())
	out := make(map[connect.TopicPartition]int64, len(pc.GetOffsets()))
	for _, o := range pc.GetOffsets() {
		out[connect.TopicPartition{Topic: o.GetTopic(), Partition: o.GetPartition()}] = o.GetOffset()
	}
	return out, nil
}

// Flush is PreCommit for a runtime that does not call it.
func (t *sinkTask) Flush(offsets map[connect.TopicPartition]int64) error {
	_, err := t.PreCommit(offsets)
	return err
}

func (t *sinkTask) Stop() error { return t.stop(nil) }

// apply hands what the task asked of its context to the runtime.
func (t *sinkTask) apply(c *hostpb.SinkContext) {
	if c == nil {
		return
	}
	if t.ctl == nil {
		if len(c.GetResetOffsets())+len(c.GetPause())+len(c.GetResume()) > 0 || c.GetTimeoutMs() > 0 || c.GetRequestCommit() {
			t.log.Warn("the runtime offers no SinkTaskControl: the java task's context requests are ignored")
		}
		return
	}
	if r := c.GetResetOffsets(); len(r) > 0 {
		m := make(map[connect.TopicPartition]int64, len(r))
		for _, o := range r {
			m[connect.TopicPartition{Topic: o.GetTopic(), Partition: o.GetPartition()}] = o.GetOffset()
		}
		t.ctl.ResetOffsets(m)
	}
	if p := c.GetPause(); len(p) > 0 {
		t.ctl.Pause(fromTPs(p)...)
	}
	if p := c.GetResume(); len(p) > 0 {
		t.ctl.Resume(fromTPs(p)...)
	}
	if ms := c.GetTimeoutMs(); ms > 0 {
		t.ctl.Timeout(time.Duration(ms) * time.Millisecond)
	}
	if c.GetRequestCommit() {
		t.ctl.RequestCommit()
	}
}

// sinkRecordPB is a record as the host gets it: the raw Kafka record.
func sinkRecordPB(r *connect.SinkRecord) *hostpb.SinkRecord {
	pr := &hostpb.SinkRecord{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset}
	if !r.Timestamp.IsZero() {
		pr.TimestampMs = r.Timestamp.UnixMilli()
	}
	if b, ok := r.Key.([]byte); ok && b != nil {
		pr.Key = b
	}
	if b, ok := r.Value.([]byte); ok && b != nil {
		pr.Value = b
	}
	for _, h := range r.Headers {
		hh := &hostpb.Header{Key: h.Key}
		if b, ok := h.Value.([]byte); ok && b != nil {
			hh.Value = b
		}
		pr.Headers = append(pr.Headers, hh)
	}
	return pr
}

// sinkRecordOf is the record of an errant-record report, raw as read.
func sinkRecordOf(r *hostpb.SinkRecord) *connect.SinkRecord {
	rec := &connect.SinkRecord{Topic: r.GetTopic(), Partition: r.GetPartition(), Offset: r.GetOffset(),
		Timestamp: time.UnixMilli(r.GetTimestampMs())}
	if r.Key != nil {
		rec.Key = r.Key
	}
	if r.Value != nil {
		rec.Value = r.Value
	}
	for _, h := range r.GetHeaders() {
		hd := connect.Header{Key: h.GetKey()}
		if h.Value != nil {
			hd.Value = h.Value
		}
		rec.Headers = append(rec.Headers, hd)
	}
	return rec
}
