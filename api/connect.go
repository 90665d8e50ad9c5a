package api

// The entities of Kafka Connect's REST API, with its JSON field names:
// kcd's herder returns them, its REST API writes them as they are, and
// clients read them from kcd and from Kafka Connect alike.

// ConnectorType is what GET /connectors/{name} and the status call a
// connector: source, sink, or unknown when its class is not installed.
type ConnectorType string

// The connector types.
const (
	TypeSource  ConnectorType = "source"
	TypeSink    ConnectorType = "sink"
	TypeUnknown ConnectorType = "unknown"
)

// PluginType is a plugin's kind in GET /connector-plugins.
type PluginType string

// The plugin kinds.
const (
	PluginSource          PluginType = "source"
	PluginSink            PluginType = "sink"
	PluginConverter       PluginType = "converter"
	PluginHeaderConverter PluginType = "header_converter"
	PluginTransformation  PluginType = "transformation"
	PluginPredicate       PluginType = "predicate"
)

// PluginInfo is one entry of GET /connector-plugins: an installed plugin.
// Version is left out when unknown.
type PluginInfo struct {
	Class   string     `json:"class"`
	Type    PluginType `json:"type"`
	Version string     `json:"version,omitempty"`
}

// ConnectorState is the connector part of a ConnectorStateInfo. Trace and
// Version are left out when empty, as Kafka Connect does.
type ConnectorState struct {
	State    string `json:"state"`
	WorkerID string `json:"worker_id"`
	Trace    string `json:"trace,omitempty"`
	Version  string `json:"version,omitempty"`
}

// TaskState is one task's status.
type TaskState struct {
	ID       int    `json:"id"`
	State    string `json:"state"`
	WorkerID string `json:"worker_id"`
	Trace    string `json:"trace,omitempty"`
	Version  string `json:"version,omitempty"`
}

// ConnectorStateInfo is a connector's status and its tasks', by task id:
// the body of GET /connectors/{name}/status, and the "status" of each
// entry of GET /connectors?expand=status.
type ConnectorStateInfo struct {
	Name      string         `json:"name"`
	Connector ConnectorState `json:"connector"`
	Tasks     []TaskState    `json:"tasks"`
	Type      ConnectorType  `json:"type"`
}
