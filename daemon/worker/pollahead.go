package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kcd-project/kcd/daemon/connect"
)

// Polling ahead: a source task's Poll runs on a goroutine of its own (the
// poller), one call per request of the task's goroutine, so that the next
// batch is polled while the last one is converted and produced. A task's
// serial work per record is then the larger of Poll's and the send's
// rather than their sum.
//
// The task's goroutine keeps every decision: it asks for the next batch
// before it sends the last one only when the task is not paused, owned
// under the run's claim, and its budget has room for both batches; at
// most one batch is ahead. A batch goes through the same checks as on the
// serial path before anything of it is produced (the task's failure, a
// fencing among them; pause, which holds it until resume; the claim), in
// the order polled, so offsets commit as on the serial path. A batch
// polled ahead counts in the task's and the worker's bytes in flight
// (an estimate, budget.reserve) from when it is polled until it is sent;
// one polled when nothing else was is not counted until it is sent, as on
// the serial path.
//
// Exactly-once tasks keep the serial path: transaction.boundary=poll
// makes a transaction of each Poll batch, committed before the next Poll,
// as in Kafka Connect. So do tasks that poll ahead themselves
// (connect.SourcePollsAhead: the Java host's).

// polledBatch is what one request to the poller gave.
type polledBatch struct {
	recs       []*connect.SourceRecord
	err        error         // Poll's
	recycleErr error         // RecycleRecords', before Poll: Poll was not called
	took       time.Duration // in Poll
	est        int64         // estimateBytes(recs)
	reserved   int64         // of est, counted in the budget until recs are sent
}

// pollRequest asks the poller for one Poll.
type pollRequest struct {
	recycle [][]*connect.SourceRecord // handed back to the task first
	ahead   bool                      // while the last batch is sent: counted in the budget
}

// poller calls a task's Poll on its own goroutine.
type poller struct {
	st     *sourceRun
	ctx    context.Context // Poll's: ends with the task's, or when the loop ends
	cancel context.CancelFunc
	// reqs asks for one Poll; out is where its batch arrives. One
	// request at most is out, so neither side ever blocks on a send.
	reqs    chan pollRequest
	out     chan polledBatch
	done    chan struct{}
	pending bool // task goroutine only: a request is out, its batch not taken
}

func (st *sourceRun) startPoller() *poller {
	ctx, cancel := context.WithCancel(st.tr.ctx)
	p := &poller{st: st, ctx: ctx, cancel: cancel,
		reqs: make(chan pollRequest, 1), out: make(chan polledBatch, 1), done: make(chan struct{})}
	go p.run()
	return p
}

func (p *poller) run() {
	defer close(p.done)
	for req := range p.reqs {
		p.out <- p.poll(req)
	}
}

// poll gives the recycler its batches back, then polls.
func (p *poller) poll(req pollRequest) (b polledBatch) {
	st := p.st
	for _, recs := range req.recycle {
		if err := safe("RecycleRecords", func() error { st.recycler.RecycleRecords(recs); return nil }); err != nil {
			b.recycleErr = err
			return b
		}
	}
	start := time.Now()
	b.err = safe("Poll", func() (err error) {
		b.recs, err = st.task.Poll(p.ctx)
		return err
	})
	b.took = time.Since(start)
	b.est = estimateBytes(b.recs)
	if req.ahead {
		b.reserved = b.est
		st.budget.reserve(b.reserved)
	}
	return b
}

// request asks for the next batch; req.recycle is handed back to the task
// first, on the poller's goroutine: never while Poll runs.
func (p *poller) request(req pollRequest) {
	p.pending = true
	p.reqs <- req
}

// take waits for the batch requested; false when the task must stop
// first.
func (p *poller) take(ctx context.Context) (polledBatch, bool) {
	select {
	case b := <-p.out:
		p.pending = false
		return b, true
	case <-ctx.Done():
		return polledBatch{}, false
	}
}

// stop ends a Poll under way (its context ends: Poll must return then)
// and the poller's goroutine, and gives back the budget of a batch polled
// and not taken: it is dropped, its offsets never committed; the next run
// of the task polls its records again.
func (p *poller) stop() {
	p.cancel()
	close(p.reqs)
	<-p.done
	select {
	case b := <-p.out:
		p.st.budget.unreserve(b.reserved)
	default:
	}
}

// estimateBytes is what a polled batch is counted as in the budget until
// it is sent: recordOverhead per record besides its keys, values and
// headers, whose strings and byte slices count their length and other
// values a small guess (their converted size is known only once
// converted).
func estimateBytes(recs []*connect.SourceRecord) int64 {
	var n int64
	for _, r := range recs {
		if r == nil {
			continue
		}
		n += recordOverhead + valueBytes(r.Key) + valueBytes(r.Value)
		for _, h := range r.Headers {
			n += int64(len(h.Key)) + valueBytes(h.Value)
		}
	}
	return n
}

func valueBytes(v any) int64 {
	switch v := v.(type) {
	case nil:
		return 0
	case string:
		return int64(len(v))
	case []byte:
		return int64(len(v))
	}
	return 64
}

// pollsAhead tells whether the task's Poll runs on the poller.
func (st *sourceRun) pollsAhead() bool {
	if st.txn {
		return false
	}
	_, self := st.task.(connect.SourcePollsAhead)
	return !self
}

// loopAhead is loop with Poll on the poller: it polls and sends until the
// task must stop or fails.
func (st *sourceRun) loopAhead() error {
	tr := st.tr
	p := st.startPoller()
	defer p.stop()
	var (
		retries int
		// toRecycle: batches sent whose records the task gets back before
		// its next Poll (two at most: the one before last, and the last
		// when nothing was polled ahead of it).
		toRecycle [][]*connect.SourceRecord
		held      int64 // the budget reserved for the batch taken and not sent yet
	)
	defer func() { st.budget.unreserve(held) }()
	ask := func(ahead bool) {
		p.request(pollRequest{recycle: toRecycle, ahead: ahead})
		toRecycle = nil
	}
	for {
		if err := st.failure(); err != nil {
			return err
		}
		if tr.ctx.Err() != nil {
			return nil
		}
		if !p.pending {
			if tr.waitWhilePaused() {
				continue
			}
			// Back-pressure: no Poll while the task or the worker is full.
			if err := st.budget.waitRoom(tr.ctx); err != nil {
				continue
			}
			ask(false)
		}
		b, ok := p.take(tr.ctx)
		if !ok {
			return nil
		}
		held = b.reserved
		st.polled(b.recs, b.took)
		if b.recycleErr != nil {
			return fmt.Errorf("recycle records: %w", b.recycleErr)
		}
		if b.err != nil {
			if tr.ctx.Err() != nil {
				return nil
			}
			if re := (*connect.RetriableError)(nil); errors.As(b.err, &re) {
				st.budget.unreserve(held)
				held = 0
				retries++
				d := retryBackoff(tr, retries)
				tr.log.Warn("poll failed; retrying", "err", b.err, "retry_in", d)
				tr.sleep(d)
				continue
			}
			return fmt.Errorf("poll: %w", b.err)
		}
		retries = 0
		// A batch polled before a pause waits for the resume: a paused
		// task produces nothing.
		for tr.waitWhilePaused() {
			if tr.ctx.Err() != nil {
				return nil
			}
			if err := st.failure(); err != nil {
				return err
			}
		}
		// As on the serial path: nothing is produced after a failure (a
		// fencing), or by a worker cut off from the coordinator.
		if err := st.failure(); err != nil {
			return err
		}
		st.now = time.Now()
		if ok, err := tr.waitClaim(); !ok {
			return err
		}
		st.budget.unreserve(held)
		held = 0
		// The next batch is polled while this one is sent when there is
		// room for both, the next taken as large as this one.
		if n := len(b.recs); n > 0 && !tr.paused.Load() && st.budget.roomFor(2*n, 2*b.est) {
			ask(true)
		}
		err := st.sendAll(b.recs)
		if err != nil {
			if tr.ctx.Err() != nil && !isFencing(err) {
				return nil // stopping: the rest is polled again after a restart
			}
			return err
		}
		if st.recycler != nil && len(b.recs) > 0 {
			// sendAll keeps nothing of the records but what they point to.
			toRecycle = append(toRecycle, b.recs)
		}
	}
}
