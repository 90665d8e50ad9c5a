package worker

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcd-project/kcd/daemon/connect"
)

// deadLetters sends the records a sink task skipped to the connector's
// dead letter queue topic (errors.deadletterqueue.topic.name) through the
// worker's producer. Offsets are committed only after the queue has them.
// A nil *deadLetters sends nothing.
type deadLetters struct {
	tr *taskRun

	mu      sync.Mutex
	pending int
	idle    chan struct{} // closed when pending drops to 0
	err     error

	ensureMu sync.Mutex // ReportErrant may send from the task's goroutines
	topicOK  bool
}

func newDeadLetters(tr *taskRun) *deadLetters { return &deadLetters{tr: tr} }

// The headers Kafka Connect adds with
// errors.deadletterqueue.context.headers.enable.
const dlqHeaderPrefix = "__connect.errors."

// sendStage sends the original record r that failed at stage, in class;
// done, when set, is called once the queue has it (or could not take it).
func (d *deadLetters) sendStage(r *kgo.Record, cause error, stage, class string, done func(error)) {
	if d == nil {
		if done != nil {
			done(nil)
		}
		return
	}
	tr := d.tr
	d.ensureMu.Lock()
	if !d.topicOK {
		if err := tr.w.topics.ensure(tr.ctx, tr.settings.dlqTopic, 1, tr.settings.dlqRF); err != nil {
			d.ensureMu.Unlock()
			tr.stats.dlqRequests.Add(1)
			tr.stats.dlqFailed.Add(1)
			if done != nil {
				done(fmt.Errorf("create the dead letter queue %s: %w", tr.settings.dlqTopic, err))
			}
			return
		}
		d.topicOK = true
	}
	d.ensureMu.Unlock()
	// As Kafka Connect's DeadLetterQueueReporter: the original key, value,
	// headers and timestamp, to a partition the producer picks.
	rec := &kgo.Record{Topic: tr.settings.dlqTopic, Key: r.Key, Value: r.Value, Headers: r.Headers, Timestamp: r.Timestamp, Context: tr.w.produceCtx}
	if tr.settings.dlqHeaders {
		rec.Headers = contextHeaders(r, tr.id, stage, class, cause, tr.sup.mask)
	}
	// Bounded: past the task's in-flight limit, wait for the queue first.
	if d.count() >= tr.w.cfg.Limits.TaskInFlightRecords {
		_ = d.wait(tr.ctx)
	}
	d.mu.Lock()
	d.pending++
	d.mu.Unlock()
	tr.stats.dlqRequests.Add(1)
	tr.w.client.Produce(rec.Context, rec, func(_ *kgo.Record, err error) {
		if err != nil {
			tr.stats.dlqFailed.Add(1)
			err = fmt.Errorf("send to the dead letter queue %s: %w", tr.settings.dlqTopic, err)
		}
		d.mu.Lock()
		d.pending--
		if err != nil && d.err == nil {
			d.err = err
		}
		if d.pending == 0 && d.idle != nil {
			close(d.idle)
			d.idle = nil
		}
		d.mu.Unlock()
		if done != nil {
			done(err)
		}
	})
}

func (d *deadLetters) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.pending
}

// wait waits until the queue acknowledged everything sent.
func (d *deadLetters) wait(ctx context.Context) error {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	if d.pending == 0 {
		err := d.err
		d.mu.Unlock()
		return err
	}
	if d.idle == nil {
		d.idle = make(chan struct{})
	}
	idle := d.idle
	d.mu.Unlock()
	select {
	case <-idle:
	case <-ctx.Done():
		return ctx.Err()
	}
	return d.failure()
}

func (d *deadLetters) failure() error {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.err
}

// contextHeaders are r's headers followed by Kafka Connect's error context
// headers (errors.deadletterqueue.context.headers.enable), in its order;
// partition and offset as decimal strings, as Kafka Connect writes them.
// The message and stack trace go through mask: they may echo a secret of
// the connector's config.
func contextHeaders(r *kgo.Record, id TaskID, stage, class string, cause error, mask func(string) string) []kgo.RecordHeader {
	h := func(k, v string) kgo.RecordHeader {
		return kgo.RecordHeader{Key: dlqHeaderPrefix + k, Value: []byte(v)}
	}
	exc := exceptionClass(cause)
	msg := mask(exceptionMessage(cause))
	return append(append(make([]kgo.RecordHeader, 0, len(r.Headers)+10), r.Headers...),
		h("topic", r.Topic),
		h("partition", strconv.Itoa(int(r.Partition))),
		h("offset", strconv.FormatInt(r.Offset, 10)),
		h("connector.name", id.Connector),
		h("task.id", strconv.Itoa(id.Task)),
		h("stage", stage),
		h("class.name", class),
		h("exception.class.name", exc),
		h("exception.message", msg),
		h("exception.stacktrace", stackTrace(exc, cause, mask)),
	)
}

// stackTrace writes cause as Java prints an exception: a Java exception's
// own stack trace, else its class and message, then each cause in the
// chain (kcd has no Java frames to show).
func stackTrace(exc string, cause error, mask func(string) string) string {
	if je, ok := errors.AsType[connect.ExceptionError](cause); ok && je.ExceptionClass() != "" && je.ExceptionStack() != "" {
		return mask(je.ExceptionStack())
	}
	var b strings.Builder
	b.WriteString(exc)
	b.WriteString(": ")
	b.WriteString(mask(cause.Error()))
	b.WriteByte('\n')
	for e := errors.Unwrap(cause); e != nil; e = errors.Unwrap(e) {
		if _, ok := e.(*stageError); ok {
			continue
		}
		fmt.Fprintf(&b, "Caused by: %s\n", mask(e.Error()))
	}
	return b.String()
}
