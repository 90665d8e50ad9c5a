package herder

// The entities of Kafka Connect's REST API, with its JSON field names. The
// herder returns them and the REST API writes them as they are.

// ConnectorType is what GET /connectors/{name} and the status call a
// connector: source, sink, or unknown when its class is not installed.
type ConnectorType string

// The connector types.
const (
	TypeSource  ConnectorType = "source"
	TypeSink    ConnectorType = "sink"
	TypeUnknown ConnectorType = "unknown"
)

// ConnectorInfo is a connector's name, config, task ids and type.
type ConnectorInfo struct {
	Name   string            `json:"name"`
	Config map[string]string `json:"config"`
	Tasks  []TaskID          `json:"tasks"`
	Type   ConnectorType     `json:"type"`
}

// TaskID names one task of a connector.
type TaskID struct {
	Connector string `json:"connector"`
	Task      int    `json:"task"`
}

// TaskInfo is one task's id and config (GET /connectors/{name}/tasks).
type TaskInfo struct {
	ID     TaskID            `json:"id"`
	Config map[string]string `json:"config"`
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

// ConnectorStateInfo is a connector's status and its tasks', by task id.
type ConnectorStateInfo struct {
	Name      string         `json:"name"`
	Connector ConnectorState `json:"connector"`
	Tasks     []TaskState    `json:"tasks"`
	Type      ConnectorType  `json:"type"`
}

// ConnectorOffsets is the body of GET and PATCH /connectors/{name}/offsets.
type ConnectorOffsets struct {
	Offsets []ConnectorOffset `json:"offsets"`
}

// ConnectorOffset is one partition's offset; a nil Offset (in a PATCH)
// resets the partition.
type ConnectorOffset struct {
	Partition map[string]any `json:"partition"`
	Offset    map[string]any `json:"offset"`
}

// Message is the body of the offsets calls that change offsets.
type Message struct {
	Message string `json:"message"`
}

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

// PluginInfo is one installed plugin. Version is left out when unknown.
type PluginInfo struct {
	Class   string     `json:"class"`
	Type    PluginType `json:"type"`
	Version string     `json:"version,omitempty"`
}

// ConfigInfos is the answer of the validate call.
type ConfigInfos struct {
	Name       string       `json:"name"`
	ErrorCount int          `json:"error_count"`
	Groups     []string     `json:"groups"`
	Configs    []ConfigInfo `json:"configs"`
}

// ConfigInfo is one setting in ConfigInfos: its definition (nil for a
// setting no definition knows) and its value.
type ConfigInfo struct {
	Definition *ConfigKeyInfo   `json:"definition"`
	Value      *ConfigValueInfo `json:"value"`
}

// ConfigKeyInfo describes a setting. Kafka Connect 4.x names the order
// field order_in_group on the wire (3.x docs said "order").
type ConfigKeyInfo struct {
	Name          string   `json:"name"`
	Type          string   `json:"type"`
	Required      bool     `json:"required"`
	DefaultValue  *string  `json:"default_value"`
	Importance    string   `json:"importance"`
	Documentation string   `json:"documentation"`
	Group         *string  `json:"group"`
	OrderInGroup  int      `json:"order_in_group"`
	Width         string   `json:"width"`
	DisplayName   string   `json:"display_name"`
	Dependents    []string `json:"dependents"`
}

// ConfigValueInfo is a setting's value after validation, as a string, with
// its errors.
type ConfigValueInfo struct {
	Name              string   `json:"name"`
	Value             *string  `json:"value"`
	RecommendedValues []string `json:"recommended_values"`
	Errors            []string `json:"errors"`
	Visible           bool     `json:"visible"`
}
