package migrate

// Topics names a Kafka Connect cluster's internal topics.
type Topics struct {
	Config string // config.storage.topic
	Offset string // offset.storage.topic
	Status string // status.storage.topic
}

// DefaultTopics are the names in Kafka Connect's sample worker config.
func DefaultTopics() Topics {
	return Topics{Config: "connect-configs", Offset: "connect-offsets", Status: "connect-status"}
}

// Cluster is a Kafka Connect cluster's metadata: what Read takes out of
// the internal topics and the sink connectors' consumer groups, and what
// Write puts into them.
type Cluster struct {
	// Connectors are the live connectors (a config and no tombstone after
	// it), sorted by name.
	Connectors []*Connector `json:"connectors"`
	// Orphans counts source offsets, by connector name, of connectors
	// that no longer exist (Kafka Connect keeps them; so does Read, but a
	// migration carries only live connectors' offsets).
	Orphans map[string]int `json:"orphans,omitempty"`
	// Problems are records Read skipped or did not understand, and what
	// it noticed about the topics (not compacted, truncated).
	Problems []Problem `json:"problems,omitempty"`
	// ProblemsLeftOut counts the problems past MaxProblems, not listed.
	ProblemsLeftOut int `json:"problems_left_out,omitempty"`
	// Stats are what Read read.
	Stats []TopicStats `json:"stats,omitempty"`
}

// Connector is one connector's metadata.
type Connector struct {
	Name string `json:"name"`
	// Config is the connector's config. A key whose value was null is
	// left out and named in NullKeys (kcd keeps no null values).
	Config   map[string]string `json:"config"`
	NullKeys []string          `json:"null_keys,omitempty"`
	// Target is STARTED, PAUSED or STOPPED (STARTED when no record says).
	Target string `json:"target"`
	// StoppedForMigration: Target is STARTED, the connector's target
	// before the migration stopped it on Kafka Connect (UnstopMigrated).
	StoppedForMigration bool `json:"stopped_for_migration,omitempty"`
	// Tasks are the task configs of the last commit record whose tasks
	// were all written, in task order; TaskCount is that commit's count.
	Tasks     []map[string]string `json:"tasks"`
	TaskCount int                 `json:"task_count"`
	// TaskNullKeys are the keys whose value was null in a task config of
	// Tasks, left out of it as from Config.
	TaskNullKeys []string `json:"task_null_keys,omitempty"`
	// Inconsistent: the last commit named tasks that were not all written
	// (Kafka Connect then runs no tasks until the connector writes them
	// again); Tasks is empty.
	Inconsistent bool `json:"inconsistent,omitempty"`
	// Status is the connector's last status record, when there is one.
	Status *ConnectorStatus `json:"status,omitempty"`
	// SourceOffsets are the connector's source offsets, one per partition
	// (the latest record of each, whatever key bytes wrote it), sorted by
	// the partition's canonical JSON. Numbers are json.Number.
	SourceOffsets []SourceOffset `json:"source_offsets,omitempty"`
	// SinkGroup is a sink connector's consumer group (connect-<name>, or
	// consumer.override.group.id); empty for a source connector.
	SinkGroup   string       `json:"sink_group,omitempty"`
	SinkOffsets []SinkOffset `json:"sink_offsets,omitempty"`
}

// IsSink tells whether the connector is a sink: Kafka Connect requires a
// sink's config to name topics or topics.regex, and a source's not to,
// except for sources known to take a topics setting of their own.
func (c *Connector) IsSink() bool {
	if sourcesWithTopics[c.Config["connector.class"]] {
		return false
	}
	_, t := c.Config["topics"]
	_, r := c.Config["topics.regex"]
	return t || r
}

// sourcesWithTopics are source classes whose config has a topics key.
var sourcesWithTopics = map[string]bool{
	"org.apache.kafka.connect.mirror.MirrorSourceConnector": true,
	"MirrorSourceConnector":                                 true,
	"MirrorSource":                                          true,
}

// ConnectorStatus is a connector's last reported state and its tasks'.
type ConnectorStatus struct {
	State    string       `json:"state"`
	WorkerID string       `json:"worker_id,omitempty"`
	Trace    string       `json:"trace,omitempty"`
	Tasks    []TaskStatus `json:"tasks,omitempty"`
}

// TaskStatus is one task's last reported state.
type TaskStatus struct {
	ID       int    `json:"id"`
	State    string `json:"state"`
	WorkerID string `json:"worker_id,omitempty"`
	Trace    string `json:"trace,omitempty"`
}

// SourceOffset is one source partition's offset.
type SourceOffset struct {
	Partition map[string]any `json:"partition"`
	Offset    map[string]any `json:"offset"`
	// Key is the record key Kafka Connect stored it under; Write reuses
	// it, since Kafka Connect looks offsets up by those bytes. Empty:
	// Write encodes the partition as Kafka Connect's JSON converter does.
	Key []byte `json:"-"`
}

// SinkOffset is the next offset a sink connector reads of one
// topic-partition (its consumer group's committed offset).
type SinkOffset struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
}

// Problem is a record Read could not use, or something it noticed about
// a topic or group (Offset -1 then).
type Problem struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	// Key is the record's key, printable and cut to 200 bytes.
	Key       string `json:"key,omitempty"`
	Connector string `json:"connector,omitempty"`
	Reason    string `json:"reason"`
}

// TopicStats is what Read read of one topic.
type TopicStats struct {
	Topic      string `json:"topic"`
	Partitions int    `json:"partitions"`
	Records    int64  `json:"records"`
	Bytes      int64  `json:"bytes"`
	// Compacted says whether cleanup.policy is compact (only).
	Compacted bool `json:"compacted"`
}

// Progress reports a read under way: Read of Total records of Topic (the
// end offsets captured when the read started).
type Progress struct {
	Topic string
	Read  int64
	Total int64
}
