package herder

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/kcd-project/kcd/daemon/connect"
)

// key is one setting as validation sees it: Kafka Connect's ConfigDef.ConfigKey
// with a validator and a recommender.
type key struct {
	name       string
	typ        connect.ConfigType
	required   bool    // no default at all (Kafka Connect's NO_DEFAULT_VALUE)
	def        *string // the default; nil is a null default (or none, when required)
	importance string
	doc        string
	group      string // "" shows as null
	order      int
	width      string
	display    string
	dependents []string

	// resolve finds a CLASS setting's class by name or alias.
	resolve func(string) (string, bool)
	// validate checks a parsed value (nil when absent or unparseable) and
	// returns Kafka Connect's message, or "".
	validate func(name string, v any) string
	// recommended lists the recommended values.
	recommended []string
	// validateMissing runs validate on a required setting that is
	// missing too, as Kafka Connect does for an embedded plugin's
	// settings whose validators refuse null.
	validateMissing bool
	// invisible hides the setting (ConfigValue.visible false), as a Kafka
	// Connect recommender does for a setting that does not apply.
	invisible bool
	// msgName is the name messages give the setting, when not name: a
	// converter's settings are checked without their prefix
	// ("schemas.enable", not "value.converter.schemas.enable").
	msgName string
}

// nameInMessages is the setting's name as its error messages give it.
func (k *key) nameInMessages() string {
	if k.msgName != "" {
		return k.msgName
	}
	return k.name
}

func (k *key) info() ConfigKeyInfo {
	var group *string
	order := k.order
	if k.group != "" {
		group = &k.group
	} else if order == 0 {
		order = -1 // ConfigDef.define without a group: Java plugins' keys carry their own
	}
	deps := k.dependents
	if deps == nil {
		deps = []string{}
	}
	return ConfigKeyInfo{
		Name: k.name, Type: string(k.typ), Required: k.required, DefaultValue: k.def,
		Importance: k.importance, Documentation: k.doc, Group: group, OrderInGroup: order,
		Width: k.width, DisplayName: k.display, Dependents: deps,
	}
}

// ownKeys turns a connector's ConfigDef into keys.
func ownKeys(def connect.ConfigDef) []*key {
	out := make([]*key, 0, len(def))
	for _, ck := range def {
		k := &key{
			name: ck.Name, typ: ck.Type, required: ck.Required(), def: ck.Default,
			importance: string(ck.Importance), doc: ck.Documentation, group: ck.Group, order: ck.Order,
			width: string(ck.Width), display: ck.DisplayName, dependents: ck.Dependents,
			recommended: ck.Recommended,
		}
		if k.typ == "" {
			k.typ = connect.TypeString
		}
		if k.importance == "" {
			k.importance = string(connect.Medium)
		}
		if k.width == "" {
			k.width = string(connect.WidthNone)
		}
		if k.display == "" {
			k.display = k.name
		}
		k.validateMissing = ck.NullMessage != ""
		if fn, nullMsg := ck.Validator, ck.NullMessage; fn != nil || nullMsg != "" {
			k.validate = func(name string, v any) string {
				if v == nil {
					return strings.ReplaceAll(nullMsg, "{name}", name)
				}
				if fn == nil {
					return ""
				}
				s := render(k.typ, v)
				if err := fn(s); err != nil {
					if msg, ok := connect.WholeMessage(err, name); ok {
						return msg
					}
					return invalid(name, s, err.Error())
				}
				return ""
			}
		}
		out = append(out, k)
	}
	return out
}

// parse reads a value as Kafka Connect's ConfigDef.parseType does, and
// returns Kafka Connect's message when it cannot.
func (k *key) parse(raw string) (any, string) {
	t := javaTrim(raw)
	var err error
	switch k.typ {
	case connect.TypeString:
		return t, ""
	case connect.TypePassword:
		return raw, ""
	case connect.TypeInt, connect.TypeShort, connect.TypeLong:
		bits := map[connect.ConfigType]int{connect.TypeInt: 32, connect.TypeShort: 16, connect.TypeLong: 64}[k.typ]
		var n int64
		if n, err = strconv.ParseInt(t, 10, bits); err == nil {
			return n, ""
		}
		return nil, invalid(k.nameInMessages(), raw, "Not a number of type "+string(k.typ))
	case connect.TypeDouble:
		var f float64
		if f, err = strconv.ParseFloat(t, 64); err == nil {
			return f, ""
		}
		return nil, invalid(k.nameInMessages(), raw, "Not a number of type DOUBLE")
	case connect.TypeBoolean:
		switch strings.ToLower(t) {
		case "true":
			return true, ""
		case "false":
			return false, ""
		}
		return nil, invalid(k.nameInMessages(), raw, "Expected value to be either true or false")
	case connect.TypeList:
		if t == "" {
			return []string{}, ""
		}
		parts := strings.Split(t, ",")
		for i, p := range parts {
			parts[i] = strings.TrimSpace(p)
		}
		return parts, ""
	case connect.TypeClass:
		if k.resolve == nil {
			return t, ""
		}
		if c, ok := k.resolve(t); ok {
			return c, ""
		}
		return nil, invalid(k.nameInMessages(), raw, "Class "+raw+" could not be found.")
	}
	return t, ""
}

// render is Kafka Connect's ConfigDef.convertToString.
func render(typ connect.ConfigType, v any) string {
	if typ == connect.TypePassword {
		return "[hidden]"
	}
	switch v := v.(type) {
	case string:
		return v
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		return javaDouble(v)
	case bool:
		return strconv.FormatBool(v)
	case []string:
		return strings.Join(v, ",")
	}
	return fmt.Sprint(v)
}

// javaString is how Java's toString shows a parsed value in messages.
func javaString(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case []string:
		return "[" + strings.Join(v, ", ") + "]"
	}
	return render(connect.TypeString, v)
}

// javaDouble is Java's Double.toString for ordinary values: "1.0", "0.5".
func javaDouble(f float64) string {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return map[bool]string{true: "Infinity", false: "-Infinity"}[f > 0]
	}
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	return s
}

// javaTrim is Java's String.trim: it removes every char up to ' '.
func javaTrim(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
}

// invalid is Kafka Connect's ConfigException message for a value.
func invalid(name, value, msg string) string {
	return fmt.Sprintf("Invalid value %s for configuration %s: %s", value, name, msg)
}

// Validators, with Kafka Connect's messages.

func atLeast(min int64, nullOK bool) func(string, any) string {
	return func(name string, v any) string {
		n, ok := v.(int64)
		switch {
		case v == nil && nullOK:
			return ""
		case !ok:
			return invalid(name, "null", "Value must be non-null")
		case n < min:
			return invalid(name, javaString(v), fmt.Sprintf("Value must be at least %d", min))
		}
		return ""
	}
}

func oneOf(valid ...string) func(string, any) string {
	return func(name string, v any) string {
		if s, ok := v.(string); ok && slices.Contains(valid, s) {
			return ""
		}
		return invalid(name, javaString(v), "String must be one of: "+strings.Join(valid, ", "))
	}
}

func oneOfFold(shown ...string) func(string, any) string {
	return func(name string, v any) string {
		s, ok := v.(string)
		if ok && slices.ContainsFunc(shown, func(x string) bool { return strings.EqualFold(x, s) }) {
			return ""
		}
		return invalid(name, javaString(v), "String must be one of (case insensitive): "+strings.Join(shown, ", "))
	}
}

func nonEmptyString(name string, v any) string {
	if s, ok := v.(string); ok && s == "" {
		return invalid(name, s, "String must be non-empty")
	}
	return ""
}

func nonEmptyStringWithoutControlChars(name string, v any) string {
	s, ok := v.(string)
	if !ok {
		return ""
	}
	if s == "" {
		return invalid(name, s, "String may not be empty")
	}
	var bad []string
	for _, r := range s {
		if r < 0x20 || (r >= 0x7f && r <= 0x9f) {
			bad = append(bad, strconv.Itoa(int(r)))
		}
	}
	if len(bad) > 0 {
		return invalid(name, s, "String may not contain control sequences but had the following ASCII chars: "+strings.Join(bad, ", "))
	}
	return ""
}

// uniqueAliases is the validator of transforms, predicates and
// topic.creation.groups.
func uniqueAliases(name string, v any) string {
	l, _ := v.([]string)
	if len(sorted(l)) != len(l) {
		return invalid(name, javaString(v), "Duplicate alias provided.")
	}
	return ""
}

// topicList is Kafka Connect's ValidList.anyNonDuplicateValues(true, false).
func topicList(name string, v any) string {
	l, ok := v.([]string)
	switch {
	case !ok:
		return fmt.Sprintf("Configuration '%s' values must not be null.", name)
	case len(sorted(l)) != len(l):
		return fmt.Sprintf("Configuration '%s' values must not be duplicated.", name)
	case slices.Contains(l, ""):
		return fmt.Sprintf("Configuration '%s' values must not be empty.", name)
	}
	return ""
}

// validRegex is Kafka Connect's RegexValidator; kcd's sinks subscribe with
// Go's regexp, so that is the syntax checked.
func validRegex(name string, v any) string {
	s, _ := v.(string)
	if _, err := regexp.Compile(s); err != nil {
		return invalid(name, s, "Invalid regex: "+err.Error())
	}
	return ""
}

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }
