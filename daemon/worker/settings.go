package worker

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kcd-project/kcd/daemon/clientcfg"
	"github.com/kcd-project/kcd/daemon/connect"
)

// settings are the runtime's own keys of a connector config (Kafka
// Connect's ConnectorConfig, SinkConnectorConfig, SourceConnectorConfig).
type settings struct {
	flushInterval time.Duration // offset.flush.interval.ms
	tolerateAll   bool          // errors.tolerance=all
	logErrors     bool          // errors.log.enable
	logMessages   bool          // errors.log.include.messages
	retryMax      time.Duration // errors.retry.delay.max.ms
	retryTimeout  time.Duration // errors.retry.timeout; 0: no retries, <0: without end

	// Source: topic.creation.default.*.
	topicPartitions  int32
	topicReplication int16
	// Source, with exactly-once support: transaction.boundary (poll or
	// interval) and transaction.boundary.interval.ms.
	intervalBoundary bool
	txnInterval      time.Duration
	// Sink.
	topics      []string // topics
	topicsRegex string   // topics.regex
	groupID     string   // consumer.override.group.id, default connect-<name>
	resetLatest bool     // consumer.override.auto.offset.reset=latest
	dlqTopic    string   // errors.deadletterqueue.topic.name
	dlqRF       int16    // errors.deadletterqueue.topic.replication.factor
	dlqHeaders  bool     // errors.deadletterqueue.context.headers.enable
	// consumer.override.isolation.level: read_committed by default with
	// exactly-once source support, so that the aborted records of a
	// fenced source task never reach a sink.
	readCommitted bool
	maxPoll       int // consumer max.poll.records: the most records of one Put

	// producer and consumer are the worker's producer.* and consumer.*
	// settings with the connector's producer.override.* and
	// consumer.override.* over them. ownProducer says the producer
	// settings differ from the worker's: the connector's source tasks
	// cannot share the worker's producer.
	producer    clientcfg.Producer
	consumer    clientcfg.Consumer
	ownProducer bool
}

// clientSettings reads the connector's client overrides as the worker's
// policy allows them: producer.override.* for a source connector,
// consumer.override.* for a sink (typ ""; both), as Kafka Connect applies
// them. An override the policy refuses fails the connector, as in Kafka
// Connect. The other kind's overrides are not used: a sink's dead letter
// queue goes through the worker's producer.
func clientSettings(cfg map[string]string, w Config, typ connect.PluginType) (clientcfg.Producer, clientcfg.Consumer, error) {
	policy, err := clientcfg.ParsePolicy(string(w.OverridePolicy))
	if err != nil {
		return clientcfg.Producer{}, clientcfg.Consumer{}, err
	}
	// A Config not through withDefaults (tests) has Kafka Connect's.
	base, cbase := w.producer, w.consumer
	if base == (clientcfg.Producer{}) {
		base = clientcfg.DefaultProducer()
	}
	if cbase == (clientcfg.Consumer{}) {
		cbase = clientcfg.DefaultConsumer()
	}
	var prefixes []string
	if typ != connect.PluginSink {
		prefixes = append(prefixes, clientcfg.ProducerOverridePrefix)
	}
	if typ != connect.PluginSource {
		prefixes = append(prefixes, clientcfg.ConsumerOverridePrefix)
	}
	var errs []error
	for _, prefix := range prefixes {
		for _, k := range slices.Sorted(maps.Keys(clientcfg.WithPrefix(cfg, prefix))) {
			if !policy.Allows(k) {
				errs = append(errs, errors.New(policy.Refusal(k)))
			}
		}
	}
	if len(errs) > 0 {
		return base, cbase, fmt.Errorf("client config overrides not allowed: %w", errors.Join(errs...))
	}
	p, c := base, cbase
	if typ != connect.PluginSink {
		p, err = base.With(clientcfg.WithPrefix(cfg, clientcfg.ProducerOverridePrefix), clientcfg.ProducerOverridePrefix)
		if err == nil {
			err = p.Check(clientcfg.ProducerOverridePrefix, w.exactlyOnce())
		}
		if err != nil {
			return base, cbase, err
		}
	}
	if typ != connect.PluginSource {
		c, err = cbase.With(clientcfg.WithPrefix(cfg, clientcfg.ConsumerOverridePrefix), clientcfg.ConsumerOverridePrefix)
	}
	return p, c, err
}

// parseSettings parses the settings of a connector of any type.
func parseSettings(name string, cfg map[string]string, defaults Config) (settings, error) {
	return parseSettingsFor(name, cfg, defaults, "")
}

func parseSettingsFor(name string, cfg map[string]string, defaults Config, typ connect.PluginType) (settings, error) {
	s := settings{
		flushInterval:    defaults.OffsetFlushInterval,
		retryMax:         defaults.RetryBackoff.Max,
		topicPartitions:  -1,
		topicReplication: -1,
		groupID:          "connect-" + name,
		dlqRF:            3,
	}
	p := parser{cfg: cfg}
	if ms := p.int("offset.flush.interval.ms", 0, 1); ms > 0 {
		s.flushInterval = time.Duration(ms) * time.Millisecond
	}
	switch t := strings.ToLower(p.str("errors.tolerance")); t {
	case "", "none":
	case "all":
		s.tolerateAll = true
	default:
		p.fail("errors.tolerance", t, "must be none or all")
	}
	s.logErrors = p.bool("errors.log.enable")
	s.logMessages = p.bool("errors.log.include.messages")
	if ms := p.int("errors.retry.delay.max.ms", 0, 1); ms > 0 {
		s.retryMax = time.Duration(ms) * time.Millisecond
	}
	// Any long, as Kafka Connect takes it: -1 retries without end, and
	// another negative value as 0.
	switch ms := p.int("errors.retry.timeout", 0, math.MinInt64); {
	case ms == -1:
		s.retryTimeout = -1
	case ms > 0:
		s.retryTimeout = time.Duration(min(ms, math.MaxInt64/int64(time.Millisecond))) * time.Millisecond
	}
	s.topicPartitions = int32(p.int("topic.creation.default.partitions", -1, -1))
	s.topicReplication = int16(p.int("topic.creation.default.replication.factor", -1, -1))
	switch v := strings.ToLower(p.str("exactly.once.support")); v {
	case "", "requested":
	case "required":
		// Kafka Connect requires the connector to declare that it can
		// deliver exactly once; kcd's transactions fence and commit
		// batches atomically, but source offsets are stored outside them.
		p.fail("exactly.once.support", v, "kcd does not deliver source records exactly once (its transactions fence zombie tasks, but source offsets are stored outside them): use requested")
	default:
		p.fail("exactly.once.support", v, "must be requested or required")
	}
	switch b := strings.ToLower(p.str("transaction.boundary")); b {
	case "", "poll":
	case "interval":
		s.intervalBoundary = true
	case "connector":
		p.fail("transaction.boundary", b, "no connector of kcd defines its own transaction boundaries: use poll or interval")
	default:
		p.fail("transaction.boundary", b, "must be poll, interval or connector")
	}
	s.txnInterval = defaults.OffsetFlushInterval
	if ms := p.int("transaction.boundary.interval.ms", 0, 0); ms > 0 {
		s.txnInterval = time.Duration(ms) * time.Millisecond
	}

	for t := range strings.SplitSeq(p.str("topics"), ",") {
		if t = strings.TrimSpace(t); t != "" {
			s.topics = append(s.topics, t)
		}
	}
	s.topicsRegex = p.str("topics.regex")
	var err error
	if s.producer, s.consumer, err = clientSettings(cfg, defaults, typ); err != nil && p.err == nil {
		p.err = err
	}
	// buffer.memory is the task's budget, not the producer's: alone, it
	// needs no producer of the task's own.
	same := s.producer
	same.BufferMemory = defaults.producer.BufferMemory
	s.ownProducer = same != defaults.producer && defaults.producer != (clientcfg.Producer{})
	if g := strings.TrimSpace(s.consumer.GroupID); g != "" {
		s.groupID = g
	}
	s.resetLatest = s.consumer.AutoOffsetReset == "latest"
	s.maxPoll = cmp.Or(s.consumer.MaxPollRecords, defaults.Limits.SinkMaxBatch)
	s.dlqTopic = p.str("errors.deadletterqueue.topic.name")
	s.dlqRF = int16(p.int("errors.deadletterqueue.topic.replication.factor", 3, -1))
	s.dlqHeaders = p.bool("errors.deadletterqueue.context.headers.enable")
	s.readCommitted = defaults.exactlyOnce()
	switch s.consumer.IsolationLevel {
	case "read_committed":
		s.readCommitted = true
	case "read_uncommitted":
		s.readCommitted = false
	}
	return s, p.err
}

// parser reads typed settings, keeping the first error.
type parser struct {
	cfg map[string]string
	err error
}

func (p *parser) str(k string) string { return strings.TrimSpace(p.cfg[k]) }

func (p *parser) fail(k, v, why string) {
	if p.err == nil {
		p.err = fmt.Errorf("invalid value %s for configuration %s: %s", v, k, why)
	}
}

// int parses k, def when unset; values below lowest are refused.
func (p *parser) int(k string, def, lowest int64) int64 {
	v := p.str(k)
	if v == "" {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < lowest {
		if lowest == math.MinInt64 {
			p.fail(k, v, "not a number")
		} else {
			p.fail(k, v, fmt.Sprintf("not a number ≥ %d", lowest))
		}
		return def
	}
	return n
}

func (p *parser) bool(k string) bool {
	switch v := strings.ToLower(p.str(k)); v {
	case "", "false":
		return false
	case "true":
		return true
	default:
		p.fail(k, v, "not a boolean")
		return false
	}
}
