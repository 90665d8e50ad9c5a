package connect

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ConfigType is the type of a setting, named as Kafka Connect's
// ConfigDef.Type (it is what the validate endpoint shows).
type ConfigType string

// The setting types.
const (
	TypeString   ConfigType = "STRING"
	TypeInt      ConfigType = "INT"
	TypeLong     ConfigType = "LONG"
	TypeShort    ConfigType = "SHORT"
	TypeDouble   ConfigType = "DOUBLE"
	TypeBoolean  ConfigType = "BOOLEAN"
	TypeList     ConfigType = "LIST"
	TypeClass    ConfigType = "CLASS"
	TypePassword ConfigType = "PASSWORD"
)

// Importance and Width are shown by the validate endpoint.
type (
	Importance string
	Width      string
)

// Importance and width values.
const (
	High   Importance = "HIGH"
	Medium Importance = "MEDIUM"
	Low    Importance = "LOW"

	WidthNone   Width = "NONE"
	WidthShort  Width = "SHORT"
	WidthMedium Width = "MEDIUM"
	WidthLong   Width = "LONG"
)

// ConfigKey describes one setting.
type ConfigKey struct {
	Name    string
	Type    ConfigType
	Default *string // nil: no default, so the setting is required, unless NullDefault
	// NullDefault makes a setting without Default optional: its default is
	// null, as Kafka Connect shows it ("default_value": null, "required":
	// false). A connector reads it as absent.
	NullDefault   bool
	Importance    Importance
	Documentation string
	Group         string
	Order         int
	Width         Width
	DisplayName   string
	Dependents    []string
	// Validator checks a value (already known to parse as Type).
	Validator func(value string) error
	// NullMessage, when set, is the validator's message for a null (or
	// missing) value, "{name}" standing for the setting's name: Kafka
	// Connect runs validators on null too.
	NullMessage string
	// Recommended values, shown by the validate endpoint.
	Recommended []string
}

// Required tells whether the setting has no default, not even null.
func (k ConfigKey) Required() bool { return k.Default == nil && !k.NullDefault }

// ConfigDef is a connector's list of settings.
type ConfigDef []ConfigKey

// Default returns a pointer to v, for ConfigKey.Default.
func Default(v string) *string { return &v }

// Key returns the key called name.
func (d ConfigDef) Key(name string) (ConfigKey, bool) {
	for _, k := range d {
		if k.Name == name {
			return k, true
		}
	}
	return ConfigKey{}, false
}

// ValidateValue checks one value against a key: its type, then its
// validator. A nil value is checked for presence.
func (k ConfigKey) ValidateValue(value *string) error {
	if value == nil {
		if k.Required() {
			return fmt.Errorf("Missing required configuration \"%s\" which has no default value.", k.Name)
		}
		return nil
	}
	v := *value
	var err error
	switch k.Type {
	case TypeInt:
		_, err = strconv.ParseInt(strings.TrimSpace(v), 10, 32)
	case TypeShort:
		_, err = strconv.ParseInt(strings.TrimSpace(v), 10, 16)
	case TypeLong:
		_, err = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	case TypeDouble:
		_, err = strconv.ParseFloat(strings.TrimSpace(v), 64)
	case TypeBoolean:
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "true", "false":
		default:
			err = fmt.Errorf("not a boolean")
		}
	}
	shown := v
	if k.Type == TypePassword {
		shown = "[hidden]" // as Kafka Connect prints a Password
	}
	if err != nil {
		return fmt.Errorf("Invalid value %s for configuration %s: Not a number of type %s", shown, k.Name, k.Type)
	}
	if k.Validator != nil {
		if verr := k.Validator(v); verr != nil {
			if msg, ok := WholeMessage(verr, k.Name); ok {
				return errors.New(msg)
			}
			return fmt.Errorf("Invalid value %s for configuration %s: %v", shown, k.Name, verr)
		}
	}
	return nil
}

// MessageError is a validator's error that is the whole message, not
// the reason in "Invalid value V for configuration N: reason", as Kafka
// Connect's validators that throw a ConfigException of their own text.
// Every "{name}" in Msg stands for the setting's name.
type MessageError struct{ Msg string }

func (e *MessageError) Error() string { return e.Msg }

// WholeMessage returns the message of a *MessageError for setting name;
// ok is false for other errors.
func WholeMessage(err error, name string) (msg string, ok bool) {
	me, ok := errors.AsType[*MessageError](err)
	if !ok {
		return "", false
	}
	return strings.ReplaceAll(me.Msg, "{name}", name), true
}
