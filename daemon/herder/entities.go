package herder

import "github.com/kcd-project/kcd/api"

// The entities of Kafka Connect's REST API (see package api). The herder
// returns them and the REST API writes them as they are.
type (
	ConnectorType      = api.ConnectorType
	ConnectorInfo      = api.ConnectorInfo
	TaskID             = api.TaskID
	TaskInfo           = api.TaskInfo
	ConnectorState     = api.ConnectorState
	TaskState          = api.TaskState
	ConnectorStateInfo = api.ConnectorStateInfo
	ConnectorOffsets   = api.ConnectorOffsets
	ConnectorOffset    = api.ConnectorOffset
	Message            = api.Message
	ActiveTopics       = api.ActiveTopics
	ActiveTopicsInfo   = api.ActiveTopicsInfo
	PluginType         = api.PluginType
	PluginInfo         = api.PluginInfo
	ConfigInfos        = api.ConfigInfos
	ConfigInfo         = api.ConfigInfo
	ConfigKeyInfo      = api.ConfigKeyInfo
	ConfigValueInfo    = api.ConfigValueInfo
)

// The connector types.
const (
	TypeSource  = api.TypeSource
	TypeSink    = api.TypeSink
	TypeUnknown = api.TypeUnknown
)

// The plugin kinds.
const (
	PluginSource          = api.PluginSource
	PluginSink            = api.PluginSink
	PluginConverter       = api.PluginConverter
	PluginHeaderConverter = api.PluginHeaderConverter
	PluginTransformation  = api.PluginTransformation
	PluginPredicate       = api.PluginPredicate
)
