// Package clientcfg reads Kafka Connect's producer and consumer settings
// (the worker's producer.* and consumer.*, a connector's
// producer.override.* and consumer.override.* under
// connector.client.config.override.policy) and maps them onto franz-go
// options. Settings without a franz-go counterpart are refused, never
// silently ignored; bootstrap and security settings are kcd's own.
package clientcfg

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Prefixes of the settings, as Kafka Connect names them.
const (
	ProducerPrefix         = "producer."
	ConsumerPrefix         = "consumer."
	ProducerOverridePrefix = "producer.override."
	ConsumerOverridePrefix = "consumer.override."
	AdminOverridePrefix    = "admin.override."
)

// PolicyKey is the worker setting that says which client settings a
// connector may override.
const PolicyKey = "connector.client.config.override.policy"

// Policy is a connector.client.config.override.policy.
type Policy string

// The policies; All is Kafka Connect's default since 3.0.
const (
	PolicyNone      Policy = "None"
	PolicyPrincipal Policy = "Principal"
	PolicyAll       Policy = "All"
)

const policyPackage = "org.apache.kafka.connect.connector.policy."

// ParsePolicy reads a policy by its simple name or Kafka Connect's class
// name (org.apache.kafka.connect.connector.policy.AllConnectorClientConfigOverridePolicy).
func ParsePolicy(s string) (Policy, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return PolicyAll, nil
	}
	for _, p := range []Policy{PolicyNone, PolicyPrincipal, PolicyAll} {
		if s == string(p) || s == p.Class() || s == string(p)+"ConnectorClientConfigOverridePolicy" {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s %q is not one of None, Principal, All", PolicyKey, s)
}

// Class is the policy's Kafka Connect class name.
func (p Policy) Class() string {
	return policyPackage + string(p) + "ConnectorClientConfigOverridePolicy"
}

// principalSettings are what the Principal policy lets a connector override.
var principalSettings = []string{"sasl.jaas.config", "sasl.mechanism", "security.protocol"}

// Allows tells whether p lets a connector override the client setting name
// (without its prefix).
func (p Policy) Allows(name string) bool {
	switch p {
	case PolicyAll:
		return true
	case PolicyPrincipal:
		return slices.Contains(principalSettings, name)
	default:
		return false
	}
}

// Refusal is Kafka Connect's message for an override p does not allow.
func (p Policy) Refusal(name string) string {
	return fmt.Sprintf("The '%s' policy does not allow '%s' to be overridden in the connector configuration.", p, name)
}

// WithPrefix returns the settings of cfg under prefix, the prefix cut.
func WithPrefix(cfg map[string]string, prefix string) map[string]string {
	out := map[string]string{}
	for k, v := range cfg {
		if rest, ok := strings.CutPrefix(k, prefix); ok && rest != "" {
			out[rest] = v
		}
	}
	return out
}

// kcdOwn reports a bootstrap or security setting, which kcd sets for all
// its clients from its own configuration.
func kcdOwn(name string) bool {
	return name == "bootstrap.servers" || name == "security.protocol" ||
		strings.HasPrefix(name, "sasl.") || strings.HasPrefix(name, "ssl.")
}

func unsupported(kind, prefix, name string) error {
	if kcdOwn(name) {
		return fmt.Errorf("%s%s is not supported: bootstrap and security settings are kcd's own (its Kafka settings)", prefix, name)
	}
	return fmt.Errorf("%s%s is not supported by kcd: it has no counterpart in kcd's %s (docs/worker.md lists the settings it maps)", prefix, name, kind)
}

// Producer is what kcd takes of a producer's settings.
type Producer struct {
	Compression     string        // compression.type: none, gzip, snappy, lz4, zstd
	Linger          time.Duration // linger.ms
	BatchBytes      int32         // batch.size; 0: MaxRequestSize
	MaxRequestSize  int32         // max.request.size
	Acks            int16         // acks: -1 (all), 0, 1
	MaxInFlight     int           // max.in.flight.requests.per.connection
	Idempotent      bool          // enable.idempotence
	RequestTimeout  time.Duration // request.timeout.ms
	DeliveryTimeout time.Duration // delivery.timeout.ms
	BufferMemory    int64         // buffer.memory
	ClientID        string        // client.id; "": kcd's own per producer
}

// DefaultProducer is Kafka Connect's producer where nothing is set
// (Worker.baseProducerConfigs over the Java producer's defaults), but for
// batch.size: franz-go's batch limit also bounds a record, so kcd's
// batches are bounded by max.request.size unless batch.size is set.
func DefaultProducer() Producer {
	return Producer{
		Compression:     "none",
		Linger:          5 * time.Millisecond,
		MaxRequestSize:  1 << 20,
		Acks:            -1,
		MaxInFlight:     1,
		Idempotent:      false,
		RequestTimeout:  30 * time.Second,
		DeliveryTimeout: math.MaxInt32 * time.Millisecond,
		BufferMemory:    32 << 20,
	}
}

type setter[T any] func(*T, string) error

var producerSetters = map[string]setter[Producer]{
	"compression.type": func(p *Producer, v string) error {
		v = strings.ToLower(v)
		switch v {
		case "none", "gzip", "snappy", "lz4", "zstd":
			p.Compression = v
			return nil
		}
		return errors.New("must be none, gzip, snappy, lz4 or zstd")
	},
	"linger.ms": func(p *Producer, v string) error { return setMillis(&p.Linger, v, 0) },
	"batch.size": func(p *Producer, v string) error {
		return setInt32(&p.BatchBytes, v, 512, "at least 512 (kcd's batches cannot be smaller)")
	},
	"max.request.size": func(p *Producer, v string) error {
		return setInt32(&p.MaxRequestSize, v, 512, "at least 512")
	},
	"acks": func(p *Producer, v string) error {
		switch strings.ToLower(v) {
		case "all", "-1":
			p.Acks = -1
		case "1":
			p.Acks = 1
		case "0":
			p.Acks = 0
		default:
			return errors.New("must be all, -1, 0 or 1")
		}
		return nil
	},
	"max.in.flight.requests.per.connection": func(p *Producer, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return errors.New("not a number ≥ 1")
		}
		p.MaxInFlight = n
		return nil
	},
	"enable.idempotence": func(p *Producer, v string) error { return setBool(&p.Idempotent, v) },
	"request.timeout.ms": func(p *Producer, v string) error { return setMillis(&p.RequestTimeout, v, 1) },
	"delivery.timeout.ms": func(p *Producer, v string) error {
		return setMillis(&p.DeliveryTimeout, v, 1)
	},
	"buffer.memory": func(p *Producer, v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 64<<10 {
			return errors.New("not a number ≥ 65536")
		}
		p.BufferMemory = n
		return nil
	},
	"client.id": func(p *Producer, v string) error { p.ClientID = v; return nil },
}

// With overlays props (names without prefix) on p; an unsupported or
// invalid setting is an error naming it with prefix (producer. or
// producer.override.).
func (p Producer) With(props map[string]string, prefix string) (Producer, error) {
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(props)) {
		if err := set(producerSetters, "producer", &p, prefix, k, props[k]); err != nil {
			errs = append(errs, err)
		}
	}
	return p, errors.Join(errs...)
}

// CheckProducer checks one producer setting on its own.
func CheckProducer(prefix, name, value string) error {
	p := DefaultProducer()
	return set(producerSetters, "producer", &p, prefix, name, value)
}

// Check checks the settings together, for a producer that is
// transactional or not: kcd's transactions need idempotence (which they
// turn on, as Kafka Connect does) and so acks=all.
func (p Producer) Check(prefix string, transactional bool) error {
	idem := p.Idempotent || transactional
	switch {
	case idem && p.Acks != -1:
		if transactional {
			return fmt.Errorf("%sacks must be all: exactly-once source support produces in transactions, which need it", prefix)
		}
		return fmt.Errorf("%sacks must be all with enable.idempotence=true", prefix)
	case idem && p.MaxInFlight > 5:
		return fmt.Errorf("%smax.in.flight.requests.per.connection must be at most 5 with an idempotent producer", prefix)
	case p.BatchBytes > p.MaxRequestSize:
		return fmt.Errorf("%sbatch.size %d exceeds max.request.size %d", prefix, p.BatchBytes, p.MaxRequestSize)
	}
	return nil
}

// Opts are the franz-go options of p. An idempotent producer keeps up to
// five requests in flight per broker whatever max.in.flight says (franz-go
// orders them by sequence number); the transactional producer is made
// idempotent by TransactionalID. buffer.memory is not an option: the
// worker bounds what a producer holds by its in-flight budgets.
func (p Producer) Opts(transactional bool) []kgo.Opt {
	batch := p.MaxRequestSize
	if p.BatchBytes > 0 {
		batch = p.BatchBytes
	}
	opts := []kgo.Opt{
		kgo.ProducerBatchCompression(codec(p.Compression)),
		kgo.ProducerLinger(p.Linger),
		kgo.ProducerBatchMaxBytes(batch),
		kgo.ProduceRequestTimeout(p.RequestTimeout),
		kgo.RecordDeliveryTimeout(p.DeliveryTimeout),
	}
	switch p.Acks {
	case 0:
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()))
	case 1:
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()))
	default:
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	}
	if !p.Idempotent && !transactional {
		opts = append(opts, kgo.DisableIdempotentWrite(), kgo.MaxProduceRequestsInflightPerBroker(p.MaxInFlight))
	}
	return opts
}

func codec(c string) kgo.CompressionCodec {
	switch c {
	case "gzip":
		return kgo.GzipCompression()
	case "snappy":
		return kgo.SnappyCompression()
	case "lz4":
		return kgo.Lz4Compression()
	case "zstd":
		return kgo.ZstdCompression()
	default:
		return kgo.NoCompression()
	}
}

// Consumer is what kcd takes of a sink consumer's settings. Zero sizes
// take the worker's limits (kcd's memory bounds).
type Consumer struct {
	FetchMinBytes          int32         // fetch.min.bytes
	FetchMaxBytes          int32         // fetch.max.bytes; 0: the worker's limit
	MaxPartitionFetchBytes int32         // max.partition.fetch.bytes; 0: the worker's limit
	FetchMaxWait           time.Duration // fetch.max.wait.ms
	MaxPollRecords         int           // max.poll.records; 0: the worker's limit
	IsolationLevel         string        // isolation.level; "": kcd's default
	AutoOffsetReset        string        // auto.offset.reset: earliest, latest
	GroupID                string        // group.id; "": connect-<connector>
	ClientID               string        // client.id; "": connector-consumer-<connector>-<task>
}

// DefaultConsumer is Kafka Connect's sink consumer where nothing is set
// (Worker.baseConsumerConfigs), with kcd's fetch sizes.
func DefaultConsumer() Consumer {
	return Consumer{FetchMinBytes: 1, FetchMaxWait: 500 * time.Millisecond, AutoOffsetReset: "earliest"}
}

// ignoredConsumer are consumer group settings: kcd assigns partitions to
// sink tasks itself and commits offsets itself, so they have no meaning
// there. They are accepted so that a Kafka Connect config carries over.
var ignoredConsumer = []string{
	"session.timeout.ms", "heartbeat.interval.ms", "max.poll.interval.ms",
	"partition.assignment.strategy", "group.instance.id", "group.protocol",
	"group.remote.assignor", "auto.commit.interval.ms",
}

// IgnoredConsumer tells whether name is a consumer group setting kcd
// accepts and ignores.
func IgnoredConsumer(name string) bool { return slices.Contains(ignoredConsumer, name) }

var consumerSetters = map[string]setter[Consumer]{
	"fetch.min.bytes": func(c *Consumer, v string) error { return setInt32(&c.FetchMinBytes, v, 1, "not a number ≥ 1") },
	"fetch.max.bytes": func(c *Consumer, v string) error { return setInt32(&c.FetchMaxBytes, v, 1, "not a number ≥ 1") },
	"max.partition.fetch.bytes": func(c *Consumer, v string) error {
		return setInt32(&c.MaxPartitionFetchBytes, v, 1, "not a number ≥ 1")
	},
	"fetch.max.wait.ms": func(c *Consumer, v string) error { return setMillis(&c.FetchMaxWait, v, 0) },
	"max.poll.records": func(c *Consumer, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return errors.New("not a number ≥ 1")
		}
		c.MaxPollRecords = n
		return nil
	},
	"isolation.level": func(c *Consumer, v string) error {
		v = strings.ToLower(v)
		if v != "read_committed" && v != "read_uncommitted" {
			return errors.New("must be read_committed or read_uncommitted")
		}
		c.IsolationLevel = v
		return nil
	},
	"auto.offset.reset": func(c *Consumer, v string) error {
		v = strings.ToLower(v)
		if v != "earliest" && v != "latest" {
			return errors.New("must be earliest or latest")
		}
		c.AutoOffsetReset = v
		return nil
	},
	"group.id":  func(c *Consumer, v string) error { c.GroupID = v; return nil },
	"client.id": func(c *Consumer, v string) error { c.ClientID = v; return nil },
	"enable.auto.commit": func(c *Consumer, v string) error {
		if strings.ToLower(v) != "false" {
			return errors.New("must be false: sink tasks commit their offsets through the worker")
		}
		return nil
	},
}

// With overlays props (names without prefix) on c; an unsupported or
// invalid setting is an error naming it with prefix (consumer. or
// consumer.override.).
func (c Consumer) With(props map[string]string, prefix string) (Consumer, error) {
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(props)) {
		if err := set(consumerSetters, "consumer", &c, prefix, k, props[k]); err != nil {
			errs = append(errs, err)
		}
	}
	return c, errors.Join(errs...)
}

// CheckConsumer checks one consumer setting on its own.
func CheckConsumer(prefix, name, value string) error {
	c := DefaultConsumer()
	return set(consumerSetters, "consumer", &c, prefix, name, value)
}

func set[T any](setters map[string]setter[T], kind string, t *T, prefix, name, value string) error {
	if IgnoredConsumer(name) && kind == "consumer" {
		return nil
	}
	s, ok := setters[name]
	if !ok {
		return unsupported(kind, prefix, name)
	}
	if err := s(t, strings.TrimSpace(value)); err != nil {
		return fmt.Errorf("invalid value %s for %s%s: %w", value, prefix, name, err)
	}
	return nil
}

func setMillis(d *time.Duration, v string, lowest int64) error {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < lowest {
		return fmt.Errorf("not a number ≥ %d", lowest)
	}
	*d = time.Duration(min(n, math.MaxInt64/int64(time.Millisecond))) * time.Millisecond
	return nil
}

func setInt32(p *int32, v string, lowest int64, why string) error {
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil || n < lowest {
		return errors.New(why)
	}
	*p = int32(n)
	return nil
}

func setBool(b *bool, v string) error {
	switch strings.ToLower(v) {
	case "true":
		*b = true
	case "false":
		*b = false
	default:
		return errors.New("not a boolean")
	}
	return nil
}
