package migrate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// WriteOptions tune Write.
type WriteOptions struct {
	// Topics are the Kafka Connect cluster's internal topics; empty fields
	// are DefaultTopics()'s.
	Topics Topics
	// Overwrite replaces connectors that already exist in the topics and
	// differ from the Cluster's; without it they are reported and left alone.
	Overwrite bool
	// ReplicationFactor of the topics Write creates; 0 or -1: the broker's
	// default.
	ReplicationFactor int16
	// OffsetPartitions and StatusPartitions of the topics Write creates;
	// 0: Kafka Connect's defaults, 25 and 5.
	OffsetPartitions, StatusPartitions int32
	// Progress, when set, is called as Write reads the topics.
	Progress func(Progress)
	// DryRun reads and checks everything and answers what Write would do,
	// creating and writing nothing; the counts are of records it would write.
	DryRun bool
}

// What Write did with a connector.
const (
	ActionCreate    = "create"    // it was not in the topics
	ActionOverwrite = "overwrite" // it was, different, and Overwrite replaced it
	ActionExists    = "exists"    // it was, different, and was left alone
	ActionUnchanged = "unchanged" // it was, the same
)

// WriteItem is what Write did with one connector.
type WriteItem struct {
	Name   string `json:"name"`
	Action string `json:"action"`
	// Reason says what differs (exists, overwrite) or what was adapted.
	Reason string `json:"reason,omitempty"`
	// Group is the consumer group that holds a sink's offsets in Kafka
	// Connect ("" for a source).
	Group string `json:"group,omitempty"`
}

// WriteResult is what Write wrote.
type WriteResult struct {
	Items         []WriteItem `json:"items"`
	ConfigRecords int         `json:"config_records"`
	OffsetRecords int         `json:"offset_records"` // tombstones included
	Groups        []string    `json:"groups,omitempty"`
}

// Write writes c's connectors into a Kafka Connect cluster's internal
// topics in Kafka Connect's exact format, and their sink offsets into their
// consumer groups, so that a Kafka Connect worker started on these topics
// runs them from where they stopped. Kafka Connect must not run on these
// topics meanwhile; a sink's group with active members is refused.
//
// It creates missing topics as Kafka Connect would (compacted; the config
// topic with 1 partition) and refuses a config topic of more partitions or
// a topic that is not compacted. It reads the config and offsets topics
// first: a connector already there is left alone when it is the same
// (unchanged) or, without opts.Overwrite, when it differs (exists).
// For each connector it writes, it writes the source offsets (under the
// key bytes the topic already holds for the same partition, tombstoning
// the connector's partitions c lacks), then commits the sink offsets, then
// the config records, so that a connector never appears before its
// offsets. Each connector's config records are one record batch, which
// Kafka appends whole or not at all: a write cut short leaves every
// connector's config records all there or absent (a connector too large
// for one batch excepted), and offsets or group commits of connectors
// whose config records are absent; a re-run writes what is missing.
//
// cl gives the connection settings (seed brokers, TLS, SASL): Write makes
// its own producer and readers from cl.Opts(), so cl must not consume.
func Write(ctx context.Context, cl *kgo.Client, c *Cluster, opts WriteOptions) (WriteResult, error) {
	var res WriteResult
	opts = opts.withDefaults()
	if err := validateWrite(cl, c, opts); err != nil {
		return res, err
	}
	w := &writer{base: cl.Opts(), adm: kadm.NewClient(cl), opts: opts, carried: carriedSinkPartitions(c)}
	seeds, _ := cl.OptValue(kgo.SeedBrokers).([]string)
	created, err := w.ensureTopics(ctx)
	if err != nil {
		return res, unreachable(ctx, seeds, err)
	}
	if !created[opts.Topics.Config] {
		if err := w.readConfigs(ctx); err != nil {
			return res, unreachable(ctx, seeds, err)
		}
	}
	if !created[opts.Topics.Offset] {
		if err := w.readOffsets(ctx); err != nil {
			return res, unreachable(ctx, seeds, err)
		}
	}

	// The sinks' groups' offsets, up to maxGroupsPerFetch groups a request.
	w.groups = map[string]kadm.FetchOffsetsResponse{}
	for chunk := range slices.Chunk(slices.Sorted(maps.Keys(w.carried)), maxGroupsPerFetch) {
		maps.Copy(w.groups, w.adm.FetchManyOffsets(ctx, chunk...))
	}

	// Plan every connector before writing anything.
	var todo []*plan
	for _, conn := range c.Connectors {
		p, err := w.plan(ctx, conn)
		if err != nil {
			return res, err
		}
		res.Items = append(res.Items, p.item)
		if p.item.Action == ActionCreate || p.item.Action == ActionOverwrite {
			todo = append(todo, p)
		}
	}
	if err := w.checkGroupsIdle(ctx, todo); err != nil {
		return res, err
	}
	if opts.DryRun {
		for _, p := range todo {
			res.OffsetRecords += len(p.offsets)
			res.ConfigRecords += len(p.configs)
			if len(p.sinkOffsets) > 0 || len(p.sinkDeletes) > 0 {
				res.Groups = append(res.Groups, p.group)
			}
		}
		return res, nil
	}

	prod, err := kgo.NewClient(append(slices.Clip(w.base),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		// Kafka's default partitioner: murmur2 of the key, as Kafka Connect's
		// producer, so that its later writes of a key land in the same partition.
		kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)),
		// One request in flight: the records of a partition land in order.
		kgo.MaxProduceRequestsInflightPerBroker(1),
	)...)
	if err != nil {
		return res, fmt.Errorf("producer: %w", err)
	}
	defer prod.Close()

	var offsetRecs []*kgo.Record
	var configGroups [][]*kgo.Record
	for _, p := range todo {
		offsetRecs = append(offsetRecs, p.offsets...)
		configGroups = append(configGroups, p.configs)
	}
	n, err := produceAll(ctx, prod, offsetRecs)
	res.OffsetRecords = n
	if err != nil {
		return res, fmt.Errorf("offsets topic %s: wrote %d of %d records, no config record: %w", opts.Topics.Offset, n, len(offsetRecs), err)
	}
	for _, p := range todo {
		if len(p.sinkOffsets) == 0 && len(p.sinkDeletes) == 0 {
			continue
		}
		if len(p.sinkOffsets) > 0 {
			resp, err := w.adm.CommitOffsets(ctx, p.group, p.sinkOffsets)
			if err == nil {
				err = resp.Error()
			}
			if err != nil {
				return res, fmt.Errorf("connector %s: commit offsets of consumer group %s: %w (no config record written)", p.item.Name, p.group, err)
			}
		}
		if len(p.sinkDeletes) > 0 {
			resp, err := w.adm.DeleteOffsets(ctx, p.group, p.sinkDeletes)
			if err == nil {
				err = resp.Error()
			}
			if err != nil {
				return res, fmt.Errorf("connector %s: delete offsets of consumer group %s that kcd does not carry: %w (no config record written)", p.item.Name, p.group, err)
			}
		}
		res.Groups = append(res.Groups, p.group)
	}
	// Each connector's config records go into one record batch, which
	// Kafka appends whole or not at all (several connectors may share one).
	whole := 0
	for _, b := range batchGroups(configGroups) {
		n, err := produceConfigs(ctx, cl, opts.Topics.Config, b)
		res.ConfigRecords += n
		if err != nil {
			return res, fmt.Errorf("config topic %s: wrote the config records of %d of %d connector(s): %w", opts.Topics.Config, whole, len(todo), err)
		}
		whole += len(b)
	}
	return res, nil
}

// produceConfigs writes groups of config records (one connector's each)
// as one batch; when the topic takes no batch that large (its
// max.message.bytes), each group as a batch of its own, and a group too
// large for that one record a batch, as Kafka Connect writes them. It
// returns how many records it wrote.
func produceConfigs(ctx context.Context, cl *kgo.Client, topic string, groups [][]*kgo.Record) (int, error) {
	var recs []*kgo.Record
	for _, g := range groups {
		recs = append(recs, g...)
	}
	err := produceBatch(ctx, cl, topic, 0, recs)
	switch {
	case err == nil:
		return len(recs), nil
	case !errors.Is(err, kerr.MessageTooLarge) && !errors.Is(err, kerr.RecordListTooLarge):
		return 0, err
	case len(groups) > 1:
		n := 0
		for _, g := range groups {
			m, err := produceConfigs(ctx, cl, topic, [][]*kgo.Record{g})
			if n += m; err != nil {
				return n, err
			}
		}
		return n, nil
	case len(recs) > 1:
		for i, r := range recs {
			if err := produceBatch(ctx, cl, topic, 0, []*kgo.Record{r}); err != nil {
				return i, err
			}
		}
		return len(recs), nil
	}
	return 0, err
}

func (o WriteOptions) withDefaults() WriteOptions {
	d := DefaultTopics()
	if o.Topics.Config == "" {
		o.Topics.Config = d.Config
	}
	if o.Topics.Offset == "" {
		o.Topics.Offset = d.Offset
	}
	if o.Topics.Status == "" {
		o.Topics.Status = d.Status
	}
	if o.ReplicationFactor == 0 {
		o.ReplicationFactor = -1
	}
	if o.OffsetPartitions == 0 {
		o.OffsetPartitions = 25
	}
	if o.StatusPartitions == 0 {
		o.StatusPartitions = 5
	}
	return o
}

func validateWrite(cl *kgo.Client, c *Cluster, opts WriteOptions) error {
	g, _ := cl.OptValue(kgo.ConsumerGroup).(string)
	topics, _ := cl.OptValue(kgo.ConsumeTopics).([]string)
	if g != "" || len(topics) > 0 {
		return errors.New("write: the Kafka client must not be a consumer (Write reads with clients of its own)")
	}
	t := opts.Topics
	if t.Config == t.Offset || t.Config == t.Status || t.Offset == t.Status {
		return fmt.Errorf("write: the config, offsets and status topics must differ (%s, %s, %s)", t.Config, t.Offset, t.Status)
	}
	seen := map[string]bool{}
	for _, conn := range c.Connectors {
		switch {
		case conn.Name == "":
			return errors.New("write: a connector without a name")
		case seen[conn.Name]:
			return fmt.Errorf("write: connector %s twice", conn.Name)
		case conn.Config["name"] != "" && conn.Config["name"] != conn.Name:
			return fmt.Errorf("write: connector %s: its config names it %q", conn.Name, conn.Config["name"])
		}
		seen[conn.Name] = true
		switch conn.Target {
		case "", "STARTED", "PAUSED", "STOPPED":
		default:
			return fmt.Errorf("write: connector %s: unknown target state %q", conn.Name, conn.Target)
		}
		for _, o := range conn.SourceOffsets {
			if o.Partition == nil || o.Offset == nil {
				return fmt.Errorf("write: connector %s: a source offset without partition or offset", conn.Name)
			}
		}
	}
	return nil
}

// unreachable names the brokers when err is the context's (franz-go
// retries an unreachable broker until then).
func unreachable(ctx context.Context, seeds []string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("kafka at %s: no answer before %v: %w", strings.Join(seeds, ","), context.Cause(ctx), err)
	}
	return err
}

type writer struct {
	base []kgo.Opt
	adm  *kadm.Client
	opts WriteOptions

	configs map[string]*configState              // by connector, from the config topic
	targets map[string]string                    // target states, from the config topic
	offsets map[string]map[string]*slot          // connector → raw key → latest record
	carried map[string]map[topicPartition]bool   // by group: what the Cluster's sinks carry
	groups  map[string]kadm.FetchOffsetsResponse // by group: its committed offsets
}

// slot is the latest record of one key of the offsets topic.
type slot struct {
	partition map[string]any
	logical   string // canonical JSON of the partition
	value     []byte // nil: tombstone
}

func (w *writer) ensureTopics(ctx context.Context) (created map[string]bool, err error) {
	t := w.opts.Topics
	compact := map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}
	parts := map[string]int32{t.Config: 1, t.Offset: w.opts.OffsetPartitions, t.Status: w.opts.StatusPartitions}
	names := []string{t.Config, t.Offset, t.Status}
	details, err := w.adm.ListTopics(ctx, names...)
	if err != nil {
		return nil, fmt.Errorf("describe topics %s: %w", strings.Join(names, ", "), err)
	}
	// Check the topics that exist before creating any.
	var existing, missing []string
	for _, name := range names {
		d, ok := details[name]
		switch {
		case ok && d.Err == nil:
			if name == t.Config && len(d.Partitions) != 1 {
				return nil, fmt.Errorf("config topic %s has %d partitions: Kafka Connect requires exactly 1 and refuses to start on it", name, len(d.Partitions))
			}
			existing = append(existing, name)
		case !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition):
			missing = append(missing, name)
		default:
			return nil, fmt.Errorf("describe topic %s: %w", name, d.Err)
		}
	}
	if err := w.checkCompacted(ctx, existing); err != nil {
		return nil, err
	}
	created = map[string]bool{}
	if w.opts.DryRun {
		for _, name := range missing {
			created[name] = true // would be: nothing to read in it
		}
		return created, nil
	}
	for _, name := range missing {
		_, err := w.adm.CreateTopic(ctx, parts[name], w.opts.ReplicationFactor, compact, name)
		if errors.Is(err, kerr.TopicAlreadyExists) {
			// Created meanwhile by someone else.
			if err := w.checkCompacted(ctx, []string{name}); err != nil {
				return nil, err
			}
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("create topic %s: %w", name, err)
		}
		created[name] = true
	}
	// A new topic can take a moment to have leaders: wait for its offsets.
	for name := range created {
		for {
			offs, err := w.adm.ListEndOffsets(ctx, name)
			if err == nil && offs.Error() == nil && len(offs[name]) == int(parts[name]) {
				break
			}
			if ctx.Err() != nil {
				return nil, fmt.Errorf("topic %s: created, but no leaders yet: %w", name, context.Cause(ctx))
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return created, nil
}

// checkCompacted refuses topics whose cleanup.policy is not compact:
// Kafka Connect refuses them too, and deletion would lose its records.
func (w *writer) checkCompacted(ctx context.Context, topics []string) error {
	if len(topics) == 0 {
		return nil
	}
	rcs, err := w.adm.DescribeTopicConfigs(ctx, topics...)
	if err != nil {
		return fmt.Errorf("describe configs of topics %s: %w", strings.Join(topics, ", "), err)
	}
	for _, rc := range rcs {
		if rc.Err != nil {
			return fmt.Errorf("describe configs of topic %s: %w", rc.Name, rc.Err)
		}
		for _, kv := range rc.Configs {
			if kv.Key == "cleanup.policy" && kv.MaybeValue() != "compact" {
				return fmt.Errorf("topic %s has cleanup.policy=%s: Kafka Connect requires compact", rc.Name, kv.MaybeValue())
			}
		}
	}
	return nil
}

// scan reads topic from its start offsets to the end offsets it lists
// first, calling fn on each record, in order within a partition.
func (w *writer) scan(ctx context.Context, topic string, fn func(*kgo.Record) error) error {
	starts, err := w.adm.ListStartOffsets(ctx, topic)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return fmt.Errorf("topic %s: start offsets: %w", topic, err)
	}
	ends, err := w.adm.ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return fmt.Errorf("topic %s: end offsets: %w", topic, err)
	}
	from := map[int32]kgo.Offset{}
	end := map[int32]int64{}
	var total, read int64
	for p, e := range ends[topic] {
		s := starts[topic][p].Offset
		if e.Offset > s {
			from[p] = kgo.NewOffset().At(s)
			end[p] = e.Offset
			total += e.Offset - s
		}
	}
	progress := func() {
		if w.opts.Progress != nil {
			w.opts.Progress(Progress{Topic: topic, Read: read, Total: total})
		}
	}
	progress()
	if len(from) == 0 {
		return nil
	}
	rd, err := kgo.NewClient(append(slices.Clip(w.base),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: from}),
		// Control records too, so that a transaction marker at the end is reached.
		kgo.KeepControlRecords(),
	)...)
	if err != nil {
		return fmt.Errorf("topic %s: reader: %w", topic, err)
	}
	defer rd.Close()
	for len(end) > 0 {
		fs := rd.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("topic %s: read %d of %d records: %w", topic, read, total, context.Cause(ctx))
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			if ferr == nil {
				ferr = fmt.Errorf("topic %s partition %d: %w", t, p, err)
			}
		})
		if ferr != nil {
			return ferr
		}
		var rerr error
		fs.EachRecord(func(r *kgo.Record) {
			e, ok := end[r.Partition]
			if !ok || r.Offset >= e || rerr != nil {
				return
			}
			read++
			if !r.Attrs.IsControl() {
				if err := fn(r); err != nil {
					rerr = fmt.Errorf("topic %s partition %d offset %d: %w", topic, r.Partition, r.Offset, err)
				}
			}
			if r.Offset+1 >= e {
				delete(end, r.Partition)
			}
		})
		if rerr != nil {
			return rerr
		}
		progress()
	}
	return nil
}

// readConfigs takes the connectors out of the config topic, with Kafka
// Connect's rules (the reader's accumulator): task configs count only once
// a commit covers them all. Records it cannot decode are skipped, as Kafka
// Connect skips them.
func (w *writer) readConfigs(ctx context.Context) error {
	a := newAccumulator(w.opts.Topics, nil)
	err := w.scan(ctx, w.opts.Topics.Config, func(r *kgo.Record) error {
		a.configRecord(at{Partition: r.Partition, Offset: r.Offset, Timestamp: r.Timestamp.UnixMilli()}, r.Key, r.Value)
		return nil
	})
	w.configs, w.targets = a.configs, a.targets
	return err
}

// readOffsets keeps the latest record of each key of the offsets topic.
func (w *writer) readOffsets(ctx context.Context) error {
	w.offsets = map[string]map[string]*slot{}
	return w.scan(ctx, w.opts.Topics.Offset, func(r *kgo.Record) error {
		rec, err := DecodeOffsetRecord(r.Key, r.Value)
		if err != nil {
			return nil // Kafka Connect ignores such keys too
		}
		m := w.offsets[rec.Connector]
		if m == nil {
			m = map[string]*slot{}
			w.offsets[rec.Connector] = m
		}
		m[string(r.Key)] = &slot{partition: rec.Partition, logical: jsonForm(rec.Partition), value: r.Value}
		return nil
	})
}

// plan is what Write writes for one connector.
type plan struct {
	item        WriteItem
	configs     []*kgo.Record
	offsets     []*kgo.Record
	group       string
	sinkOffsets kadm.Offsets
	sinkDeletes kadm.TopicsSet // the group's partitions no sink carries
	offsetsSame bool
}

func (w *writer) plan(ctx context.Context, conn *Connector) (*plan, error) {
	p := &plan{item: WriteItem{Name: conn.Name}}
	target := conn.Target
	if target == "" {
		target = "STARTED"
	}
	props := map[string]*string{}
	for k, v := range conn.Config {
		props[k] = &v
	}
	for _, k := range conn.NullKeys {
		props[k] = nil
	}
	if _, ok := props["name"]; !ok {
		props["name"] = &conn.Name // Kafka Connect's REST API always adds it
	}
	// A stopped connector has no tasks (Kafka Connect's stop writes an
	// empty task set); an inconsistent one gets an empty set too, which
	// the worker regenerates when it starts the connector.
	var tasks []map[string]*string
	switch {
	case target == "STOPPED":
	case conn.Inconsistent:
		p.item.Reason = "its task configs were inconsistent: written without tasks, the worker generates them"
	default:
		for _, t := range conn.Tasks {
			tp := map[string]*string{}
			for k, v := range t {
				tp[k] = &v
			}
			tasks = append(tasks, tp)
		}
	}

	// Config records, in Kafka Connect's write order.
	recs := []ConfigRecord{
		{Kind: KindTargetState, Connector: conn.Name, TargetState: target},
		{Kind: KindConnector, Connector: conn.Name, Properties: props},
	}
	for i, t := range tasks {
		recs = append(recs, ConfigRecord{Kind: KindTask, Connector: conn.Name, Task: i, Properties: t})
	}
	recs = append(recs, ConfigRecord{Kind: KindCommit, Connector: conn.Name, TaskCount: len(tasks)})
	for _, rec := range recs {
		k, v, err := EncodeConfigRecord(rec)
		if err != nil {
			return nil, fmt.Errorf("connector %s: %w", conn.Name, err)
		}
		p.configs = append(p.configs, &kgo.Record{Topic: w.opts.Topics.Config, Key: []byte(k), Value: v})
	}

	if err := w.planOffsets(p, conn); err != nil {
		return nil, err
	}
	sinkSame, err := w.planSink(ctx, p, conn)
	p.item.Group = p.group
	if err != nil {
		return nil, err
	}

	tc, exists := w.configs[conn.Name]
	if !exists {
		p.item.Action = ActionCreate
		return p, nil
	}
	var diffs []string
	if !sameProps(tc.config, props) {
		diffs = append(diffs, "config")
	}
	if t := w.target(conn.Name); t != target {
		diffs = append(diffs, "target state ("+t+" in the topic)")
	}
	if tc.inconsistent || tc.taskCount != len(tasks) || !slices.EqualFunc(tc.tasks, tasks, func(a map[string]string, b map[string]*string) bool {
		return maps.Equal(a, withoutNulls(b))
	}) {
		diffs = append(diffs, "task configs")
	}
	if !p.offsetsSame {
		diffs = append(diffs, "source offsets")
	}
	if !sinkSame {
		diffs = append(diffs, "sink offsets of group "+p.group)
	}
	switch {
	case len(diffs) == 0:
		p.item.Action, p.item.Reason = ActionUnchanged, ""
	case w.opts.Overwrite:
		p.item.Action, p.item.Reason = ActionOverwrite, "differed: "+strings.Join(diffs, ", ")
	default:
		p.item.Action, p.item.Reason = ActionExists, "differs: "+strings.Join(diffs, ", ")+"; left alone (overwrite replaces it)"
	}
	return p, nil
}

func (w *writer) target(name string) string {
	if t, ok := w.targets[name]; ok {
		return t
	}
	return "STARTED"
}

// planOffsets makes the connector's offsets in the topic exactly conn's.
// Kafka Connect looks an offset up by the key bytes its JSON converter
// makes of the partition, which depend on the connector's map order: so
// an offset goes under every live key the topic holds for its partition
// (else every key it held, else the encoder's), a key that already holds
// it is left alone, and the connector's keys of other partitions are
// tombstoned.
func (w *writer) planOffsets(p *plan, conn *Connector) error {
	have := w.offsets[conn.Name] // raw key → latest record
	keep := map[string]bool{}    // raw keys that hold one of conn's offsets
	put := func(key, value []byte) {
		p.offsets = append(p.offsets, &kgo.Record{Topic: w.opts.Topics.Offset, Key: key, Value: value})
	}
	for _, o := range conn.SourceOffsets {
		logical := jsonForm(o.Partition)
		var live, dead []string
		for _, k := range sortedKeys(have) {
			if s := have[k]; s.logical == logical && s.value != nil {
				live = append(live, k)
			} else if s.logical == logical {
				dead = append(dead, k)
			}
		}
		keys := live
		if len(keys) == 0 {
			keys = dead
		}
		if k := carriedKey(conn.Name, o); k != "" && !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
		if len(keys) == 0 {
			k, err := EncodeOffsetKey(conn.Name, o.Partition)
			if err != nil {
				return fmt.Errorf("connector %s: %w", conn.Name, err)
			}
			keys = []string{string(k)}
		}
		value, err := EncodeOffsetValue(o.Offset)
		if err != nil {
			return fmt.Errorf("connector %s: source offset of %s: %w", conn.Name, logical, err)
		}
		for _, k := range keys {
			keep[k] = true
			if s := have[k]; s == nil || s.value == nil || !sameJSON(s.value, value) {
				put([]byte(k), value)
			}
		}
	}
	for _, k := range sortedKeys(have) {
		if !keep[k] && have[k].value != nil {
			put([]byte(k), nil)
		}
	}
	p.offsetsSame = len(p.offsets) == 0
	return nil
}

// planSink prepares the commit of a sink's offsets to its group, and the
// deletion of the group's offsets of partitions that no sink of the
// Cluster with that group carries (as planOffsets tombstones a source's
// other partitions), and tells whether the group already holds just them.
func (w *writer) planSink(ctx context.Context, p *plan, conn *Connector) (same bool, err error) {
	if !conn.IsSink() {
		return true, nil
	}
	p.group = conn.SinkGroup
	if p.group == "" {
		p.group = SinkGroup(conn.Name, conn.Config)
	}
	if len(conn.SinkOffsets) > 0 {
		p.sinkOffsets = kadm.Offsets{}
		for _, o := range conn.SinkOffsets {
			p.sinkOffsets.Add(kadm.Offset{Topic: o.Topic, Partition: o.Partition, At: o.Offset, LeaderEpoch: -1})
		}
	}
	fetched, ok := w.groups[p.group]
	if !ok {
		fetched.Err = errors.New("no answer for the group")
	}
	resp, err := fetched.Fetched, fetched.Err
	if err == nil {
		err = resp.Error()
	}
	if errors.Is(err, kerr.GroupIDNotFound) {
		return len(conn.SinkOffsets) == 0, nil
	}
	if err != nil {
		return false, fmt.Errorf("connector %s: offsets of consumer group %s: %w", conn.Name, p.group, err)
	}
	same = true
	resp.Each(func(o kadm.OffsetResponse) {
		if o.At >= 0 && !w.carried[p.group][topicPartition{o.Topic, o.Partition}] {
			p.sinkDeletes.Add(o.Topic, o.Partition)
			same = false
		}
	})
	for _, o := range conn.SinkOffsets {
		got, ok := resp.Lookup(o.Topic, o.Partition)
		if !ok || got.At != o.Offset {
			same = false
		}
	}
	return same, nil
}

type topicPartition struct {
	topic     string
	partition int32
}

// carriedSinkPartitions are the partitions each group's sinks of c carry.
func carriedSinkPartitions(c *Cluster) map[string]map[topicPartition]bool {
	out := map[string]map[topicPartition]bool{}
	for _, conn := range c.Connectors {
		if !conn.IsSink() {
			continue
		}
		g := conn.SinkGroup
		if g == "" {
			g = SinkGroup(conn.Name, conn.Config)
		}
		if out[g] == nil {
			out[g] = map[topicPartition]bool{}
		}
		for _, o := range conn.SinkOffsets {
			out[g][topicPartition{o.Topic, o.Partition}] = true
		}
	}
	return out
}

// checkGroupsIdle refuses groups with members: a running consumer would
// overwrite the commits, and the broker refuses them anyway.
func (w *writer) checkGroupsIdle(ctx context.Context, todo []*plan) error {
	var groups []string
	owner := map[string]string{}
	for _, p := range todo {
		if (len(p.sinkOffsets) > 0 || len(p.sinkDeletes) > 0) && owner[p.group] == "" {
			groups = append(groups, p.group)
			owner[p.group] = p.item.Name
		}
	}
	if len(groups) == 0 {
		return nil
	}
	described, err := w.adm.DescribeGroups(ctx, groups...)
	if err != nil {
		return fmt.Errorf("describe consumer groups %s: %w", strings.Join(groups, ", "), err)
	}
	busy := func(g string, members int, state string) error {
		return fmt.Errorf("consumer group %s of sink connector %s has %d active members (state %s): stop the Kafka Connect sink first; nothing written", g, owner[g], members, state)
	}
	var rest []string // not classic groups with members
	for _, g := range groups {
		d := described[g]
		if d.Err != nil && !errors.Is(d.Err, kerr.GroupIDNotFound) {
			return fmt.Errorf("describe consumer group %s: %w", g, d.Err)
		}
		if len(d.Members) > 0 {
			return busy(g, len(d.Members), d.State)
		}
		rest = append(rest, g)
	}
	// A group of the consumer protocol (KIP-848) shows its members only to
	// ConsumerGroupDescribe, which brokers before 4.0 lack.
	cds, err := w.adm.DescribeConsumerGroups(ctx, rest...)
	if errors.Is(err, kerr.UnsupportedVersion) || (err != nil && strings.Contains(err.Error(), "broker is too old")) {
		return nil
	}
	if err != nil && len(cds) == 0 {
		return fmt.Errorf("describe consumer groups %s: %w", strings.Join(rest, ", "), err)
	}
	for _, g := range rest {
		if d := cds[g]; len(d.Members) > 0 {
			return busy(g, len(d.Members), d.State)
		}
	}
	return nil
}

// produceAll writes recs in order and returns how many were acknowledged
// before the first failure.
func produceAll(ctx context.Context, cl *kgo.Client, recs []*kgo.Record) (int, error) {
	if len(recs) == 0 {
		return 0, nil
	}
	rs := cl.ProduceSync(ctx, recs...)
	n := 0
	for _, r := range rs {
		if r.Err != nil {
			return n, fmt.Errorf("record %q: %w", r.Record.Key, r.Err)
		}
		n++
	}
	return n, nil
}

func sameProps(a, b map[string]*string) bool {
	return maps.EqualFunc(a, b, func(x, y *string) bool {
		return (x == nil) == (y == nil) && (x == nil || *x == *y)
	})
}

// sameJSON compares two JSON values as decoded, whatever their bytes.
func sameJSON(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var x, y any
	if decodeStrict(a, &x) != nil || decodeStrict(b, &y) != nil {
		return false
	}
	return jsonForm(x) == jsonForm(y)
}
