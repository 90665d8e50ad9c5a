package api

// More of Kafka Connect's REST entities, as kcctl's connector verbs read and
// write them.

// TaskID names one task of a connector.
type TaskID struct {
	Connector string `json:"connector"`
	Task      int    `json:"task"`
}

// ConnectorInfo is GET /connectors/{name}: a connector's name, config,
// task ids and type.
type ConnectorInfo struct {
	Name   string            `json:"name"`
	Config map[string]string `json:"config"`
	Tasks  []TaskID          `json:"tasks"`
	Type   string            `json:"type"`
}

// ConnectorExpanded is one entry of GET /connectors?expand=status&expand=info.
type ConnectorExpanded struct {
	Status ConnectorStateInfo `json:"status"`
	Info   ConnectorInfo      `json:"info"`
}

// ConnectorOffsets is the body of GET /connectors/{name}/offsets.
type ConnectorOffsets struct {
	Offsets []ConnectorOffset `json:"offsets"`
}

// ConnectorOffset is one partition's offset.
type ConnectorOffset struct {
	Partition map[string]any `json:"partition"`
	Offset    map[string]any `json:"offset"`
}

// ConfigInfos is the answer of PUT
// /connector-plugins/{plugin}/config/validate, reduced to what tells a
// user what is wrong.
type ConfigInfos struct {
	Name       string       `json:"name"`
	ErrorCount int          `json:"error_count"`
	Configs    []ConfigInfo `json:"configs"`
}

// ConfigInfo is one setting of ConfigInfos: its value and errors.
type ConfigInfo struct {
	Value *ConfigValueInfo `json:"value"`
}

// ConfigValueInfo is a setting's value after validation, with its errors.
type ConfigValueInfo struct {
	Name   string   `json:"name"`
	Value  *string  `json:"value"`
	Errors []string `json:"errors"`
}

// Message is the answer of PATCH and DELETE /connectors/{name}/offsets:
// what the server did.
type Message struct {
	Message string `json:"message"`
}
