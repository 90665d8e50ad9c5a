package api

// Kafka Connect's REST entities that kcd's clients read.

// PluginInfo is one entry of GET /connector-plugins.
type PluginInfo struct {
	Class string `json:"class"`
	// Type is source, sink, converter, header_converter, transformation
	// or predicate.
	Type    string `json:"type"`
	Version string `json:"version,omitempty"`
}

// ConnectorState is a connector's reported state.
type ConnectorState struct {
	State    string `json:"state"`
	WorkerID string `json:"worker_id"`
	Trace    string `json:"trace,omitempty"`
}

// TaskState is one task's reported state.
type TaskState struct {
	ID       int    `json:"id"`
	State    string `json:"state"`
	WorkerID string `json:"worker_id"`
	Trace    string `json:"trace,omitempty"`
}

// ConnectorStateInfo is the body of GET /connectors/{name}/status, and the
// "status" of each entry of GET /connectors?expand=status.
type ConnectorStateInfo struct {
	Name      string         `json:"name"`
	Connector ConnectorState `json:"connector"`
	Tasks     []TaskState    `json:"tasks"`
	Type      string         `json:"type"`
}
