package javahost

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/kcd-project/kcd/daemon/connect"
	"github.com/kcd-project/kcd/daemon/javahost/hostpb"
)

// sourceTask proxies a Java SourceTask. Acknowledgements of records
// (CommitRecord) are batched into the next poll, or the commit at stop.
type sourceTask struct {
	taskBase

	mu   sync.Mutex
	seqs map[*connect.SourceRecord]uint64 // records in flight: at most the runtime's in-flight limit
	acks []*hostpb.Ack

	// pending is a poll whose caller gave up waiting, or the next poll,
	// sent while the runtime handles the last batch (Poll is called from
	// one goroutine only).
	pending chan pollResult
	parts   partitionCache // only Poll's goroutine uses it
}

func (t *sourceTask) Start(ctx connect.SourceTaskContext, config map[string]string) error {
	t.seqs = map[*connect.SourceRecord]uint64{}
	t.parts = partitionCache{}
	t.offsets = ctx.OffsetReader()
	return t.start(ctx, config, false)
}

func (t *sourceTask) takeAcks() []*hostpb.Ack {
	t.mu.Lock()
	defer t.mu.Unlock()
	a := t.acks
	t.acks = nil
	return a
}

// pollResult is the host's answer to one poll.
type pollResult struct {
	resp *hostpb.Response
	err  error
}

// Poll runs the task's poll in the host. When ctx ends first, the poll
// goes on in the host and its answer is what the next Poll returns: its
// records are not lost, and their acks are not sent twice.
func (t *sourceTask) Poll(ctx context.Context) ([]*connect.SourceRecord, error) {
	ch := t.pending
	t.pending = nil
	if ch == nil {
		ch = t.sendPoll()
	}
	var r pollResult
	select {
	case r = <-ch:
	case <-ctx.Done():
		t.pending = ch
		return nil, ctx.Err()
	}
	resp, err := r.resp, r.err
	if err != nil {
		if err == errStopped {
			return nil, nil
		}
		return nil, err
	}
	recs := resp.GetPoll().GetRecords()
	if len(recs) == 0 && t.inFlight() >= hostMaxUnacked {
		// The host polls no more until records are acked: wait a little
		// for acks to gather rather than ask again at once.
		select {
		case <-time.After(fullHostPause):
		case <-ctx.Done():
		}
		return nil, nil
	}
	if len(recs) > 0 {
		// The host polls the next batch while the runtime converts and
		// sends this one, as Kafka Connect's task polls while its producer
		// sends: one batch ahead at most, and only while records come.
		t.pending = t.sendPoll()
	}
	out := make([]*connect.SourceRecord, 0, len(recs))
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, r := range recs {
		sp, spJSON, err := t.parts.decode(r.GetSourcePartition())
		if err != nil {
			return nil, fmt.Errorf("record %d of the host: source partition: %w", r.GetSeq(), err)
		}
		so, err := decodeJSONMap(r.GetSourceOffset())
		if err != nil {
			return nil, fmt.Errorf("record %d of the host: source offset: %w", r.GetSeq(), err)
		}
		rec := &connect.SourceRecord{SourcePartition: sp, SourcePartitionJSON: spJSON, SourceOffset: so, Topic: r.GetTopic(), Dropped: r.GetDropped()}
		if r.Partition != nil {
			p := r.GetPartition()
			rec.Partition = &p
		}
		if r.Key != nil {
			rec.Key = r.Key
		}
		if r.Value != nil {
			rec.Value = r.Value
		}
		if r.TimestampMs != nil {
			rec.Timestamp = time.UnixMilli(r.GetTimestampMs())
		}
		for _, h := range r.GetHeaders() {
			hd := connect.Header{Key: h.GetKey()}
			if h.Value != nil {
				hd.Value = h.Value
			}
			rec.Headers = append(rec.Headers, hd)
		}
		t.seqs[rec] = r.GetSeq()
		out = append(out, rec)
	}
	return out, nil
}

// hostMaxUnacked is the host's bound on records polled and not yet acked
// (SourceRunner.MAX_UNACKED); at it, the host's polls return nothing.
const hostMaxUnacked = 100_000

// fullHostPause is how long Poll waits before asking a full host again.
const fullHostPause = 50 * time.Millisecond

// inFlight counts records polled and not yet acked to the host.
func (t *sourceTask) inFlight() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.seqs) + len(t.acks)
}

// sendPoll asks the host for a batch, with the acks so far, and returns
// where its answer arrives.
func (t *sourceTask) sendPoll() chan pollResult {
	ch := make(chan pollResult, 1)
	req := &hostpb.Request{Call: &hostpb.Request_Poll{Poll: &hostpb.PollRequest{Task: t.id, Acks: t.takeAcks()}}}
	go func() {
		resp, err := t.call(context.Background(), req) // bounded by the hang limit and Stop
		ch <- pollResult{resp, err}
	}()
	return ch
}

// CommitRecord acknowledges a record to the host with its metadata; a
// dropped record comes with empty metadata.
func (t *sourceTask) CommitRecord(rec *connect.SourceRecord, md connect.RecordMetadata) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	seq, ok := t.seqs[rec]
	if !ok {
		return nil
	}
	delete(t.seqs, rec)
	a := &hostpb.Ack{Seq: seq}
	if md.Topic != "" && !rec.Dropped {
		a.Topic, a.Partition, a.Offset, a.HasMetadata = md.Topic, md.Partition, md.Offset, true
	}
	t.acks = append(t.acks, a)
	return nil
}

// Commit sends the acks so far and calls the task's commit, after the
// runtime stored the offsets (connect.SourceCommitter).
func (t *sourceTask) Commit() error {
	_, err := t.call(context.Background(), &hostpb.Request{Call: &hostpb.Request_SourceCommit{SourceCommit: &hostpb.SourceCommitRequest{Task: t.id, Acks: t.takeAcks()}}})
	if err == errStopped {
		return nil
	}
	return err
}

// PollsAhead (connect.SourcePollsAhead): Poll sends the host's next poll
// itself before it returns a batch, so the runtime polls after it sent
// the last one.
func (t *sourceTask) PollsAhead() {}

func (t *sourceTask) Stop() error {
	return t.stop(&hostpb.Request{Call: &hostpb.Request_SourceCommit{SourceCommit: &hostpb.SourceCommitRequest{Task: t.id, Acks: t.takeAcks()}}})
}
