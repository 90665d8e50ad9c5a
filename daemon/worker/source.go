package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcd-project/kcd/daemon/connect"
	"github.com/kcd-project/kcd/daemon/connect/transforms"
)

// recordOverhead approximates the memory an in-flight record takes besides
// its key, value and headers (its kgo.Record and record headers, its slot
// in the send batch and in the tracker, franz-go's promise), so that the
// byte limits bound memory rather than payload: about 360 bytes with two
// headers (kgo.Record 160, record headers 80, batch and tracker slots 90,
// the promise 32), and its offset map when it has one; 512 errs on the
// side of memory.
const recordOverhead = 512

// sourceRun is a running source task: it polls records, converts them,
// produces them and commits the source offsets Kafka acknowledged in
// order.
type sourceRun struct {
	tr        *taskRun
	task      connect.SourceTask
	committer connect.SourceRecordCommitter
	recycler  connect.SourceRecordRecycler // nil for a committer
	cs        converters
	client    *kgo.Client
	pctx      context.Context // every record's context
	explicit  context.Context // the same, marking a partition chosen by the task
	tracker   *offsetTracker
	budget    *budget
	topics    map[string]bool // created (or found) already
	lastTopic string          // of the last record sent: in topics
	now       time.Time       // when the batch being sent was polled
	// simpleHeaders: the header converter is the built-in
	// SimpleHeaderConverter, whose values headerValue formats itself.
	simpleHeaders bool
	// serialized: the connector's records are bytes already
	// (connect.SerializedRecords); cs is unset.
	serialized bool
	// chain is the connector's transforms (nil: none), applied after
	// Poll and before conversion.
	chain *transforms.Chain
	// Exactly-once support (txn.go): client is the task's transactional
	// producer; inTxn says a transaction is open, since txnFrom.
	txn     bool
	inTxn   bool
	txnFrom time.Time
	// storeNow asks the commit loop for a store before its next tick.
	storeNow chan struct{}
	// notifier calls the task's Commit after offsets were stored; nil
	// unless the task is a connect.SourceCommitter.
	notifier *commitNotifier

	failMu  sync.Mutex
	failErr error
	// lastUse: the topic use last noted for GET /connectors/{name}/topics.
	lastUse lastUse
}

func runSource(tr *taskRun) error {
	conn, ok := tr.plugin.New().(connect.SourceConnector)
	if !ok {
		return fmt.Errorf("%s is not a source connector", tr.plugin.Class)
	}
	task := conn.NewTask()
	serialized := isSerialized(conn, task)
	var cs converters
	if !serialized {
		var err error
		if cs, err = tr.w.newConverters(tr.connCfg); err != nil {
			return err
		}
	}
	var chain *transforms.Chain
	if !serialized {
		var err error
		if chain, err = transforms.NewChain(tr.connCfg); err != nil {
			return fmt.Errorf("transforms: %w", err)
		}
	}
	lim := tr.w.cfg.Limits
	st := &sourceRun{
		chain:      chain,
		tr:         tr,
		task:       task,
		cs:         cs,
		serialized: serialized,
		client:     tr.w.client,
		pctx:       tr.w.produceCtx,
		tracker:    newOffsetTracker(tr.id.Connector, lim.TaskInFlightRecords),
		budget:     tr.stats.budget,
		topics:     map[string]bool{},
		storeNow:   make(chan struct{}, 1),
	}
	st.committer, _ = st.task.(connect.SourceRecordCommitter)
	if st.committer == nil {
		st.recycler, _ = st.task.(connect.SourceRecordRecycler)
	}
	_, st.simpleHeaders = cs.header.(simpleHeaderConverter)
	var err error
	if tr.w.cfg.exactlyOnce() {
		ok, err := st.openTransactional()
		if st.client != nil {
			defer tr.closeProducer()
		}
		if !ok {
			return err
		}
		st.pctx = tr.hard
	} else if tr.w.cfg.ProducerPerTask || tr.settings.ownProducer {
		// A connector whose producer overrides differ from the worker's
		// producer settings cannot share its producer.
		id := fmt.Sprintf("connector-producer-%s-%d", tr.id.Connector, tr.id.Task)
		if st.client, err = tr.w.newClient(tr.w.producerOpts(tr.settings.producer, false, lim.TaskInFlightRecords, id)...); err != nil {
			return fmt.Errorf("producer: %w", err)
		}
		defer st.client.Close()
		st.pctx = tr.hard
	}
	st.explicit = context.WithValue(st.pctx, explicitPartition{}, true)
	return st.run()
}

func (st *sourceRun) run() error {
	tr := st.tr
	cfg := maps.Clone(tr.config)
	if err := safe("Start", func() error { return st.task.Start(sourceContext{taskContext{tr}}, cfg) }); err != nil {
		_ = safe("Stop", st.task.Stop)
		return fmt.Errorf("start task: %w", err)
	}
	tr.started()

	if c, ok := st.task.(connect.SourceCommitter); ok {
		st.notifier = newCommitNotifier(c, tr.log)
	}
	stopCommits := make(chan struct{})
	commitsDone := make(chan struct{})
	go st.commitLoop(stopCommits, commitsDone)
	var err error
	if st.pollsAhead() {
		err = st.loopAhead()
	} else {
		err = st.loop()
	}
	close(stopCommits)
	<-commitsDone
	// As Kafka Connect: the last offsets are stored and the task told so
	// (Commit) before it stops.
	if !tr.halted() {
		if st.txn {
			st.endTxn(err)
		} else {
			st.drain()
		}
		st.commit(tr.hard)
	}
	if st.notifier != nil {
		st.notifier.close(tr.hard, tr.w.cfg.ShutdownTimeout)
	}
	if serr := safe("Stop", st.task.Stop); serr != nil {
		tr.log.Warn("stop task", "err", serr)
	}
	return err
}

// loop polls and sends until the task must stop or fails, one after the
// other on the task's goroutine: the path of exactly-once tasks and of
// those that poll ahead themselves (pollahead.go).
func (st *sourceRun) loop() error {
	tr := st.tr
	retries := 0
	for {
		if err := st.failure(); err != nil {
			return err
		}
		if tr.ctx.Err() != nil {
			return nil
		}
		if st.inTxn && st.commitDue() {
			if ok, err := tr.waitClaim(); !ok {
				return err
			}
			if err := st.commitTxn(tr.hard); err != nil {
				return err
			}
		}
		if tr.waitWhilePaused() {
			continue
		}
		// Back-pressure: no Poll while the task or the worker is full.
		if err := st.budget.waitRoom(tr.ctx); err != nil {
			continue
		}
		var recs []*connect.SourceRecord
		start := time.Now()
		err := safe("Poll", func() (err error) {
			recs, err = st.task.Poll(tr.ctx)
			return err
		})
		st.polled(recs, time.Since(start))
		if err != nil {
			if tr.ctx.Err() != nil {
				return nil
			}
			if re := (*connect.RetriableError)(nil); errors.As(err, &re) {
				retries++
				d := retryBackoff(tr, retries)
				tr.log.Warn("poll failed; retrying", "err", err, "retry_in", d)
				tr.sleep(d)
				continue
			}
			return fmt.Errorf("poll: %w", err)
		}
		retries = 0
		// Records without a timestamp get the time of their batch: one
		// clock reading per Poll instead of one per record in franz-go
		// (a few % of the CPU of a task on a VM).
		st.now = time.Now()
		// A worker cut off from the coordinator (or frozen, then resumed)
		// must not produce what it polled: the task may run elsewhere now.
		// The records' offsets are not committed; the owner polls them again.
		if ok, err := tr.waitClaim(); !ok {
			return err
		}
		err = st.sendAll(recs)
		if st.recycler != nil && len(recs) > 0 {
			// sendAll keeps nothing of the records but what they point to.
			if rerr := safe("RecycleRecords", func() error { st.recycler.RecycleRecords(recs); return nil }); rerr != nil && err == nil {
				err = fmt.Errorf("recycle records: %w", rerr)
			}
		}
		if err != nil {
			if tr.ctx.Err() != nil && !isFencing(err) {
				return nil // stopping: the rest is polled again after a restart
			}
			return err
		}
		if st.txn && (!st.inTxn || st.commitDue()) {
			// A worker that lost the task commits nothing: the transaction
			// is abandoned when the task stops.
			if ok, err := tr.waitClaim(); !ok {
				return err
			}
			if err := st.commitTxn(tr.hard); err != nil {
				return err
			}
		}
	}
}

// polled counts a Poll batch that took d.
func (st *sourceRun) polled(recs []*connect.SourceRecord, d time.Duration) {
	n := 0
	for _, r := range recs {
		if r != nil {
			n++
		}
	}
	if n == 0 {
		return
	}
	s := st.tr.stats
	s.polled.Add(int64(n))
	s.batch(n, d)
	storeMax(&s.peakBatch, int64(n))
}

func retryBackoff(tr *taskRun, n int) time.Duration {
	b := tr.w.cfg.RetryBackoff
	b.Max = tr.settings.retryMax
	return b.Delay(n)
}

// Converted records wait for budget in chunks of at most chunkRecords
// records and chunkBytes bytes: what is converted but not yet counted in
// flight stays that small, and budget and tracker are taken once per
// chunk rather than once per record. The FileStreamSource puts an offset
// on every chunkRecords-th line (file.offsetEvery).
const (
	chunkRecords = 128
	chunkBytes   = 1 << 20
)

// sendAll converts the records of a Poll batch and produces them in
// order, a chunk at a time. When a record cannot be sent, the ones before
// it still are, and its error is returned.
func (st *sourceRun) sendAll(recs []*connect.SourceRecord) error {
	nr, nh := 0, 0
	for _, r := range recs {
		if r != nil {
			nr++
			nh += len(r.Headers)
		}
	}
	b := getSendBatch(st, nr, nh)
	defer b.done() // the producer's hold: b is recycled once Kafka answered for all
	// b's slots [0, sent) are produced, [sent, n) converted and waiting.
	sent, n := 0, 0
	var waiting int64
	for _, r := range recs {
		if r == nil {
			continue
		}
		if err := st.prepare(b, r, n); err != nil {
			if perr := st.produce(b, sent, n); perr != nil {
				return perr
			}
			return err
		}
		waiting += b.sizes[n]
		n++
		if n-sent >= chunkRecords || waiting >= chunkBytes {
			if err := st.produce(b, sent, n); err != nil {
				return err
			}
			sent, waiting = n, 0
		}
	}
	return st.produce(b, sent, n)
}

// produce takes budget and tracker places for b's slots [from, to), as
// many at a time as the limits admit, and produces them.
func (st *sourceRun) produce(b *sendBatch, from, to int) error {
	tr := st.tr
	if st.txn && from < to {
		if err := st.begin(); err != nil {
			return err
		}
	}
	for i := from; i < to; {
		if tr.ctx.Err() != nil {
			return tr.ctx.Err() // stopping: the rest is polled again after a restart
		}
		k, err := st.budget.acquireSome(tr.ctx, b.sizes[i:to])
		if err != nil {
			return err
		}
		seq := st.tracker.addAll(b.pend[i : i+k])
		if i == 0 {
			b.base = seq // before the first Produce: acknowledgements read it
		} else if seq != b.base+uint64(i) {
			panic("worker: a batch's records are not consecutive in the tracker")
		}
		// The chunk's references at once, before its first Produce: one
		// atomic add rather than one per record.
		var produced int32
		for _, skip := range b.skipped[i : i+k] {
			if !skip {
				produced++
			}
		}
		b.refs.Add(produced)
		for j := i; j < i+k; j++ {
			if b.skipped[j] {
				// It still takes its place in the order, so its offset
				// commits; a dropped one's committer hears of it.
				var r *connect.SourceRecord
				if len(b.src) > 0 {
					r = b.src[j]
				}
				st.acked(b.base+uint64(j), r, nil, nil)
				continue
			}
			st.client.Produce(b.recs[j].Context, &b.recs[j], b.promise)
		}
		i += k
	}
	return nil
}

// prepare converts r into slot i of b, with its size and its place in
// the order, creating its topic first if need be.
func (st *sourceRun) prepare(b *sendBatch, r *connect.SourceRecord, i int) error {
	tr := st.tr
	rec := &b.recs[i]
	b.pend[i] = pending{partition: r.SourcePartition, offset: r.SourceOffset, partJSON: r.SourcePartitionJSON}
	orig := r // a committer gets back the record it polled, as in Kafka Connect
	if st.chain != nil && !r.Dropped {
		out, err := st.chain.Apply(transforms.FromSource(r))
		switch {
		case err != nil:
			tr.stats.failures.Add(1)
			attrs := []any{"topic", r.Topic}
			if tr.settings.logMessages {
				attrs = append(attrs, "key", r.Key, "value", r.Value)
			}
			if err := tr.recordFailed(err, "skipping a record a transformation failed on", attrs...); err != nil {
				return err
			}
			b.skipped[i], b.sizes[i] = true, 0
			if st.committer != nil {
				b.src[i] = r
			}
			return nil
		case out == nil:
			// Filtered out: nothing is produced, its offset commits.
			b.skipped[i], b.sizes[i] = true, 0
			if st.committer != nil {
				b.src[i] = r
			}
			return nil
		}
		r = transforms.ToSource(r, out)
	}
	if r.Dropped {
		// Nothing is produced; its offset commits in order all the same.
		b.skipped[i], b.sizes[i] = true, 0
		if st.committer != nil {
			b.src[i] = r
		}
		return nil
	}
	if r.Topic == "" {
		return errors.New("the task returned a record without a topic")
	}
	if skip, err := st.convertOrSkip(b, r, rec); err != nil {
		return err
	} else if skip {
		*rec = kgo.Record{}
		b.skipped[i], b.sizes[i] = true, 0
		if st.committer != nil {
			b.src[i] = orig // committed as a dropped one
		}
		return nil
	}
	if r.Topic != st.lastTopic {
		if !st.topics[r.Topic] {
			if err := tr.w.topics.ensure(tr.ctx, r.Topic, tr.settings.topicPartitions, tr.settings.topicReplication); err != nil {
				return err
			}
			st.topics[r.Topic] = true
		}
		st.lastTopic = r.Topic
	}
	size := recordOverhead + int64(len(rec.Key)+len(rec.Value))
	for _, h := range rec.Headers {
		size += int64(len(h.Key) + len(h.Value))
	}
	b.sizes[i], b.pend[i].size = size, size
	rec.Context = st.pctx
	if r.Partition != nil {
		rec.Partition, rec.Context = *r.Partition, st.explicit
	}
	if st.committer != nil {
		b.src[i] = orig // CommitRecord gets it back
	}
	// Otherwise not keeping r lets the task's record (its Connect data,
	// and the batch it came in) go as soon as it is converted: only the
	// kgo.Record stays in flight.
	return nil
}

func (st *sourceRun) convert(b *sendBatch, r *connect.SourceRecord, rec *kgo.Record) error {
	if st.serialized {
		return st.convertSerialized(b, r, rec)
	}
	key, err := st.cs.key.FromConnectData(r.Topic, r.KeySchema, r.Key)
	if err != nil {
		return fmt.Errorf("convert the key of a record to %s: %w", r.Topic, err)
	}
	value, err := st.cs.value.FromConnectData(r.Topic, r.ValueSchema, r.Value)
	if err != nil {
		return fmt.Errorf("convert the value of a record to %s: %w", r.Topic, err)
	}
	// rec is zero: setting fields avoids copying whole structs (with
	// their write barriers) into the heap.
	rec.Topic, rec.Key, rec.Value, rec.Timestamp = r.Topic, key, value, r.Timestamp
	if r.Timestamp.IsZero() {
		rec.Timestamp = st.now
	}
	if len(r.Headers) > 0 {
		headers := b.headers(len(r.Headers))
		for i, h := range r.Headers {
			v, err := st.headerValue(b, r.Topic, h)
			if err != nil {
				return fmt.Errorf("convert header %s of a record to %s: %w", h.Key, r.Topic, err)
			}
			headers[i].Key, headers[i].Value = h.Key, v
		}
		rec.Headers = headers
	}
	return nil
}

// convertOrSkip converts r into rec, retrying as errors.retry.timeout
// says; skip is true when it failed and errors.tolerance=all skips it.
func (st *sourceRun) convertOrSkip(b *sendBatch, r *connect.SourceRecord, rec *kgo.Record) (skip bool, err error) {
	tr := st.tr
	err = st.convert(b, r, rec)
	if err == nil {
		return false, nil
	}
	tr.stats.failures.Add(1)
	if err = tr.retrying(err, func() error {
		*rec = kgo.Record{}
		return st.convert(b, r, rec)
	}); err == nil {
		return false, nil
	}
	attrs := []any{"topic", r.Topic}
	if tr.settings.logMessages {
		attrs = append(attrs, "key", r.Key, "value", r.Value)
	}
	return true, tr.recordFailed(err, "skipping a record that cannot be converted", attrs...)
}

// convertSerialized fills rec with the bytes of a serialized record as
// they are: its key, value and header values must be []byte or nil.
func (st *sourceRun) convertSerialized(b *sendBatch, r *connect.SourceRecord, rec *kgo.Record) error {
	key, ok := rawBytes(r.Key)
	if !ok {
		return fmt.Errorf("the key of a serialized record to %s is a %T, not []byte", r.Topic, r.Key)
	}
	value, ok := rawBytes(r.Value)
	if !ok {
		return fmt.Errorf("the value of a serialized record to %s is a %T, not []byte", r.Topic, r.Value)
	}
	rec.Topic, rec.Key, rec.Value, rec.Timestamp = r.Topic, key, value, r.Timestamp
	if r.Timestamp.IsZero() {
		rec.Timestamp = st.now
	}
	if len(r.Headers) > 0 {
		headers := b.headers(len(r.Headers))
		for i, h := range r.Headers {
			v, ok := rawBytes(h.Value)
			if !ok {
				return fmt.Errorf("header %s of a serialized record to %s is a %T, not []byte", h.Key, r.Topic, h.Value)
			}
			headers[i].Key, headers[i].Value = h.Key, v
		}
		rec.Headers = headers
	}
	return nil
}

// rawBytes returns the bytes of a serialized key, value or header value:
// nil (null) for nil.
func rawBytes(v any) ([]byte, bool) {
	switch v := v.(type) {
	case nil:
		return nil, true
	case []byte:
		return v, true
	}
	return nil, false
}

// headerValue converts a header value. The simple header converter's
// numbers and booleans are formatted into the batch's buffer, the same
// bytes as FromConnectData without an allocation each.
func (st *sourceRun) headerValue(b *sendBatch, topic string, h connect.Header) ([]byte, error) {
	if st.simpleHeaders {
		start := len(b.buf)
		if buf, ok := appendSimpleHeader(b.buf, h.Value); ok {
			b.buf = buf
			return buf[start:len(buf):len(buf)], nil
		}
	}
	return st.cs.header.FromConnectData(topic, h.Schema, h.Value)
}

// acked runs when Kafka answered for a record (kr is nil for a skipped
// one). It must be quick: franz-go calls it from its own goroutine.
func (st *sourceRun) acked(seq uint64, r *connect.SourceRecord, kr *kgo.Record, err error) {
	tr := st.tr
	ok := true
	switch {
	case err != nil && isFencing(err):
		ok = false
		st.fail(fenced(err))
	case err != nil && tr.settings.tolerateAll:
		tr.stats.failures.Add(1)
		_ = tr.recordFailed(err, "skipping a record Kafka refused", "topic", kr.Topic)
		// Committed with empty metadata, as Kafka Connect does: a task
		// that keeps records until committed (the Java host) lets it go.
		if r != nil {
			if cerr := safe("CommitRecord", func() error { return st.committer.CommitRecord(r, connect.RecordMetadata{}) }); cerr != nil {
				tr.log.Warn("commit record", "err", cerr)
			}
		}
	case err != nil:
		ok = false
		tr.stats.failures.Add(1)
		tr.stats.failed(false)
		st.fail(fmt.Errorf("produce to %s: %w", kr.Topic, err))
	case kr == nil && r != nil:
		// A dropped record, or one skipped because it could not be
		// converted, is committed with empty metadata (Topic "").
		if cerr := safe("CommitRecord", func() error { return st.committer.CommitRecord(r, connect.RecordMetadata{}) }); cerr != nil {
			tr.log.Warn("commit record", "err", cerr)
		}
	case kr != nil:
		tr.stats.records.Add(1)
		tr.w.used.useCached(&st.lastUse, tr.id, kr.Topic)
		if st.committer != nil {
			md := connect.RecordMetadata{Topic: kr.Topic, Partition: kr.Partition, Offset: kr.Offset}
			if cerr := safe("CommitRecord", func() error { return st.committer.CommitRecord(r, md) }); cerr != nil {
				tr.log.Warn("commit record", "err", cerr)
			}
		}
	}
	n, b := st.tracker.ack(seq, ok)
	st.budget.release(n, b)
}

// fail records why the task must stop: the first error, or a fencing,
// which says more (the task is not this worker's any more).
func (st *sourceRun) fail(err error) {
	st.failMu.Lock()
	if st.failErr == nil || (isFencing(err) && !isFencing(st.failErr)) {
		st.failErr = err
	}
	st.failMu.Unlock()
	st.tr.signal()
}

func (st *sourceRun) failure() error {
	st.failMu.Lock()
	defer st.failMu.Unlock()
	return st.failErr
}

// commitLoop stores committable offsets every flush interval, and when
// storeSoon asks.
func (st *sourceRun) commitLoop(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(st.tr.settings.flushInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			st.commit(st.tr.hard)
		case <-st.storeNow:
			st.commit(st.tr.hard)
		case <-stop:
			return
		}
	}
}

// storeSoon asks the commit loop to store the committable offsets now
// rather than at its next tick.
func (st *sourceRun) storeSoon() {
	select {
	case st.storeNow <- struct{}{}:
	default: // asked already
	}
}

// commit stores the offsets that became committable since the last time.
func (st *sourceRun) commit(ctx context.Context) {
	tr := st.tr
	if tr.halted() {
		return
	}
	d := st.tracker.take()
	if len(d) == 0 {
		return
	}
	offs := slices.Collect(maps.Values(d))
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	start := time.Now()
	if err := tr.w.store.PutSourceOffsets(cctx, tr.id.Connector, offs, tr.w.cfg.Assignment.Fence(tr.id.Connector, tr.id.Task)); err != nil {
		tr.stats.commit(false, time.Since(start))
		st.tracker.giveBack(d)
		tr.log.Warn("commit source offsets", "err", err)
		return
	}
	tr.stats.commit(true, time.Since(start))
	if st.notifier != nil {
		st.notifier.notify()
	}
}

// commitNotifier calls a task's Commit (Kafka Connect's SourceTask.commit)
// after offsets were stored, on a goroutine of its own: a slow Commit (a
// Java task's goes through the host) never delays the next offset store,
// and stored offsets that come while one runs are told in one more call.
type commitNotifier struct {
	c    connect.SourceCommitter
	log  *slog.Logger
	kick chan struct{} // one pending call at most
	done chan struct{}
}

func newCommitNotifier(c connect.SourceCommitter, log *slog.Logger) *commitNotifier {
	n := &commitNotifier{c: c, log: log, kick: make(chan struct{}, 1), done: make(chan struct{})}
	go n.run()
	return n
}

func (n *commitNotifier) run() {
	defer close(n.done)
	for range n.kick {
		if err := safe("Commit", n.c.Commit); err != nil {
			n.log.Warn("commit task", "err", err)
		}
	}
}

// notify asks for a Commit once the one running (if any) returned. It is
// called from one goroutine at a time (the commit loop, then the task's
// goroutine once the loop ended), never after close.
func (n *commitNotifier) notify() {
	select {
	case n.kick <- struct{}{}:
	default: // a call is pending already: it tells these offsets too
	}
}

// close waits, at most timeout, for the pending Commit: the task stops
// after it. A Commit that does not return in time is left to finish.
func (n *commitNotifier) close(ctx context.Context, timeout time.Duration) {
	close(n.kick)
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-n.done:
	case <-t.C:
		n.log.Warn("the task's commit did not return in time; stopping the task", "timeout", timeout)
	case <-ctx.Done():
	}
}

// drain waits, within the shutdown timeout, until Kafka answered for every
// record in flight.
func (st *sourceRun) drain() {
	if st.tracker.inFlight() == 0 {
		return
	}
	t := time.NewTimer(st.tr.w.cfg.ShutdownTimeout)
	defer t.Stop()
	select {
	case <-st.tracker.drained():
	case <-t.C:
		st.tr.log.Warn("records still in flight at stop; their offsets are not committed", "records", st.tracker.inFlight())
	case <-st.tr.hard.Done():
	}
}

// sourceContext is the connect.SourceTaskContext of a task.
type sourceContext struct{ taskContext }

func (c sourceContext) OffsetReader() connect.OffsetReader { return offsetReader{c.tr} }

type offsetReader struct{ tr *taskRun }

func (r offsetReader) Offset(ctx context.Context, partition map[string]any) (map[string]any, error) {
	return r.tr.w.store.SourceOffset(ctx, r.tr.id.Connector, partition)
}

var _ connect.SourceTaskContext = sourceContext{}
