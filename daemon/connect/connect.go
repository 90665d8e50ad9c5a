// Package connect is kcd's connector SDK, shaped like Kafka Connect's so
// that connector authors feel at home: a connector validates its config and
// splits the work into task configs; source tasks poll records that carry a
// source partition and offset; sink tasks receive records, flush, and are
// told which topic-partitions they own. Plugins register under Kafka
// Connect's class names (and short aliases), so imported configs run
// unchanged.
package connect

import (
	"context"
	"log/slog"
	"time"

	"github.com/kcd-project/kcd/daemon/connect/data"
)

// Connector is the part common to source and sink connectors. The runtime
// calls Start, then TaskConfigs (again after RequestTaskReconfiguration),
// then Stop; never concurrently.
type Connector interface {
	// Version is the plugin's version, shown by GET /connector-plugins.
	Version() string
	// ConfigDef describes the connector's own settings, for validation and
	// for the validate endpoint.
	ConfigDef() ConfigDef
	// Start begins the connector with its (already validated) config.
	Start(ctx ConnectorContext, config map[string]string) error
	// TaskConfigs splits the work into at most maxTasks task configs.
	TaskConfigs(maxTasks int) ([]map[string]string, error)
	// Stop ends the connector; it must return promptly.
	Stop() error
}

// ConfigValidator is implemented by connectors that check more than their
// ConfigDef can say (relations between settings). Errors are reported per
// setting name.
type ConfigValidator interface {
	ValidateConfig(config map[string]string) map[string][]string
}

// OffsetAlterer is implemented by connectors that check a change of their
// offsets (PATCH or DELETE /connectors/{name}/offsets) before kcd stores
// it: Kafka Connect's SourceConnector.alterOffsets and
// SinkConnector.alterOffsets. It is called on a fresh instance that was
// not started. An error refuses the whole change, its text the answer's
// message. confirmed tells that the connector has taken the change into
// account wherever it keeps offsets itself (Kafka Connect's true), which
// changes the answer's message.
type OffsetAlterer interface {
	AlterOffsets(config map[string]string, offsets []PartitionOffset) (confirmed bool, err error)
}

// PartitionOffset is one partition's new offset in an offsets change; a
// nil Offset resets the partition. A source partition and offset are as
// the request gave them, numbers as json.Number. A sink's partition is
// {"kafka_topic": string, "kafka_partition": int32} and its offset
// {"kafka_offset": int64}, parsed as Kafka Connect does.
type PartitionOffset struct {
	Partition map[string]any
	Offset    map[string]any
}

// SourceConnector is a connector whose tasks read from an external system
// into Kafka.
type SourceConnector interface {
	Connector
	NewTask() SourceTask
}

// SinkConnector is a connector whose tasks write records from Kafka to an
// external system.
type SinkConnector interface {
	Connector
	NewTask() SinkTask
}

// ExceptionError is an error that is a Java exception (a plugin's in the
// Java connector host): the dead letter queue's headers name its class,
// message and stack trace as Kafka Connect would.
type ExceptionError interface {
	error
	ExceptionClass() string   // e.g. org.apache.kafka.connect.errors.DataException
	ExceptionMessage() string // its getMessage()
	ExceptionStack() string   // as printStackTrace writes it; may be empty
}

// ConnectorContext is what the runtime offers a running connector.
type ConnectorContext interface {
	// RequestTaskReconfiguration asks the runtime to call TaskConfigs again
	// (the source's shape changed: new tables, new files).
	RequestTaskReconfiguration()
	// RaiseError fails the connector.
	RaiseError(err error)
	Logger() *slog.Logger
}

// SourceRecord is a record a source task produces.
type SourceRecord struct {
	// SourcePartition and SourceOffset say where in the source the record
	// came from; the runtime stores the offset once Kafka has the record and
	// hands it back on restart through OffsetReader. Values must be strings,
	// numbers, booleans or nil, as in Kafka Connect.
	SourcePartition map[string]any
	SourceOffset    map[string]any
	// SourcePartitionJSON is SourcePartition as Kafka Connect's JSON
	// converter writes it, in the connector's own map order, when the task
	// knows it (a Java plugin's, through the host); empty otherwise. The
	// runtime keeps it with the offset, so that a way back to Kafka Connect
	// writes the key Kafka Connect looks the offset up by.
	SourcePartitionJSON string

	Topic       string
	Partition   *int32 // nil: the producer's partitioner decides by key
	KeySchema   *data.Schema
	Key         any
	ValueSchema *data.Schema
	Value       any
	Timestamp   time.Time // zero: the time of production
	Headers     []Header

	// Dropped: produce nothing, only store the source offset once every
	// record before it is acknowledged. A Java plugin's transform that
	// filters a record out still moves its offset on, as in Kafka Connect.
	// Topic may be empty. A SourceRecordCommitter gets it back with an
	// empty RecordMetadata (Topic "") once the runtime took it.
	Dropped bool
}

// Header is one record header with its schema.
type Header struct {
	Key    string
	Schema *data.Schema
	Value  any
}

// RecordMetadata is where Kafka put a produced record.
type RecordMetadata struct {
	Topic     string
	Partition int32
	Offset    int64
}

// SourceTask reads from an external system. The runtime calls Start, then
// Poll in a loop from one goroutine, then Stop (possibly from another
// goroutine, to interrupt a blocked Poll). Start, Poll and Stop may each
// run on a different goroutine, one after the other. Unless the task runs
// with exactly-once support (transactions) or is a SourcePollsAhead, the
// runtime polls the next batch while it converts and produces the last
// one: Poll is called again before the last Poll's records are sent. A
// batch polled before a pause is produced after the resume; one polled
// before the task is fenced or stopped is not produced at all, its offsets
// not stored, and the task's next run polls its records again.
type SourceTask interface {
	Start(ctx SourceTaskContext, config map[string]string) error
	// Poll returns the next records, or none after waiting a short while
	// (well under a second) so that the runtime can pause and stop the task.
	// It must return when ctx ends.
	Poll(ctx context.Context) ([]*SourceRecord, error)
	Stop() error
}

// SourceRecordCommitter is implemented by source tasks that want to know
// when each record was acknowledged by Kafka. A Dropped record, and one
// skipped under errors.tolerance=all (it could not be converted, or Kafka
// refused it), is committed with an empty RecordMetadata (Topic "").
type SourceRecordCommitter interface {
	CommitRecord(rec *SourceRecord, md RecordMetadata) error
}

// SourceRecordRecycler is implemented by source tasks that reuse the
// memory of their records from one Poll to the next. The runtime calls
// RecycleRecords with the slice a Poll returned once it holds no
// reference to that slice, its SourceRecord structs or their Headers
// slices any more, from the goroutine that calls Poll, never while Poll
// runs. Two batches may be out at once: the runtime polls the next batch
// while it sends the last one, so Poll is called when the last Poll's
// records are not back yet, and a Poll's records come back after the next
// Poll, before the one after it. A task reuses only the records it got
// back: a task that keeps one spare batch allocates a new one when the
// last is still out. Records the runtime drops (the task stopped) never
// come back. What the records point to (keys, values, header values,
// partition and offset maps) may still be in flight to Kafka: it must be
// neither reused nor modified. The runtime does not call it for a
// SourceRecordCommitter, which gets its records back later.
type SourceRecordRecycler interface {
	RecycleRecords(recs []*SourceRecord)
}

// SourcePollsAhead is implemented by source tasks that fetch their next
// batch themselves while the runtime sends the last one (the Java host's,
// whose host polls ahead). The runtime then calls Poll only after it sent
// the last batch, on the task's goroutine, rather than one batch ahead:
// two batches ahead would bring nothing but memory.
type SourcePollsAhead interface {
	PollsAhead()
}

// SourceTaskContext is what the runtime offers a source task.
type SourceTaskContext interface {
	OffsetReader() OffsetReader
	Logger() *slog.Logger
}

// OffsetReader reads the offsets the runtime stored for the connector.
type OffsetReader interface {
	// Offset returns the last stored offset of a source partition, or nil.
	Offset(ctx context.Context, partition map[string]any) (map[string]any, error)
}

// TopicPartition names one partition of a topic.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// SinkRecord is a record a sink task receives.
type SinkRecord struct {
	Topic       string
	Partition   int32
	Offset      int64
	KeySchema   *data.Schema
	Key         any
	ValueSchema *data.Schema
	Value       any
	Timestamp   time.Time
	Headers     []Header
}

// SinkTask writes records to an external system. The runtime calls Start,
// Open with the partitions it assigns, Put with batches of records, Flush
// before it commits offsets, Close for partitions taken away, and Stop.
type SinkTask interface {
	Start(ctx SinkTaskContext, config map[string]string) error
	Open(partitions []TopicPartition) error
	// Put writes the records or keeps them for a later write, as Kafka
	// Connect's SinkTask.put may ("batch them for later writing"): the
	// records of each Put are the task's to keep, unless the task is a
	// BorrowedSinkRecords. Put must not modify what the records' keys,
	// values and header values point to.
	Put(records []*SinkRecord) error
	// Flush makes everything Put so far durable; the runtime commits the
	// given offsets (of the next record to read) afterwards.
	Flush(offsets map[TopicPartition]int64) error
	Close(partitions []TopicPartition) error
	Stop() error
}

// BorrowedSinkRecords is implemented by sink tasks that keep no reference
// to the records of a Put once it returns: the records slice, its
// SinkRecord structs and their Headers slices. The runtime then reuses
// that memory for the next Put instead of allocating it for every batch.
// The keys, values, schemas and header values the records point to are
// never reused: a task may keep those. A task that keeps whole records (a
// write batched across Puts) must not implement it, or must copy the
// SinkRecord structs (and Headers slices) it keeps.
type BorrowedSinkRecords interface {
	BorrowedSinkRecords()
}

// SinkTaskContext is what the runtime offers a sink task.
type SinkTaskContext interface {
	Logger() *slog.Logger
	// Assignment is the set of partitions the task owns now.
	Assignment() []TopicPartition
}

// SerializedRecords is implemented by connectors whose records are
// already bytes: the runtime runs no converters for their tasks. Source
// records carry []byte (or nil) keys, values and header values, produced
// as they are; sink records arrive with the raw bytes of the Kafka record
// (nil for null). The Java connector host's connectors are such: their
// converters and transforms run in the host.
type SerializedRecords interface {
	SerializedRecords()
}

// SinkTaskControl is implemented by the runtime's SinkTaskContext: what
// Kafka Connect's SinkTaskContext lets a task ask of the runtime.
type SinkTaskControl interface {
	// ResetOffsets makes the next records read from these partitions start
	// at these offsets (SinkTaskContext.offset).
	ResetOffsets(offsets map[TopicPartition]int64)
	// Pause stops fetching from the partitions until Resume; Put goes on
	// with the others.
	Pause(partitions ...TopicPartition)
	Resume(partitions ...TopicPartition)
	// Timeout is how long the runtime waits before it retries a Put that
	// failed with a RetriableError (SinkTaskContext.timeout).
	Timeout(d time.Duration)
	// RequestCommit asks for an offset commit soon.
	RequestCommit()
	// ReportErrant hands a record the task cannot process to the
	// connector's error handling: the dead letter queue when one is set and
	// errors.tolerance is all (it returns once the queue has the record), an
	// error that fails the task when errors.tolerance is none.
	ReportErrant(ctx context.Context, rec *SinkRecord, cause error) error
}

// SinkPreCommitter is implemented by sink tasks that choose which offsets
// are committed, as Kafka Connect's SinkTask.preCommit. The runtime calls
// PreCommit instead of Flush with the offsets of the next records to read,
// and commits the offsets it returns (none: nothing is committed).
type SinkPreCommitter interface {
	PreCommit(offsets map[TopicPartition]int64) (map[TopicPartition]int64, error)
}

// RetriableError marks an error after which the runtime retries the call
// (Put, Poll) with backoff instead of failing the task.
type RetriableError struct{ Err error }

func (e *RetriableError) Error() string { return "retriable: " + e.Err.Error() }
func (e *RetriableError) Unwrap() error { return e.Err }

// TaskInfo is offered by the runtime's task contexts: which task of which
// connector the context belongs to, and the connector's config (references
// resolved). The Java connector host needs it to run the connector's
// converters and transforms for the task.
type TaskInfo interface {
	TaskInfo() (connector string, task int, connectorConfig map[string]string)
}

// SourceCommitter is implemented by source tasks that want to know when
// the runtime has stored the offsets of the records acknowledged so far,
// as Kafka Connect's SourceTask.commit (Debezium confirms its position
// to the database there). The runtime calls Commit after each offset
// commit, from any goroutine but one call at a time, and at a clean stop
// after the last offsets were stored, before Stop.
type SourceCommitter interface {
	Commit() error
}
