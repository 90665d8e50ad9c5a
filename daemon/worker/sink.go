package worker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcd-project/kcd/daemon/connect"
	"github.com/kcd-project/kcd/daemon/connect/transforms"
	"github.com/kcd-project/kcd/daemon/connectstore"
)

// sinkRun is a running sink task: it fetches its partitions directly (no
// consumer group), converts, puts, and every flush interval flushes and
// commits the offsets to the store and to the connector's consumer group.
type sinkRun struct {
	tr   *taskRun
	task connect.SinkTask
	cs   converters
	// client is made when the task first gets partitions: a task without
	// any (more tasks than partitions) holds no Kafka client.
	client    *kgo.Client
	newClient func() (*kgo.Client, error)
	dlq       *deadLetters

	mu       sync.Mutex // guards assigned for Assignment()
	assigned []connect.TopicPartition
	applied  chan struct{} // the wish last applied

	consumed  map[connect.TopicPartition]int64 // next offset after what Put took
	committed map[connect.TopicPartition]int64
	// pos is the next offset to read after what Put took, past transaction
	// markers; lags holds, per partition that has been in a fetch, the end
	// of what the task may read minus pos (or consumed), as of that fetch.
	pos    map[connect.TopicPartition]int64
	lags   map[connect.TopicPartition]int64
	wished bool      // assigned is the supervisor's wish, not the empty start
	probed time.Time // the last end-offset listing for lag

	lastFetchErr string
	lastFetchLog time.Time

	// serialized: the connector's records are bytes already
	// (connect.SerializedRecords): Put gets the raw bytes; cs is unset.
	serialized bool
	// chain is the connector's transforms (nil: none), applied after
	// conversion and before Put.
	chain     *transforms.Chain
	ctl       sinkControl
	pausedNow map[connect.TopicPartition]bool // paused in the client
	orig      []*kgo.Record                   // see process

	// borrowed: the task is a connect.BorrowedSinkRecords, and process
	// reuses slab, batch and hdrs from one Put to the next.
	borrowed bool
	slab     []connect.SinkRecord
	batch    []*connect.SinkRecord
	hdrs     []connect.Header
	// next and nextPos are process's consumed and pos of one batch.
	next, nextPos map[connect.TopicPartition]int64
}

// pollWait bounds one wait for records, so that pauses, new partitions and
// stops are seen promptly.
const pollWait = 500 * time.Millisecond

func runSink(tr *taskRun) error {
	conn, ok := tr.plugin.New().(connect.SinkConnector)
	if !ok {
		return fmt.Errorf("%s is not a sink connector", tr.plugin.Class)
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
	reset := kgo.NewOffset().AtStart()
	if tr.settings.resetLatest {
		reset = kgo.NewOffset().AtEnd()
	}
	isolation := kgo.ReadUncommitted()
	if tr.settings.readCommitted {
		// Records of aborted transactions (a fenced source task's last
		// batch among them) never reach the task; records of an open
		// transaction wait until it ends.
		isolation = kgo.ReadCommitted()
	}
	cc := tr.settings.consumer
	clientID := cc.ClientID
	if clientID == "" {
		clientID = fmt.Sprintf("connector-consumer-%s-%d", tr.id.Connector, tr.id.Task)
	}
	// franz-go fetches in the background: per broker one fetch in flight
	// or buffered, its records decoded on the fetching goroutine; the
	// next fetch goes out once the buffered one is drained, that is while
	// Put writes its last records. The fetch is the slower side (the loop
	// waits in PollRecords most of the time): larger fetches speed a task
	// up, draining the buffer early to fetch further ahead does not. The
	// fetch limits stay small all the same: fetched bytes are counted
	// compressed, and decompressed they weigh on the memory limit.
	opts := []kgo.Opt{
		kgo.ClientID(clientID),
		kgo.FetchIsolationLevel(isolation),
		kgo.FetchMinBytes(cc.FetchMinBytes),
		kgo.FetchMaxBytes(cmp.Or(cc.FetchMaxBytes, lim.SinkFetchMaxBytes)),
		kgo.FetchMaxPartitionBytes(cmp.Or(cc.MaxPartitionFetchBytes, lim.SinkFetchMaxPartitionBytes)),
		kgo.MaxConcurrentFetches(lim.SinkMaxConcurrentFetches),
		kgo.ConsumeResetOffset(reset),
		// Transaction markers come back too, so that the task's next
		// offset moves past them (as the fetch position does) and a
		// transactional topic read to its end shows no lag.
		kgo.KeepControlRecords(),
		// fetch.max.wait.ms: a partition added while a fetch waits for
		// data is fetched this soon.
		kgo.FetchMaxWait(cc.FetchMaxWait),
		// A partition added later waits for metadata no longer than this.
		kgo.MetadataMinAge(min(5*time.Second, tr.w.cfg.SinkRelistInterval)),
		// The slabs fetched records are decoded into come back once the
		// loop recycled their records (see recycle).
		kgo.WithPools(fetchedSlabs),
	}
	st := &sinkRun{
		tr:         tr,
		task:       task,
		cs:         cs,
		serialized: serialized,
		chain:      chain,
		pausedNow:  map[connect.TopicPartition]bool{},
		newClient:  func() (*kgo.Client, error) { return tr.w.newClient(opts...) },
		consumed:   map[connect.TopicPartition]int64{},
		committed:  map[connect.TopicPartition]int64{},
		pos:        map[connect.TopicPartition]int64{},
		lags:       map[connect.TopicPartition]int64{},
		next:       map[connect.TopicPartition]int64{},
		nextPos:    map[connect.TopicPartition]int64{},
	}
	_, st.borrowed = task.(connect.BorrowedSinkRecords)
	defer func() {
		if st.client != nil {
			st.client.Close()
		}
	}()
	if tr.settings.dlqTopic != "" {
		st.dlq = newDeadLetters(tr)
	}
	return st.run()
}

func (st *sinkRun) run() error {
	tr := st.tr
	cfg := maps.Clone(tr.config)
	if err := safe("Start", func() error { return st.task.Start(sinkContext{taskContext{tr}, st}, cfg) }); err != nil {
		_ = safe("Stop", st.task.Stop)
		return fmt.Errorf("start task: %w", err)
	}
	tr.started()
	err := st.loop()
	if err == nil && !tr.halted() {
		err = st.commit(tr.hard)
	}
	if !tr.halted() {
		if cerr := safe("Close", func() error { return st.task.Close(st.assignment()) }); cerr != nil {
			tr.log.Warn("close partitions", "err", cerr)
		}
	}
	if serr := safe("Stop", st.task.Stop); serr != nil {
		tr.log.Warn("stop task", "err", serr)
	}
	return err
}

func (st *sinkRun) loop() error {
	tr := st.tr
	nextCommit := time.Now().Add(tr.settings.flushInterval)
	for {
		if err := st.applyWant(); err != nil {
			return err
		}
		if tr.ctx.Err() != nil {
			return nil
		}
		if tr.waitWhilePaused() {
			continue
		}
		if err := st.dlq.failure(); err != nil {
			return err
		}
		if err := st.applyControl(); err != nil {
			return err
		}
		if st.ctl.commit.Swap(false) || !time.Now().Before(nextCommit) {
			if err := st.commit(tr.ctx); err != nil {
				return err
			}
			nextCommit = time.Now().Add(tr.settings.flushInterval)
		}
		if st.idle() {
			// No partitions (more tasks than partitions): nothing to
			// fetch until some are assigned, the task stops, or the next
			// commit is due. Polling here, every task twice a second,
			// kept a worker with many idle sink tasks busy.
			t := time.NewTimer(time.Until(nextCommit))
			select {
			case <-tr.wake:
			case <-tr.ctx.Done():
			case <-t.C:
			}
			t.Stop()
			continue
		}
		pctx, cancel := context.WithTimeout(tr.ctx, min(pollWait, time.Until(nextCommit)))
		fetches := st.client.PollRecords(pctx, tr.settings.maxPoll)
		cancel()
		st.noteFetchBuffer()
		fetches.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) && !errors.Is(err, kgo.ErrClientClosed) {
				st.fetchFailed(t, p, err)
			}
		})
		st.noteLag(fetches) // what the fetch brought is behind until Put takes it
		if err := st.process(fetches); err != nil {
			return err
		}
		if fetches.NumRecords() == 0 {
			st.probeLag()
		}
		recycle(fetches)
	}
}

// fetchFailed logs a fetch error (franz-go retries by itself), the same
// one at most every fetchErrorEvery.
func (st *sinkRun) fetchFailed(topic string, p int32, err error) {
	msg := err.Error()
	if msg == st.lastFetchErr && time.Since(st.lastFetchLog) < fetchErrorEvery {
		return
	}
	st.lastFetchErr, st.lastFetchLog = msg, time.Now()
	st.tr.log.Warn("fetch failed; retrying", "topic", topic, "partition", p, "err", err)
}

// fetchErrorEvery spaces the logging of a repeated fetch error.
const fetchErrorEvery = 30 * time.Second

func (st *sinkRun) noteFetchBuffer() {
	n := st.client.BufferedFetchBytes()
	st.tr.stats.fetched.Store(n)
	storeMax(&st.tr.stats.peakFetched, n)
}

// process converts and puts one batch of fetched records.
func (st *sinkRun) process(fetches kgo.Fetches) error {
	tr := st.tr
	n, nh := 0, 0
	fetches.EachRecord(func(r *kgo.Record) { n, nh = n+1, nh+len(r.Headers) })
	// One allocation for the batch's records and one for their headers,
	// or none when the task borrows them (see endBorrowed).
	var batch []*connect.SinkRecord
	var slab []connect.SinkRecord
	var headers []connect.Header
	if st.borrowed {
		st.slab, st.hdrs = resize(st.slab, n), resize(st.hdrs, nh)
		slab, headers, batch = st.slab, st.hdrs, st.batch[:0]
		defer st.endBorrowed()
	} else {
		batch = make([]*connect.SinkRecord, 0, n)
		slab = make([]connect.SinkRecord, n)
		headers = make([]connect.Header, nh)
	}
	// The fetched records behind the batch, for ReportErrant: reused from
	// batch to batch (ReportErrant sees it only during Put).
	st.orig = resize(st.orig, n)
	orig := st.orig
	defer clear(orig) // the fetched records go with the batch
	next, pos := st.next, st.nextPos
	clear(next)
	clear(pos)
	var convErr error
	var read int64
	// By partition: ownership is checked and the next offset noted once
	// per partition, not once per record.
	fetches.EachPartition(func(p kgo.FetchTopicPartition) {
		if convErr != nil || len(p.Records) == 0 {
			return
		}
		tp := connect.TopicPartition{Topic: p.Topic, Partition: p.Partition}
		if !st.owns(tp) {
			return
		}
		tr.w.used.use(tr.id, p.Topic)
		last := int64(-1) // the last data record
		for _, r := range p.Records {
			if r.Attrs.IsControl() {
				continue // a transaction marker: only the fetch position passes it
			}
			last = r.Offset
			read++
			sr := &slab[len(batch)]
			hs := headers[:len(r.Headers):len(r.Headers)]
			headers = headers[len(r.Headers):]
			err := st.convert(r, sr, hs)
			if err != nil {
				tr.stats.failures.Add(1)
				err = tr.retrying(err, func() error {
					*sr = connect.SinkRecord{}
					return st.convert(r, sr, hs)
				})
			}
			if err == nil && st.chain != nil {
				var out *transforms.Record
				if out, err = st.chain.Apply(transforms.FromSink(sr)); err == nil && out == nil {
					*sr = connect.SinkRecord{} // filtered out: its offset commits all the same
					continue
				}
				if te, ok := errors.AsType[*transforms.Error](err); ok {
					tr.stats.failures.Add(1)
					err = &stageError{stageTransformation, te.Class, err}
				} else if err == nil {
					transforms.ToSink(sr, out)
				}
			}
			if err == nil {
				orig[len(batch)] = r
				batch = append(batch, sr)
				continue
			}
			*sr = connect.SinkRecord{} // the slot takes the next record
			attrs := []any{"topic", r.Topic, "partition", r.Partition, "offset", r.Offset}
			if tr.settings.logMessages {
				attrs = append(attrs, "key", r.Key, "value", r.Value)
			}
			if convErr = tr.recordFailed(err, "skipping a record that cannot be converted or transformed", attrs...); convErr != nil {
				return
			}
			stage, class := stageOf(err, stageValueConverter, st.cs.valueClass)
			st.dlq.sendStage(r, err, stage, class, nil)
		}
		// The committed offset follows the last data record, as Kafka
		// Connect's does: before a marker that ends the partition.
		if last >= 0 {
			next[tp] = last + 1
		}
		pos[tp] = p.Records[len(p.Records)-1].Offset + 1
	})
	tr.stats.read.Add(read)
	if convErr != nil {
		return convErr
	}
	storeMax(&tr.stats.peakBatch, int64(len(batch)))
	if len(batch) > 0 {
		st.ctl.setBatch(slab[:len(batch)], orig[:len(batch)])
		start := time.Now()
		done, err := st.put(batch)
		tr.stats.batch(len(batch), time.Since(start))
		st.ctl.setBatch(nil, nil)
		if st.borrowed {
			st.batch = batch
		}
		if err != nil || !done {
			return err
		}
		tr.stats.records.Add(int64(len(batch)))
	}
	maps.Copy(st.consumed, next)
	maps.Copy(st.pos, pos)
	st.noteLag(fetches)
	return nil
}

// sinkSlabKeep bounds the records (and 4× that the headers) a borrowing
// task's slabs keep between batches: a larger batch (max.poll.records
// raised, records with many headers) gets slabs of its own.
const sinkSlabKeep = 4096

// endBorrowed zeroes what a batch of a borrowing task used of the reused
// slabs, so that no converted key, value or header of it stays reachable
// (or leaks into the next batch, whose slots convert expects zero).
func (st *sinkRun) endBorrowed() {
	clear(st.slab)
	clear(st.hdrs)
	clear(st.batch[:cap(st.batch)])
	if cap(st.slab) > sinkSlabKeep || cap(st.batch) > sinkSlabKeep {
		st.slab, st.batch = nil, nil
	}
	if cap(st.hdrs) > 4*sinkSlabKeep {
		st.hdrs = nil
	}
}

// noteLag takes each owned partition's lag from a fetch: the end of what
// the task may read (the high watermark, or the last stable offset under
// read_committed) minus the next offset it reads. A partition fetched
// empty before any record of it was read has no next offset known yet.
func (st *sinkRun) noteLag(fetches kgo.Fetches) {
	changed := false
	fetches.EachPartition(func(p kgo.FetchTopicPartition) {
		if p.Err != nil {
			return
		}
		tp := connect.TopicPartition{Topic: p.Topic, Partition: p.Partition}
		next, ok := st.pos[tp]
		if !ok {
			next, ok = st.consumed[tp]
		}
		if !ok && len(p.Records) > 0 {
			next, ok = p.Records[0].Offset, true
		}
		if !ok || !st.owns(tp) {
			return
		}
		end := p.HighWatermark
		if st.tr.settings.readCommitted {
			end = p.LastStableOffset
		}
		st.lags[tp] = max(0, end-next)
		changed = true
	})
	if changed {
		st.publishLag()
	}
}

// lagProbeEvery spaces the end-offset listings of probeLag.
const lagProbeEvery = 5 * time.Second

// probeLag lists the end offsets of the owned partitions that have been in
// no fetch yet, after a poll that brought nothing: a partition at its end
// comes in no fetch, and its task would otherwise never know its lag.
func (st *sinkRun) probeLag() {
	tr := st.tr
	if time.Since(st.probed) < lagProbeEvery {
		return
	}
	var unknown []connect.TopicPartition
	var topics []string
	for _, tp := range st.assigned {
		if _, ok := st.lags[tp]; !ok {
			unknown = append(unknown, tp)
			if !slices.Contains(topics, tp.Topic) {
				topics = append(topics, tp.Topic)
			}
		}
	}
	if len(unknown) == 0 {
		return
	}
	st.probed = time.Now()
	ctx, cancel := context.WithTimeout(tr.ctx, 5*time.Second)
	defer cancel()
	list := tr.w.admin.ListEndOffsets
	if tr.settings.readCommitted {
		list = tr.w.admin.ListCommittedOffsets // the last stable offsets
	}
	ends, err := list(ctx, topics...)
	if err != nil {
		return // tried again after lagProbeEvery
	}
	var starts kadm.ListedOffsets // for partitions read from their start, nothing read yet
	for _, tp := range unknown {
		end, ok := ends.Lookup(tp.Topic, tp.Partition)
		if !ok || end.Err != nil {
			continue
		}
		next, ok := st.pos[tp]
		if !ok {
			next, ok = st.consumed[tp]
		}
		if !ok && tr.settings.resetLatest {
			next, ok = end.Offset, true
		}
		if !ok {
			if starts == nil {
				if starts, err = tr.w.admin.ListStartOffsets(ctx, topics...); err != nil {
					return
				}
			}
			start, found := starts.Lookup(tp.Topic, tp.Partition)
			if !found || start.Err != nil {
				continue
			}
			next = start.Offset
		}
		st.lags[tp] = max(0, end.Offset-next)
	}
	st.publishLag()
}

// publishLag stores the task's lag: the sum over its partitions with a
// known lag; -1 while none has one; 0 when it was given no partitions.
func (st *sinkRun) publishLag() {
	sum := int64(-1)
	if len(st.lags) > 0 || (st.wished && len(st.assigned) == 0) {
		sum = 0
		for _, n := range st.lags {
			sum += n
		}
	}
	st.tr.stats.lag.Store(sum)
}

// put hands a batch to the task, retrying after a RetriableError; done is
// false when the task must stop before the batch was taken.
func (st *sinkRun) put(batch []*connect.SinkRecord) (done bool, err error) {
	tr := st.tr
	if !tr.waitOwned() {
		return false, nil
	}
	for attempt := 1; ; attempt++ {
		err := safe("Put", func() error { return st.task.Put(batch) })
		if err == nil {
			return true, nil
		}
		if re := (*connect.RetriableError)(nil); !errors.As(err, &re) {
			return false, fmt.Errorf("put: %w", err)
		}
		d := st.retryDelay(attempt)
		tr.log.Warn("put failed; retrying the batch", "err", err, "records", len(batch), "retry_in", d)
		if !tr.sleep(d) {
			return false, nil
		}
	}
}

// convert converts r into sr, which is zero, with room for its headers.
// Setting fields avoids copying whole structs (with their write barriers)
// into the heap.
func (st *sinkRun) convert(r *kgo.Record, sr *connect.SinkRecord, headers []connect.Header) error {
	sr.Topic, sr.Partition, sr.Offset, sr.Timestamp = r.Topic, r.Partition, r.Offset, r.Timestamp
	if st.serialized {
		// The raw bytes, no schemas; a null stays an untyped nil.
		if r.Key != nil {
			sr.Key = r.Key
		}
		if r.Value != nil {
			sr.Value = r.Value
		}
		if len(r.Headers) > 0 {
			for i, h := range r.Headers {
				headers[i].Key = h.Key
				if h.Value != nil {
					headers[i].Value = h.Value
				}
			}
			sr.Headers = headers
		}
		return nil
	}
	var err error
	if sr.KeySchema, sr.Key, err = st.cs.readKey(r.Topic, r.Key); err != nil {
		return &stageError{stageKeyConverter, st.cs.keyClass, fmt.Errorf("convert the key of %s-%d@%d: %w", r.Topic, r.Partition, r.Offset, err)}
	}
	if sr.ValueSchema, sr.Value, err = st.cs.readValue(r.Topic, r.Value); err != nil {
		return &stageError{stageValueConverter, st.cs.valueClass, fmt.Errorf("convert the value of %s-%d@%d: %w", r.Topic, r.Partition, r.Offset, err)}
	}
	if len(r.Headers) > 0 {
		for i, h := range r.Headers {
			s, v, err := st.cs.readHeader(r.Topic, h.Value)
			if err != nil {
				return &stageError{stageHeaderConverter, st.cs.headerClass, fmt.Errorf("convert header %s of %s-%d@%d: %w", h.Key, r.Topic, r.Partition, r.Offset, err)}
			}
			headers[i].Key, headers[i].Schema, headers[i].Value = h.Key, s, v
		}
		sr.Headers = headers
	}
	return nil
}

// commit flushes the task (or asks its PreCommit) and stores the offsets
// that moved since the last commit, in the store and then in the consumer
// group.
func (st *sinkRun) commit(ctx context.Context) error {
	tr := st.tr
	if tr.halted() {
		return nil
	}
	moved := false
	for tp, o := range st.consumed {
		if c, ok := st.committed[tp]; !ok || c != o {
			moved = true
			break
		}
	}
	if !moved {
		return nil
	}
	if err := st.dlq.wait(ctx); err != nil {
		return err
	}
	start := time.Now()
	commit, ok, err := st.preCommitted(maps.Clone(st.consumed))
	if err != nil {
		tr.stats.commit(false, time.Since(start))
		return err
	}
	if !ok {
		tr.stats.skips.Add(1)
		return nil
	}
	changed := map[connect.TopicPartition]int64{}
	for tp, o := range commit {
		if c, ok := st.committed[tp]; !ok || c != o {
			changed[tp] = o
		}
	}
	if len(changed) == 0 {
		return nil
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	offs := make([]connectstore.SinkOffset, 0, len(changed))
	group := kadm.Offsets{}
	for tp, o := range changed {
		offs = append(offs, connectstore.SinkOffset{Topic: tp.Topic, Partition: tp.Partition, Offset: o})
		group.Add(kadm.Offset{Topic: tp.Topic, Partition: tp.Partition, At: o, LeaderEpoch: -1})
	}
	if err := tr.w.store.PutSinkOffsets(cctx, tr.id.Connector, offs, tr.w.cfg.Assignment.Fence(tr.id.Connector, tr.id.Task)); err != nil {
		tr.stats.commit(false, time.Since(start))
		tr.log.Warn("store sink offsets; committing later", "err", err)
		return nil
	}
	tr.stats.commit(true, time.Since(start))
	maps.Copy(st.committed, changed)
	resp, err := tr.w.admin.CommitOffsets(cctx, tr.settings.groupID, group)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		tr.log.Warn("commit sink offsets to the consumer group", "group", tr.settings.groupID, "err", err)
	}
	return nil
}

// applyWant brings the task's partitions to the supervisor's latest wish:
// revoked ones are committed and closed, added ones opened and fetched
// from their stored offsets.
func (st *sinkRun) applyWant() error {
	tr := st.tr
	want, applied, wished := tr.takeWant()
	if applied == st.applied {
		return nil
	}
	have := st.assignment()
	revoked := minus(have, want)
	added := minus(want, have)
	if len(revoked) > 0 {
		if err := st.commit(tr.ctx); err != nil {
			return err
		}
		if err := safe("Close", func() error { return st.task.Close(slices.Clone(revoked)) }); err != nil {
			return fmt.Errorf("close partitions: %w", err)
		}
		st.forget(revoked)
		rm := map[string][]int32{}
		for _, tp := range revoked {
			rm[tp.Topic] = append(rm[tp.Topic], tp.Partition)
			delete(st.consumed, tp)
			delete(st.committed, tp)
			delete(st.pos, tp)
			delete(st.lags, tp)
		}
		if st.client != nil {
			st.client.RemoveConsumePartitions(rm)
			// franz-go keeps pauses across assignments; Kafka Connect
			// does not: a partition assigned again is fetched.
			st.client.ResumeFetchPartitions(rm)
		}
	}
	if len(added) > 0 {
		stored, err := tr.w.store.SinkOffsets(tr.ctx, tr.id.Connector)
		if err != nil {
			if tr.ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("read sink offsets: %w", err)
		}
		from := map[connect.TopicPartition]int64{}
		for _, o := range stored {
			from[connect.TopicPartition{Topic: o.Topic, Partition: o.Partition}] = o.Offset
		}
		add := map[string]map[int32]kgo.Offset{}
		for _, tp := range added {
			if add[tp.Topic] == nil {
				add[tp.Topic] = map[int32]kgo.Offset{}
			}
			if o, ok := from[tp]; ok {
				add[tp.Topic][tp.Partition] = kgo.NewOffset().At(o)
				st.consumed[tp], st.committed[tp] = o, o
			} else if tr.settings.resetLatest {
				add[tp.Topic][tp.Partition] = kgo.NewOffset().AtEnd()
			} else {
				add[tp.Topic][tp.Partition] = kgo.NewOffset().AtStart()
			}
		}
		if st.client == nil {
			c, err := st.newClient()
			if err != nil {
				return fmt.Errorf("consumer: %w", err)
			}
			st.client = c
		}
		st.client.AddConsumePartitions(add)
		st.refreshPaused()
	}
	st.mu.Lock()
	st.assigned = slices.Clone(want)
	st.mu.Unlock()
	parts := slices.Clone(want)
	tr.stats.parts.Store(&parts)
	st.wished = wished
	st.publishLag()
	if len(added) > 0 {
		if err := safe("Open", func() error { return st.task.Open(slices.Clone(added)) }); err != nil {
			return fmt.Errorf("open partitions: %w", err)
		}
	}
	st.applied = applied
	close(applied)
	if len(revoked)+len(added) > 0 {
		tr.log.Info("sink partitions assigned", "partitions", len(want), "added", len(added), "revoked", len(revoked))
	}
	return nil
}

func (st *sinkRun) owns(tp connect.TopicPartition) bool {
	_, ok := slices.BinarySearchFunc(st.assigned, tp, compareTP)
	return ok
}

// idle tells whether the task has no partitions to fetch.
func (st *sinkRun) idle() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return len(st.assigned) == 0
}

func (st *sinkRun) assignment() []connect.TopicPartition {
	st.mu.Lock()
	defer st.mu.Unlock()
	return slices.Clone(st.assigned)
}

// minus returns the partitions of a not in b (both sorted).
func minus(a, b []connect.TopicPartition) []connect.TopicPartition {
	var out []connect.TopicPartition
	for _, tp := range a {
		if _, ok := slices.BinarySearchFunc(b, tp, compareTP); !ok {
			out = append(out, tp)
		}
	}
	return out
}

// sinkContext is the connect.SinkTaskContext of a task.
type sinkContext struct {
	taskContext
	st *sinkRun
}

func (c sinkContext) Assignment() []connect.TopicPartition { return c.st.assignment() }

var _ connect.SinkTaskContext = sinkContext{}
