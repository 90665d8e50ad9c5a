// Package converter turns Kafka Connect data (a schema and a value of the
// data package) into record bytes and back, byte-compatible with Kafka
// Connect's converters, which it registers under their Java class names:
//
//	org.apache.kafka.connect.json.JsonConverter
//	org.apache.kafka.connect.storage.StringConverter
//	org.apache.kafka.connect.converters.ByteArrayConverter
//	org.apache.kafka.connect.converters.BooleanConverter
//	org.apache.kafka.connect.converters.ShortConverter, IntegerConverter,
//	  LongConverter, FloatConverter, DoubleConverter
//
// New makes one by class name (or by the aliases Kafka Connect accepts:
// the simple class name, and that name without "Converter"); Configure it
// with the converter's settings (the key.converter.* or value.converter.*
// settings without their prefix) before use. A converter may be used from
// several goroutines once configured. ConfigDef describes each one's
// settings as Kafka Connect does.
package converter

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/kcd-project/kcd/daemon/connect/data"
	"github.com/kcd-project/kcd/daemon/connect/internal/java"
)

// Converter is Kafka Connect's Converter: it serializes a record's key or
// value with its schema, and deserializes it back.
type Converter interface {
	// Configure applies the settings; isKey tells whether the converter
	// handles keys or values.
	Configure(config map[string]string, isKey bool) error
	// FromConnectData serializes value of schema. A nil result is a null
	// record value (a tombstone). The result may share memory with value
	// (a []byte or a string's bytes): callers only read it.
	FromConnectData(topic string, schema *data.Schema, value any) ([]byte, error)
	// ToConnectData deserializes b, which is nil for a null record value.
	// The schema returned may be shared with other calls: do not modify it.
	ToConnectData(topic string, b []byte) (*data.Schema, any, error)
}

// The class names of the built-in converters.
const (
	JSONClass      = "org.apache.kafka.connect.json.JsonConverter"
	StringClass    = "org.apache.kafka.connect.storage.StringConverter"
	ByteArrayClass = "org.apache.kafka.connect.converters.ByteArrayConverter"
)

var (
	regMu     sync.RWMutex
	factories = map[string]func() Converter{} // by class name and alias
	classes   []string
)

func init() {
	Register(JSONClass, func() Converter { return NewJSON() })
	Register(StringClass, func() Converter { return &StringConverter{} })
	Register(ByteArrayClass, func() Converter { return ByteArrayConverter{} })
}

// Register adds a converter class; its aliases (the simple class name,
// and that name without "Converter") are added unless another class has
// them. It panics on a class registered twice: that is a build mistake.
func Register(class string, newConverter func() Converter) {
	regMu.Lock()
	defer regMu.Unlock()
	if _, ok := factories[class]; ok || class == "" || newConverter == nil {
		panic(fmt.Sprintf("converter: invalid or duplicate registration of %q", class))
	}
	factories[class] = newConverter
	for _, a := range aliasesOf(class) {
		if _, taken := factories[a]; !taken {
			factories[a] = newConverter
		}
	}
	classes = append(classes, class)
	slices.Sort(classes)
}

func aliasesOf(class string) []string {
	simple := class[strings.LastIndexByte(class, '.')+1:]
	out := []string{simple}
	if s, ok := strings.CutSuffix(simple, "Converter"); ok && s != "" {
		out = append(out, s)
	}
	return out
}

// New returns a new, unconfigured converter of the class (or alias).
func New(class string) (Converter, error) {
	regMu.RLock()
	f, ok := factories[strings.TrimSpace(class)]
	regMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("converter class %q could not be found (known: %s)", class, strings.Join(Classes(), ", "))
	}
	return f(), nil
}

// Classes lists the registered converter classes.
func Classes() []string {
	regMu.RLock()
	defer regMu.RUnlock()
	return slices.Clone(classes)
}

// boolSetting reads a BOOLEAN setting as Kafka's ConfigDef does.
func boolSetting(config map[string]string, name string, def bool) (bool, error) {
	v, ok := config[name]
	if !ok {
		return def, nil
	}
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("Invalid value %s for configuration %s: Expected value to be either true or false", v, name)
}

// intSetting reads an INT setting as Kafka's ConfigDef does.
func intSetting(config map[string]string, name string, def int) (int, error) {
	v, ok := config[name]
	if !ok {
		return def, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
	if err != nil {
		return 0, fmt.Errorf("Invalid value %s for configuration %s: Not a number of type INT", v, name)
	}
	return int(n), nil
}

// floatFormatSetting reads kcd.float.format: LEGACY (JDK 8 to 18) or
// SHORTEST (JDK 19 and later).
func floatFormatSetting(config map[string]string) (java.FloatFormat, error) {
	ff, err := choiceSetting(config, "kcd.float.format", "LEGACY", "LEGACY", "SHORTEST")
	if ff == "SHORTEST" {
		return java.Shortest, err
	}
	return java.Legacy, err
}

// choiceSetting reads a STRING setting that must be one of choices,
// compared without case; it returns the choice.
func choiceSetting(config map[string]string, name, def string, choices ...string) (string, error) {
	v, ok := config[name]
	if !ok {
		return def, nil
	}
	for _, c := range choices {
		if strings.EqualFold(strings.TrimSpace(v), c) {
			return c, nil
		}
	}
	return "", fmt.Errorf("Invalid value %s for configuration %s: String must be one of (case insensitive): %s", v, name, strings.Join(choices, ", "))
}
