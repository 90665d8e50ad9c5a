package converter

import (
	"fmt"
	"strings"

	"github.com/kcd-project/kcd/daemon/connect"
)

// SimpleHeaderConverterClass is Kafka Connect's default header converter,
// which the worker implements itself (it infers a schema per value); it
// takes no settings.
const SimpleHeaderConverterClass = "org.apache.kafka.connect.storage.SimpleHeaderConverter"

// ConfigDef returns the settings a converter class (or alias) takes, as
// Kafka Connect's converter defines them (its config()), for GET
// /connector-plugins/{class}/config and for validating a connector's
// key.converter.* settings; ok is false for a class kcd does not know.
// kcd's own additions (kcd.float.format) are not listed.
func ConfigDef(class string) (def connect.ConfigDef, ok bool) {
	class = strings.TrimSpace(class)
	if class == SimpleHeaderConverterClass || class == "SimpleHeaderConverter" || class == "SimpleHeader" {
		return connect.ConfigDef{}, true
	}
	c, err := New(class)
	if err != nil {
		return nil, false
	}
	switch c.(type) {
	case *JSONConverter:
		return jsonConfigDef, true
	case *StringConverter:
		return stringConfigDef, true
	}
	return connect.ConfigDef{converterTypeKey}, true
}

// converterTypeKey is Kafka Connect's ConverterConfig "converter.type",
// which the worker sets to the converter's use.
var converterTypeKey = connect.ConfigKey{
	Name: "converter.type", Type: connect.TypeString, Importance: connect.Low,
	Documentation: "How this converter will be used.",
	Validator:     oneOf("key", "value", "header"),
}

var jsonConfigDef = connect.ConfigDef{
	converterTypeKey,
	{Name: "schemas.enable", Type: connect.TypeBoolean, Default: connect.Default("true"), Importance: connect.High,
		Documentation: "Include schemas within each of the serialized values and keys.",
		Group:         "Schemas", Order: 0, Width: connect.WidthMedium, DisplayName: "Enable Schemas"},
	{Name: "schemas.cache.size", Type: connect.TypeInt, Default: connect.Default("1000"), Importance: connect.High,
		Documentation: "The maximum number of schemas that can be cached in this converter instance.",
		Group:         "Schemas", Order: 1, Width: connect.WidthMedium, DisplayName: "Schema Cache Size"},
	{Name: "schema.content", Type: connect.TypeString, NullDefault: true, Importance: connect.High,
		Documentation: "When set, this is used as the schema for all messages, and the schemas within each of the message will be ignored." +
			"Otherwise, the schema will be included in the content of each message. This configuration applies only 'schemas.enable' is true, and it exclusively affects the sink connector.",
		Group: "Schemas", Order: 2, Width: connect.WidthMedium, DisplayName: "Schema Content"},
	{Name: "decimal.format", Type: connect.TypeString, Default: connect.Default("BASE64"), Importance: connect.Low,
		Documentation: "Controls which format this converter will serialize decimals in. This value is case insensitive and can be either 'BASE64' (default) or 'NUMERIC'",
		Group:         "Serialization", Order: 0, Width: connect.WidthMedium, DisplayName: "Decimal Format",
		Validator: caseInsensitiveOneOf("NUMERIC", "BASE64")}, // Java's HashSet order, as its message lists them
	{Name: "replace.null.with.default", Type: connect.TypeBoolean, Default: connect.Default("true"), Importance: connect.Low,
		Documentation: "Whether to replace fields that have a default value and that are null to the default value. When set to true, the default value is used, otherwise null is used.",
		Group:         "Serialization", Order: 1, Width: connect.WidthMedium, DisplayName: "Replace null with default"},
}

var stringConfigDef = connect.ConfigDef{
	converterTypeKey,
	{Name: "converter.encoding", Type: connect.TypeString, Default: connect.Default("UTF-8"), Importance: connect.High,
		Documentation: "The name of the Java character set to use for encoding strings as byte arrays.",
		Width:         connect.WidthMedium, DisplayName: "Encoding"},
}

// oneOf is Kafka's ConfigDef.ValidString.in.
func oneOf(choices ...string) func(string) error {
	return func(v string) error {
		for _, c := range choices {
			if v == c {
				return nil
			}
		}
		return fmt.Errorf("String must be one of: %s", strings.Join(choices, ", "))
	}
}

// caseInsensitiveOneOf is Kafka's ConfigDef.CaseInsensitiveValidString.in.
func caseInsensitiveOneOf(choices ...string) func(string) error {
	return func(v string) error {
		for _, c := range choices {
			if strings.EqualFold(v, c) {
				return nil
			}
		}
		return fmt.Errorf("String must be one of (case insensitive): %s", strings.Join(choices, ", "))
	}
}
