package worker

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcd-project/kcd/daemon/clientcfg"
	"github.com/kcd-project/kcd/daemon/connect"
	"github.com/kcd-project/kcd/daemon/connectstore"
	"github.com/kcd-project/kcd/daemon/secrets"
)

// Converter classes the worker knows by name.
const (
	JSONConverter         = "org.apache.kafka.connect.json.JsonConverter"
	StringConverter       = "org.apache.kafka.connect.storage.StringConverter"
	ByteArrayConverter    = "org.apache.kafka.connect.converters.ByteArrayConverter"
	SimpleHeaderConverter = "org.apache.kafka.connect.storage.SimpleHeaderConverter"
)

// Config is a worker's configuration. Zero durations and limits take the
// defaults of Default.
type Config struct {
	// WorkerID is the advertised host:port of the node's REST API; it is
	// the worker_id of every status the worker reports.
	WorkerID string
	// Store holds the connectors' configs, statuses and offsets.
	Store *connectstore.Store
	// Seeds are the Kafka bootstrap servers; KafkaOpts are added to every
	// Kafka client the worker makes (TLS, SASL, a logger...).
	Seeds     []string
	KafkaOpts []kgo.Opt
	// Converters makes converters by class name (converter.New). Nil: no
	// converter is known, and every task fails with a clear error.
	Converters ConverterFactory
	// ConverterDefaults are the worker's converter settings, used for a
	// connector that names no converter of its own: "key.converter",
	// "value.converter", "header.converter" and their "<kind>.converter.*"
	// settings. Nil: JsonConverter with schemas.enable=true for keys and
	// values, SimpleHeaderConverter for headers.
	ConverterDefaults map[string]string
	// Assignment says which connectors and tasks run on this worker. Nil:
	// all of them (a single worker).
	Assignment Assignment
	// ConfigProviders resolve the references of connector and task
	// configs (${file:...}, ${env:...}, ${directory:...}) when they are
	// handed to a connector or task; stored configs keep the references.
	// Nil: none, references stay as written.
	ConfigProviders *secrets.Providers
	Logger          *slog.Logger

	// OffsetFlushInterval is how often source offsets are stored and sink
	// offsets flushed and committed (offset.flush.interval.ms; a connector
	// may set its own with that key). Default 60 s, as in Kafka Connect.
	OffsetFlushInterval time.Duration
	// ShutdownTimeout bounds the clean stop of one task: draining its
	// in-flight records and committing its offsets
	// (task.shutdown.graceful.timeout.ms). Default 5 s.
	ShutdownTimeout time.Duration
	// RestartBackoff paces the automatic restarts of failed connectors and
	// tasks. Default 1 s doubling up to 60 s.
	RestartBackoff Backoff
	// RetryBackoff paces retries after a RetriableError from Poll, Put or
	// Flush; its Max is the connector's errors.retry.delay.max.ms when set.
	// Default 100 ms doubling up to 60 s.
	RetryBackoff Backoff
	// SinkRelistInterval is how often sink connectors list their topics'
	// partitions again to follow new partitions and topics. Default 10 s.
	SinkRelistInterval time.Duration
	// ProducerPerTask gives each source task its own Kafka producer instead
	// of the worker's shared one (implied by ExactlyOnceSource).
	ProducerPerTask bool
	// ExactlyOnceSource is Kafka Connect's exactly.once.source.support.
	// ExactlyOnceEnabled (the default): each source task produces through
	// its own transactional producer, whose transactional id is stable per
	// task, so that the broker fences the task's previous run wherever it
	// still runs; sink tasks read committed records only.
	// ExactlyOnceDisabled: source tasks share the worker's producer
	// (Producer's settings) and sinks read uncommitted records, as Kafka
	// Connect's defaults do.
	ExactlyOnceSource string
	// MaxTasksPerConnector is the most tasks a connector may have here: a
	// connector whose tasks.max is larger fails (whatever wrote its
	// config), so that it never builds that many task configs. Default
	// 1000.
	MaxTasksPerConnector int
	// Files confines the local files connectors and tasks open
	// (--file-connector-dirs); they get it from their context
	// (connect.FilesOf) and refuse to start with a file outside it,
	// whatever wrote their config. Nil: any path.
	Files *connect.Files
	// NoTopicTracking turns off the recording of the topics each
	// connector's tasks use (Kafka Connect's topic.tracking.enable=false).
	NoTopicTracking bool
	// Producer and Consumer are the worker's producer.* and consumer.*
	// settings (names without the prefix), Kafka Connect's: they apply to
	// every producer and sink consumer of the worker, over Kafka Connect's
	// defaults (clientcfg.DefaultProducer, DefaultConsumer). A connector's
	// producer.override.* and consumer.override.* apply over them as
	// OverridePolicy allows (default All).
	Producer, Consumer map[string]string
	OverridePolicy     clientcfg.Policy
	Limits             Limits

	// producer and consumer are the parsed Producer and Consumer.
	producer clientcfg.Producer
	consumer clientcfg.Consumer
}

// The values of Config.ExactlyOnceSource.
const (
	ExactlyOnceEnabled  = "enabled"
	ExactlyOnceDisabled = "disabled"
)

// exactlyOnce tells whether source tasks produce transactionally.
func (c *Config) exactlyOnce() bool { return c.ExactlyOnceSource != ExactlyOnceDisabled }

// Limits bound the worker's memory.
type Limits struct {
	// Records and bytes a source task may have produced but not yet seen
	// acknowledged in order; Poll is not called while a limit is reached.
	// Bytes are the records' keys, values and headers plus about 512 bytes
	// of bookkeeping each (the kgo.Record, its headers and promise), so
	// they approximate memory. Defaults 100,000 and 32 MiB: the bytes bind
	// first (32 MiB is about 52,000 records of 100 bytes, 27,000 of 700),
	// which keeps a producer busy; at 16 MiB a single task made a quarter
	// fewer records/s (docs/notes/benchmarks-lab-notebook-2026-12.md).
	TaskInFlightRecords int
	TaskInFlightBytes   int64
	// The same over all source tasks of the worker: what bounds the
	// memory of a node. Defaults 100,000 and 32 MiB: one task may use the
	// whole budget, several share it (so a task whose records are stuck
	// holds up the others' production until they are delivered or fail).
	WorkerInFlightRecords int
	WorkerInFlightBytes   int64
	// Sink fetching, per task: bytes of one fetch response, of one
	// partition in it, and fetches buffered at once (kgo FetchMaxBytes,
	// FetchMaxPartitionBytes, MaxConcurrentFetches). Fetched batches are
	// compressed: the records decompressed from 256 KiB of JSON take
	// several MB. Defaults 2 MiB, 256 KiB, 2.
	SinkFetchMaxBytes          int32
	SinkFetchMaxPartitionBytes int32
	SinkMaxConcurrentFetches   int
	// SinkMaxBatch is the most records handed to one Put. Default 500.
	SinkMaxBatch int
}

// Backoff is an exponential backoff: Initial, doubled after each failure
// up to Max.
type Backoff struct {
	Initial, Max time.Duration
}

// Delay returns the delay after the n-th consecutive failure (n ≥ 1).
func (b Backoff) Delay(n int) time.Duration {
	d := b.Initial
	for i := 1; i < n && d < b.Max; i++ {
		d *= 2
	}
	return min(d, b.Max)
}

// Default returns the defaults of every tunable setting.
func Default() Config {
	return Config{
		OffsetFlushInterval:  60 * time.Second,
		ShutdownTimeout:      5 * time.Second,
		RestartBackoff:       Backoff{Initial: time.Second, Max: 60 * time.Second},
		RetryBackoff:         Backoff{Initial: 100 * time.Millisecond, Max: 60 * time.Second},
		SinkRelistInterval:   10 * time.Second,
		ExactlyOnceSource:    ExactlyOnceEnabled,
		MaxTasksPerConnector: 1000,
		OverridePolicy:       clientcfg.PolicyAll,
		producer:             clientcfg.DefaultProducer(),
		consumer:             clientcfg.DefaultConsumer(),
		Limits: Limits{
			TaskInFlightRecords:        100_000,
			TaskInFlightBytes:          32 << 20,
			WorkerInFlightRecords:      100_000,
			WorkerInFlightBytes:        32 << 20,
			SinkFetchMaxBytes:          2 << 20,
			SinkFetchMaxPartitionBytes: 256 << 10,
			SinkMaxConcurrentFetches:   2,
			SinkMaxBatch:               500,
		},
	}
}

// withDefaults fills the zero settings from Default and checks the rest.
func (c Config) withDefaults() (Config, error) {
	if c.Store == nil {
		return c, errors.New("worker: Config.Store is required")
	}
	if len(c.Seeds) == 0 {
		return c, errors.New("worker: Config.Seeds is required")
	}
	d := Default()
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Assignment == nil {
		c.Assignment = All{}
	}
	if c.ConverterDefaults == nil {
		c.ConverterDefaults = map[string]string{
			"key.converter":                  JSONConverter,
			"key.converter.schemas.enable":   "true",
			"value.converter":                JSONConverter,
			"value.converter.schemas.enable": "true",
		}
	}
	setDur := func(v *time.Duration, def time.Duration) {
		if *v <= 0 {
			*v = def
		}
	}
	setDur(&c.OffsetFlushInterval, d.OffsetFlushInterval)
	setDur(&c.ShutdownTimeout, d.ShutdownTimeout)
	setDur(&c.RestartBackoff.Initial, d.RestartBackoff.Initial)
	setDur(&c.RestartBackoff.Max, d.RestartBackoff.Max)
	setDur(&c.RetryBackoff.Initial, d.RetryBackoff.Initial)
	setDur(&c.RetryBackoff.Max, d.RetryBackoff.Max)
	setDur(&c.SinkRelistInterval, d.SinkRelistInterval)
	switch c.ExactlyOnceSource {
	case "":
		c.ExactlyOnceSource = d.ExactlyOnceSource
	case ExactlyOnceEnabled, ExactlyOnceDisabled:
	default:
		return c, fmt.Errorf("worker: exactly-once source support %q is not one of enabled, disabled", c.ExactlyOnceSource)
	}
	setInt(&c.MaxTasksPerConnector, d.MaxTasksPerConnector)
	l, dl := &c.Limits, d.Limits
	setInt(&l.TaskInFlightRecords, dl.TaskInFlightRecords)
	setInt(&l.TaskInFlightBytes, dl.TaskInFlightBytes)
	setInt(&l.WorkerInFlightRecords, dl.WorkerInFlightRecords)
	setInt(&l.WorkerInFlightBytes, dl.WorkerInFlightBytes)
	setInt(&l.SinkFetchMaxBytes, dl.SinkFetchMaxBytes)
	setInt(&l.SinkFetchMaxPartitionBytes, dl.SinkFetchMaxPartitionBytes)
	setInt(&l.SinkMaxConcurrentFetches, dl.SinkMaxConcurrentFetches)
	setInt(&l.SinkMaxBatch, dl.SinkMaxBatch)
	if l.TaskInFlightRecords > l.WorkerInFlightRecords || l.TaskInFlightBytes > l.WorkerInFlightBytes {
		return c, errors.New("worker: a task's in-flight limits exceed the worker's")
	}
	var err error
	if c.OverridePolicy, err = clientcfg.ParsePolicy(string(c.OverridePolicy)); err != nil {
		return c, fmt.Errorf("worker: %w", err)
	}
	if c.producer, err = clientcfg.DefaultProducer().With(c.Producer, clientcfg.ProducerPrefix); err == nil {
		err = c.producer.Check(clientcfg.ProducerPrefix, c.exactlyOnce())
	}
	if err != nil {
		return c, fmt.Errorf("worker: %w", err)
	}
	if c.consumer, err = clientcfg.DefaultConsumer().With(c.Consumer, clientcfg.ConsumerPrefix); err != nil {
		return c, fmt.Errorf("worker: %w", err)
	}
	if c.consumer.GroupID != "" {
		return c, errors.New("worker: consumer.group.id would put every sink connector in one group: set consumer.override.group.id per connector")
	}
	return c, nil
}

func setInt[T int | int32 | int64](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}
