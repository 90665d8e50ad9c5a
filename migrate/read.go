package migrate

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ReadOptions tune Read.
type ReadOptions struct {
	Topics     Topics                 // zero fields: DefaultTopics()'s
	Include    func(name string) bool // connectors to keep; nil: all
	SkipGroups bool                   // do not read sink consumer groups
	Progress   func(Progress)         // called as records are read (at most ~10 times a second per topic, and once at each topic's end)
}

// Read's own bounds besides its context's (variables for tests).
var (
	// metadataTimeout bounds each of Read's requests about topics and
	// groups: when no broker answers by then, Kafka is unreachable.
	metadataTimeout = 15 * time.Second
	// stallTimeout bounds the wait for a fetch answer while reading.
	stallTimeout = 15 * time.Second
)

const (
	// tailWait and tailFetches decide that a partition has nothing left
	// below its end offset when the records before it are not readable
	// (an aborted transaction's or a compacted batch's last offsets): that
	// many fetches answered, and that long passed, since its last record.
	tailWait    = 3 * time.Second
	tailFetches = 5
	// progressEvery spaces Progress calls of one topic.
	progressEvery = 100 * time.Millisecond
)

// Read reads a Kafka Connect cluster's metadata: its three internal
// topics, each up to the end offsets captured when Read starts, and the
// committed offsets of each live sink connector's consumer group.
//
// cl is used for admin requests; the topics are read by a client made
// with cl's options (so cl must not be a group consumer), consuming the
// partitions directly, read_committed as Kafka Connect's exactly-once
// workers do. Records are folded in as they arrive; memory grows with the
// number of connectors, tasks and source partitions, not records.
func Read(ctx context.Context, cl *kgo.Client, opts ReadOptions) (*Cluster, error) {
	topics := opts.Topics
	def := DefaultTopics()
	if topics.Config == "" {
		topics.Config = def.Config
	}
	if topics.Offset == "" {
		topics.Offset = def.Offset
	}
	if topics.Status == "" {
		topics.Status = def.Status
	}
	// A connection error that retrying cannot fix (TLS) ends Read at once.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	watch := &clientWatch{fatal: cancel}
	admin, err := kgo.NewClient(append(cl.Opts(), kgo.WithHooks(watch))...)
	if err != nil {
		return nil, fmt.Errorf("make a Kafka client from the given client's options: %w", err)
	}
	defer admin.Close()
	r := &reader{cl: cl, adm: kadm.NewClient(admin), topics: topics, opts: opts, seeds: seedsOf(cl), watch: watch}
	plan, err := r.plan(ctx)
	if err != nil {
		return nil, err
	}
	acc := newAccumulator(topics, opts.Include)
	acc.problems = append(acc.problems, plan.problems...)
	if err := r.consume(ctx, plan, acc); err != nil {
		return nil, err
	}
	c := acc.cluster()
	for _, t := range plan.topics {
		c.Stats = append(c.Stats, *t.stats)
	}
	if !opts.SkipGroups {
		if err := r.sinkGroups(ctx, c); err != nil {
			return nil, err
		}
	}
	return c, nil
}

type reader struct {
	cl     *kgo.Client
	adm    *kadm.Client
	topics Topics
	opts   ReadOptions
	seeds  []string
	watch  *clientWatch
}

// readPlan is what Read reads: each topic's partitions between the start
// and end offsets captured at the start.
type readPlan struct {
	topics   []*topicPlan // config, offsets, status; a missing status topic is left out
	problems []Problem
}

type topicPlan struct {
	name  string
	kind  int // 0 config, 1 offsets, 2 status
	spans map[int32]*span
	stats *TopicStats
	total int64
}

type span struct {
	start, end int64
	next       int64 // the offset after the last record read
	done       bool
	progressAt time.Time // when the last record came
	fetchesAt  int64     // fetches answered by then
}

func (r *reader) plan(ctx context.Context) (*readPlan, error) {
	mctx, cancel := context.WithTimeout(ctx, metadataTimeout)
	defer cancel()
	names := []string{r.topics.Config, r.topics.Offset, r.topics.Status}
	flags := []string{"--config-topic", "--offset-topic", "--status-topic"}
	md, err := r.adm.Metadata(mctx, names...)
	if err != nil {
		return nil, r.explain(ctx, mctx, err, "the metadata of topics "+strings.Join(names, ", "))
	}
	plan := &readPlan{}
	var present []string
	for i, name := range names {
		td, ok := md.Topics[name]
		switch {
		case !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition):
			msg := fmt.Sprintf("topic %s does not exist: if the Kafka Connect cluster uses another name (its worker's %s.storage.topic), pass it with %s",
				name, []string{"config", "offset", "status"}[i], flags[i])
			if i == 2 {
				plan.problems = append(plan.problems, Problem{Topic: name, Partition: -1, Offset: -1, Reason: msg + "; read without statuses"})
				continue
			}
			return nil, errors.New(msg)
		case td.Err != nil:
			return nil, r.explain(ctx, mctx, td.Err, "topic "+name)
		}
		tp := &topicPlan{name: name, kind: i, spans: map[int32]*span{},
			stats: &TopicStats{Topic: name, Partitions: len(td.Partitions)}}
		plan.topics = append(plan.topics, tp)
		present = append(present, name)
		if i == 0 && len(td.Partitions) > 1 {
			plan.problems = append(plan.problems, Problem{Topic: name, Partition: -1, Offset: -1,
				Reason: fmt.Sprintf("the config topic has %d partitions: Kafka Connect refuses to start on more than 1; read anyway, records ordered within each partition only", len(td.Partitions))})
		}
	}
	cfgs, err := r.adm.DescribeTopicConfigs(mctx, present...)
	if err != nil {
		return nil, r.explain(ctx, mctx, err, "the topics' configs")
	}
	for _, tp := range plan.topics {
		rc, err := cfgs.On(tp.name, nil)
		if err == nil {
			err = rc.Err
		}
		if err != nil {
			return nil, r.explain(ctx, mctx, err, "the config of topic "+tp.name)
		}
		policy := ""
		for _, c := range rc.Configs {
			if c.Key == "cleanup.policy" && c.Value != nil {
				policy = *c.Value
			}
		}
		tp.stats.Compacted = policy == "compact"
		if !tp.stats.Compacted {
			plan.problems = append(plan.problems, Problem{Topic: tp.name, Partition: -1, Offset: -1,
				Reason: fmt.Sprintf("not compacted: cleanup.policy is %q, not compact; Kafka Connect needs compact, or old records expire", policy)})
		}
	}
	starts, err := r.adm.ListStartOffsets(mctx, present...)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return nil, r.explain(ctx, mctx, err, "the topics' start offsets")
	}
	// End offsets read_committed (the last stable offset): a transaction
	// still open is not Kafka Connect's state yet.
	ends, err := r.adm.ListCommittedOffsets(mctx, present...)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, r.explain(ctx, mctx, err, "the topics' end offsets")
	}
	for _, tp := range plan.topics {
		for p, s := range starts[tp.name] {
			e, ok := ends.Lookup(tp.name, p)
			if !ok {
				return nil, fmt.Errorf("topic %s partition %d: no end offset listed", tp.name, p)
			}
			sp := &span{start: s.Offset, end: max(e.Offset, s.Offset), next: s.Offset}
			sp.done = sp.next >= sp.end
			tp.spans[p] = sp
			tp.total += sp.end - sp.start
			if s.Offset > 0 {
				plan.problems = append(plan.problems, truncated(tp.name, p, s.Offset))
			}
		}
	}
	return plan, nil
}

// clientWatch follows Read's clients: the fetches answered, the last
// connection error, and connection errors that retrying cannot fix.
type clientWatch struct {
	fatal func(error)

	mu      sync.Mutex
	fetches int64
	fetchAt time.Time
	lastErr error
}

func (w *clientWatch) OnBrokerConnect(_ kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err == nil {
		return
	}
	w.mu.Lock()
	w.lastErr = err
	w.mu.Unlock()
	if isTLSError(err) {
		w.fatal(err)
	}
}

func (w *clientWatch) OnBrokerE2E(_ kgo.BrokerMetadata, key int16, e2e kgo.BrokerE2E) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := e2e.Err(); err != nil {
		w.lastErr = err
		return
	}
	if key == kmsg.Fetch.Int16() {
		w.fetches++
		w.fetchAt = time.Now()
	}
}

func (w *clientWatch) state() (fetches int64, fetchAt time.Time, lastErr error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.fetches, w.fetchAt, w.lastErr
}

func isTLSError(err error) bool {
	var (
		recErr  tls.RecordHeaderError
		certErr *tls.CertificateVerificationError
		uaErr   x509.UnknownAuthorityError
		hostErr x509.HostnameError
		badErr  x509.CertificateInvalidError
	)
	return errors.As(err, &recErr) || errors.As(err, &certErr) || errors.As(err, &uaErr) || errors.As(err, &hostErr) || errors.As(err, &badErr)
}

func (r *reader) consume(ctx context.Context, plan *readPlan, acc *accumulator) error {
	byName := map[string]*topicPlan{}
	assign := map[string]map[int32]kgo.Offset{}
	remaining := 0
	for _, tp := range plan.topics {
		byName[tp.name] = tp
		for p, sp := range tp.spans {
			if sp.done {
				continue
			}
			if assign[tp.name] == nil {
				assign[tp.name] = map[int32]kgo.Offset{}
			}
			assign[tp.name][p] = kgo.NewOffset().At(sp.start)
			remaining++
		}
	}
	lastReport := map[string]time.Time{}
	report := func(tp *topicPlan, force bool) {
		if r.opts.Progress == nil || (!force && time.Since(lastReport[tp.name]) < progressEvery) {
			return
		}
		lastReport[tp.name] = time.Now()
		var read int64
		for _, sp := range tp.spans {
			read += sp.next - sp.start
		}
		r.opts.Progress(Progress{Topic: tp.name, Read: read, Total: tp.total})
	}
	finished := func(tp *topicPlan) bool {
		for _, sp := range tp.spans {
			if !sp.done {
				return false
			}
		}
		return true
	}
	for _, tp := range plan.topics {
		if finished(tp) {
			report(tp, true)
		}
	}
	if remaining == 0 {
		return nil
	}

	watch := r.watch
	opts := append(r.cl.Opts(),
		kgo.ConsumePartitions(assign),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(), // a transaction marker can be a partition's last offset
		kgo.FetchMaxWait(500*time.Millisecond),
		kgo.FetchMaxBytes(32<<20),
		kgo.WithHooks(watch),
	)
	consumer, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("make a consuming client from the Kafka client's options (it must not consume itself): %w", err)
	}
	defer consumer.Close()

	start := time.Now()
	now := start
	for _, tp := range plan.topics {
		for _, sp := range tp.spans {
			sp.progressAt = start
		}
	}
	finish := func(tp *topicPlan, p int32, sp *span) {
		sp.done, sp.next = true, sp.end
		remaining--
		consumer.PauseFetchPartitions(map[string][]int32{tp.name: {p}})
		if finished(tp) {
			report(tp, true)
		}
	}
	for remaining > 0 {
		pctx, cancel := context.WithTimeout(ctx, 250*time.Millisecond)
		fetches := consumer.PollFetches(pctx)
		cancel()
		if ctx.Err() != nil {
			return r.explain(ctx, ctx, ctx.Err(), "read the internal topics")
		}
		var fetchErr error
		fetches.EachError(func(topic string, p int32, err error) {
			if fetchErr != nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
				return
			}
			fetchErr = r.explain(ctx, ctx, err, fmt.Sprintf("topic %s partition %d", topic, p))
		})
		if fetchErr != nil {
			return fmt.Errorf("read: %w", fetchErr)
		}
		now = time.Now()
		fetchesOK, _, _ := watch.state()
		fetches.EachRecord(func(rec *kgo.Record) {
			tp := byName[rec.Topic]
			if tp == nil {
				return
			}
			sp := tp.spans[rec.Partition]
			if sp == nil || sp.done || rec.Offset < sp.next {
				return
			}
			if rec.Offset >= sp.end {
				finish(tp, rec.Partition, sp)
				return
			}
			sp.next, sp.progressAt, sp.fetchesAt = rec.Offset+1, now, fetchesOK
			if !rec.Attrs.IsControl() {
				tp.stats.Records++
				tp.stats.Bytes += int64(len(rec.Key) + len(rec.Value))
				where := at{Partition: rec.Partition, Offset: rec.Offset, Timestamp: rec.Timestamp.UnixMilli()}
				switch tp.kind {
				case 0:
					acc.configRecord(where, rec.Key, rec.Value)
				case 1:
					acc.offsetRecord(where, rec.Key, rec.Value)
				case 2:
					acc.statusRecord(where, rec.Key, rec.Value)
				}
			}
			if sp.next >= sp.end {
				finish(tp, rec.Partition, sp)
			} else {
				report(tp, false)
			}
		})

		fetchesOK, okAt, lastErr := watch.state()
		if okAt.IsZero() {
			okAt = start
		}
		if now.Sub(okAt) > stallTimeout {
			err := fmt.Errorf("no fetch answered for %s", stallTimeout)
			if lastErr != nil {
				err = fmt.Errorf("%w (last error: %w)", err, lastErr)
			}
			return fmt.Errorf("cannot reach the Kafka brokers at %s while reading the internal topics: %w", strings.Join(r.seeds, ","), err)
		}
		for _, tp := range plan.topics {
			for p, sp := range tp.spans {
				if sp.done || fetchesOK-sp.fetchesAt < tailFetches || now.Sub(sp.progressAt) < tailWait {
					continue
				}
				acc.problems = append(acc.problems, Problem{Topic: tp.name, Partition: p, Offset: sp.next,
					Reason: fmt.Sprintf("stopped at offset %d before the end offset %d: the records between are not readable (an aborted transaction, or compacted away)", sp.next, sp.end)})
				sp.next = sp.end
				finish(tp, p, sp)
			}
		}
	}
	return nil
}

// maxGroupsPerFetch bounds the consumer groups of one offset fetch: the
// answer holds every committed partition of each.
const maxGroupsPerFetch = 100

// sinkGroups fills each sink connector's consumer group and its committed
// offsets, fetching the offsets of up to maxGroupsPerFetch groups at once.
func (r *reader) sinkGroups(ctx context.Context, c *Cluster) error {
	var sinks []*Connector
	var groups []string
	seen := map[string]bool{}
	for _, conn := range c.Connectors {
		if !conn.IsSink() {
			continue
		}
		conn.SinkGroup = SinkGroup(conn.Name, conn.Config)
		sinks = append(sinks, conn)
		if !seen[conn.SinkGroup] {
			seen[conn.SinkGroup] = true
			groups = append(groups, conn.SinkGroup)
		}
	}
	fetched := map[string]kadm.OffsetResponses{}
	for chunk := range slices.Chunk(groups, maxGroupsPerFetch) {
		mctx, cancel := context.WithTimeout(ctx, metadataTimeout)
		resps := r.adm.FetchManyOffsets(mctx, chunk...)
		for _, group := range chunk {
			resp, ok := resps[group]
			err := resp.Err
			if !ok {
				err = errors.New("no answer for the group")
			} else if err == nil {
				err = resp.Fetched.Error()
			}
			if errors.Is(err, kerr.GroupIDNotFound) {
				continue // sinks that never committed
			}
			if err != nil {
				err = r.explain(ctx, mctx, err, "consumer group "+group)
				cancel()
				for _, conn := range sinks {
					if conn.SinkGroup == group {
						return fmt.Errorf("connector %s: committed offsets of its consumer group %s: %w", conn.Name, group, err)
					}
				}
			}
			fetched[group] = resp.Fetched
		}
		cancel()
	}
	for _, conn := range sinks {
		fetched[conn.SinkGroup].Each(func(o kadm.OffsetResponse) {
			if o.At >= 0 {
				conn.SinkOffsets = append(conn.SinkOffsets, SinkOffset{Topic: o.Topic, Partition: o.Partition, Offset: o.At})
			}
		})
		sort.Slice(conn.SinkOffsets, func(i, j int) bool {
			a, b := conn.SinkOffsets[i], conn.SinkOffsets[j]
			if a.Topic != b.Topic {
				return a.Topic < b.Topic
			}
			return a.Partition < b.Partition
		})
	}
	return nil
}

// explain turns a client error into one that says what went wrong in a
// user's terms: Kafka unreachable, credentials refused, access denied.
// ctx is Read's, rctx the request's (its deadline is Read's own bound).
func (r *reader) explain(ctx, rctx context.Context, err error, what string) error {
	seeds := strings.Join(r.seeds, ",")
	if cause := context.Cause(ctx); isTLSError(cause) {
		err = cause // a TLS failure cancelled Read
	}
	_, _, lastErr := r.watch.state()
	var netErr *net.OpError
	switch {
	case errors.Is(err, kerr.SaslAuthenticationFailed), errors.Is(err, kerr.UnsupportedSaslMechanism), errors.Is(err, kerr.IllegalSaslState):
		return fmt.Errorf("Kafka refused the credentials (SASL authentication failed): %w", err)
	case errors.Is(err, kerr.TopicAuthorizationFailed), errors.Is(err, kerr.GroupAuthorizationFailed),
		errors.Is(err, kerr.ClusterAuthorizationFailed), errors.Is(err, kerr.TransactionalIDAuthorizationFailed):
		return fmt.Errorf("Kafka denied access to %s (not authorized: the user needs Describe and Read on the topics and groups): %w", what, err)
	case isTLSError(err):
		return fmt.Errorf("TLS with the Kafka brokers at %s failed: %w", seeds, ExplainError(err))
	case errors.Is(context.Cause(ctx), context.Canceled):
		return fmt.Errorf("%s: %w", what, ctx.Err())
	case rctx.Err() != nil:
		if lastErr != nil {
			err = fmt.Errorf("%w (last error: %w)", err, lastErr)
		}
		return fmt.Errorf("cannot reach the Kafka brokers at %s: no answer in time (%s): %w", seeds, what, err)
	case errors.As(err, &netErr), errors.Is(err, kgo.ErrClientClosed):
		return fmt.Errorf("cannot reach the Kafka brokers at %s (are --bootstrap-servers, and the addresses the brokers advertise, right and reachable?): %w", seeds, err)
	}
	return fmt.Errorf("%s (Kafka brokers at %s): %w", what, seeds, err)
}

func seedsOf(cl *kgo.Client) []string {
	if s, ok := cl.OptValue(kgo.SeedBrokers).([]string); ok && len(s) > 0 {
		return s
	}
	return []string{"127.0.0.1:9092"} // kgo's default
}
