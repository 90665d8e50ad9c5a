package api

import "encoding/json"

// Kafka Connect's connector entities: configs, tasks, offsets and
// validation.

// CreateConnectorRequest is the body of POST /connectors. Name and config
// values may be any JSON scalar (Kafka Connect coerces them to strings).
type CreateConnectorRequest struct {
	Name         json.RawMessage            `json:"name"`
	Config       map[string]json.RawMessage `json:"config"`
	InitialState *string                    `json:"initial_state"`
}

// ConnectorInfo is GET /connectors/{name}: a connector's name, config,
// task ids and type.
type ConnectorInfo struct {
	Name   string            `json:"name"`
	Config map[string]string `json:"config"`
	Tasks  []TaskID          `json:"tasks"`
	Type   ConnectorType     `json:"type"`
	// Nulls are the settings the config holds as null (not in Config):
	// Kafka Connect keeps a null value of a connector's own setting, and
	// the server writes them as null in "config". A client reads them as
	// "" in Config.
	Nulls []string `json:"-"`
}

// MarshalJSON writes Nulls as null values in "config".
func (c ConnectorInfo) MarshalJSON() ([]byte, error) {
	type plain ConnectorInfo
	if len(c.Nulls) == 0 {
		return json.Marshal(plain(c))
	}
	return json.Marshal(struct {
		plain
		Config map[string]*string `json:"config"`
	}{plain(c), ConfigWithNulls(c.Config, c.Nulls)})
}

// ConfigWithNulls is config with each of nulls added as a null value, as
// GET /connectors/{name}/config shows it.
func ConfigWithNulls(config map[string]string, nulls []string) map[string]*string {
	out := make(map[string]*string, len(config)+len(nulls))
	for k, v := range config {
		out[k] = &v
	}
	for _, k := range nulls {
		if _, ok := out[k]; !ok {
			out[k] = nil
		}
	}
	return out
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

// ConnectorExpanded is one entry of GET /connectors?expand=status&expand=info.
type ConnectorExpanded struct {
	Status ConnectorStateInfo `json:"status"`
	Info   ConnectorInfo      `json:"info"`
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

// ActiveTopics is the answer of GET /connectors/{name}/topics: the
// connector's name to the topics its tasks used since the last reset
// (PUT /connectors/{name}/topics/reset).
type ActiveTopics map[string]ActiveTopicsInfo

// ActiveTopicsInfo is the topics of one connector in ActiveTopics.
type ActiveTopicsInfo struct {
	Topics []string `json:"topics"`
}

// Message is the answer of PATCH and DELETE /connectors/{name}/offsets:
// what the server did.
type Message struct {
	Message string `json:"message"`
}

// ConfigInfos is the answer of PUT
// /connector-plugins/{plugin}/config/validate.
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
