package herder

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kcd-project/kcd/daemon/connect"
	"github.com/kcd-project/kcd/daemon/connect/transforms"
	"github.com/kcd-project/kcd/daemon/connectstore"
	"github.com/kcd-project/kcd/store"
)

// Kafka Connect's connector settings (ConnectorConfig, SinkConnectorConfig,
// SourceConnectorConfig of Kafka Connect 4.x), with its documentation,
// groups and order, so that the validate and plugin-config calls describe
// them exactly as Kafka Connect does.

const (
	groupCommon     = "Common"
	groupTransforms = "Transforms"
	groupPredicates = "Predicates"
	groupErrors     = "Error Handling"
	groupTopics     = "Topic Creation"
	groupEOS        = "Exactly Once Support"
	groupOffsets    = "offsets.topic"
)

const (
	docConverter       = "Converter class used to convert between Kafka Connect format and the serialized form that is written to Kafka. This controls the format of the %s in messages written to or read from Kafka, and since this is independent of connectors it allows any connector to work with any serialization format. Examples of common formats include JSON and Avro."
	docHeaderConverter = "HeaderConverter class used to convert between Kafka Connect format and the serialized form that is written to Kafka. This controls the format of the header values in messages written to or read from Kafka, and since this is independent of connectors it allows any connector to work with any serialization format. Examples of common formats include JSON and Avro. By default, the SimpleHeaderConverter is used to serialize header values to strings and deserialize them by inferring the schemas."
	docTasksMaxEnforce = "(Deprecated) Whether to enforce that the tasks.max property is respected by the connector. By default, connectors that generate too many tasks will fail, and existing sets of tasks that exceed the tasks.max property will also be failed. If this property is set to false, then connectors will be allowed to generate more than the maximum number of tasks, and existing sets of tasks that exceed the tasks.max property will be allowed to run. This property is deprecated and will be removed in an upcoming major release."
	docReload          = "The action that Connect should take on the connector when changes in external configuration providers result in a change in the connector's configuration properties. A value of 'none' indicates that Connect will do nothing. A value of 'restart' indicates that Connect should restart/reload the connector with the updated configuration properties.The restart may actually be scheduled in the future if the external configuration provider indicates that a configuration value will expire in the future."
	docErrorsLog       = "Whether to include in the log the Connect record that resulted in a failure. For sink records, the topic, partition, offset, and timestamp will be logged. For source records, the key and value (and their schemas), all headers, and the timestamp, Kafka topic, Kafka partition, source partition, and source offset will be logged. This is 'false' by default, which will prevent record keys, values, and headers from being written to log files."
	docEOS             = "Permitted values are requested, required. If set to \"required\", forces a preflight check for the connector to ensure that it can provide exactly-once semantics with the given configuration. Some connectors may be capable of providing exactly-once semantics but not signal to Connect that they support this; in that case, documentation for the connector should be consulted carefully before creating it, and the value for this property should be set to \"requested\". Additionally, if the value is set to \"required\" but the worker that performs preflight validation does not have exactly-once support enabled for source connectors, requests to create or validate the connector will fail."
	docTxBoundary      = "Permitted values are: poll, interval, connector. If set to 'poll', a new producer transaction will be started and committed for every batch of records that each task from this connector provides to Connect. If set to 'connector', relies on connector-defined transaction boundaries; note that not all connectors are capable of defining their own transaction boundaries, and in that case, attempts to instantiate a connector with this value will fail. Finally, if set to 'interval', commits transactions only after a user-defined time interval has passed."
	docTxInterval      = "If 'transaction.boundary' is set to 'interval', determines the interval for producer transaction commits by connector tasks. If unset, defaults to the value of the worker-level 'offset.flush.interval.ms' property. It has no effect if a different transaction.boundary is specified."
	docOffsetsTopic    = "The name of a separate offsets topic to use for this connector. If empty or not specified, the worker’s global offsets topic name will be used. If specified, the offsets topic will be created if it does not already exist on the Kafka cluster targeted by this connector (which may be different from the one used for the worker's global offsets topic if the bootstrap.servers property of the connector's producer has been overridden from the worker's). Only applicable in distributed mode; in standalone mode, setting this property will have no effect."
	docDLQTopic        = "The name of the topic to be used as the dead letter queue (DLQ) for messages that result in an error when processed by this sink connector, or its transformations or converters. The topic name is blank by default, which means that no messages are to be recorded in the DLQ."
	docDLQHeaders      = "If true, add headers containing error context to the messages written to the dead letter queue. To avoid clashing with headers from the original record, all error context header keys, all error context header keys will start with <code>__connect.errors.</code>"
)

// Names of the settings the herder itself reads.
const (
	keyName           = "name"
	keyConnectorClass = "connector.class"
	keyPluginVersion  = "connector.plugin.version"
	keyTasksMax       = "tasks.max"
	keyTransforms     = "transforms"
	keyPredicates     = "predicates"
	keyTopics         = "topics"
	keyTopicsRegex    = "topics.regex"
	keyDLQTopic       = "errors.deadletterqueue.topic.name"
)

func str(s string) *string { return &s }

// commonKeys returns Kafka Connect's settings of a connector of plugin p:
// the base ones, the sink or source ones, and, for the transformation and
// predicate aliases named in props, their type and version settings.
// validating says whether props are being validated (the converters then
// default to the workers'); else the settings are only described.
func (h *Herder) commonKeys(p *connect.Plugin, props map[string]*string, validating bool) []*key {
	keys := []*key{
		{name: keyName, typ: connect.TypeString, required: true, importance: "HIGH", doc: "Globally unique name to use for this connector.",
			group: groupCommon, order: 1, width: "MEDIUM", display: "Connector name", validate: connectorName},
		{name: keyConnectorClass, typ: connect.TypeString, required: true, importance: "HIGH",
			doc:   "Name or alias of the class for this connector. Must be a subclass of org.apache.kafka.connect.connector.Connector. If the connector is org.apache.kafka.connect.file.FileStreamSinkConnector, you can either specify this full name,  or use \"FileStreamSink\" or \"FileStreamSinkConnector\" to make the configuration a bit shorter",
			group: groupCommon, order: 2, width: "LONG", display: "Connector class"},
		{name: keyPluginVersion, typ: connect.TypeString, def: str(p.Version), importance: "MEDIUM", doc: "Version of the connector.",
			group: groupCommon, order: 3, width: "MEDIUM", display: "Connector version", recommended: []string{p.Version}},
		{name: keyTasksMax, typ: connect.TypeInt, def: str("1"), importance: "HIGH", doc: "Maximum number of tasks to use for this connector.",
			group: groupCommon, order: 4, width: "SHORT", display: "Tasks max", validate: h.tasksMax},
		{name: "tasks.max.enforce", typ: connect.TypeBoolean, def: str("true"), importance: "LOW", doc: docTasksMaxEnforce,
			group: groupCommon, order: 5, width: "SHORT", display: "Enforce tasks max"},
	}
	keys = append(keys, h.converterKeys(props, validating, providedClasses(p))...)
	keys = append(keys, []*key{
		{name: keyTransforms, typ: connect.TypeList, def: str(""), importance: "LOW", doc: "Aliases for the transformations to be applied to records.",
			group: groupTransforms, order: 12, width: "LONG", display: "Transforms", validate: uniqueAliases},
		{name: keyPredicates, typ: connect.TypeList, def: str(""), importance: "LOW", doc: "Aliases for the predicates used by transformations.",
			group: groupPredicates, order: 13, width: "LONG", display: "Predicates", validate: uniqueAliases},
		{name: "config.action.reload", typ: connect.TypeString, def: str("restart"), importance: "LOW", doc: docReload,
			group: groupCommon, order: 14, width: "MEDIUM", display: "Reload Action", validate: oneOf("none", "restart")},
		{name: "errors.retry.timeout", typ: connect.TypeLong, def: str("0"), importance: "MEDIUM",
			doc:   "The maximum duration in milliseconds that a failed operation will be reattempted. The default is 0, which means no retries will be attempted. Use -1 for infinite retries.",
			group: groupErrors, order: 1, width: "MEDIUM", display: "Retry Timeout for Errors"},
		{name: "errors.retry.delay.max.ms", typ: connect.TypeLong, def: str("60000"), importance: "MEDIUM",
			doc:   "The maximum duration in milliseconds between consecutive retry attempts. Jitter will be added to the delay once this limit is reached to prevent thundering herd issues.",
			group: groupErrors, order: 2, width: "MEDIUM", display: "Maximum Delay Between Retries for Errors"},
		{name: "errors.tolerance", typ: connect.TypeString, def: str("none"), importance: "MEDIUM",
			doc:   "Behavior for tolerating errors during connector operation. 'none' is the default value and signals that any error will result in an immediate connector task failure; 'all' changes the behavior to skip over problematic records.",
			group: groupErrors, order: 3, width: "SHORT", display: "Error Tolerance", validate: oneOf("none", "all")},
		{name: "errors.log.enable", typ: connect.TypeBoolean, def: str("false"), importance: "MEDIUM",
			doc:   "If true, write each error and the details of the failed operation and problematic record to the Connect application log. This is 'false' by default, so that only errors that are not tolerated are reported.",
			group: groupErrors, order: 4, width: "SHORT", display: "Log Errors"},
		{name: "errors.log.include.messages", typ: connect.TypeBoolean, def: str("false"), importance: "MEDIUM", doc: docErrorsLog,
			group: groupErrors, order: 5, width: "SHORT", display: "Log Error Details"},
	}...)
	if p.Type == connect.PluginSink {
		keys = append(keys, sinkKeys()...)
	} else {
		keys = append(keys, sourceKeys()...)
	}
	extra := providedClasses(p)
	keys = append(keys, h.aliasKeys(props, keyTransforms, "Transforms", "transformation", "Transformation", append(slices.Clone(h.opts.Transformations), extra[string(PluginTransformation)]...))...)
	keys = append(keys, h.aliasKeys(props, keyPredicates, "Predicates", "predicate", "Predicate", append(slices.Clone(h.opts.Predicates), extra[string(PluginPredicate)]...))...)
	return keys
}

// converterKeys are the key, value and header converter settings, each
// with its plugin version. When validating, a converter defaults to the
// workers', and its version is shown (default, recommendation) only for a
// class that resolves, as Kafka Connect's recommenders do.
func (h *Herder) converterKeys(props map[string]*string, validating bool, extra map[string][]string) []*key {
	var out []*key
	for i, c := range []struct {
		kind, doc, title, def string
		classes               []string
	}{
		{"key", sprintf(docConverter, "keys"), "Key", h.opts.KeyConverter, append(slices.Clone(h.opts.Converters), extra[string(PluginConverter)]...)},
		{"value", sprintf(docConverter, "values"), "Value", h.opts.ValueConverter, append(slices.Clone(h.opts.Converters), extra[string(PluginConverter)]...)},
		{"header", docHeaderConverter, "Header", h.opts.HeaderConverter, append(slices.Clone(h.opts.HeaderConverters), extra[string(PluginHeaderConverter)]...)},
	} {
		classes := c.classes
		class := &key{name: c.kind + ".converter", typ: connect.TypeClass, importance: "LOW", doc: c.doc,
			group: groupCommon, order: 6 + 2*i, width: "SHORT", display: c.title + " converter class",
			resolve: func(n string) (string, bool) { return resolveClass(classes, n, "Converter") }, recommended: sorted(classes)}
		version := &key{name: c.kind + ".converter.plugin.version", typ: connect.TypeString, importance: "LOW",
			doc: "Version of the " + c.kind + " converter.", group: groupCommon, order: 7 + 2*i, width: "SHORT", display: c.title + " converter version"}
		if validating {
			class.def = str(c.def)
			raw, given := props[class.name]
			resolves := false
			if raw != nil {
				_, resolves = class.resolve(*raw)
			}
			switch {
			case !given || resolves:
				version.def, version.recommended = str(h.opts.PluginVersion), []string{h.opts.PluginVersion}
			case raw == nil: // null: the workers' converter, whose version is not offered
				version.def, version.invisible = str(h.opts.PluginVersion), true
			default: // a class that does not resolve has no version
				version.invisible = true
			}
		}
		out = append(out, class, version)
	}
	return out
}

func sinkKeys() []*key {
	return []*key{
		{name: keyTopics, typ: connect.TypeList, def: str(""), importance: "HIGH", doc: "List of topics to consume, separated by commas",
			group: groupCommon, order: 4, width: "LONG", display: "Topics", validate: topicList},
		{name: keyTopicsRegex, typ: connect.TypeString, def: str(""), importance: "HIGH",
			doc:   "Regular expression giving topics to consume. Under the hood, the regex is compiled to a <code>java.util.regex.Pattern</code>. Only one of topics or topics.regex should be specified.",
			group: groupCommon, order: 4, width: "LONG", display: "Topics regex", validate: validRegex},
		{name: keyDLQTopic, typ: connect.TypeString, def: str(""), importance: "MEDIUM", doc: docDLQTopic,
			group: groupErrors, order: 6, width: "MEDIUM", display: "Dead Letter Queue Topic Name"},
		{name: "errors.deadletterqueue.topic.replication.factor", typ: connect.TypeShort, def: str("3"), importance: "MEDIUM",
			doc:   "Replication factor used to create the dead letter queue topic when it doesn't already exist.",
			group: groupErrors, order: 7, width: "MEDIUM", display: "Dead Letter Queue Topic Replication Factor"},
		{name: "errors.deadletterqueue.context.headers.enable", typ: connect.TypeBoolean, def: str("false"), importance: "MEDIUM", doc: docDLQHeaders,
			group: groupErrors, order: 8, width: "MEDIUM", display: "Enable Error Context Headers"},
	}
}

func sourceKeys() []*key {
	return []*key{
		{name: "topic.creation.groups", typ: connect.TypeList, def: str(""), importance: "LOW", doc: "Groups of configurations for topics created by source connectors",
			group: groupTopics, order: 1, width: "LONG", display: "Topic Creation Groups", validate: uniqueAliases},
		{name: "exactly.once.support", typ: connect.TypeString, def: str("requested"), importance: "MEDIUM", doc: docEOS,
			group: groupEOS, order: 2, width: "SHORT", display: "Exactly once support", validate: oneOfFold("REQUIRED", "REQUESTED")},
		{name: "transaction.boundary", typ: connect.TypeString, def: str("poll"), importance: "MEDIUM", doc: docTxBoundary,
			group: groupEOS, order: 3, width: "SHORT", display: "Transaction Boundary", validate: oneOfFold("INTERVAL", "POLL", "CONNECTOR")},
		{name: "transaction.boundary.interval.ms", typ: connect.TypeLong, importance: "LOW", doc: docTxInterval,
			group: groupEOS, order: 4, width: "SHORT", display: "Transaction boundary interval", validate: atLeast(0, true)},
		{name: "offsets.storage.topic", typ: connect.TypeString, importance: "LOW", doc: docOffsetsTopic,
			group: groupOffsets, order: 1, width: "LONG", display: "Offsets topic", validate: nonEmptyString},
	}
}

// aliasKeys returns the settings of each alias listed in props[listKey]:
// "<list>.<alias>.type" and "<list>.<alias>.plugin.version", and, for a
// transformation whose class is known, its "predicate" and "negate".
func (h *Herder) aliasKeys(props map[string]*string, listKey, groupPrefix, noun, title string, classes []string) []*key {
	raw := props[listKey]
	if raw == nil {
		return nil
	}
	l, _ := (&key{typ: connect.TypeList}).parse(*raw)
	aliases, _ := l.([]string)
	var out []*key
	seen := map[string]bool{}
	for _, a := range aliases {
		if seen[a] {
			continue
		}
		seen[a] = true
		prefix, group := listKey+"."+a+".", groupPrefix+": "+a
		out = append(out,
			&key{name: prefix + "type", typ: connect.TypeClass, required: true, importance: "HIGH", doc: sprintf("Class for the '%s' %s.", a, noun),
				group: group, order: 0, width: "LONG", display: sprintf("%s type for %s", title, a),
				resolve: func(c string) (string, bool) { return resolveClass(classes, c, "") }, recommended: sorted(classes)})
		version := &key{name: prefix + "plugin.version", typ: connect.TypeString, importance: "HIGH", doc: sprintf("Version of the '%s' %s.", a, noun),
			group: group, order: 1, width: "LONG", display: sprintf("%s version for %s", title, a)}
		out = append(out, version)
		typ := props[prefix+"type"]
		if typ == nil {
			continue
		}
		if _, ok := resolveClass(classes, *typ, ""); !ok {
			continue
		}
		pv := h.opts.PluginVersion
		if _, ok := transforms.Lookup(*typ); ok {
			pv = transforms.Version
		}
		version.def, version.recommended = str(pv), []string{pv}
		// The settings every transformation takes, then the plugin's own
		// (kcd's transformations and predicates), in the order Kafka
		// Connect embeds them after type and plugin.version.
		var own []*key
		if listKey == keyTransforms {
			own = append(own,
				&key{name: "negate", typ: connect.TypeBoolean, def: str("false"), importance: "MEDIUM",
					doc: "Whether the configured predicate should be negated.", width: "NONE", display: "negate"},
				&key{name: "predicate", typ: connect.TypeString, importance: "MEDIUM",
					doc: "The alias of a predicate used to determine whether to apply this transformation.", width: "NONE", display: "predicate"})
			typeKey := out[len(out)-2]
			typeKey.validate = func(string, any) string {
				_, negate := props[prefix+"negate"]
				if _, pred := props[prefix+"predicate"]; negate && !pred {
					return sprintf("Config '%snegate' was provided but there is no config '%spredicate' defining a predicate to be negated.", prefix, prefix)
				}
				return ""
			}
		}
		if tp, ok := transforms.Lookup(*typ); ok {
			own = append(own, ownKeys(tp.Config)...)
		}
		out = append(out, embedded(own, prefix, group, 2)...)
	}
	return out
}

// connectorName is Kafka Connect's check of a name (not empty, no control
// characters), then kcd's: a name must fit its store keys and be
// addressable in a URL path (connectstore.CheckName).
func connectorName(name string, v any) string {
	if msg := nonEmptyStringWithoutControlChars(name, v); msg != "" {
		return msg
	}
	s, _ := v.(string)
	if err := connectstore.CheckName(s); err != nil {
		return invalid(name, shortValue(s), strings.TrimPrefix(err.Error(), store.ErrInvalid.Error()+": "))
	}
	return ""
}

// shortValue is s for a message, cut to its first 100 bytes.
func shortValue(s string) string {
	if len(s) <= 100 {
		return s
	}
	return fmt.Sprintf("%s... (%d bytes)", strings.ToValidUTF8(s[:100], ""), len(s))
}

// tasksMax is Kafka Connect's check of tasks.max (at least 1), and the
// workers' limit on tasks per connector.
func (h *Herder) tasksMax(name string, v any) string {
	if msg := atLeast(1, false)(name, v); msg != "" {
		return msg
	}
	if n, _ := v.(int64); n > int64(h.opts.MaxTasksPerConnector) {
		return invalid(name, javaString(v), fmt.Sprintf("Value must be no more than %d (the workers' max-tasks-per-connector)", h.opts.MaxTasksPerConnector))
	}
	return ""
}

// providedClasses are the converters, header converters, transformations
// and predicates, by type, that a connector whose records are serialized
// elsewhere (the Java host's: connect.SerializedRecords) may name besides
// kcd's own: its provider's. Nil for other connectors.
func providedClasses(p *connect.Plugin) map[string][]string {
	if p == nil || p.New == nil {
		return nil
	}
	if _, ok := p.New().(connect.SerializedRecords); !ok {
		return nil
	}
	out := map[string][]string{}
	for _, d := range connect.ProvidedPlugins() {
		out[d.Type] = append(out[d.Type], d.Class)
	}
	return out
}

// embedded is ConfigDef.embed: a plugin's settings under prefix and group,
// in Kafka Connect's natural order (required first, then by importance,
// then by name) numbered from start; their validators see the names
// without the prefix, as Kafka Connect's embedded validators do.
func embedded(keys []*key, prefix, group string, start int) []*key {
	rank := map[string]int{"HIGH": 0, "MEDIUM": 1, "LOW": 2}
	slices.SortStableFunc(keys, func(a, b *key) int {
		if a.required != b.required {
			if a.required {
				return -1
			}
			return 1
		}
		if c := rank[a.importance] - rank[b.importance]; c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	for i, k := range keys {
		k.name, k.group, k.order = prefix+k.name, group, start+i
		if v := k.validate; v != nil {
			k.validate = func(name string, val any) string { return v(strings.TrimPrefix(name, prefix), val) }
		}
	}
	return keys
}
